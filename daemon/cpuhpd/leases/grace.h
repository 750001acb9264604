/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * After a restart that lost the clients (no fd store, or a store lost
 * with a crash): hold every hotplug for a grace period, so that the former
 * lease holders can notice that their daemon went away before a CPU
 * changes under them.
 *
 * The sign of a previous instance is the lock file of instance.c: cpuhpd
 * writes its pid there at start and empties it at an orderly stop that
 * left nothing behind (no lease, fast lease or hotplug state held, no
 * client kept in the fd store).  A pid found there at start means the last
 * cpuhpd on this tree crashed, or stopped with leases held: unless this
 * start adopted that instance's clients from the fd store, hotplugs wait
 * --restart-grace-ms (the leases are granted meanwhile).
 *
 * Loop thread only.
 */
#ifndef CPUHPD_GRACE_H
#define CPUHPD_GRACE_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

/* --restart-grace-ms's default: long enough for a client's event loop to see EOF. */
#define CPUHPD_RESTART_GRACE_MS 5000

struct cpuhpd;
struct cpuhpd_snapshot;

struct cpuhpd_grace {
	bool adopted;   /* this start took clients back from the fd store */
	bool holding;   /* the grace runs */
	uint64_t until; /* uv_now() when it ends */
	uv_timer_t timer;
	bool timer_init;
};

/* Start, after the fd store's adoption: begin the grace if a previous instance left no store. */
int cpuhpd_grace_start(struct cpuhpd *d);
void cpuhpd_grace_close(struct cpuhpd *d);

/* Whether hotplugs are held: the grace is a source of the gate (gate.h). */
bool cpuhpd_grace_holding(const struct cpuhpd *d);

/* Milliseconds of grace left, 0 if none (ListLeases, a hotplug's log and error). */
uint64_t cpuhpd_grace_remaining_ms(const struct cpuhpd *d);

/* The snapshot's gauge (snapshot.h): the grace left. */
void cpuhpd_grace_gauges(const struct cpuhpd *d, struct cpuhpd_snapshot *s);

#endif /* CPUHPD_GRACE_H */
