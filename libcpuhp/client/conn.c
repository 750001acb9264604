/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A connection to cpuhpd: connecting (the socket, the daemon's uid, the
 * Hello that agrees on the protocol), frames out and in (with the
 * descriptors that come with a frame), the connection's end, and closing.
 * Which reply answers which request is request.c's.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "text.h"

#include "client-fastpath.h"
#include "client-internal.h"

int cpuhp__client_kill(struct cpuhp_client *c, int err, const char *what)
{
	c->dead = err;
	/* @what may be the message already (the daemon's last word): no overlapping copy. */
	if (what != c->message)
		cpuhp__client_error(c, err, "%s", what);
	return err;
}

int cpuhp__client_end(struct cpuhp_client *c, int err, const char *what)
{
	struct cpuhp__fast *f = atomic_load_explicit(&c->fast, memory_order_acquire);
	bool first = !c->dead;

	cpuhp__client_kill(c, err, what);
	atomic_store_explicit(&c->ended, true, memory_order_relaxed);
	if (!first)
		return err;
	/* The fast leases first: from here on no fast lease is granted on @c. */
	c->leases_lost = cpuhp__fast_lost(f) + cpuhp__held_lost(c, true);
	c->leases_lost_pending = c->leases_lost > 0;
	return err;
}

int cpuhp__client_dead_error(struct cpuhp_client *c)
{
	return cpuhp__client_error(c, c->dead,
	                           "the connection to cpuhpd failed earlier; reconnect");
}

bool cpuhp__client_conn_ended(struct cpuhp_client *c)
{
	struct pollfd pfd = {.fd = c->fd, .events = POLLRDHUP};

	if (atomic_load_explicit(&c->ended, memory_order_relaxed))
		return true;
	/* POLLHUP: the peer closed; data it sent before may still be unread. */
	if (c->fd < 0 || poll(&pfd, 1, 0) != 1 || !(pfd.revents & (POLLHUP | POLLRDHUP | POLLERR)))
		return false;
	atomic_store_explicit(&c->ended, true, memory_order_relaxed);
	return true;
}

int cpuhp__client_send_all(struct cpuhp_client *c, const uint8_t *buf, size_t len)
{
	int ret = 0;

	pthread_mutex_lock(&c->send_lock);
	while (len) {
		ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		buf += n;
		len -= (size_t)n;
	}
	pthread_mutex_unlock(&c->send_lock);
	return ret;
}

/* Keep the descriptors of a control message; those beyond the limit are closed. */
static void keep_fds(struct cpuhp_client *c, struct msghdr *mh)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t i, n;
		int fd;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (c->nfds < CPUHP__CLIENT_MAX_FDS)
				c->fds[c->nfds++] = fd;
			else
				close(fd);
		}
	}
}

static void drop_fds(struct cpuhp_client *c)
{
	while (c->nfds)
		close(c->fds[--c->nfds]);
}

int cpuhp__client_take_fds(struct cpuhp_client *c, int *fds, unsigned n)
{
	if (c->nfds != n) {
		drop_fds(c);
		return -EBADMSG;
	}
	memcpy(fds, c->fds, n * sizeof(int));
	c->nfds = 0;
	return 0;
}

/*
 * recv() that keeps descriptors: they come with the first bytes of the frame
 * they belong to (proto/FRAMING.md), and a plain recv() would discard them.
 */
static ssize_t recv_keep_fds(struct cpuhp_client *c, int flags)
{
	char ctl[CMSG_SPACE(sizeof(int) * CPUHP__CLIENT_MAX_FDS)];
	struct iovec iov = {.iov_base = c->rbuf, .iov_len = sizeof(c->rbuf)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	mh.msg_control = ctl;
	mh.msg_controllen = sizeof(ctl);
	n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC | flags);
	if (n >= 0 && mh.msg_controllen)
		keep_fds(c, &mh);
	return n;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until the socket is readable: 0, or -EAGAIN / -ETIMEDOUT when @deadline passed. */
static int wait_readable(struct cpuhp_client *c, int timeout_ms, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
		int64_t left = timeout_ms <= 0 ? timeout_ms : deadline - now_ms();
		int n;

		if (timeout_ms > 0 && left < 0)
			left = 0;
		n = poll(&pfd, 1, (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n == 0)
			return timeout_ms == 0 ? -EAGAIN : -ETIMEDOUT;
	}
}

int cpuhp__client_read_ahead(struct cpuhp_client *c, Cpuhp__Response **out)
{
	while (c->rpos < c->rlen) {
		const uint8_t *payload;
		size_t plen;
		ssize_t n = cpuhp__frame_decoder_feed(&c->dec, c->rbuf + c->rpos, c->rlen - c->rpos,
		                                      &payload, &plen);

		if (n < 0)
			return cpuhp__client_kill(c, (int)n,
			                          n == -EMSGSIZE
			                              ? "cpuhpd sent a frame over the size limit"
			                              : "cpuhpd sent a malformed frame");
		c->rpos += (size_t)n;
		if (payload) {
			/* Unpack now: an in-place payload lives in rbuf until the next recv. */
			if (cpuhp__frame_unpack_response(payload, plen, out) < 0)
				return cpuhp__client_kill(
				    c, -EPROTO,
				    "cpuhpd sent a message that does not decode as a "
				    "Response (protocol mismatch?)");
			return 1;
		}
	}
	return 0;
}

int cpuhp__client_fill(struct cpuhp_client *c, bool nonblock)
{
	ssize_t n;

	do
		n = recv_keep_fds(c, nonblock ? MSG_DONTWAIT : 0);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return -EAGAIN;
	if (n < 0 && errno == ECONNRESET)
		return cpuhp__client_end(c, -ECONNRESET, "cpuhpd reset the connection");
	if (n < 0)
		return cpuhp__client_kill(c, -errno, "reading from cpuhpd failed");
	if (n == 0)
		return cpuhp__client_end(
		    c, -ECONNRESET,
		    cpuhp__frame_decoder_idle(&c->dec)
		        ? "cpuhpd closed the connection"
		        : "cpuhpd closed the connection in the middle of a frame");
	c->rpos = 0;
	c->rlen = (size_t)n;
	return 0;
}

int cpuhp__client_read(struct cpuhp_client *c, int timeout_ms, Cpuhp__Response **out)
{
	int64_t deadline = timeout_ms > 0 ? now_ms() + timeout_ms : 0;

	for (;;) {
		int ret = cpuhp__client_read_ahead(c, out);

		if (ret != 0)
			return ret < 0 ? ret : 0;
		if (timeout_ms >= 0) {
			ret = wait_readable(c, timeout_ms, deadline);
			if (ret == -EAGAIN || ret == -ETIMEDOUT)
				return cpuhp__client_error(c, ret, "no event within %d ms",
				                           timeout_ms);
			if (ret < 0)
				return cpuhp__client_kill(c, ret,
				                          "polling the cpuhpd socket failed");
		}
		ret = cpuhp__client_fill(c, false);
		if (ret < 0)
			return ret;
	}
}

/*
 * After a failed send the daemon may have said why before closing (too
 * many connections, shutting down): prefer its word over EPIPE.
 */
static int send_failed(struct cpuhp_client *c, int err)
{
	Cpuhp__Response *resp;

	if (cpuhp__client_read(c, 0, &resp) == 0) {
		bool said = resp->body_case == CPUHP__RESPONSE__BODY_ERROR;

		if (said)
			err = cpuhp__client_take_error(c, resp->error);
		cpuhp__response__free_unpacked(resp, NULL);
		if (said)
			return cpuhp__client_end(c, err, c->message);
	}
	if (c->dead)
		return c->dead; /* the read above found the end */
	return cpuhp__client_end(c, err,
	                         "sending to cpuhpd failed: the daemon closed the connection");
}

int cpuhp__client_send_request(struct cpuhp_client *c, Cpuhp__Request *req)
{
	uint8_t *frame;
	size_t len;
	int ret;

	if (c->dead)
		return cpuhp__client_dead_error(c);
	req->id = ++c->next_id;
	ret = cpuhp__frame_pack_request(req, &frame, &len);
	if (ret == 0 && len - CPUHP__FRAME_HDR > c->max_frame) {
		free(frame);
		ret = -EMSGSIZE;
	}
	if (ret == -EMSGSIZE)
		return cpuhp__client_error(c, ret,
		                           "request too large: over the daemon's frame limit of %u "
		                           "bytes",
		                           c->max_frame);
	if (ret < 0)
		return cpuhp__client_error(c, ret, "cannot encode the request");
	ret = cpuhp__client_send_all(c, frame, len);
	free(frame);
	return ret < 0 ? send_failed(c, ret) : 0;
}

static int hello_send(struct cpuhp_client *c, bool states)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__Hello hello = CPUHP__HELLO__INIT;
	char name[256];
	size_t name_len;
	int ret;

	hello.version = CPUHP__PROTO_VERSION;
	hello.client_name = program_invocation_short_name;
	hello.notices_to = c->notices_to;
	/* Any bytes may name a program; cpuhpd takes UTF-8 only (strfields.h). */
	name_len = strlen(hello.client_name);
	if (!cpuhp__text_utf8_valid(hello.client_name, name_len)) {
		cpuhp__text_escape(name, sizeof(name), hello.client_name, name_len, 0);
		hello.client_name = name;
	}
	/* A state's connection runs its calls as batches ask (state.c). */
	hello.state_batch = states;
	req.body_case = CPUHP__REQUEST__BODY_HELLO;
	req.hello = &hello;
	ret = cpuhp__client_send_request(c, &req);
	if (ret == 0)
		c->hello_id = req.id;
	return ret;
}

int cpuhp__client_hello_finish(struct cpuhp_client *c, int timeout_ms)
{
	Cpuhp__Response *resp;
	int ret;

	if (!c->hello_id)
		return 0;
	ret = cpuhp__client_await(c, c->hello_id, CPUHP__RESPONSE__BODY_HELLO, timeout_ms, &resp);
	if (ret != 0)
		return ret;
	c->hello_id = 0;
	if (resp->hello->version != CPUHP__PROTO_VERSION)
		ret = c->dead = cpuhp__client_error(
		    c, -EPROTONOSUPPORT, "cpuhpd speaks protocol version %u, this client %u",
		    resp->hello->version, CPUHP__PROTO_VERSION);
	else if (resp->hello->max_frame && resp->hello->max_frame < c->max_frame)
		c->max_frame = resp->hello->max_frame;
	c->fast_offered = ret == 0 && resp->hello->fast_path;
	c->conn_id = resp->hello->connection;
	c->max_delay_ms = resp->hello->max_delay_ms;
	cpuhp__response__free_unpacked(resp, NULL);
	return ret;
}

/* Blocking connect; a signal during it leaves the connect going on: wait for its end. */
static int connect_unix(int fd, const struct sockaddr_un *sa)
{
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};
	socklen_t len = sizeof(int);
	int err = 0;

	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
		return 0;
	if (errno != EINTR)
		return -errno;
	while (poll(&pfd, 1, -1) < 0)
		if (errno != EINTR)
			return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return -errno;
	return -err;
}

/*
 * Who answers on the socket: root, ourselves, or $CPUHP_DAEMON_UID.  The
 * peer's credentials are those of whoever bound the socket we are connected
 * to, whatever its path names by now: a user who could write the socket's
 * directory and bind a fake daemon there is refused here.
 */
static int check_daemon_uid(int fd)
{
	const char *env = getenv(CPUHP_CLIENT_DAEMON_UID_ENV);
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return -errno;
	if (cr.uid == 0 || cr.uid == geteuid())
		return 0;
	if (env && env[0]) {
		char *end;
		unsigned long uid;

		errno = 0;
		uid = strtoul(env, &end, 10);
		if (!errno && !*end && uid == cr.uid)
			return 0;
	}
	return -EPERM;
}

int cpuhp__client_open(const struct sockaddr_un *sa, unsigned how, uint32_t notices_to,
                       struct cpuhp_client **out)
{
	struct cpuhp_client *c;
	int ret;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	ret = -pthread_mutex_init(&c->lock, NULL);
	if (ret < 0)
		goto err_free;
	ret = -pthread_mutex_init(&c->send_lock, NULL);
	if (ret < 0) {
		pthread_mutex_destroy(&c->lock);
		goto err_free;
	}
	ret = -pthread_mutex_init(&c->fb_lock, NULL);
	if (ret < 0) {
		pthread_mutex_destroy(&c->send_lock);
		pthread_mutex_destroy(&c->lock);
		goto err_free;
	}
	ret = -pthread_mutex_init(&c->life_lock, NULL);
	if (ret == 0) {
		ret = -pthread_cond_init(&c->life_cond, NULL);
		if (ret < 0)
			pthread_mutex_destroy(&c->life_lock);
	}
	if (ret < 0) {
		pthread_mutex_destroy(&c->fb_lock);
		pthread_mutex_destroy(&c->send_lock);
		pthread_mutex_destroy(&c->lock);
		goto err_free;
	}
	c->sa = *sa;
	c->notices_to = notices_to;
	cpuhp__frame_decoder_init(&c->dec, CPUHP__FRAME_MAX);
	c->max_frame = CPUHP__FRAME_MAX;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		ret = -errno;
		goto err_mutex;
	}
	cpuhp__client_fork_track(c);
	ret = connect_unix(c->fd, sa);
	if (ret == 0)
		ret = check_daemon_uid(c->fd);
	if (ret < 0)
		goto err_close;
	ret = hello_send(c, how & CPUHP__OPEN_STATES);
	if (ret == 0 && (how & CPUHP__OPEN_AWAIT))
		ret = cpuhp__client_hello_finish(c, -1);
	if (ret < 0)
		goto err_close;
	c->message[0] = '\0';
	*out = c;
	return 0;

err_close:
	cpuhp__client_fork_untrack(c);
	drop_fds(c);
	if (c->fd >= 0)
		close(c->fd);
err_mutex:
	cpuhp__frame_decoder_fini(&c->dec);
	pthread_cond_destroy(&c->life_cond);
	pthread_mutex_destroy(&c->life_lock);
	pthread_mutex_destroy(&c->fb_lock);
	pthread_mutex_destroy(&c->send_lock);
	pthread_mutex_destroy(&c->lock);
err_free:
	free(c);
	return ret;
}

const char *cpuhp_client_socket_path(void)
{
	const char *env = getenv(CPUHP_CLIENT_SOCKET_ENV);

	return env && env[0] ? env : CPUHP_CLIENT_DEFAULT_SOCKET;
}

int cpuhp_client_connect(const char *path, struct cpuhp_client **out)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (!path)
		path = cpuhp_client_socket_path();
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	return cpuhp__client_open(&sa, CPUHP__OPEN_AWAIT, 0, out);
}

void cpuhp_client_close(struct cpuhp_client *c)
{
	bool forked;

	if (!c)
		return;
	/*
	 * In a fork child: its copy of the socket is closed already (fork.c),
	 * the fast path's memory is not mapped here (an address there may hold
	 * something else now), and the mutexes may have been held by a parent's
	 * thread: free the memory only.
	 */
	forked = cpuhp__client_forked(c);
	/* Threads waiting in calls on @c end them (-ECANCELED) before it is freed. */
	if (!forked)
		cpuhp__client_close_waiters(c);
	cpuhp__client_fork_untrack(c);
	/* Its shared states live on: the hub ends with the last of them (in a child: left). */
	if (!forked)
		cpuhp__hub_release(c);
	/* Fast leases still held end here, with the connection, as socket leases do. */
	cpuhp__client_fast_free(atomic_load_explicit(&c->fast, memory_order_relaxed), forked);
	cpuhp__client_fast_free(atomic_load_explicit(&c->retired, memory_order_relaxed), forked);
	cpuhp__held_close_all(c);
	drop_fds(c);
	if (c->fd >= 0)
		close(c->fd);
	cpuhp__client_events_free(c);
	cpuhp__frame_decoder_fini(&c->dec);
	if (!forked) {
		pthread_cond_destroy(&c->life_cond);
		pthread_mutex_destroy(&c->life_lock);
		pthread_mutex_destroy(&c->fb_lock);
		pthread_mutex_destroy(&c->send_lock);
		pthread_mutex_destroy(&c->lock);
	}
	free(c);
}

int cpuhp_client_fd(struct cpuhp_client *c)
{
	return c->fd;
}
