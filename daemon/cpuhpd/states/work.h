/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The works of the call engine (engine.c), private to states/.  A work is
 * a list of steps (state, CPU, phase) run in order, one call in flight at
 * a time; what it is for (states.h) decides its steps when it reaches the
 * head of the FIFO.  Loop thread only.
 */
#ifndef CPUHPD_STATES_WORK_H
#define CPUHPD_STATES_WORK_H

#include <stdbool.h>
#include <stdint.h>

#include "base/list.h"
#include "states.h"

struct cpuhpd;
struct cpuhpd_conn;
struct cpuhpd_job;
struct cpuhpd_state;

enum work_kind {
	W_HOTPLUG,
	W_REGISTER,
	W_REMOVE,
	W_RECONCILE,
};

struct state_step {
	struct cpuhpd_state *s;
	unsigned cpu;
	bool teardown, rollback, external;
	bool done_ok; /* its call succeeded: a rollback undoes it */
	bool assumed; /* no call: done before a kill (a resumed hotplug), a rollback undoes it */
	bool timed_out;
	uint64_t sent_id; /* sent ahead in a batch (engine.c): its call's id; 0: not sent */
	bool was_unsure;  /* its CPU was unsure for its state before it was sent */
};

struct state_work {
	struct cpuhpd_list node; /* in states.works or states.waiting */
	enum work_kind kind;
	bool planned;
	bool may_rollback, rolled_back;
	/*
	 * HOTPLUG: the PREPARE teardowns after the write (the kernel's DEAD):
	 * none can fail, the CPU is gone; each outcome is logged and counts as
	 * done, and the work's verdict is 0.
	 */
	bool dead;
	struct state_step *steps;
	unsigned nsteps, cap, pos;
	int err; /* the first failed forward call's positive errno */
	/*
	 * Its hotplug's timeout or the stop's grace passed (engine.c, "cut"):
	 * the calls left are sent in order, not awaited.
	 */
	bool expired;
	char why[240];
	char failed_state[CPUHPD_STATE_NAME_MAX];
	struct cpuhpd_state_run *runs;
	unsigned nruns, capruns;
	/* REGISTER, REMOVE: who asked, and for which state */
	struct cpuhpd_conn *conn;
	uint64_t req_id;
	struct cpuhpd_state *target;
	bool nocalls;
	/* answers its client once its calls are done (requests.c) */
	void (*done)(struct cpuhpd *d, struct state_work *w);
	/* HOTPLUG */
	struct cpuhpd_job *job;
};

struct state_work *cpuhpd_states_work_new(enum work_kind kind);
void cpuhpd_states_work_free(struct state_work *w);
/*
 * A reader's work (REGISTER, REMOVE): into the FIFO now if the gate is
 * open, else it waits until the gate opens (cpuhpd_states_unblock()).
 */
void cpuhpd_states_submit_reader(struct cpuhpd *d, struct state_work *w);

#endif /* CPUHPD_STATES_WORK_H */
