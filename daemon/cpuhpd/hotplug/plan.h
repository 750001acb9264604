/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The plan in force (plandecl.h has what it says and where from): cpuhpd
 * is the one writer that keeps it, with hotplugs in its own name, queued
 * like a client's (leases waited for, the states' calls made, watchers
 * told, a freeze honoured; listed with cpuhpd as the one who asked):
 *
 * - at start, before the socket listens, so that the first leases wait
 *   behind it while status and listings are answered;
 * - after every change of the CPUs, cpuhpd's own and those behind its
 *   back: a CPU of offline-cpus online, SMT control not as the plan says,
 *   a CPU that became present with online-new-cpus (brought online, its
 *   startups run as for any online);
 * - after a reload (SIGHUP: `systemctl reload cpuhpd`), which keeps the
 *   plan in force when a file does not parse (at start such a file is left
 *   out and the rest applies: there is no plan in force yet).
 *
 * One of its hotplugs at a time, and none for what a queued request will
 * do anyway.  A change behind cpuhpd's back that contradicts the plan is a
 * conflict: counted, logged as a warning with what cpuhpd knows of the
 * writer (the kernel's uevent names none), and undone after a delay that
 * doubles from the second conflict on (100 ms, 200 ms, ... at most 60 s)
 * while each comes within 60 s of the one before, so that a writer that
 * fights the plan in a loop meets a cpuhpd that never spins.  A retry
 * (a hotplug of the plan that timed out behind leases) waits the same way.
 * A CPU the kernel or a state refuses (CPU 0, an SMT sibling while SMT is
 * off) is reported (the log, GetPlan) and not tried again until the plan
 * or the CPU changes.
 *
 * With online-new-cpus, cpuhpd keeps the file "online-new-cpus" in its
 * runtime directory (the udev rule shipped with cpuhpd waits for cpuhpd
 * while it exists; cpuhpd(8), UDEV); a clean stop removes it.
 *
 * Loop thread only.
 */
#ifndef CPUHPD_PLAN_H
#define CPUHPD_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "cpuhp.pb-c.h"

#include "plandecl.h"

struct cpuhpd;
struct cpuhpd_conn;
struct cpuhpd_view_change;

/* How long one of the plan's hotplugs waits for leases and readers. */
#define CPUHPD_PLAN_TIMEOUT_MS 10000
/* The backoff: the second trouble in a row waits this, each next one twice as long... */
#define CPUHPD_PLAN_BACKOFF_MS 100
/* ... up to this; a trouble more than CPUHPD_PLAN_QUIET_MS after the last starts over. */
#define CPUHPD_PLAN_BACKOFF_MAX_MS 60000
#define CPUHPD_PLAN_QUIET_MS       60000

struct cpuhpd_plan_problem {
	unsigned cpu;
	char msg[320];
};

struct cpuhpd_plan {
	struct cpuhpd_plan_decl decl; /* in force */
	char *reload_error;           /* the last reload's errors (decl kept), or NULL */
	/* Became present with online-new-cpus and not online yet. */
	struct cpuhp_cpuset new_cpus;
	/* Could not be applied: not tried again until the plan or the CPU changes. */
	struct cpuhp_cpuset stuck;
	struct cpuhpd_plan_problem *problems; /* one per CPU of ->stuck */
	unsigned nproblems;
	char smt_problem[320]; /* "" none */
	uint64_t busy;         /* the number of its hotplug queued or running; 0: none */
	uint64_t due;          /* uv_now() before which it applies nothing (the backoff); 0 */
	unsigned streak;       /* conflicts and retries in a row */
	uint64_t last_trouble; /* uv_now() of the last of them */
	uint64_t conflicts, hotplugs;
	uint64_t last_conflict; /* uv_now() */
	char last_conflict_msg[600];
	char *flag; /* the runtime directory's "online-new-cpus" (its path), or NULL */
	bool flag_written;
	bool timer_init, sighup_init, started;
	uv_timer_t timer; /* the next look, at ->due or at once */
	uv_signal_t sighup;
};

/* Start, before the socket listens: load the plan, queue what it needs.  Return: 0 or -errno. */
int cpuhpd_plan_start(struct cpuhpd *d);
/* The stop's end: the timer and the signal; a stop that is no restart removes the udev flag. */
void cpuhpd_plan_close(struct cpuhpd *d);

/* Look again soon (from the loop, never inside the caller): the queue or a freeze changed. */
void cpuhpd_plan_poke(struct cpuhpd *d);

/* The view's subscriber (view.h): conflicts, new and removed CPUs; then a look. */
void cpuhpd_plan_view_changed(struct cpuhpd *d, const struct cpuhpd_view_change *ch);

/* Reload the files (SIGHUP).  Return: 0, or -EINVAL with the plan in force kept. */
int cpuhpd_plan_reload(struct cpuhpd *d);

/* The delay of the @streak-th trouble in a row (1: none). */
static inline uint64_t cpuhpd_plan_backoff(unsigned streak)
{
	uint64_t ms = CPUHPD_PLAN_BACKOFF_MS;

	if (streak <= 1)
		return 0;
	for (unsigned i = 2; i < streak && ms < CPUHPD_PLAN_BACKOFF_MAX_MS; i++)
		ms *= 2;
	return ms < CPUHPD_PLAN_BACKOFF_MAX_MS ? ms : CPUHPD_PLAN_BACKOFF_MAX_MS;
}

/* planreq.c: GetPlan.  Any client. */
void cpuhpd_plan_request(struct cpuhpd_conn *c, const Cpuhp__Request *req);

/*
 * planreq.c, for SetOnline and SetSmt at submit, after their own checks
 * (@set and @online; or @smt, the word): a request against the plan is
 * refused (EBUSY, naming the setting's file and line) unless it persists
 * (@persist), and then the plan's setting is written first (plandecl.h).
 * Return: whether to queue it; if not, @c has been answered.
 */
bool cpuhpd_plan_admit(struct cpuhpd_conn *c, uint64_t req_id, const struct cpuhp_cpuset *set,
                       bool online, const char *smt, bool persist);

#endif /* CPUHPD_PLAN_H */
