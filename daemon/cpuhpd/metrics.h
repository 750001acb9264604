/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What cpuhpd counts, for `cpuhpctl metrics` (the Metrics request) and
 * --metrics-file (node_exporter's textfile collector): counters of hotplugs
 * by result, timeouts, errors, external changes, bypasses and revocations;
 * histograms of lease waits, hotplug durations and writer holds; gauges
 * read from the daemon's state when the text is made.  The text is the
 * Prometheus exposition format 0.0.4, made in one place for both.
 *
 * Loop thread only: the worker's timings reach it in the job.
 */
#ifndef CPUHPD_METRICS_H
#define CPUHPD_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "cpuhp.pb-c.h"

struct cpuhpd;
struct cpuhpd_conn;

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
#define CPUHPD_METRICS_NBUCKETS 12

struct cpuhpd_histogram {
	uint64_t bucket[CPUHPD_METRICS_NBUCKETS]; /* not cumulative: the formatter sums */
	uint64_t count;
	double sum; /* seconds */
};

struct cpuhpd_metrics {
	uint64_t hotplugs[CPUHPD_HP_NKINDS][CPUHPD_HP_NRESULTS];
	/* Per CPU of the requests that ran: changed, already there, failed. */
	uint64_t cpu_changed, cpu_unchanged, cpu_failed;
	uint64_t leases_granted;
	uint64_t lease_timeouts, lease_busy; /* ETIMEDOUT, EAGAIN answers to LeaseAcquire */
	uint64_t external_changes;           /* the online set changed outside cpuhpd */
	/* Revocations, bypasses and freezes are read from policy.c's and freeze.c's own counts. */
	uint64_t errors[64]; /* Error replies sent, by wire ErrorCode (codes above 63 in [0]) */
	struct cpuhpd_histogram lease_wait, hotplug_duration, writer_hold;
	uint64_t started_ns; /* uv_hrtime() at start */

	/* --metrics-file */
	uv_timer_t timer;
	bool timer_on;
	bool file_failed; /* the last write failed: logged once until one works */
};

/* Add @seconds to @h. */
void cpuhpd_metrics_observe(struct cpuhpd_histogram *h, double seconds);

/* A hotplug request ended: count it, and how long it took from arrival (@waited_ns). */
void cpuhpd_metrics_hotplug(struct cpuhpd *d, enum cpuhpd_hp_kind kind,
                            enum cpuhpd_hp_result result, uint64_t waited_ns);

/* An Error reply with errno @err went to a client. */
void cpuhpd_metrics_error(struct cpuhpd *d, int err);

/*
 * cpuhpd_metrics_text() - the exposition, malloc()ed, or NULL when out of
 * memory.  Samples the fast-lease counters (a sum over every region).
 */
char *cpuhpd_metrics_text(struct cpuhpd *d);

/* Start writing --metrics-file (if set) now and every --metrics-interval ms.  Return: 0 or a
 * libuv error, logged. */
int cpuhpd_metrics_start(struct cpuhpd *d);

/*
 * cpuhpd_metrics_write() - write --metrics-file now (a no-op without one):
 * into a temporary file beside it, then rename(), so that a reader sees the
 * old text or the new, never a part.  Called when a hotplug request ends
 * (however it ends), before its answer goes out, so that a client that
 * heard back reads its count; lease counters are as of the last write.
 */
void cpuhpd_metrics_write(struct cpuhpd *d);

/* Write a last time and stop the timer (daemon stop). */
void cpuhpd_metrics_stop(struct cpuhpd *d);

/* Handle MetricsRequest: any client. */
void cpuhpd_metrics_request(struct cpuhpd_conn *c, const Cpuhp__Request *req);

#endif /* CPUHPD_METRICS_H */
