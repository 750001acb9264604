/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hotplug freezes (Freeze/Thaw), the kernel's cpu_hotplug_disable() for
 * user space.  A freeze is PENDING from its request until the hotplug queue
 * is empty (hotplugs queued before it run: first come, first served), then
 * HELD until Thaw or its connection's end.  While any freeze exists, pending
 * or held, the queue refuses every new request at once with EBUSY naming
 * the oldest holder; leases are untouched.  So once Frozen is sent, the
 * online set changes only behind cpuhpd's back.
 *
 * Loop thread only.
 */
#ifndef CPUHPD_FREEZE_H
#define CPUHPD_FREEZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cpuhp.pb-c.h"

#include "base/list.h"
#include "base/statetext.h"

struct cpuhpd;
struct cpuhpd_conn;
struct cpuhpd_snapshot;

struct cpuhpd_freezes {
	struct cpuhpd_list list; /* struct freeze.node, oldest first */
	unsigned n;              /* pending and held */
	uint64_t next_id;
	/* The last freeze ended (the feature table plugs the plan's look); NULL: nobody. */
	void (*thawed)(struct cpuhpd *d);
};

/* Start: no freeze.  Return: 0. */
int cpuhpd_freeze_init(struct cpuhpd *d);

/* Handle Freeze (answers Frozen now, or when the hotplug queue empties) and Thaw. */
void cpuhpd_freeze_request(struct cpuhpd_conn *c, const Cpuhp__Request *req);
void cpuhpd_freeze_thaw(struct cpuhpd_conn *c, const Cpuhp__Request *req);

/* queue.c: the queue is empty (nothing queued or running): grant the pending freezes. */
void cpuhpd_freeze_queue_empty(struct cpuhpd *d);

/*
 * queue.c: whether a new hotplug must be refused; if so, @buf says by
 * whom ("pid 4242 (bench) 'latency run', frozen 3.0 s").
 */
bool cpuhpd_freeze_active(struct cpuhpd *d, char *buf, size_t size);

/* The connection is going away: its freezes end, unanswered. */
void cpuhpd_freeze_conn_gone(struct cpuhpd_conn *c);

/* Daemon stop: answer ECANCELED to the pending freezes. */
void cpuhpd_freeze_cancel(struct cpuhpd *d);

/* The snapshot's gauge (snapshot.h): freezes held and pending. */
void cpuhpd_freeze_gauges(const struct cpuhpd *d, struct cpuhpd_snapshot *s);

/* ListLeases: fill @out->freezes (the caller frees each element and the array). */
int cpuhpd_freeze_list(struct cpuhpd *d, Cpuhp__LeaseList *out);

/* The state text: @c's held freezes, as "freeze" lines... */
void cpuhpd_freeze_save(const struct cpuhpd_conn *c, FILE *f);
/* ... and every pending one, as the "req" line of its Freeze (asked again). */
void cpuhpd_freeze_save_pending(struct cpuhpd *d, FILE *f);

/* A restart: @sc's freezes again on adopted @c, held or pending as they were.  0 or -errno. */
int cpuhpd_freeze_adopt(struct cpuhpd_conn *c, const struct cpuhpd_saved_conn *sc);

/* The state text's next freeze id, and a restart's. */
void cpuhpd_freeze_save_ids(const struct cpuhpd *d, struct cpuhpd_saved *ids);
void cpuhpd_freeze_adopt_ids(struct cpuhpd *d, const struct cpuhpd_saved *s);

#endif /* CPUHPD_FREEZE_H */
