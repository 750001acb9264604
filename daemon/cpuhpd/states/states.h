/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hotplug states: the registry of named states that clients register
 * (registry.c), the engine that calls their startup and teardown callbacks
 * (engine.c), the requests (requests.c) and the state text's part
 * (save.c); the rules are in README.md, "Hotplug states".
 *
 * The engine runs one sequence of calls at a time, from a FIFO of works:
 *
 *   HOTPLUG    one CPU of a hotplug job; the worker, which holds the hotplug
 *              lock, waits for the verdict (cpuhpd_worker_states_done).
 *   REGISTER   startup on every online CPU for a new state (a reader: a
 *              hotplug waits for it, and it waits while one is active).
 *   REMOVE     teardown for every CPU a state was started on (a reader too).
 *   RECONCILE  external calls for CPUs that changed behind cpuhpd's back.
 *
 * A work is a list of steps (state, CPU, phase) run in order, one call in
 * flight at a time, with the state's deadline on a uv_timer.  A failed step
 * of a HOTPLUG or REGISTER work replaces the steps left by the rollback: the
 * steps already done, in reverse order and the other phase.
 *
 * A work is also cut: a HOTPLUG work at its request's timeout, every work
 * CPUHPD_STATES_STOP_GRACE_MS into a stop.  The call in flight then ends
 * as a missed deadline (ETIMEDOUT; ECANCELED for a stop), so that state is
 * rolled back too; a step not called yet fails the same way uncalled; and
 * every call left (the rollback's) is sent in order without waiting for
 * its answer, which comes late and is ignored.  So neither a hotplug nor a
 * stop waits past that point for a client that does not answer.
 *
 * Loop thread only, but for cpuhpd_states_hotplug_cpu()'s job, which the
 * worker hands over and waits on.
 */
#ifndef CPUHPD_STATES_H
#define CPUHPD_STATES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <uv.h>

#include "cpuhp.pb-c.h"

#include "base/list.h"
#include "base/statetext.h"

/*
 * States one connection may register, and the daemon in all; the last
 * CPUHPD_STATES_RESERVED of those are for root and the admin group only,
 * so that no other uid (or all of them together) can fill the table.
 */
#define CPUHPD_STATES_MAX_PER_CONN 64
#define CPUHPD_STATES_MAX          1024
/* Instances of one multi state, and in the daemon (they cost no connection). */
#define CPUHPD_INSTANCES_MAX_PER_STATE 256
#define CPUHPD_INSTANCES_MAX           4096
#define CPUHPD_STATES_RESERVED         128
/* The deadline of a call when RegisterState says 0, and the largest one allowed. */
#define CPUHPD_STATES_DEFAULT_DEADLINE_MS 5000
#define CPUHPD_STATES_MAX_DEADLINE_MS     600000
/* --max-state-deadline-ms: the longest a uid neither root nor admin may ask, by default. */
#define CPUHPD_STATES_USER_DEADLINE_MS 5000
/* A stop lets the call in flight (and those after it) run this long, then cuts them. */
#define CPUHPD_STATES_STOP_GRACE_MS 1000
#define CPUHPD_STATE_NAME_MAX       64 /* with the NUL */

struct cpuhpd;
struct cpuhpd_conn;
struct cpuhpd_view_change;
struct cpuhpd_job;
struct cpuhpd_cpu_result;

/* One call as run, for replies and log lines (proto: StateRun). */
struct cpuhpd_state_run {
	char name[CPUHPD_STATE_NAME_MAX];
	char inst[CPUHPD_STATE_NAME_MAX]; /* "" but for an instance's call */
	char comm[16];
	char msg[120];
	unsigned cpu;
	pid_t pid;
	int err; /* 0 or a positive errno */
	uint64_t us;
	bool teardown, rollback, timed_out, gone;
	bool prepare; /* the state's section */
};

struct cpuhpd_states {
	struct cpuhpd_list list;    /* struct cpuhpd_state.node, startup order */
	unsigned nstates;           /* states in the list ... */
	unsigned ninstances;        /* ... and instances */
	struct cpuhpd_list works;   /* struct state_work.node; the head one runs */
	struct cpuhpd_list waiting; /* REGISTER/REMOVE works waiting for the gate */
	unsigned holds;             /* readers (REGISTER/REMOVE works) in the FIFO */
	uint64_t next_state_id;
	uint64_t next_call_id; /* the lowest id the next call may have (engine.c) */
	uv_timer_t timer;      /* the deadline of the call in flight */
	bool kicking, kick_again;
	bool hotplug_active;   /* a hotplug job is in the worker: reconcile after it */
	bool reconcile_queued; /* a RECONCILE work is queued, not yet planned */
	bool closed;
	/* The call in flight: the head work's step pos - 1. */
	bool in_flight;
	uint64_t call_id;
	uint64_t call_t0_ns;
	uint64_t stop_deadline; /* uv_now() ms, once a stop began: every work is cut there */
};

int cpuhpd_states_init(struct cpuhpd *d);
/* Daemon stop, after the clients were closed: close the timer. */
void cpuhpd_states_close(struct cpuhpd *d);

/* Requests (the request table, table.c). */
void cpuhpd_states_register(struct cpuhpd_conn *c, const Cpuhp__Request *req);
void cpuhpd_states_remove(struct cpuhpd_conn *c, const Cpuhp__Request *req);
void cpuhpd_states_answer(struct cpuhpd_conn *c, const Cpuhp__Request *req);
void cpuhpd_states_list(struct cpuhpd_conn *c, const Cpuhp__Request *req);
void cpuhpd_states_add_instance(struct cpuhpd_conn *c, const Cpuhp__Request *req);
void cpuhpd_states_remove_instance(struct cpuhpd_conn *c, const Cpuhp__Request *req);

/* The connection is going away: its states go, a call awaited from it counts as done. */
void cpuhpd_states_conn_gone(struct cpuhpd_conn *c);

/* Daemon stop: answer ECANCELED to registrations and removals still waiting for the gate. */
void cpuhpd_states_cancel(struct cpuhpd *d);
/*
 * A stop (orderly or a restart's) began: the call in flight and those after
 * it run for CPUHPD_STATES_STOP_GRACE_MS at most, then are cut (engine.c).
 */
void cpuhpd_states_stop(struct cpuhpd *d);

/*
 * The states registered on live connections of @uid (admit.c names them
 * when that uid meets --max-connections-per-uid).  Linear in the states.
 */
unsigned cpuhpd_states_of_uid(const struct cpuhpd *d, uid_t uid);
/* Whether any state is registered (a hotplug job then asks for calls). */
bool cpuhpd_states_any(const struct cpuhpd *d);

/*
 * A source of the gate (gate.h): registrations and removals in progress are
 * readers, which a hotplug waits for as for leases ...
 */
bool cpuhpd_states_holding(const struct cpuhpd *d);
/* ... the gate opened: start those that waited, in arrival order ... */
void cpuhpd_states_unblock(struct cpuhpd *d);
/* ... process @pid has a call in flight (a lease it asks for would deadlock). */
bool cpuhpd_states_in_call(const struct cpuhpd *d, pid_t pid);

/*
 * A hotplug job goes into the worker / came back (hotplug/queue.c).  External
 * changes noticed meanwhile are reconciled after it, with its view.
 */
void cpuhpd_states_hotplug_begin(struct cpuhpd *d);
void cpuhpd_states_hotplug_end(struct cpuhpd *d);

/* The view changed, or may have, behind our back: reconcile. */
void cpuhpd_states_reconcile(struct cpuhpd *d);
/* The view's subscriber (view.h): the view was read again; reconcile. */
void cpuhpd_states_view_changed(struct cpuhpd *d, const struct cpuhpd_view_change *ch);

/*
 * The worker asks for the calls of one CPU of @job (job->sc says which):
 * runs them, then cpuhpd_worker_states_done().
 */
void cpuhpd_states_hotplug_cpu(struct cpuhpd *d, struct cpuhpd_job *job);

/*
 * Fill @out (n_runs StateRun and their pointers, caller-allocated) from
 * @runs, cutting messages to @msg_max bytes.  The strings stay @runs'.
 */
void cpuhpd_states_runs_to_wire(struct cpuhpd_state_run *runs, unsigned n, Cpuhp__StateRun *out,
                                Cpuhp__StateRun **outp, size_t msg_max);

/* A sequence of calls runs (a restart's stop waits for it to end). */
bool cpuhpd_states_running(const struct cpuhpd *d);

/* The state text: @c's live states, as "state" lines. */
void cpuhpd_states_save(const struct cpuhpd_conn *c, FILE *f);
/*
 * ... and the registrations and removals waiting for the gate, as
 * "req" lines (after the hotplugs', which they wait behind).
 */
void cpuhpd_states_save_waiting(struct cpuhpd *d, FILE *f);

/*
 * A restart: register @sc's states again on adopted @c, live, started on
 * the CPUs the text says (no calls now: the client ran them already).
 * Return: 0 or a negative errno.
 */
int cpuhpd_states_adopt(struct cpuhpd_conn *c, const struct cpuhpd_saved_conn *sc);

/*
 * Every connection adopted and its requests replayed: states whose CPUs
 * differ from the files get their external calls (after the hotplug the
 * last cpuhpd was killed in, if it runs again now).
 */
void cpuhpd_states_adopted(struct cpuhpd *d);

/*
 * The state text's next state and call ids, and a restart's.  Call ids
 * are times (engine.c), above every id an earlier cpuhpd sent whether it
 * wrote them down or not; the saved one only keeps them increasing.
 */
void cpuhpd_states_save_ids(const struct cpuhpd *d, struct cpuhpd_saved *ids);
void cpuhpd_states_adopt_ids(struct cpuhpd *d, const struct cpuhpd_saved *s);

#endif /* CPUHPD_STATES_H */
