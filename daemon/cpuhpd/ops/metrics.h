/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The metrics text, for `cpuhpctl metrics` (the Metrics request) and
 * --metrics-file (node_exporter's textfile collector): the counters
 * (counters.h), bypasses and revocations, and the gauges of one snapshot
 * (snapshot.h) taken when the text is made.  The text is the Prometheus
 * exposition format 0.0.4, made in one place for both.
 *
 * Loop thread only.
 */
#ifndef CPUHPD_METRICS_H
#define CPUHPD_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "cpuhp.pb-c.h"

struct cpuhpd;
struct cpuhpd_conn;

struct cpuhpd_metrics {
	double started_s; /* the wall clock at start: process_start_time_seconds */
	/* --metrics-file */
	uv_timer_t timer;
	bool timer_on;
	bool file_failed; /* the last write failed: logged once until one works */
};

/* The view's subscriber (view.h): count an external change. */
struct cpuhpd_view_change;
void cpuhpd_metrics_view_changed(struct cpuhpd *d, const struct cpuhpd_view_change *ch);

/*
 * cpuhpd_metrics_text() - the exposition, malloc()ed, or NULL when out of
 * memory.  Samples the fast-lease counters (a sum over every region).
 */
char *cpuhpd_metrics_text(struct cpuhpd *d);

/*
 * Start writing --metrics-file (if set) now and every --metrics-interval
 * ms.  Return: 0; a libuv error, or a directory another user may write
 * (-EPERM), logged.
 */
int cpuhpd_metrics_start(struct cpuhpd *d);

/*
 * cpuhpd_metrics_write() - write --metrics-file now (a no-op without one):
 * into a temporary file beside it, then rename(), so that a reader sees the
 * old text or the new, never a part.  Only into a directory nobody else
 * may write (instance.h), through a file it made new, without blocking.  Called when a hotplug
 * request ends (however it ends), before its answer goes out, so that a client that heard back
 * reads its count; lease counters are as of the last write.
 */
void cpuhpd_metrics_write(struct cpuhpd *d);

/* Write a last time and stop the timer (daemon stop). */
void cpuhpd_metrics_stop(struct cpuhpd *d);

/* Handle MetricsRequest: any client. */
void cpuhpd_metrics_request(struct cpuhpd_conn *c, const Cpuhp__Request *req);

#endif /* CPUHPD_METRICS_H */
