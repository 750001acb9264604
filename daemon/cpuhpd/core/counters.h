/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What cpuhpd counts as it goes: hotplug requests by kind and how they
 * ended, each CPU's result, socket leases granted, refused and timed out,
 * Error replies by code, external changes; histograms of a socket lease's
 * wait, a hotplug's time from arrival to answer and the writer's hold of
 * the hotplug lock.  The features count here; metrics.c makes the text.
 *
 * Loop thread only: the worker's timings reach it in the job.
 */
#ifndef CPUHPD_COUNTERS_H
#define CPUHPD_COUNTERS_H

#include <stdint.h>

struct cpuhpd;

/* How a hotplug request (SetOnline or SetSmt) ended; the label of cpuhpd_hotplugs_total. */
enum cpuhpd_hp_result {
	CPUHPD_HP_OK,       /* ran, every CPU got there */
	CPUHPD_HP_PARTIAL,  /* ran, some CPUs failed */
	CPUHPD_HP_FAILED,   /* ran, every CPU failed, or the SMT write was refused */
	CPUHPD_HP_TIMEOUT,  /* ETIMEDOUT behind leases, readers or earlier requests */
	CPUHPD_HP_BUSY,     /* EAGAIN: a "try" (timeout 0) found something in the way */
	CPUHPD_HP_CANCELED, /* cpuhpd stopped */
	CPUHPD_HP_DROPPED,  /* its client went away before it ran */
	CPUHPD_HP_ERROR,    /* queued, but cpuhpd could not read sysfs or ran out of memory */
	CPUHPD_HP_NRESULTS,
};

enum cpuhpd_hp_kind {
	CPUHPD_HP_CPUS, /* SetOnline */
	CPUHPD_HP_SMT,  /* SetSmt */
	CPUHPD_HP_NKINDS,
};

/* Upper bounds, in seconds, shared by every histogram (then +Inf). */
#define CPUHPD_COUNTERS_NBUCKETS 12
extern const double cpuhpd_counters_bucket_le[CPUHPD_COUNTERS_NBUCKETS];

struct cpuhpd_histogram {
	uint64_t bucket[CPUHPD_COUNTERS_NBUCKETS]; /* not cumulative: the formatter sums */
	uint64_t count;
	double sum; /* seconds */
};

struct cpuhpd_counters {
	uint64_t hotplugs[CPUHPD_HP_NKINDS][CPUHPD_HP_NRESULTS];
	/* Per CPU of the requests that ran: changed, already there, failed. */
	uint64_t cpu_changed, cpu_unchanged, cpu_failed;
	uint64_t leases_granted;
	uint64_t lease_timeouts, lease_busy; /* ETIMEDOUT, EAGAIN answers to LeaseAcquire */
	uint64_t external_changes;           /* the online set changed outside cpuhpd */
	/* Revocations, bypasses and freezes are policy.c's and freeze.c's own counts. */
	uint64_t errors[64]; /* Error replies sent, by wire ErrorCode (codes above 63 in [0]) */
	struct cpuhpd_histogram lease_wait, hotplug_duration, writer_hold;
};

/* Add @seconds to @h. */
void cpuhpd_counters_observe(struct cpuhpd_histogram *h, double seconds);

/* A hotplug request ended: count it, and how long it took from arrival (@waited_ns). */
void cpuhpd_counters_hotplug(struct cpuhpd *d, enum cpuhpd_hp_kind kind,
                             enum cpuhpd_hp_result result, uint64_t waited_ns);

/* An Error reply with errno @err went to a client. */
void cpuhpd_counters_error(struct cpuhpd *d, int err);

#endif /* CPUHPD_COUNTERS_H */
