/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libcpuhp-client against a scripted fake daemon: a thread of this test
 * that accepts one connection on a temporary socket and plays a script
 * (read this request, send these frames).  Proves the client's own logic:
 * the hello and version check, errors and their messages, events that
 * arrive during a call, bad frames and a vanishing daemon, the conversions
 * into the public structs.  The real daemon is tested in tests/daemon.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cpuhp/client.h>

#include "frame.h"

#include "check.h"

/* --- the fake daemon ------------------------------------------------------- */

struct fake {
	char dir[64];
	char path[96];
	int lfd;
	pthread_t thread;
	void (*script)(int fd);
};

static void read_exact(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		CHECK(n > 0);
		p += n;
		len -= (size_t)n;
	}
}

static void write_exact(int fd, const void *buf, size_t len)
{
	CHECK_EQ_INT(send(fd, buf, len, MSG_NOSIGNAL), len);
}

static Cpuhp__Request *srv_read(int fd)
{
	uint8_t hdr[CPUHP__FRAME_HDR], *payload;
	Cpuhp__Request *req;
	size_t len;

	read_exact(fd, hdr, sizeof(hdr));
	len = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
	CHECK(len > 0 && len <= CPUHP__FRAME_MAX);
	payload = malloc(len);
	CHECK(payload != NULL);
	read_exact(fd, payload, len);
	CHECK_EQ_INT(cpuhp__frame_unpack_request(payload, len, &req), 0);
	free(payload);
	return req;
}

/* Read a request, check its kind, return its id. */
static uint64_t srv_expect(int fd, Cpuhp__Request__BodyCase body)
{
	Cpuhp__Request *req = srv_read(fd);
	uint64_t id = req->id;

	CHECK_EQ_INT(req->body_case, body);
	CHECK(id != 0);
	cpuhp__request__free_unpacked(req, NULL);
	return id;
}

static void srv_send(int fd, const Cpuhp__Response *resp)
{
	uint8_t *frame;
	size_t len;

	CHECK_EQ_INT(cpuhp__frame_pack_response(resp, &frame, &len), 0);
	write_exact(fd, frame, len);
	free(frame);
}

static void srv_error(int fd, uint64_t id, Cpuhp__ErrorCode code, const char *msg)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Error e = CPUHP__ERROR__INIT;

	e.code = code;
	e.message = (char *)msg;
	r.id = id;
	r.body_case = CPUHP__RESPONSE__BODY_ERROR;
	r.error = &e;
	srv_send(fd, &r);
}

static void srv_send_hello(int fd, uint64_t id, uint32_t version)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__HelloReply h = CPUHP__HELLO_REPLY__INIT;

	h.version = version;
	h.daemon_version = "fake";
	h.max_frame = CPUHP__FRAME_MAX;
	r.id = id;
	r.body_case = CPUHP__RESPONSE__BODY_HELLO;
	r.hello = &h;
	srv_send(fd, &r);
}

static void srv_hello_reply(int fd, uint32_t version)
{
	Cpuhp__Request *req = srv_read(fd);

	CHECK_EQ_INT(req->body_case, CPUHP__REQUEST__BODY_HELLO);
	CHECK_EQ_INT(req->hello->version, CPUHP__PROTO_VERSION);
	CHECK_EQ_STR(req->hello->client_name, "test-client");
	srv_send_hello(fd, req->id, version);
	cpuhp__request__free_unpacked(req, NULL);
}

/* The Hello read now, its reply sent later (srv_send_hello_reply). */
static uint64_t pending_hello_id;

static void srv_hello_reply_later(int fd)
{
	pending_hello_id = srv_expect(fd, CPUHP__REQUEST__BODY_HELLO);
}

static void srv_send_hello_reply(int fd)
{
	srv_send_hello(fd, pending_hello_id, CPUHP__PROTO_VERSION);
}

/* Read one request, whatever it is. */
static void srv_read_any(int fd)
{
	cpuhp__request__free_unpacked(srv_read(fd), NULL);
}

static void srv_hello(int fd)
{
	srv_hello_reply(fd, CPUHP__PROTO_VERSION);
}

/* Wait for the client to close: the script ends only after the client is done. */
static void srv_wait_close(int fd)
{
	char b;

	CHECK_EQ_INT(read(fd, &b, 1), 0);
}

/* The fake running now: scripts of asynchronous calls accept their calls' connections. */
static struct fake *fake_now;

static int srv_accept(void)
{
	int fd = accept(fake_now->lfd, NULL, NULL);

	CHECK(fd >= 0);
	return fd;
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	int fd = accept(f->lfd, NULL, NULL);

	CHECK(fd >= 0);
	f->script(fd);
	close(fd);
	return NULL;
}

static void fake_start(struct fake *f, void (*script)(int fd))
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	snprintf(f->dir, sizeof(f->dir), "/tmp/cpuhp-test-client.XXXXXX");
	CHECK(mkdtemp(f->dir) != NULL);
	snprintf(f->path, sizeof(f->path), "%s/sock", f->dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(f->lfd >= 0);
	CHECK_EQ_INT(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ_INT(listen(f->lfd, 4), 0);
	f->script = script;
	fake_now = f;
	CHECK_EQ_INT(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

static void fake_finish(struct fake *f)
{
	CHECK_EQ_INT(pthread_join(f->thread, NULL), 0);
	close(f->lfd);
	unlink(f->path);
	rmdir(f->dir);
}

static struct cpuhp_client *connect_ok(struct fake *f)
{
	struct cpuhp_client *c = NULL;

	CHECK_EQ_INT(cpuhp_client_connect(f->path, &c), 0);
	CHECK(c != NULL);
	CHECK_EQ_STR(cpuhp_client_last_message(c), "");
	return c;
}

/* --- connecting ------------------------------------------------------------ */

static void script_hello_then_close(int fd)
{
	srv_hello(fd);
	srv_wait_close(fd);
}

static void client_connect_says_hello_with_version_and_name(void)
{
	struct fake f;

	fake_start(&f, script_hello_then_close);
	cpuhp_client_close(connect_ok(&f));
	fake_finish(&f);
}

static void client_connect_path_null_uses_cpuhp_socket_env(void)
{
	struct cpuhp_client *c = NULL;
	struct fake f;

	fake_start(&f, script_hello_then_close);
	CHECK_EQ_INT(setenv(CPUHP_CLIENT_SOCKET_ENV, f.path, 1), 0);
	CHECK_EQ_INT(cpuhp_client_connect(NULL, &c), 0);
	unsetenv(CPUHP_CLIENT_SOCKET_ENV);
	cpuhp_client_close(c);
	fake_finish(&f);
}

static void client_socket_path_is_env_unless_unset_or_empty(void)
{
	const char *saved = getenv(CPUHP_CLIENT_SOCKET_ENV);
	char *keep = saved ? strdup(saved) : NULL;

	CHECK_EQ_INT(setenv(CPUHP_CLIENT_SOCKET_ENV, "/tmp/elsewhere.sock", 1), 0);
	CHECK_EQ_STR(cpuhp_client_socket_path(), "/tmp/elsewhere.sock");
	/* Read at each call, not cached. */
	CHECK_EQ_INT(setenv(CPUHP_CLIENT_SOCKET_ENV, "/tmp/again.sock", 1), 0);
	CHECK_EQ_STR(cpuhp_client_socket_path(), "/tmp/again.sock");
	CHECK_EQ_INT(setenv(CPUHP_CLIENT_SOCKET_ENV, "", 1), 0);
	CHECK_EQ_STR(cpuhp_client_socket_path(), CPUHP_CLIENT_DEFAULT_SOCKET);
	CHECK_EQ_INT(unsetenv(CPUHP_CLIENT_SOCKET_ENV), 0);
	CHECK_EQ_STR(cpuhp_client_socket_path(), CPUHP_CLIENT_DEFAULT_SOCKET);
	CHECK(CPUHP_CLIENT_DEFAULT_SOCKET[0] == '/');
	if (keep)
		setenv(CPUHP_CLIENT_SOCKET_ENV, keep, 1);
	free(keep);
}

static void script_hello_v2(int fd)
{
	srv_hello_reply(fd, 2);
	srv_wait_close(fd);
}

static void script_hello_refused(int fd)
{
	uint64_t id = srv_expect(fd, CPUHP__REQUEST__BODY_HELLO);

	srv_error(fd, id, CPUHP__ERROR_CODE__ERR_EPROTONOSUPPORT, "version 1 not supported");
	srv_wait_close(fd);
}

static void script_too_many_connections(int fd)
{
	srv_error(fd, 0, CPUHP__ERROR_CODE__ERR_EUSERS, "too many connections");
}

static void client_connect_fails_on_version_mismatch_or_refusal(void)
{
	struct cpuhp_client *c = (struct cpuhp_client *)1;
	struct fake f;

	fake_start(&f, script_hello_v2);
	CHECK_EQ_INT(cpuhp_client_connect(f.path, &c), -EPROTONOSUPPORT);
	fake_finish(&f);
	fake_start(&f, script_hello_refused);
	CHECK_EQ_INT(cpuhp_client_connect(f.path, &c), -EPROTONOSUPPORT);
	fake_finish(&f);
	/* An error about the connection (id 0), whether or not the hello got through. */
	fake_start(&f, script_too_many_connections);
	CHECK_EQ_INT(cpuhp_client_connect(f.path, &c), -EUSERS);
	fake_finish(&f);
	CHECK(c == (struct cpuhp_client *)1); /* out-param untouched on failure */
}

static void client_connect_reports_unreachable_daemon(void)
{
	struct cpuhp_client *c = NULL;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dir[] = "/tmp/cpuhp-test-client.XXXXXX";
	char path[64], longpath[200];
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/sock", dir);
	CHECK_EQ_INT(cpuhp_client_connect(path, &c), -ENOENT);
	/* A socket file nobody listens on any more. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK_EQ_INT(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	CHECK_EQ_INT(cpuhp_client_connect(path, &c), -ECONNREFUSED);
	memset(longpath, 'x', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	CHECK_EQ_INT(cpuhp_client_connect(longpath, &c), -ENAMETOOLONG);
	CHECK(c == NULL);
	unlink(path);
	rmdir(dir);
}

/* --- leases, errors, events ------------------------------------------------- */

static void send_lease_granted(int fd, uint64_t id, uint64_t lease)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__LeaseGranted g = CPUHP__LEASE_GRANTED__INIT;

	g.lease_id = lease;
	r.id = id;
	r.body_case = CPUHP__RESPONSE__BODY_LEASE_GRANTED;
	r.lease_granted = &g;
	srv_send(fd, &r);
}

/* Read a LeaseRelease of @lease and answer it. */
static void srv_lease_released(int fd, uint64_t lease)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__LeaseReleased rel = CPUHP__LEASE_RELEASED__INIT;
	Cpuhp__Request *req = srv_read(fd);

	CHECK_EQ_INT(req->body_case, CPUHP__REQUEST__BODY_LEASE_RELEASE);
	CHECK_EQ_INT(req->lease_release->lease_id, lease);
	rel.lease_id = lease;
	r.id = req->id;
	r.body_case = CPUHP__RESPONSE__BODY_LEASE_RELEASED;
	r.lease_released = &rel;
	srv_send(fd, &r);
	cpuhp__request__free_unpacked(req, NULL);
}

static void script_leases(int fd)
{
	Cpuhp__Request *req;

	srv_hello(fd);
	req = srv_read(fd);
	CHECK_EQ_INT(req->body_case, CPUHP__REQUEST__BODY_LEASE_ACQUIRE);
	CHECK_EQ_INT(req->lease_acquire->timeout_ms, 250);
	send_lease_granted(fd, req->id, 42);
	cpuhp__request__free_unpacked(req, NULL);

	srv_lease_released(fd, 42);

	/* A try-acquire that finds a hotplug in the way. */
	srv_error(fd, srv_expect(fd, CPUHP__REQUEST__BODY_LEASE_ACQUIRE),
	          CPUHP__ERROR_CODE__ERR_EAGAIN, "a hotplug of CPU 3 is waiting");
	/* A release of a lease this connection does not hold, without a message. */
	srv_error(fd, srv_expect(fd, CPUHP__REQUEST__BODY_LEASE_RELEASE),
	          CPUHP__ERROR_CODE__ERR_ESRCH, NULL);
	/* A reply of the wrong kind. */
	send_lease_granted(fd, srv_expect(fd, CPUHP__REQUEST__BODY_LEASE_RELEASE), 1);
	srv_wait_close(fd);
}

static void client_lease_calls_map_replies_and_errors(void)
{
	struct cpuhp_client *c;
	uint64_t lease = 0;
	struct fake f;

	fake_start(&f, script_leases);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_lease_acquire(c, 250, &lease), 0);
	CHECK_EQ_INT(lease, 42);
	CHECK_EQ_INT(cpuhp_client_lease_release(c, 42), 0);

	lease = 7;
	CHECK_EQ_INT(cpuhp_client_lease_acquire(c, 0, &lease), -EAGAIN);
	CHECK_EQ_INT(lease, 7);
	CHECK_EQ_STR(cpuhp_client_last_message(c), "a hotplug of CPU 3 is waiting");
	CHECK_EQ_INT(cpuhp_client_lease_release(c, 99), -ESRCH);
	CHECK(strstr(cpuhp_client_last_message(c), "no such lease") != NULL);
	CHECK_EQ_INT(cpuhp_client_lease_release(c, 99), -EPROTO);
	cpuhp_client_close(c);
	fake_finish(&f);
}

static void send_event_online_changed(int fd, uint64_t watch_id, const char *online)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Event ev = CPUHP__EVENT__INIT;
	Cpuhp__OnlineChanged oc = CPUHP__ONLINE_CHANGED__INIT;

	oc.online = (char *)online;
	oc.external = true;
	ev.kind_case = CPUHP__EVENT__KIND_ONLINE_CHANGED;
	ev.online_changed = &oc;
	r.id = watch_id;
	r.body_case = CPUHP__RESPONSE__BODY_EVENT;
	r.event = &ev;
	srv_send(fd, &r);
}

static void send_hotplug_finished(int fd, uint64_t watch_id)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Event ev = CPUHP__EVENT__INIT;
	Cpuhp__HotplugFinished hf = CPUHP__HOTPLUG_FINISHED__INIT;
	Cpuhp__CpuResult res[2] = {CPUHP__CPU_RESULT__INIT, CPUHP__CPU_RESULT__INIT};
	Cpuhp__CpuResult *rp[2] = {&res[0], &res[1]};

	res[0].cpu = 2;
	res[0].ok = true;
	res[1].cpu = 5;
	res[1].code = CPUHP__ERROR_CODE__ERR_EBUSY;
	hf.cpus = "2,5";
	hf.online = false;
	hf.ok = false;
	hf.n_results = 2;
	hf.results = rp;
	ev.kind_case = CPUHP__EVENT__KIND_HOTPLUG_FINISHED;
	ev.hotplug_finished = &hf;
	r.id = watch_id;
	r.body_case = CPUHP__RESPONSE__BODY_EVENT;
	r.event = &ev;
	srv_send(fd, &r);
}

static void send_watch_started(int fd, uint64_t id)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__WatchStarted ws = CPUHP__WATCH_STARTED__INIT;

	r.id = id;
	r.body_case = CPUHP__RESPONSE__BODY_WATCH_STARTED;
	r.watch_started = &ws;
	srv_send(fd, &r);
}

/* Events come before the reply the client waits for, and after. */
static void script_events(int fd)
{
	uint64_t watch_id, id;

	srv_hello(fd);
	watch_id = srv_expect(fd, CPUHP__REQUEST__BODY_WATCH);
	send_watch_started(fd, watch_id);
	id = srv_expect(fd, CPUHP__REQUEST__BODY_LEASE_ACQUIRE);
	send_event_online_changed(fd, watch_id, "0-1,4");
	send_hotplug_finished(fd, watch_id);
	send_lease_granted(fd, id, 5);
	send_event_online_changed(fd, watch_id, "0");
	srv_wait_close(fd);
}

static void client_events_arriving_during_a_call_are_kept_in_order(void)
{
	struct cpuhp_client_event ev;
	struct cpuhp_client *c;
	uint64_t lease;
	struct fake f;

	fake_start(&f, script_events);
	c = connect_ok(&f);
	/* Not watching yet: only the notices to lease holders (none here) may be asked for. */
	CHECK_EQ_INT(cpuhp_client_next_event(c, -1, &ev), -EINVAL);
	CHECK_EQ_INT(cpuhp_client_next_event(c, 0, &ev), -EAGAIN);
	CHECK_EQ_INT(cpuhp_client_watch(c), 0);
	CHECK_EQ_INT(cpuhp_client_watch(c), -EALREADY);
	CHECK_EQ_INT(cpuhp_client_lease_acquire(c, 1000, &lease), 0);
	CHECK_EQ_INT(lease, 5);

	CHECK_EQ_INT(cpuhp_client_next_event(c, 0, &ev), 0);
	CHECK_EQ_INT(ev.type, CPUHP_CLIENT_EVENT_ONLINE_CHANGED);
	CHECK(ev.external);
	CHECK_EQ_INT(cpuhp_cpuset_count(&ev.online_cpus), 3);
	CHECK(cpuhp_cpuset_has(&ev.online_cpus, 4));

	CHECK_EQ_INT(cpuhp_client_next_event(c, 0, &ev), 0);
	CHECK_EQ_INT(ev.type, CPUHP_CLIENT_EVENT_HOTPLUG_FINISHED);
	CHECK(!ev.ok && !ev.online);
	CHECK_EQ_INT(cpuhp_cpuset_count(&ev.cpus), 2);
	CHECK_EQ_INT(cpuhp_cpuset_count(&ev.failed), 1);
	CHECK(cpuhp_cpuset_has(&ev.failed, 5));

	/* This one came after the reply: read from the socket, not the queue. */
	CHECK_EQ_INT(cpuhp_client_next_event(c, -1, &ev), 0);
	CHECK_EQ_INT(ev.type, CPUHP_CLIENT_EVENT_ONLINE_CHANGED);
	CHECK_EQ_INT(cpuhp_cpuset_count(&ev.online_cpus), 1);

	ev.type = 0;
	CHECK_EQ_INT(cpuhp_client_next_event(c, 0, &ev), -EAGAIN);
	CHECK_EQ_INT(cpuhp_client_next_event(c, 1, &ev), -ETIMEDOUT);
	CHECK_EQ_INT(ev.type, 0); /* untouched on failure */
	cpuhp_client_close(c);
	fake_finish(&f);
}

/* Notices (id 0) to a lease holder that does not watch: one during a call, one after. */
static void script_notices(int fd)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Event ev = CPUHP__EVENT__INIT;
	Cpuhp__LeaseRevoked rv = CPUHP__LEASE_REVOKED__INIT;
	Cpuhp__LeaseBypassed bp = CPUHP__LEASE_BYPASSED__INIT;
	uint64_t id;

	srv_hello(fd);
	id = srv_expect(fd, CPUHP__REQUEST__BODY_LEASE_ACQUIRE);
	rv.lease_id = 3;
	rv.held_ms = 120;
	rv.max_lease_ms = 100;
	ev.kind_case = CPUHP__EVENT__KIND_LEASE_REVOKED;
	ev.lease_revoked = &rv;
	r.body_case = CPUHP__RESPONSE__BODY_EVENT;
	r.event = &ev;
	srv_send(fd, &r);
	send_lease_granted(fd, id, 7);
	bp.online = (char *)"0,2";
	bp.was = (char *)"0-2";
	bp.leases = 1;
	ev.kind_case = CPUHP__EVENT__KIND_LEASE_BYPASSED;
	ev.lease_bypassed = &bp;
	srv_send(fd, &r);
	srv_error(fd, srv_expect(fd, CPUHP__REQUEST__BODY_LEASE_RELEASE),
	          CPUHP__ERROR_CODE__ERR_ESTALE,
	          "lease 7 is released, but the online CPUs changed");
	srv_wait_close(fd);
}

static void client_notices_to_a_lease_holder_come_without_a_watch(void)
{
	struct cpuhp_client_event ev;
	struct cpuhp_client *c;
	uint64_t lease;
	struct fake f;
	int ret;

	fake_start(&f, script_notices);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_lease_acquire(c, 1000, &lease), 0);
	CHECK_EQ_INT(lease, 7);
	CHECK_EQ_INT(cpuhp_client_next_event(c, 0, &ev), 0); /* kept during the call */
	CHECK_EQ_INT(ev.type, CPUHP_CLIENT_EVENT_LEASE_REVOKED);
	CHECK_EQ_INT(ev.lease_id, 3);
	CHECK_EQ_INT(ev.held_ms, 120);
	CHECK_EQ_INT(ev.max_lease_ms, 100);
	/* Sent after the grant: read from the socket, once it is there (maybe read ahead). */
	ret = cpuhp_client_next_event(c, 0, &ev);
	if (ret == -EAGAIN) {
		struct pollfd p = {.fd = cpuhp_client_fd(c), .events = POLLIN};

		CHECK_EQ_INT(poll(&p, 1, 10000), 1);
		ret = cpuhp_client_next_event(c, 0, &ev);
	}
	CHECK_EQ_INT(ret, 0);
	CHECK_EQ_INT(ev.type, CPUHP_CLIENT_EVENT_LEASE_BYPASSED);
	CHECK_EQ_INT(ev.leases, 1);
	CHECK_EQ_INT(cpuhp_cpuset_count(&ev.online_cpus), 2);
	CHECK(cpuhp_cpuset_has(&ev.online_cpus, 2) && !cpuhp_cpuset_has(&ev.online_cpus, 1));
	CHECK_EQ_INT(cpuhp_client_next_event(c, 0, &ev), -EAGAIN);
	CHECK_EQ_INT(cpuhp_client_lease_release(c, lease), -ESTALE);
	CHECK(strstr(cpuhp_client_last_message(c), "changed") != NULL);
	cpuhp_client_close(c);
	fake_finish(&f);
}

static void script_event_flood(int fd)
{
	uint64_t watch_id, id;
	unsigned i;

	srv_hello(fd);
	watch_id = srv_expect(fd, CPUHP__REQUEST__BODY_WATCH);
	send_watch_started(fd, watch_id);
	id = srv_expect(fd, CPUHP__REQUEST__BODY_LEASE_ACQUIRE);
	for (i = 0; i < CPUHP_CLIENT_EVENT_QUEUE_MAX + 10; i++)
		send_event_online_changed(fd, watch_id, "0");
	send_lease_granted(fd, id, 1);
	send_event_online_changed(fd, watch_id, "0-1");
	srv_wait_close(fd);
}

static void client_event_queue_overflow_is_reported_as_lost(void)
{
	struct cpuhp_client_event ev;
	struct cpuhp_client *c;
	uint64_t lease;
	struct fake f;
	unsigned i;

	fake_start(&f, script_event_flood);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_watch(c), 0);
	CHECK_EQ_INT(cpuhp_client_lease_acquire(c, 0, &lease), 0);
	for (i = 0; i < CPUHP_CLIENT_EVENT_QUEUE_MAX; i++) {
		CHECK_EQ_INT(cpuhp_client_next_event(c, 0, &ev), 0);
		CHECK_EQ_INT(ev.type, CPUHP_CLIENT_EVENT_ONLINE_CHANGED);
	}
	CHECK_EQ_INT(cpuhp_client_next_event(c, 0, &ev), 0);
	CHECK_EQ_INT(ev.type, CPUHP_CLIENT_EVENT_LOST);
	CHECK_EQ_INT(ev.lost, 10);
	CHECK_EQ_INT(cpuhp_client_next_event(c, -1, &ev), 0);
	CHECK_EQ_INT(ev.type, CPUHP_CLIENT_EVENT_ONLINE_CHANGED);
	CHECK_EQ_INT(cpuhp_cpuset_count(&ev.online_cpus), 2);
	cpuhp_client_close(c);
	fake_finish(&f);
}

/* --- hotplug and status ---------------------------------------------------- */

static void script_set_online(int fd)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__SetOnlineReply reply = CPUHP__SET_ONLINE_REPLY__INIT;
	Cpuhp__CpuResult res[3] = {CPUHP__CPU_RESULT__INIT, CPUHP__CPU_RESULT__INIT,
	                           CPUHP__CPU_RESULT__INIT};
	Cpuhp__CpuResult *rp[3] = {&res[0], &res[1], &res[2]};
	Cpuhp__Request *req;
	int round;

	srv_hello(fd);
	res[0].cpu = 1;
	res[0].ok = true;
	res[0].changed = false;
	res[1].cpu = 2;
	res[1].ok = true;
	res[1].changed = true;
	res[2].cpu = 3;
	res[2].code = CPUHP__ERROR_CODE__ERR_EBUSY;
	res[2].message = "cpu3/online: Device or resource busy";
	reply.n_results = 3;
	reply.results = rp;
	reply.online = "0-1";
	for (round = 0; round < 2; round++) {
		req = srv_read(fd);
		CHECK_EQ_INT(req->body_case, CPUHP__REQUEST__BODY_SET_ONLINE);
		CHECK_EQ_STR(req->set_online->cpus, "1-3");
		CHECK(!req->set_online->online);
		CHECK_EQ_INT(req->set_online->timeout_ms, 300);
		r.id = req->id;
		r.body_case = CPUHP__RESPONSE__BODY_SET_ONLINE;
		r.set_online = &reply;
		srv_send(fd, &r);
		cpuhp__request__free_unpacked(req, NULL);
	}
	srv_error(fd, srv_expect(fd, CPUHP__REQUEST__BODY_SET_ONLINE),
	          CPUHP__ERROR_CODE__ERR_ETIMEDOUT, "2 leases still held after 300 ms");
	srv_wait_close(fd);
}

static void client_set_online_gives_per_cpu_results(void)
{
	struct cpuhp_client_cpu_result *r = NULL;
	struct cpuhp_client *c;
	size_t n = 0;
	struct fake f;

	fake_start(&f, script_set_online);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_set_online_results(c, "1-3", false, 300, &r, &n), 0);
	CHECK_EQ_INT(n, 3);
	CHECK(r[0].cpu == 1 && r[0].error == 0 && !r[0].changed);
	CHECK(r[1].cpu == 2 && r[1].error == 0 && r[1].changed);
	CHECK(r[2].cpu == 3 && r[2].error == -EBUSY && !r[2].changed);
	CHECK_EQ_STR(r[2].message, "cpu3/online: Device or resource busy");
	cpuhp_client_results_free(r);

	/* The simple form fails with the first CPU's error and names it. */
	CHECK_EQ_INT(cpuhp_client_set_online(c, "1-3", false, 300), -EBUSY);
	CHECK(strstr(cpuhp_client_last_message(c), "CPU 3") != NULL);

	r = NULL;
	CHECK_EQ_INT(cpuhp_client_set_online_results(c, "1-3", false, 300, &r, &n), -ETIMEDOUT);
	CHECK(r == NULL);
	CHECK_EQ_STR(cpuhp_client_last_message(c), "2 leases still held after 300 ms");
	cpuhp_client_close(c);
	fake_finish(&f);
}

static void send_status(int fd, uint64_t id, char *online)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Status s = CPUHP__STATUS__INIT;

	s.online = online;
	s.offline = "2-3\n";
	s.possible = "0-3";
	s.present = "0-3";
	s.leases_held = 4;
	s.writer = CPUHP__WRITER_STATE__WRITER_WAITING;
	s.pending_leases = 2;
	s.pending_hotplugs = 1;
	s.connections = 9;
	s.daemon_version = "0.1.0";
	r.id = id;
	r.body_case = CPUHP__RESPONSE__BODY_STATUS;
	r.status = &s;
	srv_send(fd, &r);
}

static void script_status(int fd)
{
	srv_hello(fd);
	send_status(fd, srv_expect(fd, CPUHP__REQUEST__BODY_STATUS), "0-1");
	send_status(fd, srv_expect(fd, CPUHP__REQUEST__BODY_STATUS), "0-1,zebra");
	srv_wait_close(fd);
}

static void client_status_parses_masks_and_refuses_bad_ones(void)
{
	struct cpuhp_client_status *st = calloc(1, sizeof(*st));
	struct cpuhp_client *c;
	struct fake f;

	CHECK(st != NULL);
	fake_start(&f, script_status);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_status(c, st), 0);
	CHECK_EQ_INT(cpuhp_cpuset_count(&st->online), 2);
	CHECK(cpuhp_cpuset_has(&st->offline, 3));
	CHECK_EQ_INT(cpuhp_cpuset_count(&st->possible), 4);
	CHECK_EQ_INT(cpuhp_cpuset_count(&st->present), 4);
	CHECK_EQ_INT(st->leases_held, 4);
	CHECK_EQ_INT(st->writer, CPUHP_CLIENT_WRITER_WAITING);
	CHECK_EQ_INT(st->pending_leases, 2);
	CHECK_EQ_INT(st->pending_hotplugs, 1);
	CHECK_EQ_INT(st->connections, 9);
	CHECK_EQ_STR(st->daemon_version, "0.1.0");

	st->leases_held = 1234;
	CHECK_EQ_INT(cpuhp_client_status(c, st), -EPROTO);
	CHECK(strstr(cpuhp_client_last_message(c), "zebra") != NULL);
	CHECK_EQ_INT(st->leases_held, 1234); /* untouched on failure */
	cpuhp_client_close(c);
	fake_finish(&f);
	free(st);
}

/* --- a daemon that misbehaves or goes away ------------------------------------ */

static void script_close_mid_call(int fd)
{
	srv_hello(fd);
	srv_expect(fd, CPUHP__REQUEST__BODY_LEASE_ACQUIRE);
	/* Half a frame, then gone. */
	write_exact(fd, "\0\0\0\x10\x08", 5);
}

static void client_vanishing_daemon_fails_calls_for_good(void)
{
	struct cpuhp_client *c;
	uint64_t lease;
	struct fake f;

	fake_start(&f, script_close_mid_call);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_lease_acquire(c, 0, &lease), -ECONNRESET);
	CHECK(strstr(cpuhp_client_last_message(c), "middle of a frame") != NULL);
	fake_finish(&f);
	/* Sticky: no write to a dead socket, same error, no SIGPIPE. */
	CHECK_EQ_INT(cpuhp_client_lease_release(c, 1), -ECONNRESET);
	CHECK(strstr(cpuhp_client_last_message(c), "reconnect") != NULL);
	cpuhp_client_close(c);
}

static void script_bad_frames(int fd)
{
	srv_hello(fd);
	srv_expect(fd, CPUHP__REQUEST__BODY_STATUS);
	write_exact(fd, "\0\0\0\0", 4);
	srv_wait_close(fd);
}

static void script_oversize_frame(int fd)
{
	srv_hello(fd);
	srv_expect(fd, CPUHP__REQUEST__BODY_STATUS);
	write_exact(fd, "\0\x01\0\x01", 4);
	srv_wait_close(fd);
}

static void script_garbage_payload(int fd)
{
	srv_hello(fd);
	srv_expect(fd, CPUHP__REQUEST__BODY_STATUS);
	write_exact(fd, "\0\0\0\x03\x0a\x40\x01", 7);
	srv_wait_close(fd);
}

static void client_bad_frames_from_daemon_are_protocol_errors(void)
{
	struct cpuhp_client_status *st = malloc(sizeof(*st));
	struct cpuhp_client *c;
	struct fake f;

	CHECK(st != NULL);
	fake_start(&f, script_bad_frames);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_status(c, st), -EPROTO);
	cpuhp_client_close(c);
	fake_finish(&f);

	fake_start(&f, script_oversize_frame);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_status(c, st), -EMSGSIZE);
	cpuhp_client_close(c);
	fake_finish(&f);

	fake_start(&f, script_garbage_payload);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_status(c, st), -EPROTO);
	cpuhp_client_close(c);
	fake_finish(&f);
	free(st);
}

static void script_shutdown_while_watching(int fd)
{
	srv_hello(fd);
	send_watch_started(fd, srv_expect(fd, CPUHP__REQUEST__BODY_WATCH));
	srv_error(fd, 0, CPUHP__ERROR_CODE__ERR_ECANCELED, "cpuhpd is shutting down");
}

static void client_watch_ends_with_the_daemons_shutdown_error(void)
{
	struct cpuhp_client_event ev;
	struct cpuhp_client *c;
	struct fake f;

	fake_start(&f, script_shutdown_while_watching);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_watch(c), 0);
	CHECK_EQ_INT(cpuhp_client_next_event(c, -1, &ev), -ECANCELED);
	CHECK_EQ_STR(cpuhp_client_last_message(c), "cpuhpd is shutting down");
	CHECK_EQ_INT(cpuhp_client_next_event(c, -1, &ev), -ECANCELED);
	fake_finish(&f);
	cpuhp_client_close(c);
}

/* --- asynchronous calls ----------------------------------------------------- */

/* The test thread says "go on" through this pipe: the script answers only then. */
static int go_pipe[2];

static void srv_wait_go(void)
{
	char b;

	CHECK_EQ_INT(read(go_pipe[0], &b, 1), 1);
}

static void test_go(void)
{
	CHECK_EQ_INT(write(go_pipe[1], "g", 1), 1);
}

/* Poll @call's fd and read until it is done. */
static int call_wait(struct cpuhp_client_call *call)
{
	int ret;

	while ((ret = cpuhp_client_call_done(call)) == -EINPROGRESS) {
		struct pollfd pfd = {.fd = cpuhp_client_call_fd(call), .events = POLLIN};

		CHECK(pfd.fd >= 0);
		CHECK_EQ_INT(poll(&pfd, 1, -1), 1);
	}
	CHECK_EQ_INT(cpuhp_client_call_fd(call), -1);
	return ret;
}

static void script_lease_begin(int fd)
{
	Cpuhp__Request *req;
	uint64_t id;
	int w;

	srv_hello(fd);
	w = srv_accept();
	/* The hello and the request come back to back, before any answer. */
	srv_hello_reply_later(w);
	req = srv_read(w);
	CHECK_EQ_INT(req->body_case, CPUHP__REQUEST__BODY_LEASE_ACQUIRE);
	CHECK_EQ_INT(req->lease_acquire->timeout_ms, 500);
	id = req->id;
	cpuhp__request__free_unpacked(req, NULL);
	srv_wait_go();
	srv_send_hello_reply(w);
	send_lease_granted(w, id, 7);
	/* Released on the connection it is held on, which then closes. */
	srv_lease_released(w, 7);
	srv_wait_close(w);
	close(w);
	srv_wait_close(fd);
}

static void client_lease_begin_waits_on_a_connection_of_its_own_and_the_lease_is_the_handles(void)
{
	struct cpuhp_client_call *call;
	struct cpuhp_client *c;
	struct fake f;
	uint64_t id = 0;

	CHECK_EQ_INT(pipe(go_pipe), 0);
	fake_start(&f, script_lease_begin);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_lease_acquire_begin(c, 500, &call), 0);
	CHECK(cpuhp_client_call_fd(call) >= 0 && cpuhp_client_call_fd(call) != cpuhp_client_fd(c));
	CHECK_EQ_INT(cpuhp_client_call_done(call), -EINPROGRESS); /* the fake waits for go */
	CHECK_EQ_INT(cpuhp_client_call_lease_acquire(call, &id), -EINVAL);
	test_go();
	CHECK_EQ_INT(call_wait(call), 0);
	CHECK_EQ_INT(cpuhp_client_call_done(call), 0); /* and stays so */
	CHECK_EQ_INT(cpuhp_client_call_lease_acquire(call, &id), 0);
	CHECK_EQ_INT(id, 7);
	CHECK_EQ_STR(cpuhp_client_call_message(call), "");
	cpuhp_client_call_free(call); /* the lease is c's now */
	CHECK_EQ_INT(cpuhp_client_lease_release(c, 7), 0);
	cpuhp_client_close(c);
	fake_finish(&f);
	close(go_pipe[0]);
	close(go_pipe[1]);
}

static void script_call_freed_early(int fd)
{
	Cpuhp__Request *req;
	int w;

	srv_hello(fd);
	w = srv_accept();
	srv_hello_reply_later(w);
	req = srv_read(w);
	CHECK_EQ_INT(req->body_case, CPUHP__REQUEST__BODY_SET_ONLINE);
	CHECK_EQ_STR(req->set_online->cpus, "2-3");
	CHECK(!req->set_online->online);
	CHECK_EQ_INT(req->set_online->timeout_ms, 4000);
	cpuhp__request__free_unpacked(req, NULL);
	test_go();         /* "read": from the fake's side of the pipe, to the test */
	srv_wait_close(w); /* the call gave up: its connection closes, unanswered */
	close(w);
	srv_wait_close(fd);
}

static void client_call_freed_before_its_answer_closes_its_connection(void)
{
	struct cpuhp_client_call *call;
	struct cpuhp_client *c;
	struct fake f;

	CHECK_EQ_INT(pipe(go_pipe), 0);
	fake_start(&f, script_call_freed_early);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_set_online_results_begin(c, "2-3", false, 4000, &call), 0);
	srv_wait_go(); /* the fake read the request */
	CHECK_EQ_INT(cpuhp_client_call_done(call), -EINPROGRESS);
	cpuhp_client_call_free(call);
	cpuhp_client_close(c);
	fake_finish(&f);
	close(go_pipe[0]);
	close(go_pipe[1]);
}

static void script_call_answers(int fd)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__SetOnlineReply reply = CPUHP__SET_ONLINE_REPLY__INIT;
	Cpuhp__CpuResult res = CPUHP__CPU_RESULT__INIT;
	Cpuhp__CpuResult *rp = &res;
	int w;

	srv_hello(fd);
	/* A lease that cannot be had at once. */
	w = srv_accept();
	srv_hello(w);
	srv_error(w, srv_expect(w, CPUHP__REQUEST__BODY_LEASE_ACQUIRE),
	          CPUHP__ERROR_CODE__ERR_EAGAIN, "a CPU hotplug is waiting or running");
	srv_wait_close(w); /* closed at once when it failed */
	close(w);
	/* A hotplug and its results. */
	w = srv_accept();
	srv_hello(w);
	res.cpu = 2;
	res.ok = true;
	res.changed = true;
	reply.n_results = 1;
	reply.results = &rp;
	reply.online = "0-1,3";
	r.id = srv_expect(w, CPUHP__REQUEST__BODY_SET_ONLINE);
	r.body_case = CPUHP__RESPONSE__BODY_SET_ONLINE;
	r.set_online = &reply;
	srv_send(w, &r);
	srv_wait_close(w);
	close(w);
	/* A status. */
	w = srv_accept();
	srv_hello(w);
	send_status(w, srv_expect(w, CPUHP__REQUEST__BODY_STATUS), "0-1");
	srv_wait_close(w);
	close(w);
	/* A daemon that refuses the connection (its hello answered with an Error id 0). */
	w = srv_accept();
	srv_read_any(w); /* the hello */
	srv_read_any(w); /* the status request */
	srv_error(w, 0, CPUHP__ERROR_CODE__ERR_EUSERS, "too many connections");
	close(w);
	srv_wait_close(fd);
}

static void client_calls_give_the_answers_and_errors_of_the_blocking_calls(void)
{
	struct cpuhp_client_status *st = calloc(1, sizeof(*st));
	struct cpuhp_client_cpu_result *res;
	struct cpuhp_client_call *call;
	struct cpuhp_client *c;
	struct fake f;
	uint64_t id;
	size_t n;

	CHECK(st != NULL);
	fake_start(&f, script_call_answers);
	c = connect_ok(&f);

	CHECK_EQ_INT(cpuhp_client_lease_acquire_begin(c, 0, &call), 0);
	CHECK_EQ_INT(call_wait(call), -EAGAIN);
	CHECK_EQ_INT(cpuhp_client_call_done(call), -EAGAIN);
	CHECK_EQ_STR(cpuhp_client_call_message(call), "a CPU hotplug is waiting or running");
	CHECK_EQ_INT(cpuhp_client_call_lease_acquire(call, &id), -EAGAIN);
	cpuhp_client_call_free(call);

	CHECK_EQ_INT(cpuhp_client_set_online_results_begin(c, "2", false, 100, &call), 0);
	CHECK_EQ_INT(call_wait(call), 0);
	CHECK_EQ_INT(cpuhp_client_call_status(call, st), -EINVAL); /* not a status call */
	CHECK_EQ_INT(cpuhp_client_call_set_online_results(call, &res, &n), 0);
	CHECK_EQ_INT(n, 1);
	CHECK(res[0].cpu == 2 && res[0].error == 0 && res[0].changed);
	cpuhp_client_results_free(res);
	cpuhp_client_call_free(call);

	CHECK_EQ_INT(cpuhp_client_status_begin(c, &call), 0);
	CHECK_EQ_INT(call_wait(call), 0);
	CHECK_EQ_INT(cpuhp_client_call_status(call, st), 0);
	CHECK_EQ_INT(cpuhp_cpuset_count(&st->online), 2);
	CHECK_EQ_INT(st->connections, 9);
	cpuhp_client_call_free(call);

	CHECK_EQ_INT(cpuhp_client_status_begin(c, &call), 0);
	CHECK_EQ_INT(call_wait(call), -EUSERS);
	CHECK_EQ_STR(cpuhp_client_call_message(call), "too many connections");
	cpuhp_client_call_free(call);

	cpuhp_client_call_free(NULL);
	cpuhp_client_close(c);
	fake_finish(&f);
	free(st);
}

/* A LeaseList with one socket lease, one waiting hotplug of @cpus and one freeze. */
static void send_lease_list(int fd, uint64_t id, char *cpus)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__LeaseList l = CPUHP__LEASE_LIST__INIT;
	Cpuhp__LeaseInfo li = CPUHP__LEASE_INFO__INIT;
	Cpuhp__HotplugInfo hi = CPUHP__HOTPLUG_INFO__INIT;
	Cpuhp__FreezeInfo fi = CPUHP__FREEZE_INFO__INIT;
	Cpuhp__LeaseInfo *lp = &li;
	Cpuhp__HotplugInfo *hp = &hi;
	Cpuhp__FreezeInfo *fp = &fi;

	li.lease_id = 11;
	li.pid = 4242;
	li.comm = "resize-pools";
	li.who = "pools";
	li.why = "sizing";
	hi.cpus = cpus;
	hi.seq = 3;
	hi.state = CPUHP__WRITER_STATE__WRITER_WAITING;
	fi.freeze_id = 5;
	fi.comm = "bench";
	fi.who = "";
	fi.why = "";
	l.n_leases = 1;
	l.leases = &lp;
	l.n_hotplugs = 1;
	l.hotplugs = &hp;
	l.n_freezes = 1;
	l.freezes = &fp;
	r.id = id;
	r.body_case = CPUHP__RESPONSE__BODY_LEASE_LIST;
	r.lease_list = &l;
	srv_send(fd, &r);
}

static void script_leases_begin(int fd)
{
	int w;

	srv_hello(fd);
	for (int i = 0; i < 2; i++) {
		w = srv_accept();
		srv_hello(w);
		send_lease_list(w, srv_expect(w, CPUHP__REQUEST__BODY_LIST_LEASES),
		                i ? "2,zebra" : "2-3");
		srv_wait_close(w);
		close(w);
	}
	srv_wait_close(fd);
}

static void client_list_leases_begin_lists_on_a_connection_of_its_own(void)
{
	struct cpuhp_client_lease_list *l = NULL;
	struct cpuhp_client_status *st = calloc(1, sizeof(*st));
	struct cpuhp_client_call *call;
	struct cpuhp_client *c;
	struct fake f;

	CHECK(st != NULL);
	fake_start(&f, script_leases_begin);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_list_leases_begin(c, &call), 0);
	CHECK(cpuhp_client_call_fd(call) >= 0 && cpuhp_client_call_fd(call) != cpuhp_client_fd(c));
	CHECK_EQ_INT(cpuhp_client_call_list_leases(call, &l), -EINVAL); /* not done yet */
	CHECK_EQ_INT(call_wait(call), 0);
	CHECK_EQ_INT(cpuhp_client_call_status(call, st), -EINVAL); /* not a status call */
	CHECK_EQ_INT(cpuhp_client_call_list_leases(call, &l), 0);
	CHECK_EQ_INT(l->n_leases, 1);
	CHECK_EQ_INT(l->leases[0].lease_id, 11);
	CHECK_EQ_STR(l->leases[0].comm, "resize-pools");
	CHECK_EQ_STR(l->leases[0].who, "pools");
	CHECK_EQ_INT(l->n_hotplugs, 1);
	CHECK_EQ_INT(cpuhp_cpuset_count(&l->hotplugs[0].cpus), 2);
	CHECK_EQ_INT(l->hotplugs[0].state, CPUHP_CLIENT_WRITER_WAITING);
	CHECK_EQ_INT(l->n_freezes, 1);
	CHECK_EQ_INT(l->freezes[0].freeze_id, 5);
	cpuhp_client_lease_list_free(l);
	cpuhp_client_call_free(call);

	/* A list that does not parse: the getter's error, with the message on the call. */
	l = NULL;
	CHECK_EQ_INT(cpuhp_client_list_leases_begin(c, &call), 0);
	CHECK_EQ_INT(call_wait(call), 0);
	CHECK_EQ_INT(cpuhp_client_call_list_leases(call, &l), -EPROTO);
	CHECK(l == NULL);
	CHECK(strstr(cpuhp_client_call_message(call), "2,zebra") != NULL);
	cpuhp_client_call_free(call);

	cpuhp_client_close(c);
	fake_finish(&f);
	free(st);
}

/*
 * One page of leases: lease @lease_id; @next the cursor of the page after
 * ("" for the last).  The request must have asked from @after.
 */
static void srv_lease_page(int fd, const char *after, uint64_t lease_id, const char *next)
{
	Cpuhp__Request *req = srv_read(fd);
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__LeaseList l = CPUHP__LEASE_LIST__INIT;
	Cpuhp__LeaseInfo li = CPUHP__LEASE_INFO__INIT;
	Cpuhp__LeaseInfo *lp = &li;

	CHECK_EQ_INT(req->body_case, CPUHP__REQUEST__BODY_LIST_LEASES);
	CHECK_EQ_INT(req->list_leases->after.len, strlen(after));
	/* Empty: no data at all, which memcmp() must not be given. */
	CHECK(!after[0] || !memcmp(req->list_leases->after.data, after, strlen(after)));
	li.lease_id = lease_id;
	li.comm = "x";
	li.who = "";
	li.why = "";
	l.n_leases = 1;
	l.leases = &lp;
	l.more = next[0] ? 1 : 0;
	l.next.data = (uint8_t *)next;
	l.next.len = strlen(next);
	r.id = req->id;
	r.body_case = CPUHP__RESPONSE__BODY_LEASE_LIST;
	r.lease_list = &l;
	srv_send(fd, &r);
	cpuhp__request__free_unpacked(req, NULL);
}

static void srv_state_page(int fd, const char *after, uint64_t state_id, const char *next)
{
	Cpuhp__Request *req = srv_read(fd);
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__StateList l = CPUHP__STATE_LIST__INIT;
	Cpuhp__StateInfo si = CPUHP__STATE_INFO__INIT;
	Cpuhp__StateInfo *sp = &si;

	CHECK_EQ_INT(req->body_case, CPUHP__REQUEST__BODY_LIST_STATES);
	CHECK_EQ_INT(req->list_states->after.len, strlen(after));
	/* Empty: no data at all, which memcmp() must not be given. */
	CHECK(!after[0] || !memcmp(req->list_states->after.data, after, strlen(after)));
	si.state_id = state_id;
	si.name = "st";
	si.comm = "x";
	si.cpus = "0-1";
	l.n_states = 1;
	l.states = &sp;
	l.more = next[0] ? 1 : 0;
	l.next.data = (uint8_t *)next;
	l.next.len = strlen(next);
	r.id = req->id;
	r.body_case = CPUHP__RESPONSE__BODY_STATE_LIST;
	r.state_list = &l;
	srv_send(fd, &r);
	cpuhp__request__free_unpacked(req, NULL);
}

static void script_pages(int fd)
{
	int w;

	srv_hello(fd);
	srv_lease_page(fd, "", 1, "c1");
	srv_lease_page(fd, "c1", 2, "c2");
	srv_lease_page(fd, "c2", 3, "");
	srv_state_page(fd, "", 7, "s7");
	srv_state_page(fd, "s7", 8, "");
	w = srv_accept();
	srv_hello(w);
	srv_lease_page(w, "", 4, "c4");
	srv_lease_page(w, "c4", 5, "");
	srv_wait_close(w);
	close(w);
	srv_wait_close(fd);
}

static void client_listings_ask_for_every_page(void)
{
	struct cpuhp_client_lease_list *l = NULL;
	struct cpuhp_client_state_info *s = NULL;
	struct cpuhp_client_call *call;
	struct cpuhp_client *c;
	struct fake f;
	size_t n = 0;

	fake_start(&f, script_pages);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_list_leases(c, &l), 0);
	CHECK_EQ_INT(l->n_leases, 3);
	for (unsigned i = 0; i < 3; i++)
		CHECK_EQ_INT(l->leases[i].lease_id, i + 1);
	cpuhp_client_lease_list_free(l);
	CHECK_EQ_INT(cpuhp_client_list_states(c, &s, &n), 0);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(s[0].id, 7);
	CHECK_EQ_INT(s[1].id, 8);
	CHECK_EQ_INT(cpuhp_cpuset_count(&s[1].cpus), 2);
	free(s);

	/* The asynchronous form asks for the next page on its own connection. */
	CHECK_EQ_INT(cpuhp_client_list_leases_begin(c, &call), 0);
	CHECK_EQ_INT(call_wait(call), 0);
	CHECK_EQ_INT(cpuhp_client_call_list_leases(call, &l), 0);
	CHECK_EQ_INT(l->n_leases, 2);
	CHECK_EQ_INT(l->leases[0].lease_id, 4);
	CHECK_EQ_INT(l->leases[1].lease_id, 5);
	cpuhp_client_lease_list_free(l);
	/* Asked twice, the same rows. */
	CHECK_EQ_INT(cpuhp_client_call_list_leases(call, &l), 0);
	CHECK_EQ_INT(l->n_leases, 2);
	cpuhp_client_lease_list_free(l);
	cpuhp_client_call_free(call);

	cpuhp_client_close(c);
	fake_finish(&f);
}

/* A cpuhpd from before leases() and freezes: each request unknown, blocking or not. */
static void script_too_old(int fd)
{
	static const Cpuhp__Request__BodyCase bodies[] = {CPUHP__REQUEST__BODY_LIST_LEASES,
	                                                  CPUHP__REQUEST__BODY_FREEZE};
	int w;

	srv_hello(fd);
	for (int i = 0; i < 2; i++)
		srv_error(fd, srv_expect(fd, bodies[i]), CPUHP__ERROR_CODE__ERR_EOPNOTSUPP,
		          "unknown request");
	for (int i = 0; i < 2; i++) {
		w = srv_accept();
		srv_hello(w);
		srv_error(w, srv_expect(w, bodies[i]), CPUHP__ERROR_CODE__ERR_EOPNOTSUPP,
		          "unknown request");
		srv_wait_close(w);
		close(w);
	}
	srv_wait_close(fd);
}

static void client_too_old_daemon_is_named_by_blocking_and_async_calls(void)
{
	struct cpuhp_client_lease_list *l = NULL;
	struct cpuhp_client_call *call;
	struct cpuhp_client *c;
	uint64_t id = 0;
	struct fake f;

	fake_start(&f, script_too_old);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_list_leases(c, &l), -EOPNOTSUPP);
	CHECK_EQ_STR(cpuhp_client_last_message(c), "this cpuhpd is too old to list leases");
	CHECK_EQ_INT(cpuhp_client_freeze(c, NULL, NULL, &id), -EOPNOTSUPP);
	CHECK_EQ_STR(cpuhp_client_last_message(c), "this cpuhpd is too old to freeze hotplug");

	CHECK_EQ_INT(cpuhp_client_list_leases_begin(c, &call), 0);
	CHECK_EQ_INT(call_wait(call), -EOPNOTSUPP);
	CHECK_EQ_STR(cpuhp_client_call_message(call), "this cpuhpd is too old to list leases");
	cpuhp_client_call_free(call);
	CHECK_EQ_INT(cpuhp_client_freeze_begin(c, NULL, NULL, &call), 0);
	CHECK_EQ_INT(call_wait(call), -EOPNOTSUPP);
	CHECK_EQ_STR(cpuhp_client_call_message(call), "this cpuhpd is too old to freeze hotplug");
	CHECK_EQ_INT(cpuhp_client_call_freeze(call, &id), -EOPNOTSUPP);
	cpuhp_client_call_free(call);
	CHECK(l == NULL && id == 0);

	cpuhp_client_close(c);
	fake_finish(&f);
}

/* Read a Freeze (naming @who and @why) and grant it as @freeze. */
static void srv_frozen(int fd, const char *who, const char *why, uint64_t freeze)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Frozen fz = CPUHP__FROZEN__INIT;
	Cpuhp__Request *req = srv_read(fd);

	CHECK_EQ_INT(req->body_case, CPUHP__REQUEST__BODY_FREEZE);
	CHECK_EQ_STR(req->freeze->who, who);
	CHECK_EQ_STR(req->freeze->why, why);
	fz.freeze_id = freeze;
	r.id = req->id;
	r.body_case = CPUHP__RESPONSE__BODY_FROZEN;
	r.frozen = &fz;
	srv_send(fd, &r);
	cpuhp__request__free_unpacked(req, NULL);
}

static void script_freeze_begin(int fd)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Thawed th = CPUHP__THAWED__INIT;
	Cpuhp__Identified idd = CPUHP__IDENTIFIED__INIT;
	Cpuhp__Request *req;
	int w, w2;

	srv_hello(fd);
	/* Thawed on the connection that holds it, which then closes. */
	w = srv_accept();
	srv_hello(w);
	srv_frozen(w, "bench", "", 5);
	/* A lease release of the freeze's id goes to the handle's connection. */
	srv_error(fd, srv_expect(fd, CPUHP__REQUEST__BODY_LEASE_RELEASE),
	          CPUHP__ERROR_CODE__ERR_ESRCH, "no lease 5 on this connection");
	req = srv_read(w);
	CHECK_EQ_INT(req->body_case, CPUHP__REQUEST__BODY_THAW);
	CHECK_EQ_INT(req->thaw->freeze_id, 5);
	th.freeze_id = 5;
	r.id = req->id;
	r.body_case = CPUHP__RESPONSE__BODY_THAWED;
	r.thawed = &th;
	srv_send(w, &r);
	cpuhp__request__free_unpacked(req, NULL);
	srv_wait_close(w);
	close(w);
	/* Named by the handle; held until the handle closes. */
	req = srv_read(fd);
	CHECK_EQ_INT(req->body_case, CPUHP__REQUEST__BODY_IDENTIFY);
	r = (Cpuhp__Response)CPUHP__RESPONSE__INIT;
	r.id = req->id;
	r.body_case = CPUHP__RESPONSE__BODY_IDENTIFIED;
	r.identified = &idd;
	srv_send(fd, &r);
	cpuhp__request__free_unpacked(req, NULL);
	w2 = srv_accept();
	srv_hello(w2);
	srv_frozen(w2, "pools", "sizing", 6);
	srv_wait_close(w2);
	close(w2);
	srv_wait_close(fd);
}

static void client_freeze_begin_holds_the_freeze_on_its_connection_for_the_handle(void)
{
	struct cpuhp_client_call *call;
	struct cpuhp_client *c;
	struct fake f;
	uint64_t id = 0;

	fake_start(&f, script_freeze_begin);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_freeze_begin(c, "bench", NULL, &call), 0);
	CHECK(cpuhp_client_call_fd(call) >= 0 && cpuhp_client_call_fd(call) != cpuhp_client_fd(c));
	CHECK_EQ_INT(cpuhp_client_call_freeze(call, &id), -EINVAL); /* not done yet */
	CHECK_EQ_INT(call_wait(call), 0);
	CHECK_EQ_INT(cpuhp_client_call_lease_acquire(call, &id), -EINVAL); /* not a lease call */
	CHECK_EQ_INT(cpuhp_client_call_freeze(call, &id), 0);
	CHECK_EQ_INT(id, 5);
	cpuhp_client_call_free(call); /* the freeze is c's now */
	/* Lease and freeze ids are apart: this one is no lease of c's. */
	CHECK_EQ_INT(cpuhp_client_lease_release(c, 5), -ESRCH);
	CHECK_EQ_INT(cpuhp_client_thaw(c, 5), 0);

	CHECK_EQ_INT(cpuhp_client_set_identity(c, "pools", "sizing"), 0);
	/* Bytes that are not UTF-8 are refused before anything is sent (cpuhpd would too). */
	CHECK_EQ_INT(cpuhp_client_set_identity(c, "bad\xff", NULL), -EINVAL);
	CHECK(strstr(cpuhp_client_last_message(c), "UTF-8") != NULL);
	CHECK_EQ_INT(cpuhp_client_freeze_begin(c, NULL, "cut \xc3", &call), -EINVAL);
	CHECK_EQ_INT(cpuhp_client_freeze_begin(c, NULL, NULL, &call), 0);
	CHECK_EQ_INT(call_wait(call), 0);
	CHECK_EQ_INT(cpuhp_client_call_freeze(call, &id), 0);
	CHECK_EQ_INT(id, 6);
	cpuhp_client_call_free(call);
	cpuhp_client_close(c); /* closes the freeze's connection too */
	fake_finish(&f);
}

/* --- close while another thread waits ------------------------------------------ */

/*
 * Before the fix, cpuhp_client_close() freed the handle under a thread
 * blocked in a call on it: a heap-use-after-free in recv_keep_fds() (calls
 * on the handle's socket) or fallback_add() (a lease wait on a connection
 * of its own) under ASan, and a lease "granted" on a freed handle in the
 * plain build.  Now close wakes the call, which returns -ECANCELED, and
 * frees the handle after.  Each case: the fake takes the request and never
 * answers; the test closes the handle once the request arrived (so the call
 * is inside the library), and the call must return -ECANCELED.
 */

/* The fake says "the request is here" through this pipe. */
static int arrived_pipe[2];

static void srv_arrived(void)
{
	CHECK_EQ_INT(write(arrived_pipe[1], "a", 1), 1);
}

static void test_wait_arrived(void)
{
	char b;

	CHECK_EQ_INT(read(arrived_pipe[0], &b, 1), 1);
}

/* One request on the handle's connection, never answered. */
static void script_hold_request(int fd)
{
	srv_hello(fd);
	srv_read_any(fd);
	srv_arrived();
	srv_wait_close(fd); /* close shut the connection down */
}

/* One request on a connection of its own (hello awaited or not), never answered. */
static void script_hold_own(int fd, bool answer_hello)
{
	int w;

	srv_hello(fd);
	w = srv_accept();
	if (answer_hello)
		srv_hello(w);
	else
		srv_hello_reply_later(w);
	srv_read_any(w);
	srv_arrived();
	srv_wait_close(w);
	close(w);
	srv_wait_close(fd);
}

static void script_hold_own_lease(int fd)
{
	script_hold_own(fd, false);
}

static void script_hold_own_state(int fd)
{
	script_hold_own(fd, true);
}

/* The watch answered, then nothing: next_event(-1) waits. */
static void script_watch_then_hold(int fd)
{
	srv_hello(fd);
	send_watch_started(fd, srv_expect(fd, CPUHP__REQUEST__BODY_WATCH));
	srv_wait_close(fd);
}

enum waiter_call {
	WAIT_LEASE,
	WAIT_LEASE_AS,
	WAIT_SET_ONLINE,
	WAIT_STATUS,
	WAIT_EVENT,
	WAIT_STATE,
};

struct waiter {
	struct cpuhp_client *c;
	enum waiter_call call;
	int ret;
	pid_t tid;
	uint64_t lease;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct cpuhp_client_status *st = malloc(sizeof(*st));
	struct cpuhp_client_event *ev = malloc(sizeof(*ev));
	struct cpuhp_client_state *state = NULL;

	__atomic_store_n(&w->tid, gettid(), __ATOMIC_RELEASE);
	switch (w->call) {
	case WAIT_LEASE:
		w->ret = cpuhp_client_lease_acquire(w->c, 5000, &w->lease);
		break;
	case WAIT_LEASE_AS:
		w->ret = cpuhp_client_lease_acquire_as(w->c, 5000, "t", "close", &w->lease);
		break;
	case WAIT_SET_ONLINE:
		w->ret = cpuhp_client_set_online(w->c, "1", false, 5000);
		break;
	case WAIT_STATUS:
		w->ret = cpuhp_client_status(w->c, st);
		break;
	case WAIT_EVENT:
		w->ret = cpuhp_client_next_event(w->c, -1, ev);
		break;
	case WAIT_STATE:
		w->ret = cpuhp_client_state_register(
		    w->c, "close-test", 0, 0, CPUHP_CLIENT_STATE_NOCALLS, NULL, NULL, NULL, &state);
		break;
	}
	free(st);
	free(ev);
	return NULL;
}

/* The thread blocks in recvmsg(): what /proc says it waits in (no sleep, no timing). */
static void wait_in_recvmsg(pid_t tid)
{
	char path[64], buf[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	for (;;) {
		FILE *f = fopen(path, "r");
		bool in = f && fgets(buf, sizeof(buf), f) && atoi(buf) == SYS_recvmsg;

		if (f)
			fclose(f);
		if (in)
			return;
		sched_yield();
	}
}

static void close_under(void (*script)(int fd), enum waiter_call call)
{
	struct waiter w = {.call = call, .ret = 1};
	struct fake f;
	pthread_t t;

	CHECK_EQ_INT(pipe(arrived_pipe), 0);
	fake_start(&f, script);
	w.c = connect_ok(&f);
	if (call == WAIT_EVENT)
		CHECK_EQ_INT(cpuhp_client_watch(w.c), 0);
	CHECK_EQ_INT(pthread_create(&t, NULL, waiter_main, &w), 0);
	if (call == WAIT_EVENT) {
		while (!__atomic_load_n(&w.tid, __ATOMIC_ACQUIRE))
			sched_yield();
		wait_in_recvmsg(w.tid);
	} else {
		test_wait_arrived();
	}
	cpuhp_client_close(w.c); /* returns once the waiter has left the handle */
	CHECK_EQ_INT(pthread_join(t, NULL), 0);
	CHECK_EQ_INT(w.ret, -ECANCELED);
	fake_finish(&f);
	close(arrived_pipe[0]);
	close(arrived_pipe[1]);
}

static void client_close_wakes_a_socket_lease_wait_with_ecanceled(void)
{
	close_under(script_hold_request, WAIT_LEASE);
}

static void client_close_wakes_a_lease_wait_on_a_connection_of_its_own(void)
{
	close_under(script_hold_own_lease, WAIT_LEASE_AS);
}

static void client_close_wakes_set_online_and_status(void)
{
	close_under(script_hold_request, WAIT_SET_ONLINE);
	close_under(script_hold_request, WAIT_STATUS);
}

static void client_close_wakes_next_event(void)
{
	close_under(script_watch_then_hold, WAIT_EVENT);
}

static void client_close_wakes_a_state_registration(void)
{
	close_under(script_hold_own_state, WAIT_STATE);
}

/* --- hotplug states ----------------------------------------------------------- */

/* What the states' callbacks saw, in order: "s0" startup of CPU 0, "t1r" a rollback teardown. */
static char state_log[256];
static int state_fail_cpu = -1; /* a startup of this CPU fails */

static int log_call(struct cpuhp_client_state_call *call, void *arg)
{
	char *end = state_log + strlen(state_log);

	(void)arg;
	snprintf(end, sizeof(state_log) - (size_t)(end - state_log), "%s%c%u%s",
	         state_log[0] ? " " : "", call->teardown ? 't' : 's', call->cpu,
	         call->rollback ? "r" : "");
	return !call->teardown && (int)call->cpu == state_fail_cpu ? -EBUSY : 0;
}

static void srv_state_call(int fd, uint64_t reg_id, unsigned cpu, bool teardown, bool rollback,
                           uint64_t call_id)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__StateCall sc = CPUHP__STATE_CALL__INIT;

	sc.state_id = 7;
	sc.cpu = cpu;
	sc.phase =
	    teardown ? CPUHP__STATE_PHASE__PHASE_TEARDOWN : CPUHP__STATE_PHASE__PHASE_STARTUP;
	sc.rollback = rollback;
	sc.call_id = call_id;
	r.id = reg_id;
	r.body_case = CPUHP__RESPONSE__BODY_STATE_CALL;
	r.state_call = &sc;
	srv_send(fd, &r);
}

/*
 * Read the StateAnswer to @call_id (@skipped: whether it says so); a bound
 * (never reached when the client answers) ends a hang.
 */
static bool srv_state_answer_skipped(int fd, uint64_t call_id, bool *skipped)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	Cpuhp__Request *req;
	bool ok;

	CHECK_EQ_INT(poll(&p, 1, 10000), 1);
	req = srv_read(fd);
	CHECK_EQ_INT(req->body_case, CPUHP__REQUEST__BODY_STATE_ANSWER);
	CHECK_EQ_INT(req->state_answer->call_id, call_id);
	ok = req->state_answer->ok;
	*skipped = req->state_answer->skipped;
	cpuhp__request__free_unpacked(req, NULL);
	return ok;
}

static bool srv_state_answer(int fd, uint64_t call_id)
{
	bool skipped;
	bool ok = srv_state_answer_skipped(fd, call_id, &skipped);

	CHECK(!skipped);
	return ok;
}

static void srv_state_removed(int fd)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__StateRemoved sr = CPUHP__STATE_REMOVED__INIT;

	r.id = srv_expect(fd, CPUHP__REQUEST__BODY_REMOVE_STATE);
	sr.state_id = 7;
	r.body_case = CPUHP__RESPONSE__BODY_STATE_REMOVED;
	r.state_removed = &sr;
	srv_send(fd, &r);
}

/*
 * The registration's reply and a hotplug's StateCall in one write: the
 * client reads both in one recvmsg(), and the call must still be run.
 */
static void script_call_with_the_reply(int fd)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT, call = CPUHP__RESPONSE__INIT;
	Cpuhp__StateRegistered sr = CPUHP__STATE_REGISTERED__INIT;
	Cpuhp__StateCall sc = CPUHP__STATE_CALL__INIT;
	uint8_t *f1, *f2, both[256];
	size_t l1, l2;
	int w;

	srv_hello(fd);
	w = srv_accept();
	srv_hello(w);
	r.id = call.id = srv_expect(w, CPUHP__REQUEST__BODY_REGISTER_STATE);
	sr.state_id = 7;
	r.body_case = CPUHP__RESPONSE__BODY_STATE_REGISTERED;
	r.state_registered = &sr;
	sc.state_id = 7;
	sc.cpu = 3;
	sc.phase = CPUHP__STATE_PHASE__PHASE_TEARDOWN;
	sc.call_id = 1;
	call.body_case = CPUHP__RESPONSE__BODY_STATE_CALL;
	call.state_call = &sc;
	CHECK_EQ_INT(cpuhp__frame_pack_response(&r, &f1, &l1), 0);
	CHECK_EQ_INT(cpuhp__frame_pack_response(&call, &f2, &l2), 0);
	CHECK(l1 + l2 <= sizeof(both));
	memcpy(both, f1, l1);
	memcpy(both + l1, f2, l2);
	write_exact(w, both, l1 + l2);
	free(f1);
	free(f2);
	CHECK(srv_state_answer(w, 1));
	srv_arrived();
	srv_state_removed(w);
	srv_wait_close(w);
	close(w);
	srv_wait_close(fd);
}

static void client_state_runs_a_call_read_with_the_registration_reply(void)
{
	struct cpuhp_client_state *s;
	struct cpuhp_client *c;
	struct fake f;

	/* Without a thread: register runs it before returning, so that poll() sees all the rest. */
	CHECK_EQ_INT(pipe(arrived_pipe), 0);
	state_log[0] = '\0';
	fake_start(&f, script_call_with_the_reply);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_state_register(c, "with-reply", 0, 0, CPUHP_CLIENT_STATE_NOCALLS,
	                                         log_call, log_call, NULL, &s),
	             0);
	CHECK_EQ_STR(state_log, "t3");
	test_wait_arrived();
	CHECK_EQ_INT(cpuhp_client_state_remove(s, true), 0);
	cpuhp_client_close(c);
	fake_finish(&f);

	/* With the library's thread: it runs what was read before it polls. */
	state_log[0] = '\0';
	fake_start(&f, script_call_with_the_reply);
	c = connect_ok(&f);
	CHECK_EQ_INT(
	    cpuhp_client_state_register(c, "with-reply", 0, 0,
	                                CPUHP_CLIENT_STATE_NOCALLS | CPUHP_CLIENT_STATE_THREAD,
	                                log_call, log_call, NULL, &s),
	    0);
	test_wait_arrived(); /* the answer came: the thread's log line is written */
	CHECK_EQ_STR(state_log, "t3");
	CHECK_EQ_INT(cpuhp_client_state_remove(s, true), 0);
	cpuhp_client_close(c);
	fake_finish(&f);
	close(arrived_pipe[0]);
	close(arrived_pipe[1]);
}

/*
 * The handle's hello, then a state's connection: its hello, its
 * RegisterState (*@reg), and the startup of CPU 0 called and answered.
 * Return: that connection.
 */
static int srv_state_registering(int fd, uint64_t *reg)
{
	int w;

	srv_hello(fd);
	w = srv_accept();
	srv_hello(w);
	*reg = srv_expect(w, CPUHP__REQUEST__BODY_REGISTER_STATE);
	srv_state_call(w, *reg, 0, false, false, 1);
	CHECK(srv_state_answer(w, 1));
	return w;
}

/* Startups on CPUs 0 and 1, answered; then nothing (close comes) or the daemon's rollback. */
static bool script_rolls_back;

static void script_startups_then_hold(int fd)
{
	uint64_t reg;
	int w = srv_state_registering(fd, &reg);

	srv_state_call(w, reg, 1, false, false, 2);
	if (script_rolls_back) {
		/* The startup of CPU 1 fails: the daemon tears CPU 0 down, then refuses. */
		CHECK(!srv_state_answer(w, 2));
		srv_state_call(w, reg, 0, true, true, 3);
		CHECK(srv_state_answer(w, 3));
		srv_error(w, reg, CPUHP__ERROR_CODE__ERR_EBUSY, "startup of state 'x' failed");
	} else {
		CHECK(srv_state_answer(w, 2));
		srv_arrived();
	}
	srv_wait_close(w);
	close(w);
	srv_wait_close(fd);
}

struct registrar {
	struct cpuhp_client *c;
	unsigned flags;
	int ret;
};

static void *registrar_main(void *arg)
{
	struct registrar *r = arg;
	struct cpuhp_client_state *s = NULL;

	r->ret =
	    cpuhp_client_state_register(r->c, "undo", 0, 0, r->flags, log_call, log_call, NULL, &s);
	CHECK(r->ret < 0 && s == NULL);
	return NULL;
}

/*
 * cpuhp_client_close() during a registration: the startups that ran
 * are torn down on the registering thread (last CPU first, as rollbacks),
 * since the daemon forgets the state with its connection and calls nothing.
 */
static void client_close_during_a_registration_tears_its_startups_down(void)
{
	for (unsigned threaded = 0; threaded < 2; threaded++) {
		struct registrar r = {.flags = threaded ? CPUHP_CLIENT_STATE_THREAD : 0};
		struct fake f;
		pthread_t t;

		CHECK_EQ_INT(pipe(arrived_pipe), 0);
		state_log[0] = '\0';
		script_rolls_back = false;
		fake_start(&f, script_startups_then_hold);
		r.c = connect_ok(&f);
		CHECK_EQ_INT(pthread_create(&t, NULL, registrar_main, &r), 0);
		test_wait_arrived(); /* both startups answered; the reply never comes */
		cpuhp_client_close(r.c);
		CHECK_EQ_INT(pthread_join(t, NULL), 0);
		CHECK_EQ_INT(r.ret, -ECANCELED);
		CHECK_EQ_STR(state_log, "s0 s1 t1r t0r");
		fake_finish(&f);
		close(arrived_pipe[0]);
		close(arrived_pipe[1]);
	}
}

/* A registration the daemon rolled back itself: nothing is torn down twice. */
static void client_registration_refused_after_the_daemons_rollback_undoes_nothing_more(void)
{
	struct cpuhp_client_state *s = NULL;
	struct cpuhp_client *c;
	struct fake f;

	state_log[0] = '\0';
	state_fail_cpu = 1;
	script_rolls_back = true;
	fake_start(&f, script_startups_then_hold);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_state_register(c, "undo", 0, 0, 0, log_call, log_call, NULL, &s),
	             -EBUSY);
	CHECK_EQ_STR(state_log, "s0 s1 t0r");
	cpuhp_client_close(c);
	fake_finish(&f);
	state_fail_cpu = -1;
}

/* A batch of three startups (CPUs 1-3) in one write; the client fails CPU 2's. */
static void script_batch(int fd)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT, calls[3];
	Cpuhp__StateRegistered sr = CPUHP__STATE_REGISTERED__INIT;
	Cpuhp__StateCall sc[3];
	Cpuhp__Request *req;
	uint8_t buf[512];
	size_t len = 0;
	bool skipped;
	int w;

	srv_hello(fd);
	w = srv_accept();
	req = srv_read(w);
	CHECK_EQ_INT(req->body_case, CPUHP__REQUEST__BODY_HELLO);
	CHECK(req->hello->state_batch); /* a state's connection runs batches */
	srv_send_hello(w, req->id, CPUHP__PROTO_VERSION);
	cpuhp__request__free_unpacked(req, NULL);
	r.id = srv_expect(w, CPUHP__REQUEST__BODY_REGISTER_STATE);
	sr.state_id = 7;
	r.body_case = CPUHP__RESPONSE__BODY_STATE_REGISTERED;
	r.state_registered = &sr;
	srv_send(w, &r);
	for (unsigned i = 0; i < 3; i++) {
		uint8_t *f;
		size_t l;

		cpuhp__response__init(&calls[i]);
		cpuhp__state_call__init(&sc[i]);
		sc[i].state_id = 7;
		sc[i].cpu = i + 1;
		sc[i].phase = CPUHP__STATE_PHASE__PHASE_STARTUP;
		sc[i].call_id = 5 + i;
		sc[i].batch = 5;
		calls[i].id = r.id;
		calls[i].body_case = CPUHP__RESPONSE__BODY_STATE_CALL;
		calls[i].state_call = &sc[i];
		CHECK_EQ_INT(cpuhp__frame_pack_response(&calls[i], &f, &l), 0);
		CHECK(len + l <= sizeof(buf));
		memcpy(buf + len, f, l);
		len += l;
		free(f);
	}
	write_exact(w, buf, len);
	CHECK(srv_state_answer_skipped(w, 5, &skipped) && !skipped);
	CHECK(!srv_state_answer_skipped(w, 6, &skipped) && !skipped);
	CHECK(!srv_state_answer_skipped(w, 7, &skipped) && skipped);
	srv_arrived();
	srv_state_removed(w);
	srv_wait_close(w);
	close(w);
	srv_wait_close(fd);
}

/* A batch: run in order, each answered; after a failure the rest is answered skipped, not run. */
static void client_state_runs_a_batch_in_order_and_skips_the_rest_after_a_failure(void)
{
	for (unsigned threaded = 0; threaded < 2; threaded++) {
		struct cpuhp_client_state *s;
		struct cpuhp_client *c;
		struct fake f;

		CHECK_EQ_INT(pipe(arrived_pipe), 0);
		state_log[0] = '\0';
		state_fail_cpu = 2;
		fake_start(&f, script_batch);
		c = connect_ok(&f);
		CHECK_EQ_INT(
		    cpuhp_client_state_register(c, "batch", 0, 0,
		                                CPUHP_CLIENT_STATE_NOCALLS |
		                                    (threaded ? CPUHP_CLIENT_STATE_THREAD : 0),
		                                log_call, log_call, NULL, &s),
		    0);
		while (!threaded && strlen(state_log) < 5) { /* "s1 s2": both ran */
			struct pollfd p = {.fd = cpuhp_client_state_fd(s), .events = POLLIN};

			CHECK_EQ_INT(poll(&p, 1, 10000), 1);
			CHECK(cpuhp_client_state_dispatch(s) >= 0);
		}
		test_wait_arrived(); /* the fake has the three answers */
		CHECK_EQ_INT(cpuhp_client_state_remove(s, true), 0);
		CHECK_EQ_STR(state_log, "s1 s2");
		cpuhp_client_close(c);
		fake_finish(&f);
		close(arrived_pipe[0]);
		close(arrived_pipe[1]);
		state_fail_cpu = -1;
	}
}

/* The test says "go on" to the fake through this pipe (the other way round from arrived). */
static int go_pipe[2];

/*
 * A shared state's registration: a startup answered, then (once the test
 * closed the handle) the reply; the hub, whose registration close
 * abandoned, must remove the state with its teardown.
 */
static void script_shared_abandoned(int fd)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__StateRegistered sr = CPUHP__STATE_REGISTERED__INIT;
	Cpuhp__Request *req;
	uint64_t reg;
	char b;
	int w = srv_state_registering(fd, &reg);

	srv_arrived();
	CHECK_EQ_INT(read(go_pipe[0], &b, 1), 1); /* the handle is closed */
	r.id = reg;
	sr.state_id = 7;
	r.body_case = CPUHP__RESPONSE__BODY_STATE_REGISTERED;
	r.state_registered = &sr;
	srv_send(w, &r);
	req = srv_read(w);
	CHECK_EQ_INT(req->body_case, CPUHP__REQUEST__BODY_REMOVE_STATE);
	CHECK_EQ_INT(req->remove_state->state_id, 7);
	CHECK(!req->remove_state->nocalls);
	r.id = req->id;
	cpuhp__request__free_unpacked(req, NULL);
	srv_state_call(w, reg, 0, true, false, 2);
	CHECK(srv_state_answer(w, 2));
	{
		Cpuhp__StateRemoved rem = CPUHP__STATE_REMOVED__INIT;

		rem.state_id = 7;
		r.body_case = CPUHP__RESPONSE__BODY_STATE_REMOVED;
		r.state_removed = &rem;
		srv_send(w, &r);
	}
	srv_wait_close(w); /* the hub's last reference went with the state */
	close(w);
	srv_wait_close(fd);
}

/*
 * close() during a shared state's registration: the registration returns
 * -ECANCELED at once, and the hub removes the state once the daemon
 * registered it, its startups torn down on the hub's thread.
 */
static void client_close_during_a_shared_registration_has_the_hub_remove_it(void)
{
	struct registrar r = {.flags = CPUHP_CLIENT_STATE_SHARED};
	struct fake f;
	pthread_t t;

	CHECK_EQ_INT(pipe(arrived_pipe), 0);
	CHECK_EQ_INT(pipe(go_pipe), 0);
	state_log[0] = '\0';
	fake_start(&f, script_shared_abandoned);
	r.c = connect_ok(&f);
	CHECK_EQ_INT(pthread_create(&t, NULL, registrar_main, &r), 0);
	test_wait_arrived();
	cpuhp_client_close(r.c); /* returns once the registration has left */
	CHECK_EQ_INT(pthread_join(t, NULL), 0);
	CHECK_EQ_INT(r.ret, -ECANCELED);
	CHECK_EQ_INT(write(go_pipe[1], "g", 1), 1);
	fake_finish(&f); /* the fake saw the removal and the hub's connection end */
	CHECK_EQ_STR(state_log, "s0 t0");
	for (int i = 0; i < 2; i++) {
		close(arrived_pipe[i]);
		close(go_pipe[i]);
	}
}

static void srv_state_registered(int fd, uint64_t id, uint64_t state_id)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__StateRegistered sr = CPUHP__STATE_REGISTERED__INIT;

	sr.state_id = state_id;
	r.id = id;
	r.body_case = CPUHP__RESPONSE__BODY_STATE_REGISTERED;
	r.state_registered = &sr;
	srv_send(fd, &r);
}

/* A shared state; its connection ends (cpuhpd restarted); a new shared state gets a new one. */
static void script_shared_restart(int fd)
{
	int w;

	srv_hello(fd);
	w = srv_accept();
	srv_hello(w);
	srv_state_registered(w, srv_expect(w, CPUHP__REQUEST__BODY_REGISTER_STATE), 7);
	close(w);
	w = srv_accept();
	srv_hello(w);
	srv_state_registered(w, srv_expect(w, CPUHP__REQUEST__BODY_REGISTER_STATE), 8);
	srv_state_removed(w);
	srv_wait_close(w); /* its last state removed, the hub closes */
	close(w);
	srv_wait_close(fd);
}

static void client_shared_states_get_a_new_connection_after_theirs_ended(void)
{
	struct cpuhp_client_state *a, *b;
	struct cpuhp_client *c;
	struct fake f;

	fake_start(&f, script_shared_restart);
	c = connect_ok(&f);
	CHECK_EQ_INT(cpuhp_client_state_register(
	                 c, "a", 0, 0, CPUHP_CLIENT_STATE_SHARED | CPUHP_CLIENT_STATE_NOCALLS, NULL,
	                 NULL, NULL, &a),
	             0);
	/* Its connection is gone: the removal says so (the state went with it). */
	CHECK(cpuhp_client_state_remove(a, true) < 0);
	CHECK_EQ_INT(cpuhp_client_state_register(
	                 c, "b", 0, 0, CPUHP_CLIENT_STATE_SHARED | CPUHP_CLIENT_STATE_NOCALLS, NULL,
	                 NULL, NULL, &b),
	             0);
	CHECK_EQ_INT(cpuhp_client_state_id(b), 8);
	CHECK_EQ_INT(cpuhp_client_state_remove(b, true), 0);
	cpuhp_client_close(c);
	fake_finish(&f);
}

int main(void)
{
	RUN_TEST(client_connect_says_hello_with_version_and_name);
	RUN_TEST(client_connect_path_null_uses_cpuhp_socket_env);
	RUN_TEST(client_socket_path_is_env_unless_unset_or_empty);
	RUN_TEST(client_connect_fails_on_version_mismatch_or_refusal);
	RUN_TEST(client_connect_reports_unreachable_daemon);
	RUN_TEST(client_lease_calls_map_replies_and_errors);
	RUN_TEST(client_events_arriving_during_a_call_are_kept_in_order);
	RUN_TEST(client_notices_to_a_lease_holder_come_without_a_watch);
	RUN_TEST(client_event_queue_overflow_is_reported_as_lost);
	RUN_TEST(client_set_online_gives_per_cpu_results);
	RUN_TEST(client_status_parses_masks_and_refuses_bad_ones);
	RUN_TEST(client_vanishing_daemon_fails_calls_for_good);
	RUN_TEST(client_bad_frames_from_daemon_are_protocol_errors);
	RUN_TEST(client_watch_ends_with_the_daemons_shutdown_error);
	RUN_TEST(client_lease_begin_waits_on_a_connection_of_its_own_and_the_lease_is_the_handles);
	RUN_TEST(client_call_freed_before_its_answer_closes_its_connection);
	RUN_TEST(client_calls_give_the_answers_and_errors_of_the_blocking_calls);
	RUN_TEST(client_list_leases_begin_lists_on_a_connection_of_its_own);
	RUN_TEST(client_listings_ask_for_every_page);
	RUN_TEST(client_too_old_daemon_is_named_by_blocking_and_async_calls);
	RUN_TEST(client_freeze_begin_holds_the_freeze_on_its_connection_for_the_handle);
	RUN_TEST(client_close_wakes_a_socket_lease_wait_with_ecanceled);
	RUN_TEST(client_close_wakes_a_lease_wait_on_a_connection_of_its_own);
	RUN_TEST(client_close_wakes_set_online_and_status);
	RUN_TEST(client_close_wakes_next_event);
	RUN_TEST(client_close_wakes_a_state_registration);
	RUN_TEST(client_state_runs_a_call_read_with_the_registration_reply);
	RUN_TEST(client_close_during_a_registration_tears_its_startups_down);
	RUN_TEST(client_registration_refused_after_the_daemons_rollback_undoes_nothing_more);
	RUN_TEST(client_state_runs_a_batch_in_order_and_skips_the_rest_after_a_failure);
	RUN_TEST(client_close_during_a_shared_registration_has_the_hub_remove_it);
	RUN_TEST(client_shared_states_get_a_new_connection_after_theirs_ended);
	return 0;
}
