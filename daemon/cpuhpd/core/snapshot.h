/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One snapshot of what cpuhpd is doing, for everyone who tells it: the
 * Status reply (status.c), the STATUS= line (statusline.c) and the metrics
 * text (metrics.c) render the same struct, filled by one function from the
 * features' gauges (the feature table lists them, table.c).
 *
 * A feature whose gauges change calls cpuhpd_snapshot_changed(): the
 * STATUS= line is made again (at most every 100 ms, notify.h).
 *
 * Loop thread only.
 */
#ifndef CPUHPD_SNAPSHOT_H
#define CPUHPD_SNAPSHOT_H

#include <stdint.h>

#include "cpuhp.pb-c.h"

struct cpuhpd;

struct cpuhpd_snapshot {
	unsigned connections;
	unsigned leases_held;    /* socket leases */
	unsigned leases_waiting; /* socket acquires waiting behind a hotplug */
	/* Fast leases: a sum of the shared counters (each capped at its limit). */
	unsigned fast_held, fast_holders, fast_connections;
	const char *fast_path; /* the fast path's mode, a static string */
	Cpuhp__WriterState writer;
	uint64_t hotplug_seq;     /* the active hotplug's number ("#N"), 0 if none */
	unsigned hotplugs_queued; /* the active one included */
	unsigned freezes;         /* held and pending */
	uint64_t bypasses, revocations;
	uint64_t grace_ms; /* the restart grace left, 0 if none */
};

typedef void (*cpuhpd_gauge_fn)(const struct cpuhpd *d, struct cpuhpd_snapshot *s);

struct cpuhpd_snapshot_hooks {
	const cpuhpd_gauge_fn *gauges;
	void (*changed)(struct cpuhpd *d);
};

/* Start: the features' gauges (NULL-terminated), and who hears that they changed. */
void cpuhpd_snapshot_plug(struct cpuhpd *d, const cpuhpd_gauge_fn *gauges,
                          void (*changed)(struct cpuhpd *d));

/* Fill @s now (the fast-lease counters are summed: linear in the regions). */
void cpuhpd_snapshot_take(const struct cpuhpd *d, struct cpuhpd_snapshot *s);

/* Some gauge may have changed (leases, hotplugs, the grace). */
void cpuhpd_snapshot_changed(struct cpuhpd *d);

#endif /* CPUHPD_SNAPSHOT_H */
