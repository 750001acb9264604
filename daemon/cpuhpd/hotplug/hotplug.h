/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hotplug queue: SetOnline and SetSmt requests, one writer section each,
 * run one at a time in arrival order (queue.c; SetSmt's own checks in
 * smt.c, how a request ends in replies.c).  The head of the queue is the
 * active hotplug:
 *
 *   QUEUED       behind the head; times out here if its deadline passes.
 *   WAIT_LEASES  head; the gate is closed (new leases wait) and it waits
 *                for what the gate's sources hold, up to its deadline.
 *   WORKER       handed to the worker thread, which waits for the daemon's
 *                in-process readers (cpuhp_hotplug_begin_timeout with the
 *                time left).  Status still says "waiting".
 *   RUNNING      the worker holds the hotplug lock and writes sysfs.
 *
 * Leaving the head (done, timed out, client gone, cancelled) opens the gate
 * (core/gate.h), which lets in every waiting lease and registration, and
 * only then activates the next request, which closes the gate again.  The
 * deadline counts from arrival, so time spent behind earlier hotplugs
 * counts, as for the core lock.
 *
 * Loop thread only.
 */
#ifndef CPUHPD_HOTPLUG_H
#define CPUHPD_HOTPLUG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <uv.h>

#include "cpuhp.pb-c.h"

#include "base/list.h"
#include "base/statetext.h"

/*
 * CPUs one request may name, so that its reply (a result per CPU, plus the
 * online set of up to 26,568 bytes) always fits in one frame.
 */
#define CPUHPD_HOTPLUG_MAX_CPUS 1024

struct cpuhpd;
struct cpuhpd_conn;
struct cpuhpd_snapshot;

struct cpuhpd_hotplug {
	struct cpuhpd_list queue; /* struct hotplug_req.node; head is the active one */
	unsigned nqueued;
	uv_timer_t timer;  /* earliest deadline of a request not yet in the worker */
	uint64_t next_seq; /* numbers hotplugs in log lines */
	/*
	 * A request ended, however it ended, and its answer goes out next (the
	 * feature table plugs the --metrics-file writer, so that a client that
	 * heard back finds its hotplug counted there).  NULL: nobody.
	 */
	void (*ended)(struct cpuhpd *d);
	/* The request in the worker came back (a stop that waits for it sets this). NULL: nobody.
	 */
	void (*settled)(struct cpuhpd *d);
	/* A restart: the numbers and notices of the requests it handles again, until then. */
	struct cpuhpd_saved_hotplug *resume;
	unsigned nresume;
};

int cpuhpd_hotplug_init(struct cpuhpd *d);
void cpuhpd_hotplug_close(struct cpuhpd *d);

/* Handle SetOnline: checks the peer and the CPU list, then queues it. */
void cpuhpd_hotplug_submit(struct cpuhpd_conn *c, const Cpuhp__Request *req);

/*
 * Handle SetSmt: checks the peer, the word and what smt/control said when
 * last read (so that "notsupported" fails at once, not after the leases),
 * then queues it like a SetOnline: the same queue, gate and deadlines.
 * It lists with no CPUs until it runs (which siblings go is read then).
 */
void cpuhpd_hotplug_submit_smt(struct cpuhpd_conn *c, const Cpuhp__Request *req);

/* The gate's engine (gate.h): nothing is held any more; the active request goes on. */
void cpuhpd_hotplug_gate_drained(struct cpuhpd *d);
/*
 * ... a source has counted what it holds (the fast path's membarrier came
 * back): the active request's deadline counts again.
 */
void cpuhpd_hotplug_gate_counted(struct cpuhpd *d);

/* The connection is going away: drop its requests not yet in the worker, forget it in the others.
 */
void cpuhpd_hotplug_conn_gone(struct cpuhpd_conn *c);

/*
 * Daemon stop: answer ECANCELED to every request not yet writing sysfs
 * (one waiting in the worker gives up as soon as it gets the lock).  A
 * request still in the worker (cpuhpd_hotplug_in_worker()) finishes, and
 * cpuhpd_stop_finish() follows.
 */
void cpuhpd_hotplug_cancel(struct cpuhpd *d);

/* A request is in the worker thread (a restart's stop waits for it). */
bool cpuhpd_hotplug_in_worker(const struct cpuhpd *d);

/*
 * A restart's stop (stop.c): start nothing more, let the request in the
 * worker end (one still waiting for in-process readers gives up), leave
 * the others queued for the state text.
 */
void cpuhpd_hotplug_hold(struct cpuhpd *d);

/*
 * The state text: every request not answered yet, as "req" lines (the
 * request as sent, its timeout what is left), so that the next cpuhpd runs
 * it.  One that was running when cpuhpd was killed runs again: its answer
 * then reports CPUs it had changed as already in the asked state.
 */
void cpuhpd_hotplug_save(struct cpuhpd *d, FILE *f);

/*
 * The state text's next hotplug number, and a restart's: numbers go on
 * above the last cpuhpd's; its queued requests keep theirs and their
 * notices (the "hotplug" lines), until cpuhpd_hotplug_replayed().
 */
void cpuhpd_hotplug_save_ids(const struct cpuhpd *d, struct cpuhpd_saved *ids);
void cpuhpd_hotplug_adopt_ids(struct cpuhpd *d, const struct cpuhpd_saved *s);
void cpuhpd_hotplug_replayed(struct cpuhpd *d);

/*
 * notice.c, the state text: @c's "ready" line (where its notices go, the
 * hotplug it was told of, its fast leases' delay), if any is set; and back.
 */
void cpuhpd_notice_save(const struct cpuhpd_conn *c, FILE *f);
int cpuhpd_notice_adopt(struct cpuhpd_conn *c, const struct cpuhpd_saved_conn *sc);

/* The snapshot's gauges (snapshot.h): the writer's state, the active request's number, the queue.
 */
void cpuhpd_hotplug_gauges(const struct cpuhpd *d, struct cpuhpd_snapshot *s);

/*
 * cpuhpd_hotplug_list() - the queue, for ListLeases: fills @out->hotplugs
 * (each element and the array malloc()ed; the strings point into the
 * queue, valid until the loop runs on).  On -ENOMEM what was filled is
 * there for the caller to free.
 */
int cpuhpd_hotplug_list(const struct cpuhpd *d, Cpuhp__LeaseList *out);

/*
 * cpuhpd_hotplug_cpu_info() - for ListCpus: how many requests in the queue
 * name @ci->cpu (an SMT one once it runs, when its siblings are known),
 * and the first of them in queue order, into @ci's hotplug fields.
 */
void cpuhpd_hotplug_cpu_info(const struct cpuhpd *d, Cpuhp__CpuInfo *ci);

#endif /* CPUHPD_HOTPLUG_H */
