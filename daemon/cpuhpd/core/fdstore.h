/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The service manager's file-descriptor store (systemd's FDSTORE=1): a
 * restart or upgrade of cpuhpd loses no lease.
 *
 * While the store is on, cpuhpd keeps there, each with its FDNAME=:
 *   "listen"      the listening socket, when cpuhpd bound it itself (a
 *                 socket unit keeps its own);
 *   "conn-N"      every client connection N;
 *   "region-N"    connection N's fast-lease region memfd;
 *   "state"       a memfd holding the state text (statetext.h) as a journal
 *                 (journal.h): what changed is appended before any reply
 *                 that tells of it (so that after SIGKILL it says at least
 *                 what clients were told).
 * A connection that closes is taken out (FDSTOREREMOVE=1), so that its
 * client sees EOF, not a socket that the store keeps open.
 *
 * The store is on when $NOTIFY_SOCKET is set and either --fd-store-max or
 * systemd's $FDSTORE (its FileDescriptorStoreMax=, systemd 254 and later)
 * is above 0; more descriptors than that are not stored: a connection
 * whose region would not fit gets no fast path (cpuhpd_fdstore_has_room()),
 * and one that does not fit itself ends at a restart, its client seeing
 * EOF, as without a store.
 *
 * At start, the descriptors come back in LISTEN_FDS/LISTEN_FDNAMES;
 * adopt.c rebuilds connections from them and the state text.
 *
 * Loop thread only.
 */
#ifndef CPUHPD_FDSTORE_H
#define CPUHPD_FDSTORE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cpuhp.pb-c.h"

#include "base/buf.h"
#include "base/journal.h"
#include "base/list.h"
#include "base/statetext.h"

struct cpuhpd;
struct cpuhpd_conn;

/*
 * What the features write into the state text, each list NULL-terminated
 * and run in its order (the feature table plugs them, features.c):
 * ->conn: a connection's records, after its "conn" line; ->requests: the
 * requests still to answer, as "req" lines, in the order the next cpuhpd
 * handles them; ->ids: the next ids to give out, for the "daemon" line.
 */
typedef void (*cpuhpd_save_conn_fn)(const struct cpuhpd_conn *c, FILE *f);
typedef void (*cpuhpd_save_requests_fn)(struct cpuhpd *d, FILE *f);
typedef void (*cpuhpd_save_ids_fn)(const struct cpuhpd *d, struct cpuhpd_saved *ids);
struct cpuhpd_store_savers {
	const cpuhpd_save_conn_fn *conn;
	const cpuhpd_save_requests_fn *requests;
	const cpuhpd_save_ids_fn *ids;
};

struct cpuhpd_fdstore_taken {
	char name[32];
	int fd; /* -1 once claimed */
};

struct cpuhpd_fdstore {
	bool on;
	unsigned max;     /* descriptors the store takes */
	unsigned stored;  /* ours in it now */
	int state_fd;     /* the state memfd, -1 without the store */
	bool writing_off; /* no state text writes (adoption, or a restart's last one done) */
	/* The journal in the memfd (journal.h; fdstore.c says how it is written). */
	uint64_t gen;                  /* of the valid slot */
	unsigned slot;                 /* the valid slot */
	uint64_t live_off, end;        /* its records: the base, then what changed */
	uint64_t base_len, since_base; /* bytes of the base, and of the records after it */
	bool broken;                   /* a write failed: the next change writes a new base */
	struct cpuhpd_list dirty;      /* connections whose lines changed, not yet written */
	unsigned *gone;                /* connections closed, not yet written */
	unsigned ngone, gone_cap;
	bool reqs_dirty;        /* the requests still to answer changed */
	char daemon_line[192];  /* as last written */
	struct cpuhpd_buf body; /* the record being built */
	/* From LISTEN_FDS at start, until adopt.c is done with them. */
	struct cpuhpd_fdstore_taken *taken;
	unsigned ntaken;
	bool have_saved; /* a state text was taken and parsed */
	struct cpuhpd_saved saved;
	struct cpuhpd_journal_pos prev; /* where its records were, if parsed */
	const struct cpuhpd_store_savers *savers;
};

/*
 * Start: take LISTEN_FDS/LISTEN_FDNAMES (for us: LISTEN_PID), read and
 * parse the state text among them, decide whether the store is on.
 * Return: 0 or -ENOMEM; a broken state text is logged, not an error.
 */
int cpuhpd_fdstore_take(struct cpuhpd *d);

/*
 * Claim the descriptor stored as @name (the caller owns it then).
 * Return: the fd, or -1.
 */
int cpuhpd_fdstore_claim(struct cpuhpd *d, const char *name);

/* The listening socket passed in: "listen", else a socket unit's; -1 if none. */
int cpuhpd_fdstore_listen_fd(struct cpuhpd *d);

/*
 * After adoption, once the socket listens: close the descriptors nobody
 * claimed and take them out of the store, drop the parsed text, create
 * (or keep) the state memfd, and store the listening socket if cpuhpd
 * bound it itself.  Return: 0.
 */
int cpuhpd_fdstore_ready(struct cpuhpd *d);

/*
 * Whether a restart would keep one more descriptor of @c, for the fast
 * path to grant a region only where it survives (or where nothing does: no
 * store, or @c not in it, so that its client sees EOF at a restart).
 */
bool cpuhpd_fdstore_has_room(const struct cpuhpd_conn *c);

/* Store connection @c's socket ("conn-N"), and its fast-lease region of @nslots slots. */
void cpuhpd_fdstore_conn_new(struct cpuhpd_conn *c);
void cpuhpd_fdstore_region_new(struct cpuhpd_conn *c, int fd, unsigned nslots);
/* A restart: adopted @c's region, of @nslots slots, stays in the store. */
void cpuhpd_fdstore_region_kept(struct cpuhpd_conn *c, unsigned nslots);
/* @c closes: its descriptors leave the store, so that its client sees EOF. */
void cpuhpd_fdstore_conn_gone(struct cpuhpd_conn *c);
/* Region of @c gone (its connection stays). */
void cpuhpd_fdstore_region_gone(struct cpuhpd_conn *c);

/*
 * Something in the state text changed: record it now (a no-op without the
 * store).  Call it before the reply that tells the client.
 * cpuhpd_fdstore_conn_changed(): @c's lines (its leases, waiting acquires,
 * states, held freezes, identity, Hello, watch, region); they are made
 * anew and appended.  cpuhpd_fdstore_changed(): the requests still to
 * answer (the "req" lines of every connection), made anew and appended.
 */
void cpuhpd_fdstore_changed(struct cpuhpd *d);
void cpuhpd_fdstore_conn_changed(struct cpuhpd_conn *c);
/*
 * @c's lines change with the next rewrite, which the caller makes
 * (cpuhpd_fdstore_changed()) once it has marked every connection it
 * changed: one write for a change that touches many.
 */
void cpuhpd_fdstore_conn_stale(struct cpuhpd_conn *c);

/*
 * A restart's stop, at its end: the whole text a last time, with the
 * frames half read, and no writes after it.
 */
void cpuhpd_fdstore_finish(struct cpuhpd *d);

/*
 * A request still to answer, as a "req" line of connection @conn_id (the
 * modules' writers); @running: the hotplug in the worker, a "run" line.
 */
void cpuhpd_fdstore_put_request(FILE *f, unsigned conn_id, const Cpuhp__Request *rq, bool running);

/* Whether SIGTERM keeps the clients (the store holds them for the next cpuhpd). */
bool cpuhpd_fdstore_keeps(const struct cpuhpd *d);

#endif /* CPUHPD_FDSTORE_H */
