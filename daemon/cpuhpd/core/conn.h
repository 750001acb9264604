/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One client connection: its socket, the frame decoder that reassembles
 * requests, its bounded write queue, its peer credentials, and the state the
 * other modules keep per client (leases held, requests waiting, watch).
 *
 * This file knows frames, buffers and closing, and no feature: a whole
 * request goes to the hook set at start (struct cpuhpd_conn_hooks), and so
 * does the news that a connection is gone.
 *
 * Lifetime: cpuhpd_conn_close() detaches the connection from every module at
 * once (its leases end there, which may let a hotplug go on) and starts
 * uv_close(); the memory goes in the close callback, so a pointer stays
 * valid until the loop iteration ends.  Check ->closing before queueing
 * anything new for a connection.  Loop thread only.
 */
#ifndef CPUHPD_CONN_H
#define CPUHPD_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "cpuhp.pb-c.h"
#include "frame.h"

#include "admit.h"
#include "base/list.h"
#include "base/statetext.h"

/* Leases one connection may hold or wait for. */
#define CPUHPD_CONN_MAX_LEASES 64
/* Requests one connection may have waiting (lease acquires and hotplugs). */
#define CPUHPD_CONN_MAX_PENDING 16
/*
 * Messages queued for a client beyond what its socket buffer took.  A client
 * that stops reading (a stalled watcher) is disconnected at this bound
 * instead of growing the daemon's memory.
 */
#define CPUHPD_CONN_MAX_QUEUED 1024

struct cpuhpd;
struct cpuhpd_fast_region;

/* Longest who/why a client may give (Identify, LeaseAcquire); longer ones are cut. */
#define CPUHPD_IDENTITY_MAX 255

struct cpuhpd_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	bool admin;    /* may hotplug: uid 0 or a member of --admin-group */
	char comm[17]; /* /proc/PID/comm when accepted; "?" if it could not be read */
};

/* One socket lease.  who/why: NULL for the connection's (Identify). */
struct cpuhpd_lease {
	uint64_t id;
	uint64_t since; /* uv_now() when granted */
	char *who, *why;
	bool bypassed;     /* CPUs changed behind cpuhpd while it was held (policy.c) */
	uint32_t delay_ms; /* 0: a block lease; else a delay lease's delay (revoke.c) */
};

/* Leases revoked, kept so that their release says so (policy.c). */
#define CPUHPD_CONN_REVOKED_KEPT 8
struct cpuhpd_revoked {
	uint64_t id; /* 0: free, or its release was answered */
	uint64_t held_ms;
	uint64_t hotplug_id; /* 0: at --max-lease-ms; else the hotplug it was revoked for */
	uint32_t delay_ms;   /* a delay lease's */
	uint8_t reason;      /* Cpuhp__RevokeReason */
};

struct cpuhpd_conn {
	uv_pipe_t pipe;
	struct cpuhpd *d;
	struct cpuhpd_list node; /* in d->conns */
	unsigned id;             /* for log lines */
	struct cpuhpd_peer peer;
	struct cpuhp__frame_decoder dec;
	bool hello;       /* Hello answered: other requests allowed */
	bool closing;     /* detached from every module; uv_close() pending */
	bool state_batch; /* Hello.state_batch: hotplug-state calls may come in batches */

	/* Identify (holders.c): who and why for leases that name none; NULL: unset. */
	char *who, *why;

	/* lease.c */
	struct cpuhpd_lease leases[CPUHPD_CONN_MAX_LEASES];
	unsigned nleases;
	unsigned nwaiting_leases;
	/* lease waits, hotplugs, pending freezes not yet answered */
	unsigned npending;

	/* policy.c: the last leases revoked (a ring), and the last bypass this connection heard of
	 */
	struct cpuhpd_revoked revoked[CPUHPD_CONN_REVOKED_KEPT];
	unsigned revoked_next;
	uint64_t bypass_seq;

	/*
	 * route.c: where notices about what this connection holds go (the
	 * connection it was opened beside, Hello.notices_to; NULL: here), and
	 * how many connections send theirs here.
	 */
	struct cpuhpd_conn *notices_to;
	unsigned notices_from;
	/* hotplug/notice.c: the hotplug whose HotplugPending it was sent last (a seq; 0: none) */
	uint64_t told_seq;

	/* watch.c */
	struct cpuhpd_list watch_node; /* in d->watchers while watching */
	uint64_t watch_id;
	uint64_t watch_seq; /* last event sent */
	bool watching;

	/* fastlease.c: this connection's region, NULL without the fast path */
	struct cpuhpd_fast_region *fast;
	uint64_t fast_since; /* uv_now() when its count was first seen above 0; 0: seen at 0 */

	unsigned queued; /* uv_write()s not yet completed */

	/* admit.c: its uid's counts, its request timeout, its charged reassembly bytes */
	struct cpuhpd_admit_conn admit;

	/* fdstore.c: its socket and region are in the service manager's store */
	bool stored, region_stored;
	unsigned region_slots;      /* the stored region's size, for the state text */
	struct cpuhpd_list st_node; /* in fdstore.dirty while ->st_queued */
	bool st_queued;             /* its lines changed since they were last written */
	/* Requests read while a restart stops the daemon: the next one handles them. */
	struct cpuhpd_saved_blob *deferred;
	unsigned ndeferred;
};

/*
 * What a connection hands upwards, set once before any connection exists
 * (the feature table plugs them, features.c).
 */
struct cpuhpd_conn_hooks {
	/* A whole request arrived: @payload (valid during the call) is its frame's body. */
	void (*request)(struct cpuhpd_conn *c, const uint8_t *payload, size_t len);
	/*
	 * @c is closing (->closing is set, it left the admission counts and the
	 * fd store): every feature lets go of it, its leases end here.
	 */
	void (*gone)(struct cpuhpd_conn *c);
};

/* A client's who/why, cut to CPUHPD_IDENTITY_MAX bytes; NULL for NULL or "" (or ENOMEM). */
char *cpuhpd_identity_dup(const char *s);

/* Start: no connection yet.  Return: 0. */
int cpuhpd_conns_init(struct cpuhpd *d);

/* Accept one pending connection on @server; answers EUSERS and closes it over the limit. */
void cpuhpd_conn_accept(struct cpuhpd *d, uv_stream_t *server);

/**
 * cpuhpd_conn_adopt() - a connection of the previous cpuhpd, from the fd
 * store: @fd is its socket, @sc what the state text says of it.  Its
 * leases, states and so on are the features' (the feature table's adopt lists).
 * Return: the connection (not reading yet: cpuhpd_conn_resume()), or NULL
 * (refused and closed, logged).
 */
struct cpuhpd_conn *cpuhpd_conn_adopt(struct cpuhpd *d, int fd, const struct cpuhpd_saved_conn *sc);

/*
 * After every adopted connection is rebuilt and the requests left
 * unanswered are handled again (adopt.c): feed @sc's partial frame, start
 * reading.
 */
void cpuhpd_conn_resume(struct cpuhpd_conn *c, const struct cpuhpd_saved_conn *sc);

/*
 * A restart stops the daemon (stop.c): keep @payload for the next cpuhpd,
 * which handles it first.  Return: 0 or -ENOMEM.
 */
int cpuhpd_conn_defer(struct cpuhpd_conn *c, const uint8_t *payload, size_t len);

/* Send @resp.  On failure, or when the client stopped reading, the connection is closed. */
void cpuhpd_conn_send(struct cpuhpd_conn *c, const Cpuhp__Response *resp);
/*
 * cpuhpd_conn_send_many() - @n responses in one write (a batch of state
 * calls: one round trip), in order; as cpuhpd_conn_send() otherwise.
 */
void cpuhpd_conn_send_many(struct cpuhpd_conn *c, const Cpuhp__Response *const *resps, unsigned n);

/* Descriptors one frame may carry (cpuhpd_conn_send_fds). */
#define CPUHPD_CONN_MAX_FDS 2

/**
 * cpuhpd_conn_send_fds() - send @resp with @fds (SCM_RIGHTS on its first byte).
 *
 * Only possible while nothing is queued for @c, since the descriptors must
 * travel with this frame's bytes.  The caller keeps its descriptors.
 * Return: 0 (sent, or queued after its first bytes); -EAGAIN: nothing was
 * sent, @c is intact; another -errno: @c was closed.
 */
int cpuhpd_conn_send_fds(struct cpuhpd_conn *c, const Cpuhp__Response *resp, const int *fds,
                         unsigned nfds);

/* Send an Error reply to request @id; @err is a positive errno. */
void cpuhpd_conn_send_error(struct cpuhpd_conn *c, uint64_t id, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * Whether one more request of @c may wait (CPUHPD_CONN_MAX_PENDING); if
 * not, @req_id is answered EDQUOT.  The caller counts it in npending.
 */
bool cpuhpd_conn_may_wait(struct cpuhpd_conn *c, uint64_t req_id);

/* Send an Error (best effort), then close: for protocol violations. */
void cpuhpd_conn_fail(struct cpuhpd_conn *c, uint64_t id, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Detach from every module and close; @why goes to the log (debug level if NULL). */
void cpuhpd_conn_close(struct cpuhpd_conn *c, const char *why);

#endif /* CPUHPD_CONN_H */
