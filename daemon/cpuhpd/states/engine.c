/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The call engine of hotplug states (states.h has its shape, work.h its
 * works, daemon/cpuhpd/README.md "Hotplug states" the rules).
 *
 * Invariants:
 * - One call is in flight at most, the head work's step pos - 1
 *   (->in_flight); every way it ends (answer, deadline, owner gone) goes
 *   through complete(), which records it and kicks the engine on.
 * - ->holds counts the REGISTER/REMOVE works in the FIFO; while it is not 0
 *   a hotplug does not leave WAIT_LEASES (the gate asks cpuhpd_states_holding).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "errmap.h"

#include "cpuhpd.h"
#include "base/log.h"
#include "sysfs/worker.h"
#include "core/conn.h"
#include "core/fdstore.h"
#include "core/gate.h"
#include "state.h"
#include "states.h"
#include "work.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *phase_name(bool teardown)
{
	return teardown ? "teardown" : "startup";
}

static struct state_work *head_work(const struct cpuhpd *d)
{
	struct cpuhpd_list *n = cpuhpd_list_first(&d->states.works);

	return n ? cpuhpd_container_of(n, struct state_work, node) : NULL;
}

static int add_step(struct state_work *w, struct cpuhpd_state *s, unsigned cpu, bool teardown,
                    bool rollback, bool external)
{
	if (w->nsteps == w->cap) {
		unsigned cap = w->cap ? 2 * w->cap : 8;
		struct state_step *n = realloc(w->steps, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->steps = n;
		w->cap = cap;
	}
	w->steps[w->nsteps++] = (struct state_step){
	    .s = cpuhpd_state_get(s),
	    .cpu = cpu,
	    .teardown = teardown,
	    .rollback = rollback,
	    .external = external,
	};
	return 0;
}

struct state_work *cpuhpd_states_work_new(enum work_kind kind)
{
	struct state_work *w = calloc(1, sizeof(*w));

	if (w) {
		w->kind = kind;
		cpuhpd_list_init(&w->node);
	}
	return w;
}

void cpuhpd_states_work_free(struct state_work *w)
{
	for (unsigned i = 0; i < w->nsteps; i++)
		cpuhpd_state_put(w->steps[i].s);
	if (w->target)
		cpuhpd_state_put(w->target);
	free(w->steps);
	free(w->runs);
	free(w);
}

static struct cpuhpd_state_run *add_run(struct state_work *w)
{
	if (w->nruns == w->capruns) {
		unsigned cap = w->capruns ? 2 * w->capruns : 8;
		struct cpuhpd_state_run *n = realloc(w->runs, cap * sizeof(*n));

		if (!n)
			return NULL;
		w->runs = n;
		w->capruns = cap;
	}
	memset(&w->runs[w->nruns], 0, sizeof(w->runs[0]));
	return &w->runs[w->nruns++];
}

/* The CPUs of @set, ascending. */
static unsigned cpus_of(const struct cpuhp_cpuset *set, unsigned *out)
{
	unsigned n = 0;
	int cpu = -1;

	while ((cpu = cpuhp_cpuset_next(set, cpu)) >= 0)
		out[n++] = (unsigned)cpu;
	return n;
}

/*
 * Whether a call of that phase is due for @s on @cpu: a teardown where it
 * started, a startup where it did not; both where a call was sent and not
 * answered (a cpuhpd killed meanwhile): the client may have run it.
 */
static bool due(const struct cpuhpd_state *s, unsigned cpu, bool teardown)
{
	if (cpuhp_cpuset_has(&s->unsure, cpu))
		return true;
	return cpuhp_cpuset_has(&s->cpus, cpu) == teardown;
}

/* What a restart would call next for @s: its CPUs and its calls unanswered (save.c). */
static void state_changed(const struct cpuhpd_state *s)
{
	if (s->live && cpuhpd_state_alive(s))
		cpuhpd_fdstore_conn_changed(s->conn);
}

/* Whether a hotplug, a reconcile or a registration calls @s itself (a multi state: never). */
static bool callable(const struct cpuhpd_state *s)
{
	return s->live && !s->multi;
}

/*
 * One section's calls on one side of a CPU's write (the ask says which):
 * PREPARE startups before an online's write, ONLINE ones after it; ONLINE
 * teardowns before an offline's write, PREPARE ones (DEAD) after it.
 */
static int plan_hotplug(struct cpuhpd *d, struct state_work *w)
{
	const struct cpuhpd_states_ask *a = &w->job->sc;
	unsigned cpu = a->r->cpu;
	struct cpuhpd_list *pos;
	int err = 0;

	if (a->teardown) {
		/* Highest priority first: the registry backwards. */
		for (pos = d->states.list.prev; pos != &d->states.list && !err; pos = pos->prev) {
			struct cpuhpd_state *s =
			    cpuhpd_container_of(pos, struct cpuhpd_state, node);

			if (callable(s) && s->prepare == a->prepare && due(s, cpu, true))
				err = add_step(w, s, cpu, true, a->rollback, false);
		}
		w->dead = a->prepare;
		w->may_rollback = !a->rollback && !a->prepare;
		return err;
	}
	cpuhpd_list_for_each(pos, &d->states.list)
	{
		struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		if (!callable(s) || s->prepare != a->prepare)
			continue;
		if (due(s, cpu, false))
			err = add_step(w, s, cpu, false, a->rollback, false);
		else if (w->job->resume && !a->rollback && !a->prepare &&
		         !(err = add_step(w, s, cpu, false, false, false)))
			/* Started before the kill: no call, but a refusal after it undoes it. */
			w->steps[w->nsteps - 1].assumed = w->steps[w->nsteps - 1].done_ok = true;
		if (err)
			break;
	}
	/* A rollback of a refused write is not rolled back in turn. */
	w->may_rollback = !a->rollback;
	return err;
}

static int plan_register(struct cpuhpd *d, struct state_work *w)
{
	unsigned *cpus = malloc(CPUHP_CPUSET_MAX * sizeof(*cpus)), n;
	int err = 0;

	if (!cpus)
		return -ENOMEM;
	/*
	 * An instance is added on the CPUs its state is up on: those online,
	 * since an add is a reader (no hotplug is half way).
	 */
	if (w->nocalls || w->target->multi) {
		/* The client sets itself up for the CPUs online now (a multi state: nothing to). */
		w->target->cpus = d->view.online;
	} else {
		n = cpus_of(&d->view.online, cpus);
		for (unsigned i = 0; i < n && !err; i++)
			err = add_step(w, w->target, cpus[i], false, false, false);
	}
	w->may_rollback = true;
	free(cpus);
	return err;
}

static int plan_remove(struct cpuhpd *d, struct state_work *w)
{
	unsigned *cpus = malloc(CPUHP_CPUSET_MAX * sizeof(*cpus)), n;
	int err = 0;

	(void)d;
	if (!cpus)
		return -ENOMEM;
	/* From now on no hotplug calls it; its teardowns run last CPU first. */
	w->target->live = false;
	if (w->target->multi) {
		/* Its instances, newest first: they follow it in the list. */
		struct cpuhpd_list *pos = &w->target->node;
		unsigned k = w->target->ninst;

		while (k--)
			pos = pos->next;
		for (; pos != &w->target->node && !err; pos = pos->prev) {
			struct cpuhpd_state *s =
			    cpuhpd_container_of(pos, struct cpuhpd_state, node);

			s->live = false;
			n = w->nocalls ? 0 : cpus_of(&s->cpus, cpus);
			while (n-- && !err)
				err = add_step(w, s, cpus[n], true, false, false);
		}
	} else if (!w->nocalls) {
		n = cpus_of(&w->target->cpus, cpus);
		while (n-- && !err)
			err = add_step(w, w->target, cpus[n], true, false, false);
	}
	free(cpus);
	return err;
}

/*
 * Per CPU that a state believes in but is offline: teardowns, highest
 * priority first; then per online CPU a state was not started on:
 * startups, lowest first.  Both flagged external.
 */
static int plan_reconcile(struct cpuhpd *d, struct state_work *w)
{
	const struct cpuhp_cpuset *online = &d->view.online;
	struct cpuhp_cpuset gone;
	struct cpuhpd_list *pos;
	int err = 0;

	/*
	 * The offline CPUs some state believes in, or has a call unanswered on
	 * (due()): not a walk of every possible CPU number.
	 */
	cpuhp_cpuset_zero(&gone);
	cpuhpd_list_for_each(pos, &d->states.list)
	{
		struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		for (int cpu = -1; callable(s) && (cpu = cpuhp_cpuset_next(&s->cpus, cpu)) >= 0;)
			if (!cpuhp_cpuset_has(online, (unsigned)cpu))
				cpuhp_cpuset_add(&gone, (unsigned)cpu);
		for (int cpu = -1; callable(s) && (cpu = cpuhp_cpuset_next(&s->unsure, cpu)) >= 0;)
			if (!cpuhp_cpuset_has(online, (unsigned)cpu))
				cpuhp_cpuset_add(&gone, (unsigned)cpu);
	}
	for (int cpu = -1; !err && (cpu = cpuhp_cpuset_next(&gone, cpu)) >= 0;) {
		for (pos = d->states.list.prev; pos != &d->states.list && !err; pos = pos->prev) {
			struct cpuhpd_state *s =
			    cpuhpd_container_of(pos, struct cpuhpd_state, node);

			if (callable(s) && due(s, (unsigned)cpu, true))
				err = add_step(w, s, (unsigned)cpu, true, false, true);
		}
	}
	for (int cpu = -1; !err && (cpu = cpuhp_cpuset_next(online, cpu)) >= 0;) {
		cpuhpd_list_for_each(pos, &d->states.list)
		{
			struct cpuhpd_state *s =
			    cpuhpd_container_of(pos, struct cpuhpd_state, node);

			if (callable(s) && due(s, (unsigned)cpu, false) &&
			    (err = add_step(w, s, (unsigned)cpu, false, false, true)))
				break;
		}
	}
	return err;
}

static int plan(struct cpuhpd *d, struct state_work *w)
{
	w->planned = true;
	switch (w->kind) {
	case W_HOTPLUG:
		return plan_hotplug(d, w);
	case W_REGISTER:
		/* An add queued behind its state's removal: that removal took it out. */
		if (w->target->parent && !w->target->listed) {
			w->err = ECANCELED;
			snprintf(w->why, sizeof(w->why), "state '%s' was removed first",
			         w->target->name);
			return 0;
		}
		return plan_register(d, w);
	case W_REMOVE:
		return plan_remove(d, w);
	case W_RECONCILE:
		d->states.reconcile_queued = false;
		/* Mid-hotplug the sets differ on purpose: after it, with its view. */
		if (d->states.hotplug_active)
			return 0;
		return plan_reconcile(d, w);
	}
	return 0;
}

static void kick(struct cpuhpd *d);

/* Whether the step still has something to do when its turn comes. */
static bool step_needed(const struct cpuhpd *d, const struct state_step *st)
{
	const struct cpuhpd_state *s = st->s;

	if (st->assumed || !cpuhpd_state_alive(s))
		return false;
	if (st->external)
		return callable(s) && due(s, st->cpu, st->teardown) &&
		       cpuhp_cpuset_has(&d->view.online, st->cpu) != st->teardown;
	return true;
}

static void timer_cb(uv_timer_t *t);

/*
 * A call's id is the CLOCK_MONOTONIC nanosecond it is sent at, made to
 * increase.  That clock is the boot's, shared by every process, and a
 * cpuhpd starts only once the last one on its tree is gone (instance.c's
 * lock): every id it sends is above every id an earlier cpuhpd sent, even
 * one SIGKILLed before it could write its ids down.  So a late answer to a
 * killed daemon's call never completes a call of ours, whichever of the
 * connection's states it came from, and no write is needed per call.
 */
static uint64_t next_call_id(struct cpuhpd_states *S, uint64_t now)
{
	uint64_t id = now > S->next_call_id ? now : S->next_call_id;

	S->next_call_id = id + 1;
	return id;
}

/* When @w's calls are cut (uv_now() ms): its hotplug's timeout, or a stop's grace; 0: never. */
static uint64_t cut_at(const struct cpuhpd *d, const struct state_work *w)
{
	uint64_t at = w->kind == W_HOTPLUG ? w->job->calls_deadline : 0;
	uint64_t stop = d->states.stop_deadline;

	return stop && (!at || stop < at) ? stop : at;
}

static bool cut_passed(const struct cpuhpd *d, const struct state_work *w)
{
	uint64_t at = cut_at(d, w);

	return at && uv_now(d->loop) >= at;
}

/* Why @w's calls are cut, in @buf.  Return: the positive errno a cut call counts as. */
static int cut_reason(const struct cpuhpd *d, const struct state_work *w, char *buf, size_t len)
{
	uint64_t stop = d->states.stop_deadline;

	if (stop && uv_now(d->loop) >= stop) {
		snprintf(buf, len, "cut: cpuhpd is stopping (it waits %u ms for state calls)",
		         CPUHPD_STATES_STOP_GRACE_MS);
		return ECANCELED;
	}
	snprintf(buf, len, "cut at the hotplug's timeout of %" PRIu32 " ms",
	         w->kind == W_HOTPLUG ? w->job->calls_timeout_ms : 0);
	return ETIMEDOUT;
}

/* @st's StateCall with @call_id (and @batch, 0: none) in @r and @call. */
static void make_call(const struct state_step *st, uint64_t call_id, uint64_t batch,
                      Cpuhp__Response *r, Cpuhp__StateCall *call)
{
	const struct cpuhpd_state *s = st->s;

	cpuhp__response__init(r);
	cpuhp__state_call__init(call);
	call->state_id = s->parent ? s->parent->id : s->id;
	call->instance_id = s->parent ? s->id : 0;
	call->section = s->prepare ? CPUHP__STATE_SECTION__SECTION_PREPARE
	                           : CPUHP__STATE_SECTION__SECTION_ONLINE;
	call->cpu = st->cpu;
	call->phase =
	    st->teardown ? CPUHP__STATE_PHASE__PHASE_TEARDOWN : CPUHP__STATE_PHASE__PHASE_STARTUP;
	call->external = st->external;
	call->rollback = st->rollback;
	call->call_id = call_id;
	call->batch = batch;
	r->id = s->reg_req_id;
	r->body_case = CPUHP__RESPONSE__BODY_STATE_CALL;
	r->state_call = call;
	cpuhpd_debug("state '%s'%s%s%s (client %u): %s%s%s of CPU %u, call %" PRIu64 "%s", s->name,
	             s->parent ? " instance '" : "", s->inst, s->parent ? "'" : "", s->conn_id,
	             st->external ? "external " : "", st->rollback ? "rollback " : "",
	             phase_name(st->teardown), st->cpu, call_id, batch ? " (batched)" : "");
}

/* Send @st's StateCall with @call_id. */
static void send_call(const struct state_step *st, uint64_t call_id)
{
	Cpuhp__Response r;
	Cpuhp__StateCall call;

	make_call(st, call_id, 0, &r, &call);
	cpuhpd_conn_send(st->s->conn, &r);
}

/*
 * @st's call is about to go out: from now on it may run, even if this
 * cpuhpd is killed before it is answered (it stays in its client's socket),
 * so it is written down as unsure (due() then calls that CPU either way)
 * before it is sent.  Its answer, or what replaces it, takes the CPU out
 * again.  The caller writes the state's connection down.
 */
static void mark_unsure(struct state_step *st)
{
	st->was_unsure = cpuhp_cpuset_has(&st->s->unsure, st->cpu);
	cpuhp_cpuset_add(&st->s->unsure, st->cpu);
}

/* @st was sent ahead but its client skipped it: unsure only if it was before. */
static void unmark_skipped(const struct state_step *st)
{
	if (!st->was_unsure)
		cpuhp_cpuset_del(&st->s->unsure, st->cpu);
}

/* Calls one batch carries at most (a state's connection carries 64 states). */
#define BATCH_MAX CPUHPD_STATES_MAX_PER_CONN

/*
 * Whether step @next may go in the batch of the call of @st: the next
 * calls on the same connection, to a client that runs batches
 * (Hello.state_batch), forward (a rollback goes on past a failure, a batch
 * does not) and not external (whether those are needed is judged as each
 * comes).
 */
static bool batchable(const struct cpuhpd *d, const struct state_step *st,
                      const struct state_step *next)
{
	return !st->rollback && !st->external && st->s->conn->state_batch && !next->rollback &&
	       !next->external && !next->sent_id && next->s->conn == st->s->conn &&
	       step_needed(d, next);
}

/*
 * Send the call of @w's step @i with @call_id, and, in the same write, the
 * steps after it that batchable() lets go with it: each gets its call id
 * now (->sent_id, from @now on) and is awaited in its turn without being
 * sent again (start_call()); the client runs them in order and answers each
 * as it ends, so each call is timed from the answer before it.  Every call
 * of the write is written down first (mark_unsure()): a batch of a
 * registration or a removal carries one state's calls on many CPUs.
 */
static void send_calls(struct cpuhpd *d, struct state_work *w, unsigned i, uint64_t call_id,
                       uint64_t now)
{
	struct cpuhpd_states *S = &d->states;
	struct state_step *st = &w->steps[i];
	Cpuhp__Response r[BATCH_MAX];
	Cpuhp__StateCall calls[BATCH_MAX];
	const Cpuhp__Response *rp[BATCH_MAX];
	bool live = false;
	unsigned n = 1;

	/*
	 * Not a DEAD work's: a client skips the rest of a batch after a failure,
	 * and each PREPARE teardown must run whatever the one before did.
	 */
	while (!w->dead && n < BATCH_MAX && i + n < w->nsteps &&
	       batchable(d, st, &w->steps[i + n])) {
		w->steps[i + n].sent_id = next_call_id(S, now);
		n++;
	}
	for (unsigned k = 0; k < n; k++) {
		mark_unsure(&w->steps[i + k]);
		live |= w->steps[i + k].s->live;
	}
	/* One write of the connection's lines for the whole batch: its states share it. */
	if (live && cpuhpd_state_alive(st->s))
		cpuhpd_fdstore_conn_changed(st->s->conn);
	if (n == 1) {
		send_call(st, call_id);
		return;
	}
	for (unsigned k = 0; k < n; k++) {
		make_call(&w->steps[i + k], k ? w->steps[i + k].sent_id : call_id, call_id, &r[k],
		          &calls[k]);
		rp[k] = &r[k];
	}
	cpuhpd_conn_send_many(st->s->conn, rp, n);
}

static void start_call(struct cpuhpd *d, struct state_work *w, struct state_step *st)
{
	struct cpuhpd_states *S = &d->states;
	uint64_t at = cut_at(d, w), now = uv_now(d->loop), wait = st->s->deadline_ms;

	S->in_flight = true;
	S->call_t0_ns = now_ns();
	/* Sent ahead in a batch: awaited from now, its client runs it after the one before. */
	S->call_id = st->sent_id ? st->sent_id : next_call_id(S, S->call_t0_ns);
	/* The state's deadline, or the cut if that comes first. */
	if (at && at - now < wait)
		wait = at - now;
	/* Armed first: a failed send closes the owner, which completes the call at once. */
	uv_timer_start(&S->timer, timer_cb, wait, 0);
	if (!st->sent_id)
		send_calls(d, w, (unsigned)(st - w->steps), S->call_id, S->call_t0_ns);
}

/*
 * Replace the steps left by the undoing of those done: reverse order, the
 * other phase.  The failed step itself only if it missed its deadline (it
 * may have finished late); a failure means it changed nothing.  The calls
 * sent ahead in its batch (->sent_id) are undone too when it missed its
 * deadline: if it ends late and well, its client runs them; after an answered
 * failure the client skips them (unmark_skipped()).
 */
static void rollback(struct state_work *w, unsigned failed)
{
	unsigned keep = w->pos, last = failed, n = 0, i;
	struct state_step *undo;

	if (w->steps[failed].timed_out) {
		while (last + 1 < w->nsteps && w->steps[last + 1].sent_id)
			last++;
	} else if (failed + 1 < w->nsteps && w->steps[failed + 1].sent_id) {
		/* Its client skips the rest of the batch: those calls never run. */
		for (i = failed + 1; i < w->nsteps && w->steps[i].sent_id; i++)
			unmark_skipped(&w->steps[i]);
		state_changed(w->steps[failed + 1].s);
	}
	/* On ENOMEM the rollback is cut short; reconciling catches up later. */
	undo = malloc((last + 1) * sizeof(*undo));
	for (i = last + 1; undo && i-- > 0;) {
		const struct state_step *st = &w->steps[i];

		if (i < failed ? !st->done_ok : i == failed && !st->timed_out)
			continue;
		undo[n++] = (struct state_step){
		    .s = cpuhpd_state_get(st->s),
		    .cpu = st->cpu,
		    .teardown = !st->teardown,
		    .rollback = true,
		};
	}
	for (i = keep; i < w->nsteps; i++)
		cpuhpd_state_put(w->steps[i].s);
	w->nsteps = keep;
	w->rolled_back = true;
	for (i = 0; i < n; i++) {
		if (add_step(w, undo[i].s, undo[i].cpu, undo[i].teardown, true, false))
			break;
	}
	for (i = 0; i < n; i++)
		cpuhpd_state_put(undo[i].s);
	free(undo);
}

static void record(struct cpuhpd *d, struct state_work *w, const struct state_step *st, int err,
                   const char *msg, bool timed_out, bool gone)
{
	struct cpuhpd_state_run *run = add_run(w);
	uint64_t us = (now_ns() - d->states.call_t0_ns) / 1000;

	if (err || timed_out)
		cpuhpd_warn("state '%s'%s%s%s (pid %d, %s): %s%s%s of CPU %u failed after %" PRIu64
		            " us: %s%s",
		            st->s->name, st->s->parent ? " instance '" : "", st->s->inst,
		            st->s->parent ? "'" : "", (int)st->s->pid, st->s->comm,
		            st->rollback ? "rollback " : "", w->dead ? "PREPARE " : "",
		            phase_name(st->teardown), st->cpu, us, msg,
		            w->dead ? " (logged: a PREPARE teardown cannot fail, the CPU is gone; "
		                      "nothing is rolled back)"
		                    : "");
	else
		cpuhpd_debug("state '%s': %s of CPU %u done in %" PRIu64 " us%s", st->s->name,
		             phase_name(st->teardown), st->cpu, us,
		             gone ? " (its client is gone)" : "");
	if (!run)
		return;
	/* Whole arrays of one size, NUL-terminated: no formatting on every call. */
	_Static_assert(sizeof(run->name) == sizeof(st->s->name), "a state's name is a run's");
	_Static_assert(sizeof(run->comm) == sizeof(st->s->comm), "a state's comm is a run's");
	memcpy(run->name, st->s->name, sizeof(run->name));
	memcpy(run->inst, st->s->inst, sizeof(run->inst));
	memcpy(run->comm, st->s->comm, sizeof(run->comm));
	run->prepare = st->s->prepare;
	if (msg && msg[0])
		snprintf(run->msg, sizeof(run->msg), "%s", msg);
	run->cpu = st->cpu;
	run->pid = st->s->pid;
	run->err = err;
	run->us = us;
	run->teardown = st->teardown;
	run->rollback = st->rollback;
	run->timed_out = timed_out;
	run->gone = gone;
}

/* @st's call did what it asks: the state's CPUs follow (the caller writes them down). */
static void step_done(const struct state_step *st)
{
	if (st->teardown)
		cpuhp_cpuset_del(&st->s->cpus, st->cpu);
	else
		cpuhp_cpuset_add(&st->s->cpus, st->cpu);
}

/* The call in flight ended: @err 0 is success (or its owner is gone, @gone). */
static void complete(struct cpuhpd *d, int err, const char *msg, bool timed_out, bool gone)
{
	struct cpuhpd_states *S = &d->states;
	struct state_work *w = head_work(d);
	unsigned idx = w->pos - 1;
	struct state_step *st = &w->steps[idx];

	S->in_flight = false;
	uv_timer_stop(&S->timer);
	record(d, w, st, err, msg, timed_out, gone);
	st->timed_out = timed_out;
	/*
	 * One that missed its deadline may still run: due again, as one cut by
	 * a kill.  But the CPU of a DEAD teardown is gone whatever its state
	 * did: the teardown counts as done, and nothing is called again.
	 */
	if (!timed_out || w->dead)
		cpuhp_cpuset_del(&st->s->unsure, st->cpu);
	if (!err || w->dead) {
		st->done_ok = !err && !gone;
		step_done(st);
	}
	/* What a restart would call teardown for next, and no call in flight. */
	state_changed(st->s);
	if (err && !st->rollback && !w->rolled_back && !w->dead) {
		if (!w->err) {
			w->err = err;
			snprintf(w->failed_state, sizeof(w->failed_state), "%s", st->s->name);
			snprintf(w->why, sizeof(w->why), "%s of state '%s' (pid %d, %s) failed: %s",
			         phase_name(st->teardown), st->s->name, (int)st->s->pid,
			         st->s->comm, msg);
		}
		if (w->may_rollback)
			rollback(w, idx);
	}
	kick(d);
}

static void timer_cb(uv_timer_t *t)
{
	struct cpuhpd *d = cpuhpd_container_of(t, struct cpuhpd, states.timer);
	struct state_work *w = head_work(d);
	char msg[80];

	if (!d->states.in_flight || !w)
		return;
	if (cut_passed(d, w)) {
		/* Counted as a missed deadline: it may finish late, so it is rolled back too. */
		int err = cut_reason(d, w, msg, sizeof(msg));

		w->expired = true;
		complete(d, err, msg, true, false);
		return;
	}
	snprintf(msg, sizeof(msg), "no answer within its deadline of %" PRIu32 " ms",
	         w->steps[w->pos - 1].s->deadline_ms);
	complete(d, ETIMEDOUT, msg, true, false);
}

/*
 * @w was cut before its step @idx was called: the work fails there, as if
 * that call had failed (it is not called, nor undone), and what it did is
 * rolled back.
 */
static void fail_uncalled(struct cpuhpd *d, struct state_work *w, unsigned idx)
{
	const struct state_step *st = &w->steps[idx];
	char msg[100];
	int err = cut_reason(d, w, msg, sizeof(msg));

	d->states.call_t0_ns = now_ns();
	record(d, w, st, err, msg, false, false);
	if (!w->err) {
		w->err = err;
		snprintf(w->failed_state, sizeof(w->failed_state), "%s", st->s->name);
		snprintf(w->why, sizeof(w->why), "%s of state '%s' (pid %d, %s) was not called: %s",
		         phase_name(st->teardown), st->s->name, (int)st->s->pid, st->s->comm, msg);
	}
	rollback(w, idx);
}

/*
 * A call of a cut work: sent in order, not awaited, taken as done (its
 * answer is ignored).  Written down as unsure before it goes out, like
 * every call (mark_unsure()); once sent, what it asks is where its state
 * ends up, since its client runs it after every call sent before it there
 * and before anything sent later: the state's CPUs follow, and it is no
 * longer unsure, in the next write.
 */
static void send_unawaited(struct cpuhpd *d, struct state_work *w, struct state_step *st)
{
	struct cpuhpd_states *S = &d->states;
	char why[100], msg[120];

	cut_reason(d, w, why, sizeof(why));
	snprintf(msg, sizeof(msg), "sent, not awaited (%s)", why);
	cpuhpd_info("state '%s' (pid %d, %s): %s%s of CPU %u %s", st->s->name, (int)st->s->pid,
	            st->s->comm, st->rollback ? "rollback " : "", phase_name(st->teardown), st->cpu,
	            msg);
	S->call_t0_ns = now_ns();
	if (!st->sent_id) {
		mark_unsure(st);
		state_changed(st->s);
		send_call(st, next_call_id(S, S->call_t0_ns));
	}
	record(d, w, st, 0, msg, false, false);
	step_done(st);
	cpuhp_cpuset_del(&st->s->unsure, st->cpu);
	state_changed(st->s);
}

static void finish_hotplug(struct cpuhpd *d, struct state_work *w)
{
	struct cpuhpd_job *job = w->job;
	struct cpuhpd_cpu_result *r = job->sc.r;
	struct cpuhpd_state_run *all;

	(void)d;
	/* A write refused after teardowns may come back for a rollback: append. */
	if (w->nruns) {
		all = realloc(r->runs, (r->nruns + w->nruns) * sizeof(*all));
		if (all) {
			memcpy(all + r->nruns, w->runs, w->nruns * sizeof(*all));
			r->runs = all;
			r->nruns += w->nruns;
		}
	}
	if (w->err) {
		snprintf(r->failed_state, sizeof(r->failed_state), "%s", w->failed_state);
		snprintf(r->msg, sizeof(r->msg), "CPU %u: %s; rolled back: CPU %u %s", r->cpu,
		         w->why, r->cpu,
		         job->sc.teardown  ? "stays online"
		         : job->sc.prepare ? "stays offline"
		                           : "goes offline again");
	}
	cpuhpd_worker_states_done(d, job, w->err);
}

static void release_hold(struct cpuhpd *d)
{
	d->states.holds--;
	if (!d->states.holds)
		cpuhpd_gate_check(d);
}

static void finish(struct cpuhpd *d, struct state_work *w)
{
	cpuhpd_list_del(&w->node);
	switch (w->kind) {
	case W_HOTPLUG:
		finish_hotplug(d, w);
		break;
	case W_REGISTER:
	case W_REMOVE:
		w->done(d, w);
		release_hold(d);
		break;
	case W_RECONCILE:
		break;
	}
	cpuhpd_states_work_free(w);
}

/*
 * Run works until a call is in flight or the FIFO is empty.  Reentrant
 * calls (a send that closes a client, whose call then completes; a reply
 * whose failure closes its connection) only ask the outer loop to go on.
 */
static void kick(struct cpuhpd *d)
{
	struct cpuhpd_states *S = &d->states;

	if (S->kicking) {
		S->kick_again = true;
		return;
	}
	S->kicking = true;
	do {
		S->kick_again = false;
		while (!S->in_flight) {
			struct state_work *w = head_work(d);
			struct state_step *st;

			if (!w)
				break;
			if (!w->planned && plan(d, w)) {
				w->err = ENOMEM;
				snprintf(w->why, sizeof(w->why), "cpuhpd is out of memory");
				w->nsteps = w->pos;
			}
			if (w->pos == w->nsteps) {
				finish(d, w);
				continue;
			}
			/* pos moves first: a send that fails completes the call at once. */
			w->pos++;
			st = &w->steps[w->pos - 1];
			if (!step_needed(d, st))
				continue;
			if (w->expired || cut_passed(d, w)) {
				w->expired = true;
				if (w->may_rollback && !w->rolled_back) {
					/* One sent ahead in a batch may run: undone too. */
					st->timed_out = st->sent_id != 0;
					fail_uncalled(d, w, w->pos - 1);
				} else {
					send_unawaited(d, w, st);
				}
				continue;
			}
			start_call(d, w, st);
		}
	} while (S->kick_again);
	S->kicking = false;
}

int cpuhpd_states_init(struct cpuhpd *d)
{
	struct cpuhpd_states *S = &d->states;

	cpuhpd_list_init(&S->list);
	cpuhpd_list_init(&S->works);
	cpuhpd_list_init(&S->waiting);
	S->next_state_id = 1;
	return uv_timer_init(d->loop, &S->timer);
}

void cpuhpd_states_close(struct cpuhpd *d)
{
	if (d->states.closed)
		return;
	d->states.closed = true;
	uv_close((uv_handle_t *)&d->states.timer, NULL);
}

/* A reader's work: now if the gate is open, else when it opens. */
void cpuhpd_states_submit_reader(struct cpuhpd *d, struct state_work *w)
{
	if (cpuhpd_gate_closed(d)) {
		cpuhpd_list_add_tail(&d->states.waiting, &w->node);
		cpuhpd_fdstore_changed(d); /* a restart asks it again */
		return;
	}
	d->states.holds++;
	cpuhpd_list_add_tail(&d->states.works, &w->node);
	kick(d);
}

void cpuhpd_states_answer(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	const Cpuhp__StateAnswer *a = req->state_answer;
	struct cpuhpd *d = c->d;
	struct state_work *w = head_work(d);
	int err;

	/* Late, repeated or foreign answers are ignored: only the awaited one counts. */
	if (!d->states.in_flight || !w || a->call_id != d->states.call_id ||
	    w->steps[w->pos - 1].s->conn != c)
		return;
	err = a->ok ? 0 : -cpuhp__errmap_from_wire(a->code);
	if (!a->ok && err == 0)
		err = EIO;
	complete(d, err, a->message && a->message[0] ? a->message : (err ? strerror(err) : ""),
	         false, false);
}

void cpuhpd_states_conn_gone(struct cpuhpd_conn *c)
{
	struct cpuhpd *d = c->d;
	struct cpuhpd_states *S = &d->states;
	struct cpuhpd_list *pos, *tmp;
	struct state_work *w;
	bool awaited;

	w = head_work(d);
	awaited = S->in_flight && w && w->steps[w->pos - 1].s->conn == c;
	cpuhpd_list_for_each_safe(pos, tmp, &S->list)
	{
		struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		if (s->conn != c)
			continue;
		cpuhpd_info("state '%s' is gone with its client %u", s->name, c->id);
		s->conn = NULL;
		cpuhpd_state_unlist(d, s);
	}
	/* Its readers waiting for the gate never started: drop them. */
	cpuhpd_list_for_each_safe(pos, tmp, &S->waiting)
	{
		w = cpuhpd_container_of(pos, struct state_work, node);
		if (w->conn != c)
			continue;
		cpuhpd_list_del(&w->node);
		cpuhpd_states_work_free(w);
	}
	cpuhpd_list_for_each(pos, &S->works)
	{
		w = cpuhpd_container_of(pos, struct state_work, node);
		if (w->conn == c)
			w->conn = NULL;
	}
	/* Its resources died with it: the call counts as done.  (With no call in
	 * flight the FIFO is empty: kick() runs until one is.) */
	if (awaited)
		complete(d, 0, "its client is gone", false, true);
}

void cpuhpd_states_cancel(struct cpuhpd *d)
{
	struct cpuhpd_list *n;

	while ((n = cpuhpd_list_first(&d->states.waiting))) {
		struct state_work *w = cpuhpd_container_of(n, struct state_work, node);
		struct cpuhpd_conn *c = w->conn;
		uint64_t req_id = w->req_id;

		cpuhpd_list_del(n);
		if (w->kind == W_REGISTER)
			cpuhpd_state_unlist(d, w->target);
		cpuhpd_states_work_free(w);
		cpuhpd_conn_send_error(c, req_id, ECANCELED, "cpuhpd is shutting down");
	}
}

void cpuhpd_states_stop(struct cpuhpd *d)
{
	struct cpuhpd_states *S = &d->states;

	if (S->stop_deadline)
		return;
	S->stop_deadline = uv_now(d->loop) + CPUHPD_STATES_STOP_GRACE_MS;
	if (S->in_flight && uv_timer_get_due_in(&S->timer) > CPUHPD_STATES_STOP_GRACE_MS)
		uv_timer_start(&S->timer, timer_cb, CPUHPD_STATES_STOP_GRACE_MS, 0);
}

bool cpuhpd_states_holding(const struct cpuhpd *d)
{
	return d->states.holds != 0;
}

void cpuhpd_states_unblock(struct cpuhpd *d)
{
	struct cpuhpd_list *n;
	bool any = false;

	while ((n = cpuhpd_list_first(&d->states.waiting))) {
		cpuhpd_list_del(n);
		cpuhpd_list_add_tail(&d->states.works, n);
		d->states.holds++;
		any = true;
	}
	if (any)
		kick(d);
}

bool cpuhpd_states_in_call(const struct cpuhpd *d, pid_t pid)
{
	const struct state_work *w = head_work(d);

	return d->states.in_flight && w && w->steps[w->pos - 1].s->pid == pid;
}

void cpuhpd_states_hotplug_begin(struct cpuhpd *d)
{
	d->states.hotplug_active = true;
}

void cpuhpd_states_hotplug_end(struct cpuhpd *d)
{
	/* The hotplug re-read the online set: whatever changed behind us shows now. */
	d->states.hotplug_active = false;
	cpuhpd_states_reconcile(d);
}

/* Every live state was started on exactly the CPUs online now, and awaits no answer. */
static bool in_sync(const struct cpuhpd *d)
{
	const struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &d->states.list)
	{
		const struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		if (callable(s) && (!cpuhp_cpuset_equal(&s->cpus, &d->view.online) ||
		                    cpuhp_cpuset_next(&s->unsure, -1) >= 0))
			return false;
	}
	return true;
}

void cpuhpd_states_reconcile(struct cpuhpd *d)
{
	struct cpuhpd_states *S = &d->states;
	struct state_work *w;

	if (!S->nstates || d->stopping)
		return;
	/* During a hotplug: cpuhpd_states_hotplug_end() comes and reconciles. */
	if (S->hotplug_active || S->reconcile_queued)
		return;
	/*
	 * Nothing to call when every state agrees with the view, as after each
	 * hotplug: known only while no work is queued, since a work ahead
	 * (a registration) may leave a state behind a view that changed.
	 */
	if (!head_work(d) && in_sync(d))
		return;
	w = cpuhpd_states_work_new(W_RECONCILE);
	if (!w) {
		cpuhpd_warn("out of memory: external CPU changes are not reported to states");
		return;
	}
	S->reconcile_queued = true;
	cpuhpd_list_add_tail(&S->works, &w->node);
	kick(d);
}

void cpuhpd_states_hotplug_cpu(struct cpuhpd *d, struct cpuhpd_job *job)
{
	struct state_work *w = cpuhpd_states_work_new(W_HOTPLUG);

	if (!w) {
		snprintf(job->sc.r->msg, sizeof(job->sc.r->msg),
		         "CPU %u: cpuhpd is out of memory for the state calls; nothing was changed",
		         job->sc.r->cpu);
		cpuhpd_worker_states_done(d, job, job->sc.rollback ? 0 : ENOMEM);
		return;
	}
	w->job = job;
	cpuhpd_list_add_tail(&d->states.works, &w->node);
	kick(d);
}

bool cpuhpd_states_running(const struct cpuhpd *d)
{
	return head_work(d) != NULL;
}

void cpuhpd_states_view_changed(struct cpuhpd *d, const struct cpuhpd_view_change *ch)
{
	/* During a hotplug this waits for cpuhpd_states_hotplug_end(), which reconciles. */
	cpuhpd_states_reconcile(d);
}
