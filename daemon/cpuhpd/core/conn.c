/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Client connections: accept, read and reassemble frames (proto/frame.c),
 * hand each request to the request hook, write replies through a bounded
 * queue, and close, telling the gone hook (conn.h).
 */
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "errmap.h"

#include "cpuhpd.h"
#include "base/auth.h"
#include "base/log.h"
#include "base/scm.h"
#include "admit.h"
#include "conn.h"
#include "fdstore.h"
#include "snapshot.h"

struct write_req {
	uv_write_t req;
	struct cpuhpd_conn *c;
	uint8_t *frame;
	size_t charged; /* bytes accounted to the client (admit.c) */
};

/*
 * One read buffer for every connection: the loop thread consumes each read
 * completely (the decoder copies only frames split across reads) before the
 * next one is allocated.  Sized so that a whole maximal frame fits.
 */
static uint8_t read_buf[CPUHP__FRAME_HDR + CPUHP__FRAME_MAX];

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	buf->base = (char *)read_buf;
	buf->len = sizeof(read_buf);
}

static void close_cb(uv_handle_t *h)
{
	struct cpuhpd_conn *c = cpuhpd_container_of(h, struct cpuhpd_conn, pipe);

	cpuhp__frame_decoder_fini(&c->dec);
	for (unsigned i = 0; i < c->ndeferred; i++)
		free(c->deferred[i].data);
	free(c->deferred);
	/* After the write callbacks (libuv runs them first): every byte is uncharged. */
	cpuhpd_admit_conn_freed(c);
	free(c);
}

void cpuhpd_conn_close(struct cpuhpd_conn *c, const char *why)
{
	struct cpuhpd *d = c->d;

	if (c->closing)
		return;
	c->closing = true;
	if (why)
		cpuhpd_info("client %u (pid %d, uid %u): %s; disconnected", c->id, (int)c->peer.pid,
		            (unsigned)c->peer.uid, why);
	else
		cpuhpd_debug("client %u disconnected", c->id);
	cpuhpd_list_del(&c->node);
	d->nconns--;
	cpuhpd_snapshot_changed(d); /* the STATUS= line counts connections */
	cpuhpd_admit_conn_gone(c);
	/* Out of the store first: its client must see EOF, as it would without a store. */
	cpuhpd_fdstore_conn_gone(c);
	d->conn_hooks->gone(c);
	uv_read_stop((uv_stream_t *)&c->pipe);
	uv_close((uv_handle_t *)&c->pipe, close_cb);
}

char *cpuhpd_identity_dup(const char *s)
{
	if (!s || !s[0])
		return NULL;
	return strndup(s, CPUHPD_IDENTITY_MAX);
}

/* The peer went away while we wrote: an ordinary disconnect, not worth a log line. */
static void write_failed(struct cpuhpd_conn *c, int status)
{
	char why[128];

	if (status == UV_EPIPE || status == UV_ECONNRESET) {
		cpuhpd_conn_close(c, NULL);
		return;
	}
	snprintf(why, sizeof(why), "write failed: %s", uv_strerror(status));
	cpuhpd_conn_close(c, why);
}

static void write_cb(uv_write_t *req, int status)
{
	struct write_req *wr = cpuhpd_container_of(req, struct write_req, req);
	struct cpuhpd_conn *c = wr->c;

	c->queued--;
	cpuhpd_admit_uncharge(c, wr->charged);
	free(wr->frame);
	free(wr);
	if (status < 0 && status != UV_ECANCELED && !c->closing)
		write_failed(c, status);
}

static void queue_frame(struct cpuhpd_conn *c, uint8_t *frame, size_t len, size_t off);

/* Takes ownership of @frame. */
static void send_frame(struct cpuhpd_conn *c, uint8_t *frame, size_t len)
{
	size_t off = 0;
	uv_buf_t b;
	int n;

	/* Straight into the socket when nothing is queued before it: no copy, no callback. */
	if (c->queued == 0) {
		b = uv_buf_init((char *)frame, (unsigned)len);
		n = uv_try_write((uv_stream_t *)&c->pipe, &b, 1);
		if (n == (int)len) {
			free(frame);
			return;
		}
		if (n > 0) {
			off = (size_t)n;
		} else if (n != UV_EAGAIN) {
			free(frame);
			write_failed(c, n);
			return;
		}
	}
	queue_frame(c, frame, len, off);
}

/* Queue @frame[@off, @len) behind what is queued; takes ownership of @frame. */
static void queue_frame(struct cpuhpd_conn *c, uint8_t *frame, size_t len, size_t off)
{
	struct write_req *wr;
	char why[192];
	uv_buf_t b;
	int n;

	if (c->queued >= CPUHPD_CONN_MAX_QUEUED) {
		free(frame);
		snprintf(why, sizeof(why), "client does not read its replies or events (%u queued)",
		         c->queued);
		cpuhpd_conn_close(c, why);
		return;
	}
	wr = malloc(sizeof(*wr));
	if (!wr) {
		free(frame);
		cpuhpd_conn_close(c, "out of memory queueing a reply");
		return;
	}
	wr->c = c;
	wr->frame = frame;
	/*
	 * What the client costs the heap while it does not read: the frame and
	 * its request, as malloc sized them, with a chunk header each.
	 */
	wr->charged = malloc_usable_size(frame) + malloc_usable_size(wr) + 4 * sizeof(size_t);
	if (!cpuhpd_admit_charge(c, wr->charged, why, sizeof(why))) {
		free(frame);
		free(wr);
		cpuhpd_conn_close(c, why);
		return;
	}
	b = uv_buf_init((char *)frame + off, (unsigned)(len - off));
	n = uv_write(&wr->req, (uv_stream_t *)&c->pipe, &b, 1, write_cb);
	if (n < 0) {
		cpuhpd_admit_uncharge(c, wr->charged);
		free(frame);
		free(wr);
		snprintf(why, sizeof(why), "write failed: %s", uv_strerror(n));
		cpuhpd_conn_close(c, why);
		return;
	}
	c->queued++;
}

/* Frame @resp; a reply that cannot be encoded closes @c.  Return: 0 or -errno. */
static int pack(struct cpuhpd_conn *c, const Cpuhp__Response *resp, uint8_t **frame, size_t *len)
{
	int err = cpuhp__frame_pack_response(resp, frame, len);

	if (err) {
		char why[128];

		snprintf(why, sizeof(why), "cannot encode a reply: %s", strerror(-err));
		cpuhpd_conn_close(c, why);
	}
	return err;
}

void cpuhpd_conn_send(struct cpuhpd_conn *c, const Cpuhp__Response *resp)
{
	uint8_t *frame;
	size_t len;

	if (c->closing || pack(c, resp, &frame, &len))
		return;
	send_frame(c, frame, len);
}

void cpuhpd_conn_send_many(struct cpuhpd_conn *c, const Cpuhp__Response *const *resps, unsigned n)
{
	uint8_t *frame, *all = NULL;
	size_t len, total = 0;

	for (unsigned i = 0; i < n; i++) {
		uint8_t *grown;

		if (c->closing || pack(c, resps[i], &frame, &len))
			goto out;
		grown = realloc(all, total + len);
		if (!grown) {
			free(frame);
			cpuhpd_conn_close(c, "out of memory queueing a reply");
			goto out;
		}
		all = grown;
		memcpy(all + total, frame, len);
		total += len;
		free(frame);
	}
	if (total) {
		send_frame(c, all, total);
		return;
	}
out:
	free(all);
}

int cpuhpd_conn_send_fds(struct cpuhpd_conn *c, const Cpuhp__Response *resp, const int *fds,
                         unsigned nfds)
{
	char ctl[CMSG_SPACE(sizeof(int) * CPUHPD_CONN_MAX_FDS)];
	struct msghdr mh = {0};
	struct iovec iov;
	uint8_t *frame;
	uv_os_fd_t fd;
	size_t len;
	ssize_t n;
	int err;

	if (c->closing)
		return -ECONNRESET;
	/* Anything queued would go first and the descriptors with the wrong bytes. */
	if (c->queued || nfds > CPUHPD_CONN_MAX_FDS || uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0)
		return -EAGAIN;
	err = pack(c, resp, &frame, &len);
	if (err)
		return err;
	iov.iov_base = frame;
	iov.iov_len = len;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	cpuhpd_scm_rights(&mh, ctl, fds, nfds);
	do
		n = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		err = -errno;
		free(frame);
		if (err == -EAGAIN || err == -EWOULDBLOCK)
			return -EAGAIN;
		write_failed(c, uv_translate_sys_error(-err));
		return err;
	}
	/* The descriptors went with the first byte; the rest is an ordinary write. */
	if ((size_t)n == len)
		free(frame);
	else
		queue_frame(c, frame, len, (size_t)n);
	return 0;
}

__attribute__((format(printf, 4, 0))) static void vsend_error(struct cpuhpd_conn *c, uint64_t id,
                                                              int err, const char *fmt, va_list ap)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Error e = CPUHP__ERROR__INIT;
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	cpuhpd_counters_error(c->d, err);
	e.code = cpuhp__errmap_to_wire(err);
	e.message = msg;
	r.id = id;
	r.body_case = CPUHP__RESPONSE__BODY_ERROR;
	r.error = &e;
	cpuhpd_conn_send(c, &r);
}

void cpuhpd_conn_send_error(struct cpuhpd_conn *c, uint64_t id, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsend_error(c, id, err, fmt, ap);
	va_end(ap);
}

void cpuhpd_conn_fail(struct cpuhpd_conn *c, uint64_t id, int err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (c->closing)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/*
	 * Best effort: the error is in the client's receive queue if the socket
	 * took it at once; closing then still lets the client read it before EOF.
	 */
	cpuhpd_conn_send_error(c, id, err, "%s", msg);
	cpuhpd_conn_close(c, msg);
}

/*
 * After a read: the reassembly buffer is charged to the client while it
 * exists (the decoder allocates a split frame's whole length at once, so a
 * client goes over its bound by at most one frame, until this check closes
 * it), freed between frames, and a frame left unfinished runs the clock.
 */
static void read_accounted(struct cpuhpd_conn *c, bool began)
{
	bool idle = cpuhp__frame_decoder_idle(&c->dec);
	char why[192];

	if (idle)
		cpuhp__frame_decoder_shrink(&c->dec);
	if (c->dec.cap > c->admit.inbuf) {
		if (!cpuhpd_admit_charge(c, c->dec.cap - c->admit.inbuf, why, sizeof(why))) {
			cpuhpd_conn_fail(c, 0, EDQUOT, "%s", why);
			return;
		}
		c->admit.inbuf = c->dec.cap;
	} else if (c->dec.cap < c->admit.inbuf) {
		cpuhpd_admit_uncharge(c, c->admit.inbuf - c->dec.cap);
		c->admit.inbuf = c->dec.cap;
	}
	cpuhpd_admit_read_done(c, began, idle);
}

/* Reassemble and dispatch @len bytes read from @c. */
static void feed(struct cpuhpd_conn *c, const uint8_t *p, size_t left)
{
	bool began = cpuhp__frame_decoder_idle(&c->dec);

	while (left && !c->closing) {
		const uint8_t *payload;
		size_t plen;
		ssize_t n = cpuhp__frame_decoder_feed(&c->dec, p, left, &payload, &plen);

		if (n == -EMSGSIZE) {
			cpuhpd_conn_fail(c, 0, EMSGSIZE,
			                 "frame too large: the length prefix is over the limit of "
			                 "%u bytes",
			                 (unsigned)CPUHP__FRAME_MAX);
			return;
		}
		if (n == -EPROTO) {
			cpuhpd_conn_fail(c, 0, EPROTO, "malformed frame: zero length prefix");
			return;
		}
		if (n < 0) {
			cpuhpd_conn_close(c, "out of memory reassembling a frame");
			return;
		}
		p += n;
		left -= (size_t)n;
		if (payload) {
			began = true; /* whatever follows is a new frame */
			c->d->conn_hooks->request(c, payload, plen);
		}
	}
	if (!c->closing)
		read_accounted(c, began);
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct cpuhpd_conn *c = cpuhpd_container_of(s, struct cpuhpd_conn, pipe);

	if (nread == 0)
		return;
	if (nread < 0) {
		if (nread != UV_EOF) {
			char why[128];

			snprintf(why, sizeof(why), "read failed: %s", uv_strerror((int)nread));
			cpuhpd_conn_close(c, why);
		} else if (!cpuhp__frame_decoder_idle(&c->dec)) {
			cpuhpd_conn_fail(c, 0, EPROTO,
			                 "truncated frame: the connection ended in the middle of a "
			                 "frame");
		} else {
			cpuhpd_conn_close(c, NULL);
		}
		return;
	}
	feed(c, (const uint8_t *)buf->base, (size_t)nread);
}

/* Accept and refuse at once: the client learns why before the socket closes. */
static void reject(uv_pipe_t *p, int err, char *msg)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Error e = CPUHP__ERROR__INIT;
	uint8_t *frame;
	size_t len;

	e.code = cpuhp__errmap_to_wire(err);
	e.message = msg;
	r.body_case = CPUHP__RESPONSE__BODY_ERROR;
	r.error = &e;
	if (!cpuhp__frame_pack_response(&r, &frame, &len)) {
		uv_buf_t b = uv_buf_init((char *)frame, (unsigned)len);

		uv_try_write((uv_stream_t *)p, &b, 1);
		free(frame);
	}
}

static void free_cb(uv_handle_t *h)
{
	free(h);
}

static void timed_out(struct cpuhpd_conn *c, const char *why)
{
	cpuhpd_conn_fail(c, 0, ETIMEDOUT, "%s", why);
}

int cpuhpd_conns_init(struct cpuhpd *d)
{
	cpuhpd_list_init(&d->conns);
	d->admit.timed_out = timed_out;
	return 0;
}

void cpuhpd_conn_accept(struct cpuhpd *d, uv_stream_t *server)
{
	struct cpuhpd_conn *c = calloc(1, sizeof(*c));
	char why[256];
	uv_os_fd_t fd;
	int err;

	if (!c) {
		cpuhpd_err("out of memory accepting a connection");
		return;
	}
	uv_pipe_init(d->loop, &c->pipe, 0);
	err = uv_accept(server, (uv_stream_t *)&c->pipe);
	if (err) {
		cpuhpd_warn("accept failed: %s", uv_strerror(err));
		uv_close((uv_handle_t *)&c->pipe, free_cb);
		return;
	}
	/* Who it is first: the limits depend on the peer (admit.c). */
	err = uv_fileno((uv_handle_t *)&c->pipe, &fd);
	if (!err)
		err = cpuhpd_auth_peer(fd, &d->opt, &c->peer);
	if (err) {
		cpuhpd_warn("connection refused: cannot read the peer's credentials: %s",
		            strerror(-err));
		uv_close((uv_handle_t *)&c->pipe, free_cb);
		return;
	}
	c->d = d;
	err = cpuhpd_admit_conn(c, why, sizeof(why));
	if (err) {
		cpuhpd_warn("connection refused (pid %d, uid %u, %u open): %s", (int)c->peer.pid,
		            (unsigned)c->peer.uid, d->nconns, why);
		reject(&c->pipe, -err, why);
		uv_close((uv_handle_t *)&c->pipe, free_cb);
		return;
	}
	c->id = ++d->next_conn_id;
	cpuhp__frame_decoder_init(&c->dec, 0);
	cpuhpd_list_init(&c->watch_node);
	cpuhpd_list_add_tail(&d->conns, &c->node);
	d->nconns++;
	cpuhpd_snapshot_changed(d);
	cpuhpd_debug("client %u connected (pid %d, uid %u%s)", c->id, (int)c->peer.pid,
	             (unsigned)c->peer.uid, c->peer.admin ? ", admin" : "");
	cpuhpd_fdstore_conn_new(c);
	cpuhpd_fdstore_conn_changed(c);
	err = uv_read_start((uv_stream_t *)&c->pipe, alloc_cb, read_cb);
	if (err) {
		snprintf(why, sizeof(why), "cannot read: %s", uv_strerror(err));
		cpuhpd_conn_close(c, why);
	}
}

bool cpuhpd_conn_may_wait(struct cpuhpd_conn *c, uint64_t req_id)
{
	if (c->npending < CPUHPD_CONN_MAX_PENDING)
		return true;
	cpuhpd_conn_send_error(c, req_id, EDQUOT,
	                       "this connection already has %u requests waiting, the limit per "
	                       "connection",
	                       CPUHPD_CONN_MAX_PENDING);
	return false;
}

struct cpuhpd_conn *cpuhpd_conn_adopt(struct cpuhpd *d, int fd, const struct cpuhpd_saved_conn *sc)
{
	struct cpuhpd_conn *c = calloc(1, sizeof(*c));
	char why[256];
	int err;

	if (!c) {
		close(fd);
		return NULL;
	}
	uv_pipe_init(d->loop, &c->pipe, 0);
	err = uv_pipe_open(&c->pipe, fd);
	if (err)
		close(fd);
	/* The kernel's credentials of the peer, as at its connect(): the text only names it. */
	if (!err)
		err = cpuhpd_auth_peer(fd, &d->opt, &c->peer);
	if (err) {
		cpuhpd_warn("restart: client %u: its socket is unusable; closed", sc->id);
		uv_close((uv_handle_t *)&c->pipe, free_cb);
		return NULL;
	}
	if ((uint32_t)c->peer.uid != sc->uid)
		cpuhpd_warn("restart: client %u: uid %u, the stored state said %u; trusting the "
		            "kernel",
		            sc->id, (unsigned)c->peer.uid, (unsigned)sc->uid);
	if (sc->comm)
		snprintf(c->peer.comm, sizeof(c->peer.comm), "%s", sc->comm);
	c->d = d;
	c->id = sc->id;
	c->stored = true; /* the last daemon put it there, and it stays */
	err = cpuhpd_admit_conn(c, why, sizeof(why));
	if (err) {
		cpuhpd_warn("restart: client %u (pid %d, uid %u) refused: %s", c->id,
		            (int)c->peer.pid, (unsigned)c->peer.uid, why);
		reject(&c->pipe, -err, why);
		cpuhpd_fdstore_conn_gone(c);
		uv_close((uv_handle_t *)&c->pipe, free_cb);
		return NULL;
	}
	c->hello = sc->hello;
	c->who = sc->who ? strdup(sc->who) : NULL;
	c->why = sc->why ? strdup(sc->why) : NULL;
	cpuhp__frame_decoder_init(&c->dec, 0);
	cpuhpd_list_init(&c->watch_node);
	cpuhpd_list_add_tail(&d->conns, &c->node);
	d->nconns++;
	cpuhpd_snapshot_changed(d);
	return c;
}

void cpuhpd_conn_resume(struct cpuhpd_conn *c, const struct cpuhpd_saved_conn *sc)
{
	char why[128];
	int err;

	if (sc->partial.len && !c->closing)
		feed(c, sc->partial.data, sc->partial.len);
	if (c->closing)
		return;
	err = uv_read_start((uv_stream_t *)&c->pipe, alloc_cb, read_cb);
	if (err) {
		snprintf(why, sizeof(why), "cannot read: %s", uv_strerror(err));
		cpuhpd_conn_close(c, why);
	}
}

int cpuhpd_conn_defer(struct cpuhpd_conn *c, const uint8_t *payload, size_t len)
{
	struct cpuhpd_saved_blob *a = realloc(c->deferred, (c->ndeferred + 1) * sizeof(*a));

	if (!a)
		return -ENOMEM;
	c->deferred = a;
	a[c->ndeferred].data = malloc(len);
	if (!a[c->ndeferred].data)
		return -ENOMEM;
	memcpy(a[c->ndeferred].data, payload, len);
	a[c->ndeferred++].len = len;
	cpuhpd_fdstore_changed(c->d);
	return 0;
}
