/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The worker thread: everything that blocks on sysfs or on the hotplug lock
 * runs here, one job at a time in submission order, never on the loop.
 *
 * A dedicated thread rather than uv_queue_work(): libuv's pool has 4 threads
 * shared by the whole process, and a job waiting for in-process readers (up
 * to its timeout) must not hold one of them; a job in the pool also cannot
 * be cancelled.
 *
 * Jobs report back to the loop through a locked message queue and one
 * uv_async (uv_async_send() coalesces, so the callback drains the whole
 * queue).  A hotplug job reports twice: "started" once it holds the hotplug
 * lock and is about to write sysfs, "done" at the end.
 *
 * Ownership: the loop fills the "in" fields and submits; the worker owns the
 * job until it posts "done" (it writes only the "out" fields); then the loop
 * owns it again.  The mutex orders the two.  ->cancel is the only field both
 * touch concurrently.
 */
#ifndef CPUHPD_WORKER_H
#define CPUHPD_WORKER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "cpus.h"
#include "base/list.h"

struct cpuhpd;
struct cpuhpd_job;
struct cpuhpd_topology;

enum cpuhpd_job_kind {
	CPUHPD_JOB_HOTPLUG, /* take the hotplug lock, write cpuN/online, read back */
	CPUHPD_JOB_REFRESH, /* re-read the view (after a uevent) */
	CPUHPD_JOB_SMT,     /* take the hotplug lock, write smt/control, see each sibling there */
};

struct cpuhpd_state_run;

struct cpuhpd_cpu_result {
	unsigned cpu;
	int err; /* 0 or a positive errno */
	bool changed;
	char msg[300];
	/* Hotplug states: the calls made for this CPU (malloc()ed by the loop), the failed one. */
	struct cpuhpd_state_run *runs;
	unsigned nruns;
	char failed_state[64];
};

enum cpuhpd_job_msg_kind {
	CPUHPD_MSG_STARTED,
	CPUHPD_MSG_DONE,
	CPUHPD_MSG_STATES, /* the worker waits for state calls (job->sc) */
};

struct cpuhpd_job_msg {
	struct cpuhpd_list node;
	struct cpuhpd_job *job;
	enum cpuhpd_job_msg_kind kind;
};

/*
 * A hotplug job's request for state calls around one CPU's write.  The
 * worker fills it and posts msg_states, then waits on worker.states_cond
 * until ->done; meanwhile the loop owns ->r (it appends the calls made and,
 * on failure, writes ->r's message) and sets ->err and ->done under
 * worker.lock (cpuhpd_worker_states_done), which orders its writes before
 * the worker's reads.
 */
struct cpuhpd_states_ask {
	struct cpuhpd_cpu_result *r;
	bool teardown; /* else startup */
	/*
	 * The section: PREPARE (startup before the write of an online, teardown
	 * after the write of an offline, which cannot fail) or ONLINE (startup
	 * after the write, teardown before it).
	 */
	bool prepare;
	bool rollback; /* undoing this hotplug's calls (a refused write, the way back): no rollback
	                */
	bool done;     /* under worker.lock */
	int err;       /* 0, or the failed call's positive errno */
};

struct cpuhpd_job {
	struct cpuhpd_list node; /* in worker.jobs while queued */
	enum cpuhpd_job_kind kind;
	void (*started)(struct cpuhpd *d, struct cpuhpd_job *job); /* loop thread */
	void (*done)(struct cpuhpd *d, struct cpuhpd_job *job);    /* loop thread */

	/* in */
	struct cpuhp_cpuset cpus; /* SMT: out, the sibling threads, set before "started" */
	bool online;              /* SMT: whether the siblings are to be online */
	char smt_control[CPUHP_SMT_CONTROL_MAX]; /* SMT: the word to write */
	unsigned timeout_ms;                     /* for in-process readers of the hotplug lock */
	atomic_bool cancel; /* set by the loop; checked once the lock is held */
	bool with_states;   /* states are registered: ask for their calls per CPU */
	/*
	 * Run again after a SIGKILLed cpuhpd cut it in the worker: a CPU found
	 * online already may have had its startups cut short, so they go on.
	 */
	bool resume;
	/*
	 * The request's timeout, which cuts its state calls (loop thread):
	 * calls_deadline in uv_now() ms, 0 for none (a "try", timeout 0).
	 */
	uint64_t calls_deadline;
	uint32_t calls_timeout_ms;
	/* Loop thread: run the state calls ->sc asks for, then cpuhpd_worker_states_done(). */
	void (*states)(struct cpuhpd *d, struct cpuhpd_job *job);
	struct cpuhpd_states_ask sc;

	/* out */
	int err;              /* 0, -ETIMEDOUT, -ECANCELED, or -errno reading the view */
	const char *err_what; /* which file could not be read or written */
	char smt_before[CPUHP_SMT_CONTROL_MAX]; /* SMT: smt/control when the lock was taken */
	struct cpuhpd_cpus view;                /* read back at the end; valid if view_ok */
	bool view_ok;
	struct cpuhpd_cpu_result *results; /* malloc()ed, one per CPU of ->cpus */
	unsigned nresults;
	uint64_t t_locked_ns, t_done_ns; /* CLOCK_MONOTONIC, for log lines */

	struct cpuhpd_job_msg msg_started, msg_done, msg_states;
};

struct cpuhpd_worker {
	uv_thread_t thread;
	uv_mutex_t lock;
	uv_cond_t cond;
	uv_cond_t states_cond;   /* a job's sc.done was set */
	struct cpuhpd_list jobs; /* under lock */
	struct cpuhpd_list msgs; /* under lock */
	bool stop;               /* under lock */
	uv_async_t async;
	const char *root;
	/* Learns the topology of the CPUs each view finds online (topology.h). */
	struct cpuhpd_topology *topology;
	bool running;
};

/* Start the thread.  Return: 0 or a libuv error, logged. */
int cpuhpd_worker_start(struct cpuhpd *d);
/* Join the thread (jobs still queued are dropped) and close the async handle. */
void cpuhpd_worker_stop(struct cpuhpd *d);
void cpuhpd_worker_submit(struct cpuhpd *d, struct cpuhpd_job *job);

/* The state calls a job asked for (job->sc) are done: wake the worker. Loop thread. */
void cpuhpd_worker_states_done(struct cpuhpd *d, struct cpuhpd_job *job, int err);

/* Free a finished job's results. */
void cpuhpd_job_fini(struct cpuhpd_job *job);

#endif /* CPUHPD_WORKER_H */
