/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reader leases over the socket: "the set of online CPUs will not change
 * while I hold this".
 *
 * A source of the gate (gate.h):
 *
 *   gate open    an acquire is granted at once.
 *   gate closed  (a hotplug is active) an acquire waits in a FIFO up to its
 *                timeout (a timeout of 0 fails with -EAGAIN); the hotplug
 *                waits while a lease is held.
 *
 * When the gate opens, every waiter is granted, in arrival order, before
 * the next hotplug may close it again: every lease that waited on hotplug
 * H is granted before a later hotplug H2 starts.
 *
 * Loop thread only.
 */
#ifndef CPUHPD_LEASE_H
#define CPUHPD_LEASE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <uv.h>

#include "cpuhp.pb-c.h"

#include "base/list.h"
#include "base/statetext.h"

struct cpuhpd;
struct cpuhpd_conn;
struct cpuhpd_snapshot;

struct cpuhpd_leases {
	uint64_t next_id;           /* lease ids are unique for the daemon's lifetime */
	unsigned held;              /* leases held, all connections together */
	struct cpuhpd_list waiters; /* struct lease_waiter.node, arrival order */
	unsigned nwaiters;
	uv_timer_t timer; /* fires at the earliest waiter deadline */
};

int cpuhpd_lease_init(struct cpuhpd *d);
void cpuhpd_lease_close(struct cpuhpd *d);

/* Handle LeaseAcquire: answers LeaseGranted now or later, or an Error. */
void cpuhpd_lease_acquire(struct cpuhpd_conn *c, const Cpuhp__Request *req);

/* Handle LeaseRelease: answers LeaseReleased, or Error ESRCH. */
void cpuhpd_lease_release(struct cpuhpd_conn *c, const Cpuhp__Request *req);

/* The connection is going away: drop its leases and its waiting acquires, no answers. */
void cpuhpd_lease_conn_gone(struct cpuhpd_conn *c);

/* The gate's source (gate.h): a socket lease is held. */
bool cpuhpd_lease_holding(const struct cpuhpd *d);
/* ... the gate opened: grant every waiter in arrival order. */
void cpuhpd_lease_unblock(struct cpuhpd *d);

/* The snapshot's gauges (snapshot.h): leases held and waiting. */
void cpuhpd_lease_gauges(const struct cpuhpd *d, struct cpuhpd_snapshot *s);

/* Daemon stop: answer every waiter with ECANCELED. */
void cpuhpd_lease_cancel_waiters(struct cpuhpd *d);

/* The state text (statetext.h): @c's "lease" and "wait" lines. */
void cpuhpd_lease_save(const struct cpuhpd_conn *c, FILE *f);

/*
 * A restart: give adopted @c the leases the state text lists (same ids,
 * same ages) and queue its waiting acquires again, with their deadlines.
 * Return: 0, -E2BIG (over the per-connection limit), -ENOMEM.
 */
int cpuhpd_lease_adopt(struct cpuhpd_conn *c, const struct cpuhpd_saved_conn *sc);

/* The requests left unanswered were handled again: grant the acquires that came back
 * waiting, unless a hotplug they waited behind blocks the gate again. */
void cpuhpd_lease_adopted(struct cpuhpd *d);

/* The state text's next lease id, and a restart's: ids go on above the last daemon's. */
void cpuhpd_lease_save_ids(const struct cpuhpd *d, struct cpuhpd_saved *ids);
void cpuhpd_lease_adopt_ids(struct cpuhpd *d, const struct cpuhpd_saved *s);

#endif /* CPUHPD_LEASE_H */
