/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hotplug states: the registry and the call engine (states.h has the shape,
 * README.md "Hotplug states" the rules).
 *
 * Invariants:
 * - One call is in flight at most, the head work's step pos - 1
 *   (->in_flight); every way it ends (answer, deadline, owner gone) goes
 *   through complete(), which records it and kicks the engine on.
 * - A state's ->cpus is the set of CPUs whose startup succeeded and whose
 *   teardown has not: what the client believes is online for it.
 * - ->holds counts the REGISTER/REMOVE works in the FIFO; while it is not 0
 *   a hotplug does not leave WAIT_LEASES (the gate asks cpuhpd_states_holding).
 * - A state is freed when it left the registry and no step refers to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "errmap.h"

#include "cpuhpd.h"
#include "conn.h"
#include "fdstore.h"
#include "gate.h"
#include "log.h"
#include "states.h"

struct cpuhpd_state {
	struct cpuhpd_list node; /* in states.list while registered */
	bool listed;
	bool live; /* registered and its startups done: hotplugs and reconciles call it */
	uint64_t id;
	char name[CPUHPD_STATE_NAME_MAX];
	int32_t priority;
	uint32_t deadline_ms;
	struct cpuhpd_conn *conn; /* NULL once its owner is gone */
	unsigned conn_id;
	uint64_t reg_req_id; /* Response.id of its calls */
	pid_t pid;
	uid_t uid;
	char comm[16];
	struct cpuhp_cpuset cpus; /* started on */
	unsigned refs;            /* the registry's, and one per step naming it */
};

enum work_kind {
	W_HOTPLUG,
	W_REGISTER,
	W_REMOVE,
	W_RECONCILE,
};

struct step {
	struct cpuhpd_state *s;
	unsigned cpu;
	bool teardown, rollback, external;
	bool done_ok; /* its call succeeded: a rollback undoes it */
	bool timed_out;
};

struct state_work {
	struct cpuhpd_list node; /* in states.works or states.waiting */
	enum work_kind kind;
	bool planned;
	bool may_rollback, rolled_back;
	struct step *steps;
	unsigned nsteps, cap, pos;
	int err; /* the first failed forward call's positive errno */
	char why[240];
	char failed_state[CPUHPD_STATE_NAME_MAX];
	struct cpuhpd_state_run *runs;
	unsigned nruns, capruns;
	/* REGISTER, REMOVE: who asked, and for which state */
	struct cpuhpd_conn *conn;
	uint64_t req_id;
	struct cpuhpd_state *target;
	bool nocalls;
	/* HOTPLUG */
	struct cpuhpd_job *job;
};

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

static struct cpuhpd_state *state_get(struct cpuhpd_state *s)
{
	s->refs++;
	return s;
}

static void state_put(struct cpuhpd_state *s)
{
	if (--s->refs == 0)
		free(s);
}

static bool alive(const struct cpuhpd_state *s)
{
	return s->conn && !s->conn->closing;
}

/* Leave the registry: no new work will name it; steps that do skip it. */
static void unlist(struct cpuhpd *d, struct cpuhpd_state *s)
{
	if (!s->listed)
		return;
	cpuhpd_list_del(&s->node);
	s->listed = false;
	s->live = false;
	d->states.nstates--;
	if (alive(s))
		cpuhpd_fdstore_conn_changed(s->conn);
	state_put(s);
}

/* Startup order: priority ascending, then registration order. */
static void list_insert(struct cpuhpd *d, struct cpuhpd_state *s)
{
	struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &d->states.list)
	{
		struct cpuhpd_state *o = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		if (o->priority > s->priority)
			break;
	}
	/* Before pos: add_tail on pos links s just in front of it. */
	cpuhpd_list_add_tail(pos, &s->node);
	s->listed = true;
	d->states.nstates++;
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
		struct step *n = realloc(w->steps, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->steps = n;
		w->cap = cap;
	}
	w->steps[w->nsteps++] = (struct step){
	    .s = state_get(s),
	    .cpu = cpu,
	    .teardown = teardown,
	    .rollback = rollback,
	    .external = external,
	};
	return 0;
}

static struct state_work *work_new(enum work_kind kind)
{
	struct state_work *w = calloc(1, sizeof(*w));

	if (w) {
		w->kind = kind;
		cpuhpd_list_init(&w->node);
	}
	return w;
}

static void work_free(struct state_work *w)
{
	for (unsigned i = 0; i < w->nsteps; i++)
		state_put(w->steps[i].s);
	if (w->target)
		state_put(w->target);
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

/* ---- planning: which calls a work makes, decided when it reaches the head ---- */

/* The CPUs of @set, ascending. */
static unsigned cpus_of(const struct cpuhp_cpuset *set, unsigned *out)
{
	unsigned n = 0;
	int cpu = -1;

	while ((cpu = cpuhp_cpuset_next(set, cpu)) >= 0)
		out[n++] = (unsigned)cpu;
	return n;
}

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

			if (s->live && cpuhp_cpuset_has(&s->cpus, cpu))
				err = add_step(w, s, cpu, true, false, false);
		}
		w->may_rollback = true;
		return err;
	}
	cpuhpd_list_for_each(pos, &d->states.list)
	{
		struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		if (s->live && !cpuhp_cpuset_has(&s->cpus, cpu) &&
		    (err = add_step(w, s, cpu, false, a->rollback, false)))
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
	if (w->nocalls) {
		/* The client sets itself up for the CPUs online now. */
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
	if (!w->nocalls) {
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
	struct cpuhpd_list *pos;
	int err = 0;

	for (unsigned cpu = 0; cpu < CPUHP_CPUSET_MAX && !err; cpu++) {
		if (cpuhp_cpuset_has(online, cpu))
			continue;
		for (pos = d->states.list.prev; pos != &d->states.list && !err; pos = pos->prev) {
			struct cpuhpd_state *s =
			    cpuhpd_container_of(pos, struct cpuhpd_state, node);

			if (s->live && cpuhp_cpuset_has(&s->cpus, cpu))
				err = add_step(w, s, cpu, true, false, true);
		}
	}
	for (int cpu = -1; !err && (cpu = cpuhp_cpuset_next(online, cpu)) >= 0;) {
		cpuhpd_list_for_each(pos, &d->states.list)
		{
			struct cpuhpd_state *s =
			    cpuhpd_container_of(pos, struct cpuhpd_state, node);

			if (s->live && !cpuhp_cpuset_has(&s->cpus, (unsigned)cpu) &&
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

/* ---- running the calls ---- */

static void kick(struct cpuhpd *d);

/* Whether the step still has something to do when its turn comes. */
static bool step_needed(const struct cpuhpd *d, const struct step *st)
{
	const struct cpuhpd_state *s = st->s;

	if (!alive(s))
		return false;
	if (st->external)
		return s->live && cpuhp_cpuset_has(&s->cpus, st->cpu) == st->teardown &&
		       cpuhp_cpuset_has(&d->view.online, st->cpu) != st->teardown;
	return true;
}

static void timer_cb(uv_timer_t *t);

static void start_call(struct cpuhpd *d, struct state_work *w, struct step *st)
{
	struct cpuhpd_states *S = &d->states;
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__StateCall call = CPUHP__STATE_CALL__INIT;
	struct cpuhpd_state *s = st->s;

	S->in_flight = true;
	S->call_id = ++S->next_call_id;
	S->call_t0_ns = now_ns();
	call.state_id = s->id;
	call.cpu = st->cpu;
	call.phase =
	    st->teardown ? CPUHP__STATE_PHASE__PHASE_TEARDOWN : CPUHP__STATE_PHASE__PHASE_STARTUP;
	call.external = st->external;
	call.rollback = st->rollback;
	call.call_id = S->call_id;
	r.id = s->reg_req_id;
	r.body_case = CPUHP__RESPONSE__BODY_STATE_CALL;
	r.state_call = &call;
	cpuhpd_debug("state '%s' (client %u): %s%s%s of CPU %u, call %" PRIu64, s->name, s->conn_id,
	             st->external ? "external " : "", st->rollback ? "rollback " : "",
	             phase_name(st->teardown), st->cpu, S->call_id);
	(void)w;
	/* Armed first: a failed send closes the owner, which completes the call at once. */
	uv_timer_start(&S->timer, timer_cb, s->deadline_ms, 0);
	cpuhpd_conn_send(s->conn, &r);
}

/*
 * Replace the steps left by the undoing of those done: reverse order, the
 * other phase.  The failed step itself only if it missed its deadline (it
 * may have finished late); a failure means it changed nothing.
 */
static void rollback(struct state_work *w, unsigned failed)
{
	unsigned keep = w->pos, i;

	for (i = w->pos; i < w->nsteps; i++)
		state_put(w->steps[i].s);
	w->nsteps = keep;
	w->rolled_back = true;
	for (i = failed + 1; i-- > 0;) {
		struct step st = w->steps[i];

		if (i == failed ? !st.timed_out : !st.done_ok)
			continue;
		/* On ENOMEM the rollback is cut short; reconciling catches up later. */
		if (add_step(w, st.s, st.cpu, !st.teardown, true, false))
			break;
	}
}

static void record(struct cpuhpd *d, struct state_work *w, const struct step *st, int err,
                   const char *msg, bool timed_out, bool gone)
{
	struct cpuhpd_state_run *run = add_run(w);
	uint64_t us = (now_ns() - d->states.call_t0_ns) / 1000;

	if (err || timed_out)
		cpuhpd_warn(
		    "state '%s' (pid %d, %s): %s%s of CPU %u failed after %" PRIu64 " us: %s",
		    st->s->name, (int)st->s->pid, st->s->comm, st->rollback ? "rollback " : "",
		    phase_name(st->teardown), st->cpu, us, msg);
	else
		cpuhpd_debug("state '%s': %s of CPU %u done in %" PRIu64 " us%s", st->s->name,
		             phase_name(st->teardown), st->cpu, us,
		             gone ? " (its client is gone)" : "");
	if (!run)
		return;
	snprintf(run->name, sizeof(run->name), "%s", st->s->name);
	snprintf(run->comm, sizeof(run->comm), "%s", st->s->comm);
	snprintf(run->msg, sizeof(run->msg), "%s", msg ? msg : "");
	run->cpu = st->cpu;
	run->pid = st->s->pid;
	run->err = err;
	run->us = us;
	run->teardown = st->teardown;
	run->rollback = st->rollback;
	run->timed_out = timed_out;
	run->gone = gone;
}

/* The call in flight ended: @err 0 is success (or its owner is gone, @gone). */
static void complete(struct cpuhpd *d, int err, const char *msg, bool timed_out, bool gone)
{
	struct cpuhpd_states *S = &d->states;
	struct state_work *w = head_work(d);
	unsigned idx = w->pos - 1;
	struct step *st = &w->steps[idx];

	S->in_flight = false;
	uv_timer_stop(&S->timer);
	record(d, w, st, err, msg, timed_out, gone);
	st->timed_out = timed_out;
	if (!err) {
		st->done_ok = !gone;
		if (st->teardown)
			cpuhp_cpuset_del(&st->s->cpus, st->cpu);
		else
			cpuhp_cpuset_add(&st->s->cpus, st->cpu);
		/* What a restart would call teardown for next. */
		if (st->s->live && alive(st->s))
			cpuhpd_fdstore_conn_changed(st->s->conn);
	} else if (!st->rollback && !w->rolled_back) {
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
	snprintf(msg, sizeof(msg), "no answer within its deadline of %" PRIu32 " ms",
	         w->steps[w->pos - 1].s->deadline_ms);
	complete(d, ETIMEDOUT, msg, true, false);
}

/* ---- finishing works ---- */

static void reply_runs(struct cpuhpd_conn *c, uint64_t req_id, uint64_t state_id,
                       struct state_work *w, bool removed)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__StateRegistered reg = CPUHP__STATE_REGISTERED__INIT;
	Cpuhp__StateRemoved rem = CPUHP__STATE_REMOVED__INIT;
	unsigned n = w->nruns;
	Cpuhp__StateRun *runs = calloc(n ? n : 1, sizeof(*runs));
	Cpuhp__StateRun **runp = calloc(n ? n : 1, sizeof(*runp));
	/* Each run costs at most ~250 bytes; beyond one frame, the log has them. */
	size_t fit = (CPUHP__FRAME_MAX - 64) / 260;

	if (!runs || !runp) {
		free(runs);
		free(runp);
		cpuhpd_conn_send_error(c, req_id, ENOMEM, "cpuhpd is out of memory");
		return;
	}
	if (n > fit)
		n = (unsigned)fit;
	cpuhpd_states_runs_to_wire(w->runs, n, runs, runp, 100);
	r.id = req_id;
	if (removed) {
		rem.state_id = state_id;
		rem.n_runs = n;
		rem.runs = runp;
		r.body_case = CPUHP__RESPONSE__BODY_STATE_REMOVED;
		r.state_removed = &rem;
	} else {
		reg.state_id = state_id;
		reg.n_runs = n;
		reg.runs = runp;
		r.body_case = CPUHP__RESPONSE__BODY_STATE_REGISTERED;
		r.state_registered = &reg;
	}
	cpuhpd_conn_send(c, &r);
	free(runp);
	free(runs);
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
		         w->why, r->cpu, job->sc.teardown ? "stays online" : "goes offline again");
	}
	cpuhpd_worker_states_done(d, job, w->err);
}

static void release_hold(struct cpuhpd *d)
{
	d->states.holds--;
	if (!d->states.holds)
		cpuhpd_gate_check(d);
}

static void finish_register(struct cpuhpd *d, struct state_work *w)
{
	struct cpuhpd_state *s = w->target;
	struct cpuhpd_conn *c = w->conn && !w->conn->closing ? w->conn : NULL;

	if (w->err || !alive(s)) {
		unlist(d, s);
		if (c && w->err)
			cpuhpd_conn_send_error(c, w->req_id, w->err,
			                       "%s; rolled back: state '%s' is not registered",
			                       w->why, s->name);
		else if (c)
			cpuhpd_conn_send_error(c, w->req_id, ENOMEM, "cpuhpd is out of memory");
	} else {
		s->live = true;
		cpuhpd_fdstore_conn_changed(s->conn); /* before the client hears of it */
		cpuhpd_info("state '%s' registered by client %u (pid %d, %s): priority %" PRId32
		            ", deadline %" PRIu32 " ms",
		            s->name, s->conn_id, (int)s->pid, s->comm, s->priority, s->deadline_ms);
		if (c)
			reply_runs(c, w->req_id, s->id, w, false);
	}
}

static void finish_remove(struct cpuhpd *d, struct state_work *w)
{
	struct cpuhpd_state *s = w->target;
	struct cpuhpd_conn *c = w->conn && !w->conn->closing ? w->conn : NULL;

	cpuhpd_info("state '%s' removed", s->name);
	unlist(d, s);
	if (c)
		reply_runs(c, w->req_id, s->id, w, true);
}

static void finish(struct cpuhpd *d, struct state_work *w)
{
	cpuhpd_list_del(&w->node);
	switch (w->kind) {
	case W_HOTPLUG:
		finish_hotplug(d, w);
		break;
	case W_REGISTER:
		finish_register(d, w);
		release_hold(d);
		break;
	case W_REMOVE:
		finish_remove(d, w);
		release_hold(d);
		break;
	case W_RECONCILE:
		break;
	}
	work_free(w);
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
			if (step_needed(d, &w->steps[w->pos - 1]))
				start_call(d, w, &w->steps[w->pos - 1]);
		}
	} while (S->kick_again);
	S->kicking = false;
}

/* ---- the interface ---- */

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

static void read_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0) {
		snprintf(buf, len, "?");
		return;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

static bool name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= CPUHPD_STATE_NAME_MAX)
		return false;
	for (const char *p = name; *p; p++)
		if (*p <= ' ' || *p >= 0x7f)
			return false;
	return true;
}

static struct cpuhpd_state *find_name(const struct cpuhpd *d, const char *name)
{
	struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &d->states.list)
	{
		struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		if (!strcmp(s->name, name))
			return s;
	}
	return NULL;
}

static unsigned conn_states(const struct cpuhpd *d, const struct cpuhpd_conn *c)
{
	struct cpuhpd_list *pos;
	unsigned n = 0;

	cpuhpd_list_for_each(pos, &d->states.list)
	{
		n += cpuhpd_container_of(pos, struct cpuhpd_state, node)->conn == c;
	}
	return n;
}

/* A reader's work: now if the gate is open, else when it opens. */
static void submit_reader(struct cpuhpd *d, struct state_work *w)
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

void cpuhpd_states_register(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	const Cpuhp__RegisterState *rs = req->register_state;
	uint64_t req_id = req->id;
	struct cpuhpd *d = c->d;
	struct cpuhpd_state *s, *other;
	struct state_work *w;
	uint32_t deadline = rs->deadline_ms ? rs->deadline_ms : CPUHPD_STATES_DEFAULT_DEADLINE_MS;

	if (!name_ok(rs->name)) {
		cpuhpd_conn_send_error(
		    c, req_id, EINVAL,
		    "invalid state name '%.80s': 1 to %d printable characters, no "
		    "spaces",
		    rs->name, CPUHPD_STATE_NAME_MAX - 1);
		return;
	}
	if (deadline > CPUHPD_STATES_MAX_DEADLINE_MS) {
		cpuhpd_conn_send_error(c, req_id, EINVAL,
		                       "deadline %" PRIu32 " ms is over the limit of %u ms",
		                       rs->deadline_ms, CPUHPD_STATES_MAX_DEADLINE_MS);
		return;
	}
	if ((other = find_name(d, rs->name))) {
		cpuhpd_conn_send_error(c, req_id, EEXIST,
		                       "a state named '%s' is registered already (by pid %d, %s): "
		                       "names are unique per daemon",
		                       rs->name, (int)other->pid, other->comm);
		return;
	}
	if (conn_states(d, c) >= CPUHPD_STATES_MAX_PER_CONN ||
	    d->states.nstates >= CPUHPD_STATES_MAX) {
		cpuhpd_conn_send_error(c, req_id, EDQUOT,
		                       "too many states: %u per connection, %u in all",
		                       CPUHPD_STATES_MAX_PER_CONN, CPUHPD_STATES_MAX);
		return;
	}
	s = calloc(1, sizeof(*s));
	w = work_new(W_REGISTER);
	if (!s || !w) {
		free(s);
		free(w);
		cpuhpd_conn_send_error(c, req_id, ENOMEM, "cpuhpd is out of memory");
		return;
	}
	s->refs = 1; /* the registry's */
	s->id = d->states.next_state_id++;
	snprintf(s->name, sizeof(s->name), "%s", rs->name);
	s->priority = rs->priority;
	s->deadline_ms = deadline;
	s->conn = c;
	s->conn_id = c->id;
	s->reg_req_id = req_id;
	s->pid = c->peer.pid;
	s->uid = c->peer.uid;
	read_comm(s->pid, s->comm, sizeof(s->comm));
	list_insert(d, s);
	w->conn = c;
	w->req_id = req_id;
	w->target = state_get(s);
	w->nocalls = rs->nocalls;
	cpuhpd_debug("client %u: registers state '%s' (priority %" PRId32 ", deadline %" PRIu32
	             " ms%s)",
	             c->id, s->name, s->priority, s->deadline_ms, rs->nocalls ? ", nocalls" : "");
	submit_reader(d, w);
}

void cpuhpd_states_remove(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	const Cpuhp__RemoveState *rm = req->remove_state;
	uint64_t req_id = req->id;
	struct cpuhpd *d = c->d;
	struct cpuhpd_list *pos;
	struct state_work *w;

	cpuhpd_list_for_each(pos, &d->states.list)
	{
		struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		if (s->id != rm->state_id || s->conn != c)
			continue;
		if (!s->live) {
			cpuhpd_conn_send_error(c, req_id, EBUSY,
			                       "state '%s' is still being registered or removed",
			                       s->name);
			return;
		}
		w = work_new(W_REMOVE);
		if (!w) {
			cpuhpd_conn_send_error(c, req_id, ENOMEM, "cpuhpd is out of memory");
			return;
		}
		w->conn = c;
		w->req_id = req_id;
		w->target = state_get(s);
		w->nocalls = rm->nocalls;
		submit_reader(d, w);
		return;
	}
	cpuhpd_conn_send_error(c, req_id, ENOENT,
	                       "no state %" PRIu64 " on this connection (states belong to the "
	                       "connection that registered them)",
	                       rm->state_id);
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

void cpuhpd_states_list(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	uint64_t req_id = req->id;
	struct cpuhpd *d = c->d;
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__StateList sl = CPUHP__STATE_LIST__INIT;
	unsigned n = d->states.nstates, i = 0;
	Cpuhp__StateInfo *info = calloc(n ? n : 1, sizeof(*info));
	Cpuhp__StateInfo **infop = calloc(n ? n : 1, sizeof(*infop));
	char **strs = calloc(n ? n : 1, sizeof(*strs));
	struct cpuhpd_list *pos;

	if (!info || !infop || !strs) {
		cpuhpd_conn_send_error(c, req_id, ENOMEM, "cpuhpd is out of memory");
		goto out;
	}
	cpuhpd_list_for_each(pos, &d->states.list)
	{
		struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		cpuhp__state_info__init(&info[i]);
		info[i].state_id = s->id;
		info[i].name = s->name;
		info[i].priority = s->priority;
		info[i].deadline_ms = s->deadline_ms;
		info[i].pid = s->pid;
		info[i].uid = s->uid;
		info[i].comm = s->comm;
		strs[i] = cpuhpd_cpus_to_str(&s->cpus);
		info[i].cpus = strs[i] ? strs[i] : (char *)"";
		infop[i] = &info[i];
		i++;
	}
	sl.n_states = i;
	sl.states = infop;
	r.id = req_id;
	r.body_case = CPUHP__RESPONSE__BODY_STATE_LIST;
	r.state_list = &sl;
	cpuhpd_conn_send(c, &r);
out:
	for (i = 0; strs && i < n; i++)
		free(strs[i]);
	free(strs);
	free(infop);
	free(info);
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
		unlist(d, s);
	}
	/* Its readers waiting for the gate never started: drop them. */
	cpuhpd_list_for_each_safe(pos, tmp, &S->waiting)
	{
		w = cpuhpd_container_of(pos, struct state_work, node);
		if (w->conn != c)
			continue;
		cpuhpd_list_del(&w->node);
		work_free(w);
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
			unlist(d, w->target);
		work_free(w);
		cpuhpd_conn_send_error(c, req_id, ECANCELED, "cpuhpd is shutting down");
	}
}

unsigned cpuhpd_states_of_uid(const struct cpuhpd *d, uid_t uid)
{
	const struct cpuhpd_list *pos;
	unsigned n = 0;

	cpuhpd_list_for_each(pos, &d->states.list)
	{
		const struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		n += s->conn && s->uid == uid;
	}
	return n;
}

bool cpuhpd_states_any(const struct cpuhpd *d)
{
	return d->states.nstates != 0;
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

void cpuhpd_states_reconcile(struct cpuhpd *d)
{
	struct cpuhpd_states *S = &d->states;
	struct state_work *w;

	if (!S->nstates || d->stopping)
		return;
	/* During a hotplug: cpuhpd_states_hotplug_end() comes and reconciles. */
	if (S->hotplug_active || S->reconcile_queued)
		return;
	w = work_new(W_RECONCILE);
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
	struct state_work *w = work_new(W_HOTPLUG);

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

void cpuhpd_states_runs_to_wire(struct cpuhpd_state_run *runs, unsigned n, Cpuhp__StateRun *out,
                                Cpuhp__StateRun **outp, size_t msg_max)
{
	for (unsigned i = 0; i < n; i++) {
		struct cpuhpd_state_run *run = &runs[i];

		if (strlen(run->msg) > msg_max)
			run->msg[msg_max] = '\0';
		cpuhp__state_run__init(&out[i]);
		out[i].name = run->name;
		out[i].phase = run->teardown ? CPUHP__STATE_PHASE__PHASE_TEARDOWN
		                             : CPUHP__STATE_PHASE__PHASE_STARTUP;
		out[i].rollback = run->rollback;
		out[i].cpu = run->cpu;
		out[i].micros = run->us;
		out[i].ok = run->err == 0;
		out[i].code =
		    run->err ? cpuhp__errmap_to_wire(run->err) : CPUHP__ERROR_CODE__ERR_UNKNOWN;
		out[i].message = run->msg;
		out[i].pid = run->pid;
		out[i].comm = run->comm;
		out[i].timed_out = run->timed_out;
		out[i].client_gone = run->gone;
		outp[i] = &out[i];
	}
}

bool cpuhpd_states_running(const struct cpuhpd *d)
{
	return head_work(d) != NULL;
}

void cpuhpd_states_save(const struct cpuhpd_conn *c, FILE *f)
{
	const struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &c->d->states.list)
	{
		const struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);
		char *cpus;

		if (!s->live || s->conn != c)
			continue;
		cpus = cpuhpd_cpus_to_str(&s->cpus);
		fprintf(f, "state %u %" PRIu64 " %" PRIu64 " %" PRId32 " %" PRIu32, c->id, s->id,
		        s->reg_req_id, s->priority, s->deadline_ms);
		cpuhpd_statetext_str(f, s->name);
		cpuhpd_statetext_str(f, cpus);
		fputc('\n', f);
		free(cpus);
	}
}

/* A registration or removal waiting for the gate, as the request its client sent. */
static void save_waiting(FILE *f, const struct state_work *w)
{
	Cpuhp__Request rq = CPUHP__REQUEST__INIT;
	Cpuhp__RegisterState rs = CPUHP__REGISTER_STATE__INIT;
	Cpuhp__RemoveState rm = CPUHP__REMOVE_STATE__INIT;

	rq.id = w->req_id;
	if (w->kind == W_REGISTER) {
		rs.name = (char *)w->target->name;
		rs.priority = w->target->priority;
		rs.deadline_ms = w->target->deadline_ms;
		rs.nocalls = w->nocalls;
		rq.body_case = CPUHP__REQUEST__BODY_REGISTER_STATE;
		rq.register_state = &rs;
	} else {
		rm.state_id = w->target->id;
		rm.nocalls = w->nocalls;
		rq.body_case = CPUHP__REQUEST__BODY_REMOVE_STATE;
		rq.remove_state = &rm;
	}
	cpuhpd_fdstore_put_request(f, w->conn->id, &rq);
}

void cpuhpd_states_save_waiting(struct cpuhpd *d, FILE *f)
{
	struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &d->states.waiting)
	{
		const struct state_work *w = cpuhpd_container_of(pos, struct state_work, node);

		if (w->conn && !w->conn->closing && w->conn->stored)
			save_waiting(f, w);
	}
}

int cpuhpd_states_adopt(struct cpuhpd_conn *c, const struct cpuhpd_saved_conn *sc)
{
	struct cpuhpd *d = c->d;

	for (unsigned i = 0; i < sc->nstates; i++) {
		const struct cpuhpd_saved_state *ss = &sc->states[i];
		struct cpuhpd_state *s;

		if (!name_ok(ss->name) || find_name(d, ss->name) ||
		    ss->deadline_ms > CPUHPD_STATES_MAX_DEADLINE_MS ||
		    d->states.nstates >= CPUHPD_STATES_MAX ||
		    conn_states(d, c) >= CPUHPD_STATES_MAX_PER_CONN)
			return -EINVAL;
		s = calloc(1, sizeof(*s));
		if (!s)
			return -ENOMEM;
		if (ss->cpus && cpuhp_cpuset_parse(ss->cpus, &s->cpus)) {
			free(s);
			return -EINVAL;
		}
		s->refs = 1;
		s->id = ss->id;
		if (s->id >= d->states.next_state_id)
			d->states.next_state_id = s->id + 1;
		snprintf(s->name, sizeof(s->name), "%s", ss->name);
		s->priority = ss->priority;
		s->deadline_ms =
		    ss->deadline_ms ? ss->deadline_ms : CPUHPD_STATES_DEFAULT_DEADLINE_MS;
		s->conn = c;
		s->conn_id = c->id;
		s->reg_req_id = ss->reg_req_id;
		s->pid = c->peer.pid;
		s->uid = c->peer.uid;
		snprintf(s->comm, sizeof(s->comm), "%.15s", c->peer.comm);
		list_insert(d, s);
		s->live = true;
		cpuhpd_info("restart: state '%s' of client %u (pid %d) kept, started on %s",
		            s->name, c->id, (int)s->pid, ss->cpus ? ss->cpus : "no CPU");
	}
	return 0;
}

void cpuhpd_states_adopted(struct cpuhpd *d)
{
	/* A hotplug the last cpuhpd did not finish may have changed CPUs under a state. */
	cpuhpd_states_reconcile(d);
}

void cpuhpd_states_save_ids(const struct cpuhpd *d, struct cpuhpd_saved *ids)
{
	ids->next_state_id = d->states.next_state_id;
	ids->next_call_id = d->states.next_call_id;
}

void cpuhpd_states_adopt_ids(struct cpuhpd *d, const struct cpuhpd_saved *s)
{
	if (s->next_state_id > d->states.next_state_id)
		d->states.next_state_id = s->next_state_id;
	if (s->next_call_id > d->states.next_call_id)
		d->states.next_call_id = s->next_call_id;
}

void cpuhpd_states_view_changed(struct cpuhpd *d, const struct cpuhpd_view_change *ch)
{
	/* During a hotplug this waits for cpuhpd_states_hotplug_end(), which reconciles. */
	cpuhpd_states_reconcile(d);
}
