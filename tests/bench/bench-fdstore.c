/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-fdstore: what the restart state costs a client with the fd store on.
 *
 * With the store on, cpuhpd records every change a client is told of (a
 * lease granted, a lease released) in a memfd before it answers.  This
 * process plays the service manager (it serves NOTIFY_SOCKET and closes
 * every descriptor put in the store) and times a socket lease
 * acquire+release pair, two changes, on one connection of a private cpuhpd:
 *
 *   - without the store, 10 idle clients: the baseline;
 *   - with the store, 10 idle clients;
 *   - with the store, 1,000 clients holding a lease each;
 *   - with the store, 62 clients each with a 64 KiB frame half sent (one
 *     user's share of buffered bytes);
 *   - with the store, 64 clients holding 64 leases each, named with
 *     255-byte who and why.
 *
 * Each line prints the median and its ratio to the baseline of the same
 * cpuhpd.  Given several cpuhpd binaries (a change's before and after), it
 * runs each in turn within one run, so that their ratios compare.
 *
 * Usage: bench-fdstore [--quick] CPUHPD-SIMSYSFS CPUHPD...
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cpuhp.pb-c.h"
#include "frame.h"

#include "bench-daemon.h"

extern char **environ;

static unsigned pairs = 400;
static struct bench_dir bd;
static uint64_t next_id = 1;

static void die(const char *what, int err)
{
	fprintf(stderr, "bench-fdstore: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

/* ---------------------------------------------------------- the manager */

static int notify_fd = -1;
static pthread_t notify_thread;

/* Take every message; close what it carries: nothing is kept, as at a stop. */
static void *notify_run(void *arg)
{
	char buf[4096], cbuf[CMSG_SPACE(16 * sizeof(int))];

	(void)arg;
	for (;;) {
		struct iovec iov = {buf, sizeof(buf)};
		struct msghdr m = {.msg_iov = &iov,
		                   .msg_iovlen = 1,
		                   .msg_control = cbuf,
		                   .msg_controllen = sizeof(cbuf)};
		ssize_t n = recvmsg(notify_fd, &m, MSG_CMSG_CLOEXEC);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				close(fd);
			}
		}
		if (n == 4 && !memcmp(buf, "QUIT", 4))
			return NULL;
	}
}

static pid_t spawn(const char *cpuhpd, bool store)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char notify[sizeof(sa.sun_path) + 16], **env;
	char *argv[] = {(char *)cpuhpd, "--socket", bd.sock, "--sysfs-root", bd.sys_root,
	                "--no-netlink", "--client-timeout-ms", "600000",
	                /* a store for 5,000 clients, or none */
	                store ? "--fd-store-max" : NULL, "10010", NULL};
	posix_spawn_file_actions_t fa;
	char buf[256];
	size_t n = 0;
	pid_t pid;
	int err;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", bd.dir);
	unlink(sa.sun_path);
	notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (notify_fd < 0 || bind(notify_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("notify socket", errno);
	while (environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		die("calloc", ENOMEM);
	memcpy(env, environ, n * sizeof(*env));
	snprintf(notify, sizeof(notify), "NOTIFY_SOCKET=%s", sa.sun_path);
	env[n] = notify;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, bd.log, O_WRONLY | O_CREAT | O_TRUNC,
	                                 0644);
	err = posix_spawn(&pid, cpuhpd, &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	if (err)
		die(cpuhpd, err);
	/* READY=1 first, then the thread takes the rest. */
	for (;;) {
		struct pollfd pfd = {.fd = notify_fd, .events = POLLIN};
		ssize_t len;
		int st;

		if (waitpid(pid, &st, WNOHANG) == pid) {
			fprintf(stderr, "bench-fdstore: %s exited before READY=1; see %s\n", cpuhpd,
			        bd.log);
			exit(1);
		}
		if (poll(&pfd, 1, 100) != 1)
			continue;
		len = recv(notify_fd, buf, sizeof(buf) - 1, 0);
		if (len < 0)
			die("notify", errno);
		buf[len] = '\0';
		if (strstr(buf, "READY=1"))
			break;
	}
	err = pthread_create(&notify_thread, NULL, notify_run, NULL);
	if (err)
		die("pthread_create", err);
	return pid;
}

static void stop(pid_t pid)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int st, fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	kill(pid, SIGKILL); /* nothing to hand over: the store is thrown away */
	waitpid(pid, &st, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", bd.dir);
	sendto(fd, "QUIT", 4, 0, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	pthread_join(notify_thread, NULL);
	close(notify_fd);
	unlink(sa.sun_path);
}

/* ---------------------------------------------------------- the protocol */

struct client {
	int fd;
	struct cpuhp__frame_decoder dec;
	uint8_t buf[4096];
	size_t have, off;
};

static void send_all(int fd, const void *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("write", errno);
		p = (const char *)p + n;
		len -= (size_t)n;
	}
}

static void send_req(struct client *c, Cpuhp__Request *rq)
{
	uint8_t *frame;
	size_t len;
	int err;

	rq->id = next_id++;
	err = cpuhp__frame_pack_request(rq, &frame, &len);
	if (err)
		die("pack", err);
	send_all(c->fd, frame, len);
	free(frame);
}

static Cpuhp__Response *recv_resp(struct client *c)
{
	for (;;) {
		const uint8_t *payload;
		size_t plen;
		Cpuhp__Response *r;

		while (c->off < c->have) {
			ssize_t n = cpuhp__frame_decoder_feed(&c->dec, c->buf + c->off,
			                                      c->have - c->off, &payload, &plen);

			if (n < 0)
				die("frame", (int)n);
			c->off += (size_t)n;
			if (payload) {
				if (cpuhp__frame_unpack_response(payload, plen, &r))
					die("unpack", EPROTO);
				return r;
			}
		}
		ssize_t n = read(c->fd, c->buf, sizeof(c->buf));

		if (n <= 0)
			die("read (cpuhpd closed the connection?)", n < 0 ? errno : EPIPE);
		c->have = (size_t)n;
		c->off = 0;
	}
}

static Cpuhp__Response *call(struct client *c, Cpuhp__Request *rq, int body)
{
	Cpuhp__Response *r;

	send_req(c, rq);
	r = recv_resp(c);
	if ((int)r->body_case != body) {
		fprintf(stderr, "bench-fdstore: unexpected reply %d (error: %s)\n", r->body_case,
		        r->body_case == CPUHP__RESPONSE__BODY_ERROR ? r->error->message : "");
		exit(1);
	}
	return r;
}

static struct client *connect_hello(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct client *c = calloc(1, sizeof(*c));
	Cpuhp__Request rq = CPUHP__REQUEST__INIT;
	Cpuhp__Hello h = CPUHP__HELLO__INIT;

	if (!c)
		die("calloc", ENOMEM);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", bd.sock);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect", errno);
	cpuhp__frame_decoder_init(&c->dec, 0);
	h.version = CPUHP__PROTO_VERSION;
	h.client_name = "bench-fdstore";
	rq.body_case = CPUHP__REQUEST__BODY_HELLO;
	rq.hello = &h;
	cpuhp__response__free_unpacked(call(c, &rq, CPUHP__RESPONSE__BODY_HELLO), NULL);
	return c;
}

static uint64_t acquire(struct client *c, const char *who, const char *why)
{
	Cpuhp__Request rq = CPUHP__REQUEST__INIT;
	Cpuhp__LeaseAcquire a = CPUHP__LEASE_ACQUIRE__INIT;
	Cpuhp__Response *r;
	uint64_t id;

	a.who = (char *)who;
	a.why = (char *)why;
	rq.body_case = CPUHP__REQUEST__BODY_LEASE_ACQUIRE;
	rq.lease_acquire = &a;
	r = call(c, &rq, CPUHP__RESPONSE__BODY_LEASE_GRANTED);
	id = r->lease_granted->lease_id;
	cpuhp__response__free_unpacked(r, NULL);
	return id;
}

static void release(struct client *c, uint64_t id)
{
	Cpuhp__Request rq = CPUHP__REQUEST__INIT;
	Cpuhp__LeaseRelease rl = CPUHP__LEASE_RELEASE__INIT;

	rl.lease_id = id;
	rq.body_case = CPUHP__REQUEST__BODY_LEASE_RELEASE;
	rq.lease_release = &rl;
	cpuhp__response__free_unpacked(call(c, &rq, CPUHP__RESPONSE__BODY_LEASE_RELEASED), NULL);
}

static void drop(struct client *c)
{
	close(c->fd);
	cpuhp__frame_decoder_fini(&c->dec);
	free(c);
}

/* ---------------------------------------------------------- the scenarios */

enum scenario { QUIET, QUIET_STORE, HOLDERS, HALF_FRAMES, NAMED, NSCENARIOS };

static const char *const names[NSCENARIOS] = {
    [QUIET] = "no store, 10 clients (baseline)",
    [QUIET_STORE] = "store, 10 clients",
    [HOLDERS] = "store, 1,000 lease holders",
    [HALF_FRAMES] = "store, 62 frames of 64 KiB half sent",
    [NAMED] = "store, 64 x 64 leases named at 255 bytes",
};

/* The crowd a scenario adds; Return: how many connections, in @out. */
static unsigned crowd(enum scenario sc, struct client **out)
{
	static char name[256];
	unsigned n = 0;

	memset(name, 'x', 255);
	switch (sc) {
	case QUIET:
	case QUIET_STORE:
		for (; n < 10; n++)
			out[n] = connect_hello();
		break;
	case HOLDERS:
		for (; n < 1000; n++) {
			out[n] = connect_hello();
			acquire(out[n], "", "");
		}
		break;
	case HALF_FRAMES:
		for (; n < 62; n++) {
			static uint8_t part[32768 + CPUHP__FRAME_HDR];

			out[n] = connect_hello();
			cpuhp__frame_put_header(part, CPUHP__FRAME_MAX);
			memset(part + CPUHP__FRAME_HDR, 0x55, sizeof(part) - CPUHP__FRAME_HDR);
			send_all(out[n]->fd, part, sizeof(part));
		}
		/* Read by now: a request on another connection comes after them all. */
		{
			struct client *c = connect_hello();

			drop(c);
		}
		break;
	case NAMED:
		for (; n < 64; n++) {
			out[n] = connect_hello();
			for (unsigned k = 0; k < 64; k++)
				acquire(out[n], name, name);
		}
		break;
	default:
		break;
	}
	return n;
}

static uint64_t measure(void)
{
	struct client *c = connect_hello();
	uint64_t *ns = calloc(pairs, sizeof(*ns)), med;

	if (!ns)
		die("calloc", ENOMEM);
	for (unsigned i = 0; i < pairs / 10; i++) /* warm up */
		release(c, acquire(c, "", ""));
	for (unsigned i = 0; i < pairs; i++) {
		uint64_t t0 = bench_now_ns();

		release(c, acquire(c, "", ""));
		ns[i] = bench_now_ns() - t0;
	}
	med = bench_median_ns(ns, pairs);
	free(ns);
	drop(c);
	return med;
}

int main(int argc, char **argv)
{
	static struct client *conns[1100];
	struct rlimit rl;
	int a = 1, err;

	if (argc > 1 && !strcmp(argv[1], "--quick")) {
		pairs = 40;
		a++;
	}
	if (argc - a < 2) {
		fprintf(stderr, "usage: bench-fdstore [--quick] CPUHPD-SIMSYSFS CPUHPD...\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	err = bench_dir_make(&bd);
	if (err)
		die("mkdtemp", err);
	{
		char *sim[] = {argv[a], bd.sys_root, "--cpus", "0-3", NULL};

		err = bench_run_wait(sim);
		if (err)
			die("cpuhpd-simsysfs", err);
	}
	printf("socket lease acquire+release with the fd store (median of %u pairs)\n", pairs);
	for (int b = a + 1; b < argc; b++) {
		uint64_t base = 0;

		printf("\n%s\n", argv[b]);
		for (int sc = 0; sc < NSCENARIOS; sc++) {
			pid_t pid = spawn(argv[b], sc != QUIET);
			unsigned n = crowd((enum scenario)sc, conns);
			uint64_t med = measure();

			if (sc == QUIET)
				base = med;
			printf("  %-42s %9.1f us  x%.1f\n", names[sc], med / 1e3,
			       (double)med / (double)base);
			fflush(stdout);
			while (n--)
				drop(conns[n]);
			stop(pid);
		}
	}
	bench_dir_remove(&bd);
	return 0;
}
