/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpd-churn: a client that loops over leases, hotplugs or hotplug
 * freezes as fast as the
 * daemon answers, for the fault-injection suite to SIGKILL at a random
 * point.  It prints one line per step (after each request is written, after
 * each reply is read), so the suite kills it after a random number of lines
 * and the kill lands at whatever step the client reached meanwhile: a
 * request half processed, a lease held, a release in flight.
 *
 * Socket leases and hotplugs are spoken here on proto/frame.c's framing,
 * fast leases through libcpuhp-client.  On the socket it also checks the
 * daemon's side of the bargain: every reply must answer a request of this
 * connection that is still unanswered.  A reply to an id never sent or
 * already answered (a request answered twice) is an anomaly: it prints
 * "anomaly: ..." and exits 3.  A lease may be revoked (cpuhpd
 * --max-lease-ms, a delay lease's delay, a forced hotplug): its LeaseRevoked
 * notice (id 0) is noted ("got 0 revoked ID"), and then, only then, its
 * release may be answered ERR_ETIME.  Other notices to a lease holder (a
 * hotplug pending or cancelled) answer nothing: a line "notice" each.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cpuhp/client.h>

#include "cpuhp.pb-c.h"
#include "frame.h"

#define MAX_OUT 64

struct client {
	int fd;
	uint64_t next_id;
	uint64_t out[MAX_OUT]; /* ids sent and not yet answered */
	unsigned nout;
	struct cpuhp__frame_decoder dec;
	uint8_t buf[8192];
	size_t have, off;
	unsigned long requests, replies;
	uint64_t revoked[MAX_OUT]; /* the last leases revoked (LeaseRevoked notices) */
	unsigned nrevoked;
};

static bool was_revoked(const struct client *c, uint64_t lease_id)
{
	for (unsigned i = 0; i < MAX_OUT && i < c->nrevoked; i++)
		if (c->revoked[i] == lease_id)
			return true;
	return false;
}

static void die(const char *what, int err)
{
	printf("error: %s: %s\n", what, strerror(err));
	exit(1);
}

static void anomaly(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void anomaly(const char *fmt, ...)
{
	va_list ap;

	printf("anomaly: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(3);
}

static uint64_t send_req(struct client *c, Cpuhp__Request *req, const char *what)
{
	uint8_t *frame;
	size_t len, off = 0;
	int err;

	if (c->nout == MAX_OUT)
		die("too many requests outstanding", EOVERFLOW);
	req->id = c->next_id++;
	err = cpuhp__frame_pack_request(req, &frame, &len);
	if (err)
		die("pack", -err);
	while (off < len) {
		ssize_t n = send(c->fd, frame + off, len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("send", errno);
		off += (size_t)n;
	}
	free(frame);
	c->out[c->nout++] = req->id;
	c->requests++;
	printf("sent %" PRIu64 " %s\n", req->id, what);
	return req->id;
}

/* The next reply; it must answer an outstanding request, which it then no longer is. */
static Cpuhp__Response *recv_reply(struct client *c)
{
	for (;;) {
		if (c->off < c->have) {
			const uint8_t *payload;
			size_t plen;
			ssize_t n = cpuhp__frame_decoder_feed(&c->dec, c->buf + c->off,
			                                      c->have - c->off, &payload, &plen);
			Cpuhp__Response *r;
			unsigned i;

			if (n < 0)
				anomaly("bad frame from the daemon (errno %" PRIu64 ")",
				        (uint64_t)-n);
			c->off += (size_t)n;
			if (!payload)
				continue;
			if (cpuhp__frame_unpack_response(payload, plen, &r))
				anomaly("a frame that is not a Response (%zu bytes)", plen);
			/* A notice, no reply: a lease of ours revoked, or a hotplug's notice. */
			if (r->id == 0 && r->body_case == CPUHP__RESPONSE__BODY_EVENT &&
			    r->event->kind_case == CPUHP__EVENT__KIND_LEASE_REVOKED) {
				uint64_t id = r->event->lease_revoked->lease_id;

				printf("got 0 revoked %" PRIu64 "\n", id);
				c->revoked[c->nrevoked++ % MAX_OUT] = id;
				cpuhp__response__free_unpacked(r, NULL);
				continue;
			}
			if (r->id == 0 && r->body_case == CPUHP__RESPONSE__BODY_EVENT) {
				printf("notice\n");
				cpuhp__response__free_unpacked(r, NULL);
				continue;
			}
			for (i = 0; i < c->nout && c->out[i] != r->id; i++)
				;
			if (i == c->nout)
				anomaly("reply to id %" PRIu64 ", which is not outstanding", r->id);
			c->out[i] = c->out[--c->nout];
			c->replies++;
			return r;
		}
		{
			ssize_t n = recv(c->fd, c->buf, sizeof(c->buf), 0);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				die("recv", errno);
			if (n == 0)
				die("recv", ECONNRESET);
			c->have = (size_t)n;
			c->off = 0;
		}
	}
}

static const char *kind(const Cpuhp__Response *r)
{
	const ProtobufCEnumValue *v;

	switch (r->body_case) {
	case CPUHP__RESPONSE__BODY_ERROR:
		v = protobuf_c_enum_descriptor_get_value(&cpuhp__error_code__descriptor,
		                                         r->error->code);
		return v ? v->name : "ERR_?";
	case CPUHP__RESPONSE__BODY_HELLO:
		return "hello";
	case CPUHP__RESPONSE__BODY_LEASE_GRANTED:
		return "granted";
	case CPUHP__RESPONSE__BODY_LEASE_RELEASED:
		return "released";
	case CPUHP__RESPONSE__BODY_SET_ONLINE:
		return "set_online";
	case CPUHP__RESPONSE__BODY_FROZEN:
		return "frozen";
	case CPUHP__RESPONSE__BODY_THAWED:
		return "thawed";
	default:
		return "other";
	}
}

static void connect_hello(struct client *c, const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__Hello h = CPUHP__HELLO__INIT;
	Cpuhp__Response *r;

	c->next_id = 1;
	cpuhp__frame_decoder_init(&c->dec, 0);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (strlen(path) >= sizeof(sa.sun_path))
		die("socket path", ENAMETOOLONG);
	strcpy(sa.sun_path, path);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect", errno);
	h.version = CPUHP__PROTO_VERSION;
	h.client_name = (char *)"cpuhpd-churn";
	req.body_case = CPUHP__REQUEST__BODY_HELLO;
	req.hello = &h;
	send_req(c, &req, "hello");
	r = recv_reply(c);
	printf("got %" PRIu64 " %s\n", r->id, kind(r));
	if (r->body_case != CPUHP__RESPONSE__BODY_HELLO)
		die("hello refused", EPROTO);
	cpuhp__response__free_unpacked(r, NULL);
}

/*
 * One round: acquire @k leases (pipelined; delay leases of @delay_ms unless
 * 0), then release those granted.
 */
static void lease_round(struct client *c, unsigned k, uint32_t timeout_ms, uint32_t delay_ms)
{
	Cpuhp__LeaseAcquire acq = CPUHP__LEASE_ACQUIRE__INIT;
	Cpuhp__LeaseRelease rel = CPUHP__LEASE_RELEASE__INIT;
	uint64_t leases[MAX_OUT];
	unsigned granted = 0;

	acq.timeout_ms = timeout_ms;
	acq.mode = delay_ms ? CPUHP__LEASE_MODE__LEASE_DELAY : CPUHP__LEASE_MODE__LEASE_BLOCK;
	acq.delay_ms = delay_ms;
	for (unsigned i = 0; i < k; i++) {
		Cpuhp__Request req = CPUHP__REQUEST__INIT;

		req.body_case = CPUHP__REQUEST__BODY_LEASE_ACQUIRE;
		req.lease_acquire = &acq;
		send_req(c, &req, "acquire");
	}
	for (unsigned i = 0; i < k; i++) {
		Cpuhp__Response *r = recv_reply(c);

		printf("got %" PRIu64 " %s\n", r->id, kind(r));
		if (r->body_case == CPUHP__RESPONSE__BODY_LEASE_GRANTED)
			leases[granted++] = r->lease_granted->lease_id;
		cpuhp__response__free_unpacked(r, NULL);
	}
	for (unsigned i = 0; i < granted; i++) {
		Cpuhp__Request req = CPUHP__REQUEST__INIT;

		rel.lease_id = leases[i];
		req.body_case = CPUHP__REQUEST__BODY_LEASE_RELEASE;
		req.lease_release = &rel;
		send_req(c, &req, "release");
	}
	for (unsigned i = 0; i < granted; i++) {
		Cpuhp__Response *r = recv_reply(c);
		/* Releases are answered in order, so this one is leases[i]'s. */
		bool revoked = r->body_case == CPUHP__RESPONSE__BODY_ERROR &&
		               r->error->code == CPUHP__ERROR_CODE__ERR_ETIME &&
		               was_revoked(c, leases[i]);

		printf("got %" PRIu64 " %s\n", r->id, kind(r));
		/* Our own lease, held until now (or revoked, as a notice said). */
		if (r->body_case != CPUHP__RESPONSE__BODY_LEASE_RELEASED && !revoked)
			anomaly("release %" PRIu64 " of a held lease was refused", r->id);
		cpuhp__response__free_unpacked(r, NULL);
	}
}

/* One round: @k freezes (pipelined), then a thaw of each granted. */
static void freeze_round(struct client *c, unsigned k)
{
	Cpuhp__Freeze fr = CPUHP__FREEZE__INIT;
	Cpuhp__Thaw th = CPUHP__THAW__INIT;
	uint64_t ids[MAX_OUT];
	unsigned granted = 0;

	fr.who = (char *)"churn";
	fr.why = (char *)"";
	for (unsigned i = 0; i < k; i++) {
		Cpuhp__Request req = CPUHP__REQUEST__INIT;

		req.body_case = CPUHP__REQUEST__BODY_FREEZE;
		req.freeze = &fr;
		send_req(c, &req, "freeze");
	}
	for (unsigned i = 0; i < k; i++) {
		Cpuhp__Response *r = recv_reply(c);

		printf("got %" PRIu64 " %s\n", r->id, kind(r));
		if (r->body_case == CPUHP__RESPONSE__BODY_FROZEN)
			ids[granted++] = r->frozen->freeze_id;
		cpuhp__response__free_unpacked(r, NULL);
	}
	for (unsigned i = 0; i < granted; i++) {
		Cpuhp__Request req = CPUHP__REQUEST__INIT;
		Cpuhp__Response *r;

		th.freeze_id = ids[i];
		req.body_case = CPUHP__REQUEST__BODY_THAW;
		req.thaw = &th;
		send_req(c, &req, "thaw");
		r = recv_reply(c);
		printf("got %" PRIu64 " %s\n", r->id, kind(r));
		/* Our own freeze, held until now: anything but Thawed is wrong. */
		if (r->body_case != CPUHP__RESPONSE__BODY_THAWED)
			anomaly("thaw %" PRIu64 " of a held freeze was refused", r->id);
		cpuhp__response__free_unpacked(r, NULL);
	}
}

/* One round: @cpus offline, then online; forced with a grace of @grace_ms unless -1. */
static void hotplug_round(struct client *c, const char *cpus, uint32_t timeout_ms, long grace_ms)
{
	for (int online = 0; online < 2; online++) {
		Cpuhp__Request req = CPUHP__REQUEST__INIT;
		Cpuhp__SetOnline so = CPUHP__SET_ONLINE__INIT;
		Cpuhp__Response *r;

		so.cpus = (char *)cpus;
		so.online = online;
		so.timeout_ms = timeout_ms;
		so.force = grace_ms >= 0;
		so.force_grace_ms = grace_ms >= 0 ? (uint32_t)grace_ms : 0;
		req.body_case = CPUHP__REQUEST__BODY_SET_ONLINE;
		req.set_online = &so;
		send_req(c, &req, online ? "online" : "offline");
		r = recv_reply(c);
		printf("got %" PRIu64 " %s\n", r->id, kind(r));
		cpuhp__response__free_unpacked(r, NULL);
	}
}

/*
 * Fast leases go through libcpuhp-client (shared-memory slots; the library
 * hides the frames, so here only its return codes are checked): one round
 * acquires @k leases, then releases them.  A kill lands between a slot's
 * increment and its decrement as often as anywhere.
 */
static int fast_rounds(const char *path, unsigned k, unsigned timeout_ms, unsigned long rounds)
{
	struct cpuhp_client *cl;
	uint64_t leases[MAX_OUT];
	int err = cpuhp_client_connect(path, &cl);

	if (err)
		die("connect", -err);
	err = cpuhp_client_fast_path(cl);
	printf("fast path %s\n", err == 1 ? "on" : "off");
	for (unsigned long i = 0; i < rounds; i++) {
		unsigned granted = 0;

		for (unsigned j = 0; j < k; j++) {
			err = cpuhp_client_lease_acquire(cl, timeout_ms, &leases[granted]);
			if (err && err != -EAGAIN && err != -ETIMEDOUT)
				die("lease acquire", -err);
			/* "got fast granted" / "got socket granted" / "got - error ..." */
			if (err)
				printf("got - error %s\n", strerror(-err));
			else
				printf("got %s granted\n", leases[granted] & CPUHP_CLIENT_FAST_LEASE
				                               ? "fast"
				                               : "socket");
			granted += !err;
		}
		for (unsigned j = 0; j < granted; j++) {
			err = cpuhp_client_lease_release(cl, leases[j]);
			/*
			 * -ETIME: cpuhpd revoked it (--max-lease-ms, a delay lease's
			 * delay, a forced hotplug); a fast lease's only when cpuhpd
			 * stored "revoked" in the region, which the daemon alone writes.
			 */
			if (err && err != -ETIME)
				anomaly("release of a held lease failed: %s", strerror(-err));
			printf(err ? "got - revoked\n" : "got - released\n");
		}
	}
	cpuhp_client_close(cl);
	printf("done rounds=%lu\n", rounds);
	return 0;
}

/* Take @k fast leases and hold them until killed: a holder that dies holding. */
static __attribute__((noreturn)) void fast_hold(const char *path, unsigned k, unsigned timeout_ms)
{
	struct cpuhp_client *cl;
	unsigned fast = 0;
	uint64_t id;
	int err = cpuhp_client_connect(path, &cl);

	if (err)
		die("connect", -err);
	for (unsigned j = 0; j < k; j++) {
		err = cpuhp_client_lease_acquire(cl, timeout_ms, &id);
		if (err)
			die("lease acquire", -err);
		fast += !!(id & CPUHP_CLIENT_FAST_LEASE);
	}
	printf("holding %u leases, %u fast\n", k, fast);
	for (;;)
		pause();
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: cpuhpd-churn SOCKET lease K TIMEOUT_MS ROUNDS\n"
	           "       cpuhpd-churn SOCKET fast K TIMEOUT_MS ROUNDS\n"
	           "       cpuhpd-churn SOCKET fasthold K TIMEOUT_MS 1\n"
	           "       cpuhpd-churn SOCKET hotplug CPUS TIMEOUT_MS ROUNDS\n"
	           "       cpuhpd-churn SOCKET delay K TIMEOUT_MS ROUNDS\n"
	           "       cpuhpd-churn SOCKET forced CPUS TIMEOUT_MS ROUNDS\n"
	           "       cpuhpd-churn SOCKET freeze K TIMEOUT_MS ROUNDS\n"
	           "Loop over K pipelined lease acquires then their releases (fast: K leases\n"
	           "through libcpuhp-client's fast path), or over taking CPUS offline then\n"
	           "online, printing one line per request and per reply.  fasthold takes K\n"
	           "leases through libcpuhp-client and holds them until killed.  freeze\n"
	           "loops over K pipelined hotplug freezes, then their thaws.  delay is lease\n"
	           "with delay leases of 5 ms; forced is hotplug, forced with a grace of 5 ms.\n"
	           "A release refused with ETIME after a LeaseRevoked notice is no anomaly.\n"
	           "Exit 0 after ROUNDS rounds; 3 if a reply answers no outstanding request\n"
	           "(answered twice or never asked); 1 on a connection error; 2 on bad usage.\n");
}

int main(int argc, char **argv)
{
	static struct client c;
	unsigned long rounds;
	uint32_t timeout_ms;
	unsigned k = 0;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc != 6 ||
	    (strcmp(argv[2], "lease") && strcmp(argv[2], "fast") && strcmp(argv[2], "fasthold") &&
	     strcmp(argv[2], "hotplug") && strcmp(argv[2], "freeze") && strcmp(argv[2], "delay") &&
	     strcmp(argv[2], "forced"))) {
		usage(stderr);
		return 2;
	}
	timeout_ms = (uint32_t)strtoul(argv[4], NULL, 10);
	rounds = strtoul(argv[5], NULL, 10);
	if (strcmp(argv[2], "hotplug") && strcmp(argv[2], "forced")) {
		k = (unsigned)strtoul(argv[3], NULL, 10);
		if (k < 1 || k > MAX_OUT) {
			usage(stderr);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[2], "fast"))
		return fast_rounds(argv[1], k, timeout_ms, rounds);
	if (!strcmp(argv[2], "fasthold"))
		fast_hold(argv[1], k, timeout_ms);
	connect_hello(&c, argv[1]);
	for (unsigned long i = 0; i < rounds; i++) {
		if (!strcmp(argv[2], "freeze"))
			freeze_round(&c, k);
		else if (k)
			lease_round(&c, k, timeout_ms, strcmp(argv[2], "delay") ? 0 : 5);
		else
			hotplug_round(&c, argv[3], timeout_ms, strcmp(argv[2], "forced") ? -1 : 5);
	}
	printf("done rounds=%lu requests=%lu replies=%lu\n", rounds, c.requests, c.replies);
	return 0;
}
