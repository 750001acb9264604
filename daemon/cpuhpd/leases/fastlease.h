/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fast leases: readers in other processes count their leases in shared
 * memory, and the daemon, as the writer, reads those counts.  The protocol,
 * its barrier table and its security argument are proto/FASTPATH.md; the
 * memory layout is proto/fastpath.h; the frames are in proto/FRAMING.md.
 *
 * A source of the gate (gate.h): closing the gate blocks the fast path
 * (cpuhpd_fastpath_block), and a hotplug waits while a fast lease is held
 * or not yet counted (cpuhpd_fastpath_holding); when the fast ones go
 * later, this module calls cpuhpd_gate_check().
 *
 * Loop thread only, except what the .c file says its thread does.
 */
#ifndef CPUHPD_FASTPATH_H
#define CPUHPD_FASTPATH_H

#include <linux/futex.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "cpuhp.pb-c.h"
#include "fastpath.h"

#include "base/list.h"
#include "base/statetext.h"

struct cpuhpd;
struct cpuhpd_conn;
struct cpuhpd_snapshot;

/*
 * How the daemon makes every reader's slot update visible (--fast-path).
 * OFF is 0: a daemon object that never ran cpuhpd_fastpath_start() (the
 * dispatch fuzzer's) has the fast path off, and every call here is a no-op.
 */
enum cpuhpd_fast_mode {
	CPUHPD_FAST_OFF = 0,   /* no fast path: HelloReply says so */
	CPUHPD_FAST_AUTO,      /* option only: the best the kernel offers */
	CPUHPD_FAST_EXPEDITED, /* membarrier GLOBAL_EXPEDITED; clients register */
	CPUHPD_FAST_GLOBAL,    /* membarrier GLOBAL (milliseconds, no registration) */
	CPUHPD_FAST_FENCE,     /* clients fence both sides themselves */
};

/* Parse a --fast-path value; Return: 0 or -EINVAL. */
int cpuhpd_fast_mode_parse(const char *s, enum cpuhpd_fast_mode *out);

struct cpuhpd_fastpath {
	enum cpuhpd_fast_mode mode;
	int hdr_fd;
	struct cpuhp__fast_header *hdr; /* the only writable mapping of it */
	uint32_t open;                  /* hdr->state while open: the thread's TID */

	struct cpuhpd_list regions; /* struct cpuhpd_fast_region.node */
	unsigned nregions;
	/*
	 * While blocked: ->counted once the barrier of this phase is done and
	 * every region was summed; ->undrained regions had a non-zero sum then
	 * and have not been seen at zero since.
	 */
	bool blocked;
	bool counted;
	unsigned undrained;
	uint64_t phase; /* block phases begun */

	/* The fast-path thread: owner of the robust state word, runs membarriers. */
	uv_thread_t thread;
	bool running;
	uv_mutex_t lock;
	uv_cond_t cond;
	uint64_t want, done; /* under lock: phases whose barrier is asked / finished */
	int barrier_err;     /* under lock: errno of a failed membarrier */
	pid_t tid;           /* under lock: set once the thread runs */
	int thread_err;      /* under lock: set_robust_list failed */
	bool quit;           /* under lock */
	uv_async_t async;
	struct robust_list_head rhead; /* the thread's robust list: one entry, ->state */
	struct robust_list rentry;
	/* Closes connections whose slots broke the rules (fastlease.c, police_cb). */
	uv_timer_t police;
	bool police_on; /* and oldpoll's */
	/* Sums regions adopted at a restart while a hotplug waits for them (fastlease.c). */
	uv_timer_t oldpoll;
};

/* Start (after the lease table): choose the mode, build the header, start the thread. */
int cpuhpd_fastpath_start(struct cpuhpd *d);
/* Daemon stop: the state word says "stopped" from now on. */
void cpuhpd_fastpath_stop(struct cpuhpd *d);
/* Daemon stop, after the connections closed: join the thread, close the header. */
void cpuhpd_fastpath_close(struct cpuhpd *d);

/* HelloReply.fast_path: offered by this daemon, now ... */
bool cpuhpd_fastpath_offered(const struct cpuhpd *d);
/* ... and allowed to @c under the lease limits (--max-lease-ms, --max-leases-per-uid). */
bool cpuhpd_fastpath_allowed(const struct cpuhpd_conn *c);

/* Handle FastPathRequest: FastPathGranted with the two memfds, or an Error. */
void cpuhpd_fastpath_request(struct cpuhpd_conn *c, const Cpuhp__Request *req);
/* Handle FastWake (never answered): look at this connection's slots again. */
void cpuhpd_fastpath_wake(struct cpuhpd_conn *c, const Cpuhp__Request *req);
/* The connection is going away: revoke and drop its region (its fast leases end). */
void cpuhpd_fastpath_conn_gone(struct cpuhpd_conn *c);

/* The active hotplug waits for @c's fast leases now (counted, held, not seen at 0 since). */
bool cpuhpd_fastpath_conn_waited(const struct cpuhpd_conn *c);
/* The delay of @c's fast leases (FastPathRequest); 0: block leases, or no region. */
uint32_t cpuhpd_fastpath_conn_delay(const struct cpuhpd_conn *c);
/*
 * cpuhpd_fastpath_revoke() - if the active hotplug waits for @c's fast
 * leases, take them away: the region's ->live says "revoked" (no lease is
 * taken there again, and each one's release tells its holder), the region
 * is dropped (the connection lives on; a FastPathRequest gets a new one),
 * and the hotplug no longer waits for it.  The caller tells the holder
 * (cpuhpd_policy_revoked_fast()) and lets the gate look again.
 * Return: how many were held (a snapshot), 0 if none.
 */
unsigned cpuhpd_fastpath_revoke(struct cpuhpd_conn *c);

/* The gate closes: publish "blocked", then order and count the slots. */
void cpuhpd_fastpath_block(struct cpuhpd *d);
/*
 * The gate opens, or the active hotplug's writer section is over (its
 * answer goes out next): publish "open" (or "stopped" while stopping).  A
 * no-op when not blocked.
 */
void cpuhpd_fastpath_unblock(struct cpuhpd *d);
/*
 * A fast lease may be held: the barrier is not back yet, or a region
 * summed above 0 and has not been seen at 0 since.  Always false with the
 * fast path off.
 */
bool cpuhpd_fastpath_holding(const struct cpuhpd *d);
/* Blocked, and the barrier not back yet: nobody knows yet whether fast leases are held. */
bool cpuhpd_fastpath_counting(const struct cpuhpd *d);

/*
 * Judge every region's slots now: a connection whose slot holds what no
 * honest client writes (below 0, over CPUHP__FAST_SLOT_MAX_LEASES) is
 * closed in the next loop iteration.  Status calls it before its snapshot.
 */
void cpuhpd_fastpath_police(struct cpuhpd *d);

/* A snapshot of the slots (each capped at its limit), for Status and log lines. */
unsigned cpuhpd_fastpath_held(const struct cpuhpd *d);
/* The same snapshot for one connection's region (0 without the fast path). */
unsigned cpuhpd_fastpath_conn_held(const struct cpuhpd_conn *c);
/*
 * cpuhpd_fastpath_conn_look() - cpuhpd_fastpath_conn_held(), and the
 * connection's ->fast_since kept: set to @now when its count is first seen
 * above 0, cleared when seen at 0.  A fast lease is taken unseen, so every
 * look that can set it makes "held at least" closer to the truth.
 */
unsigned cpuhpd_fastpath_conn_look(struct cpuhpd_conn *c, uint64_t now);
/* cpuhpd_fastpath_conn_look() on every connection with a region (Status does). */
void cpuhpd_fastpath_look(struct cpuhpd *d);

/*
 * The online set changed behind cpuhpd's back: bump every region's
 * ->bypasses, so that the release of each fast lease held now says -ESTALE.
 */
void cpuhpd_fastpath_bypassed(struct cpuhpd *d);
/*
 * A restart: @fd is adopted @c's region memfd from the previous cpuhpd
 * (the fd store), of @nslots slots.  Its counts go on being summed: the
 * leases counted there hold hotplugs until they are released.
 * Return: 0 or a negative errno (@fd is closed either way).
 */
int cpuhpd_fastpath_adopt(struct cpuhpd_conn *c, int fd, unsigned nslots);
/*
 * A restart: if @sc had a fast-lease region, claim it from the fd store and
 * adopt it (cpuhpd_fastpath_adopt()).  Return: 0 or a negative errno.
 */
int cpuhpd_fastpath_adopt_conn(struct cpuhpd_conn *c, const struct cpuhpd_saved_conn *sc);
/* The snapshot's gauges (snapshot.h): fast leases held, holders, regions, the mode. */
void cpuhpd_fastpath_gauges(const struct cpuhpd *d, struct cpuhpd_snapshot *s);

#endif /* CPUHPD_FASTPATH_H */
