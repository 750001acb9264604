/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The requests of hotplug states (states.h): RegisterState and RemoveState
 * (readers: works of the engine, answered when their calls are done),
 * ListStates, and the calls made as the protocol's StateRun.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errmap.h"

#include "cpuhpd.h"
#include "base/log.h"
#include "core/conn.h"
#include "core/fdstore.h"
#include "core/page.h"
#include "state.h"
#include "states.h"
#include "work.h"

/* The reply to a registration or removal of a state or an instance, with its calls. */
static void reply_runs(struct cpuhpd_conn *c, uint64_t req_id, const struct cpuhpd_state *s,
                       struct state_work *w, bool removed)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__StateRegistered reg = CPUHP__STATE_REGISTERED__INIT;
	Cpuhp__StateRemoved rem = CPUHP__STATE_REMOVED__INIT;
	Cpuhp__InstanceAdded ia = CPUHP__INSTANCE_ADDED__INIT;
	Cpuhp__InstanceRemoved ir = CPUHP__INSTANCE_REMOVED__INIT;
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
	if (s->parent && removed) {
		ir.state_id = s->parent->id;
		ir.instance_id = s->id;
		ir.n_runs = n;
		ir.runs = runp;
		r.body_case = CPUHP__RESPONSE__BODY_INSTANCE_REMOVED;
		r.instance_removed = &ir;
	} else if (s->parent) {
		ia.state_id = s->parent->id;
		ia.instance_id = s->id;
		ia.n_runs = n;
		ia.runs = runp;
		r.body_case = CPUHP__RESPONSE__BODY_INSTANCE_ADDED;
		r.instance_added = &ia;
	} else if (removed) {
		rem.state_id = s->id;
		rem.n_runs = n;
		rem.runs = runp;
		r.body_case = CPUHP__RESPONSE__BODY_STATE_REMOVED;
		r.state_removed = &rem;
	} else {
		reg.state_id = s->id;
		reg.n_runs = n;
		reg.runs = runp;
		r.body_case = CPUHP__RESPONSE__BODY_STATE_REGISTERED;
		r.state_registered = &reg;
	}
	cpuhpd_conn_send(c, &r);
	free(runp);
	free(runs);
}

/* A registration's calls are done: the state is live, or gone again. */
static void register_done(struct cpuhpd *d, struct state_work *w)
{
	struct cpuhpd_state *s = w->target;
	struct cpuhpd_conn *c = w->conn && !w->conn->closing ? w->conn : NULL;

	if (w->err || !cpuhpd_state_alive(s)) {
		cpuhpd_state_unlist(d, s);
		if (c && w->err && s->parent)
			cpuhpd_conn_send_error(
			    c, w->req_id, w->err,
			    "%s; rolled back: instance '%s' of state '%s' is not "
			    "added",
			    w->why, s->inst, s->name);
		else if (c && w->err)
			cpuhpd_conn_send_error(c, w->req_id, w->err,
			                       "%s; rolled back: state '%s' is not registered",
			                       w->why, s->name);
		else if (c)
			cpuhpd_conn_send_error(c, w->req_id, ENOMEM, "cpuhpd is out of memory");
	} else {
		s->live = true;
		cpuhpd_fdstore_conn_changed(s->conn); /* before the client hears of it */
		if (s->parent)
			cpuhpd_info("state '%s': instance '%s' added", s->name, s->inst);
		else
			cpuhpd_info("state '%s' registered by client %u (pid %d, %s): %s section, "
			            "priority %" PRId32 ", deadline %" PRIu32 " ms%s",
			            s->name, s->conn_id, (int)s->pid, s->comm,
			            s->prepare ? "PREPARE" : "ONLINE", s->priority, s->deadline_ms,
			            s->multi ? ", multi-instance" : "");
		if (c)
			reply_runs(c, w->req_id, s, w, false);
	}
}

/* A removal's calls are done: the state is gone. */
static void remove_done(struct cpuhpd *d, struct state_work *w)
{
	struct cpuhpd_state *s = w->target;
	struct cpuhpd_conn *c = w->conn && !w->conn->closing ? w->conn : NULL;

	if (s->parent)
		cpuhpd_info("state '%s': instance '%s' removed", s->name, s->inst);
	else
		cpuhpd_info("state '%s' removed", s->name);
	/* A multi state's instances go with it (its removal tore them down). */
	while (s->multi && s->listed && s->node.next != &d->states.list) {
		struct cpuhpd_state *i =
		    cpuhpd_container_of(s->node.next, struct cpuhpd_state, node);

		if (i->parent != s)
			break;
		cpuhpd_state_unlist(d, i);
	}
	cpuhpd_state_unlist(d, s);
	if (c)
		reply_runs(c, w->req_id, s, w, true);
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

/*
 * May @c register a state with @deadline (RegisterState's, 0: the default)?
 * A state can veto every hotplug (a failing teardown) or hold each one up
 * to its deadline: root and the admin group freely; another uid only as
 * --max-states-per-uid and --max-state-deadline-ms allow, and never into
 * the table's last CPUHPD_STATES_RESERVED places.  Return: the deadline to
 * use, or 0 (@c was told why).
 */
static uint32_t admitted(struct cpuhpd_conn *c, uint64_t req_id, uint32_t deadline)
{
	struct cpuhpd *d = c->d;
	const struct cpuhpd_options *o = &d->opt;
	bool admin = c->peer.admin;
	uint32_t cap = admin ? CPUHPD_STATES_MAX_DEADLINE_MS : o->max_state_deadline_ms;
	unsigned room = admin ? CPUHPD_STATES_MAX : CPUHPD_STATES_MAX - CPUHPD_STATES_RESERVED;
	unsigned mine;

	if (!admin && !o->max_states_per_uid) {
		cpuhpd_conn_send_error(
		    c, req_id, EPERM,
		    "not allowed: hotplug states are for root%s%s%s (a state can "
		    "veto or hold up every hotplug); uid %u is neither (cpuhpd "
		    "--max-states-per-uid N lets each other uid register N)",
		    o->admin_group ? " and members of group '" : " only",
		    o->admin_group ? o->admin_group : "", o->admin_group ? "'" : "",
		    (unsigned)c->peer.uid);
		return 0;
	}
	if (!deadline)
		deadline = CPUHPD_STATES_DEFAULT_DEADLINE_MS < cap
		               ? CPUHPD_STATES_DEFAULT_DEADLINE_MS
		               : cap;
	if (deadline > CPUHPD_STATES_MAX_DEADLINE_MS) {
		cpuhpd_conn_send_error(c, req_id, EINVAL,
		                       "deadline %" PRIu32 " ms is over the limit of %u ms",
		                       deadline, CPUHPD_STATES_MAX_DEADLINE_MS);
		return 0;
	}
	if (deadline > cap) {
		cpuhpd_conn_send_error(c, req_id, EPERM,
		                       "deadline %" PRIu32 " ms is over the limit of %" PRIu32
		                       " ms for uid %u, which is neither root nor an admin (cpuhpd "
		                       "--max-state-deadline-ms)",
		                       deadline, cap, (unsigned)c->peer.uid);
		return 0;
	}
	if (cpuhpd_state_count_conn(d, c) >= CPUHPD_STATES_MAX_PER_CONN ||
	    d->states.nstates >= room) {
		cpuhpd_conn_send_error(
		    c, req_id, EDQUOT, "too many states: %u per connection, %u in all%s",
		    CPUHPD_STATES_MAX_PER_CONN, room, admin ? "" : " but for root and admins");
		return 0;
	}
	if (!admin && (mine = cpuhpd_states_of_uid(d, c->peer.uid)) >= o->max_states_per_uid) {
		cpuhpd_conn_send_error(
		    c, req_id, EDQUOT,
		    "uid %u has %u state(s) registered, the limit per user (cpuhpd "
		    "--max-states-per-uid %u); remove one first",
		    (unsigned)c->peer.uid, mine, o->max_states_per_uid);
		return 0;
	}
	return deadline;
}

/*
 * A new record of @c's (a state or an instance) and the work that registers
 * or adds it; NULL after telling @c that memory ran out.
 */
static struct cpuhpd_state *new_record(struct cpuhpd_conn *c, uint64_t req_id,
                                       struct state_work **w)
{
	struct cpuhpd_state *s = calloc(1, sizeof(*s));

	*w = cpuhpd_states_work_new(W_REGISTER);
	if (!s || !*w) {
		free(s);
		free(*w);
		cpuhpd_conn_send_error(c, req_id, ENOMEM, "cpuhpd is out of memory");
		return NULL;
	}
	s->refs = 1; /* the registry's */
	s->id = c->d->states.next_state_id++;
	s->conn = c;
	s->conn_id = c->id;
	return s;
}

/* Into the registry, and its startups to run as a reader. */
static void submit_register(struct cpuhpd_conn *c, uint64_t req_id, struct cpuhpd_state *s,
                            struct state_work *w, bool nocalls)
{
	cpuhpd_state_insert(c->d, s);
	w->conn = c;
	w->req_id = req_id;
	w->target = cpuhpd_state_get(s);
	w->nocalls = nocalls;
	w->done = register_done;
	cpuhpd_states_submit_reader(c->d, w);
}

void cpuhpd_states_register(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	const Cpuhp__RegisterState *rs = req->register_state;
	uint64_t req_id = req->id;
	struct cpuhpd *d = c->d;
	struct cpuhpd_state *s, *other;
	struct state_work *w;
	uint32_t deadline;

	if (!cpuhpd_state_name_ok(rs->name)) {
		cpuhpd_conn_send_error(
		    c, req_id, EINVAL,
		    "invalid state name '%.80s': 1 to %d printable characters, no "
		    "spaces",
		    rs->name, CPUHPD_STATE_NAME_MAX - 1);
		return;
	}
	if (rs->section != CPUHP__STATE_SECTION__SECTION_ONLINE &&
	    rs->section != CPUHP__STATE_SECTION__SECTION_PREPARE) {
		cpuhpd_conn_send_error(
		    c, req_id, EINVAL,
		    "unknown section %d for state '%.80s': SECTION_ONLINE (0) or "
		    "SECTION_PREPARE (1)",
		    (int)rs->section, rs->name);
		return;
	}
	deadline = admitted(c, req_id, rs->deadline_ms);
	if (!deadline)
		return;
	if ((other = cpuhpd_state_find(d, rs->name))) {
		cpuhpd_conn_send_error(c, req_id, EEXIST,
		                       "a state named '%s' is registered already (by pid %d, %s): "
		                       "names are unique per daemon",
		                       rs->name, (int)other->pid, other->comm);
		return;
	}
	s = new_record(c, req_id, &w);
	if (!s)
		return;
	snprintf(s->name, sizeof(s->name), "%s", rs->name);
	s->priority = rs->priority;
	s->prepare = rs->section == CPUHP__STATE_SECTION__SECTION_PREPARE;
	s->multi = rs->multi;
	s->deadline_ms = deadline;
	s->reg_req_id = req_id;
	s->pid = c->peer.pid;
	s->uid = c->peer.uid;
	read_comm(s->pid, s->comm, sizeof(s->comm));
	cpuhpd_debug("client %u: registers state '%s' (%s, priority %" PRId32 ", deadline %" PRIu32
	             " ms%s%s)",
	             c->id, s->name, s->prepare ? "PREPARE" : "ONLINE", s->priority, s->deadline_ms,
	             s->multi ? ", multi" : "", rs->nocalls ? ", nocalls" : "");
	submit_register(c, req_id, s, w, rs->nocalls);
}

/* A removal of @s (a state or an instance) asked by @c: a reader's work. */
static void submit_remove(struct cpuhpd_conn *c, uint64_t req_id, struct cpuhpd_state *s,
                          bool nocalls)
{
	struct state_work *w;

	if (!s->live) {
		if (s->parent)
			cpuhpd_conn_send_error(
			    c, req_id, EBUSY,
			    "instance '%s' of state '%s' is still being added or "
			    "removed",
			    s->inst, s->name);
		else
			cpuhpd_conn_send_error(c, req_id, EBUSY,
			                       "state '%s' is still being registered or removed",
			                       s->name);
		return;
	}
	w = cpuhpd_states_work_new(W_REMOVE);
	if (!w) {
		cpuhpd_conn_send_error(c, req_id, ENOMEM, "cpuhpd is out of memory");
		return;
	}
	w->conn = c;
	w->req_id = req_id;
	w->target = cpuhpd_state_get(s);
	w->nocalls = nocalls;
	w->done = remove_done;
	cpuhpd_states_submit_reader(c->d, w);
}

void cpuhpd_states_remove(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	const Cpuhp__RemoveState *rm = req->remove_state;
	struct cpuhpd_state *s = cpuhpd_state_of_conn(c->d, c, rm->state_id);

	if (s)
		submit_remove(c, req->id, s, rm->nocalls);
	else
		cpuhpd_conn_send_error(c, req->id, ENOENT,
		                       "no state %" PRIu64 " on this connection (states belong to "
		                       "the connection that registered them)",
		                       rm->state_id);
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
	struct cpuhpd_page_row *rows = calloc(n ? n : 1, sizeof(*rows));
	char **strs = calloc(n ? n : 1, sizeof(*strs));
	struct cpuhpd_list *pos;
	struct cpuhpd_page pg;

	if (!info || !infop || !rows || !strs) {
		cpuhpd_conn_send_error(c, req_id, ENOMEM, "cpuhpd is out of memory");
		goto out;
	}
	cpuhpd_list_for_each(pos, &d->states.list)
	{
		struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		if (s->parent)
			continue;
		cpuhp__state_info__init(&info[i]);
		info[i].section = s->prepare ? CPUHP__STATE_SECTION__SECTION_PREPARE
		                             : CPUHP__STATE_SECTION__SECTION_ONLINE;
		info[i].multi = s->multi;
		info[i].instances = s->ninst;
		info[i].state_id = s->id;
		info[i].name = s->name;
		info[i].priority = s->priority;
		info[i].deadline_ms = s->deadline_ms;
		info[i].pid = s->pid;
		info[i].uid = s->uid;
		info[i].comm = s->comm;
		strs[i] = s->multi ? NULL : cpuhpd_cpus_to_str(&s->cpus);
		info[i].cpus = strs[i] ? strs[i] : (char *)"";
		/* Startup order: section, priority, then registration (ids grow with it). */
		rows[i] = (struct cpuhpd_page_row){
		    {(uint64_t)!s->prepare << 32 | ((uint32_t)s->priority ^ UINT32_C(0x80000000)),
		     s->id},
		    &info[i].base};
		i++;
	}
	if (cpuhpd_page_cut(rows, i, req->list_states->after, req->list_states->limit, &pg)) {
		cpuhpd_conn_send_error(c, req_id, EINVAL,
		                       "ListStates.after is not a cursor this cpuhpd gave; ask "
		                       "again from the first page");
		goto out;
	}
	for (size_t k = 0; k < pg.count; k++)
		infop[k] = (Cpuhp__StateInfo *)rows[pg.first + k].msg;
	sl.n_states = pg.count;
	sl.states = infop;
	sl.more = pg.more;
	sl.next.data = pg.next;
	sl.next.len = pg.next_len;
	r.id = req_id;
	r.body_case = CPUHP__RESPONSE__BODY_STATE_LIST;
	r.state_list = &sl;
	cpuhpd_conn_send(c, &r);
out:
	for (i = 0; strs && i < n; i++)
		free(strs[i]);
	free(strs);
	free(rows);
	free(infop);
	free(info);
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
		out[i].instance = run->inst;
		out[i].section = run->prepare ? CPUHP__STATE_SECTION__SECTION_PREPARE
		                              : CPUHP__STATE_SECTION__SECTION_ONLINE;
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

/*
 * AddInstance: an instance of @c's multi state, started on every CPU the
 * state is up on.  A reader like a registration (the same work): it waits
 * for the gate, and a hotplug waits for it (tests/model/sections.pml shows
 * why it must).
 */
void cpuhpd_states_add_instance(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	const Cpuhp__AddInstance *ai = req->add_instance;
	uint64_t req_id = req->id;
	struct cpuhpd *d = c->d;
	struct cpuhpd_state *p = cpuhpd_state_of_conn(d, c, ai->state_id), *s;
	struct state_work *w;

	if (!p) {
		cpuhpd_conn_send_error(c, req_id, ENOENT,
		                       "no state %" PRIu64 " on this connection (instances are "
		                       "added over the connection that registered their state)",
		                       ai->state_id);
		return;
	}
	if (!p->multi) {
		cpuhpd_conn_send_error(c, req_id, EINVAL,
		                       "state '%s' is not a multi-instance state: register it with "
		                       "multi to add instances",
		                       p->name);
		return;
	}
	if (!p->live) {
		cpuhpd_conn_send_error(c, req_id, EBUSY,
		                       "state '%s' is still being registered or removed", p->name);
		return;
	}
	if (!cpuhpd_state_name_ok(ai->name)) {
		cpuhpd_conn_send_error(
		    c, req_id, EINVAL,
		    "invalid instance name '%.80s': 1 to %d printable characters, "
		    "no spaces",
		    ai->name, CPUHPD_STATE_NAME_MAX - 1);
		return;
	}
	if (cpuhpd_instance_find(d, p, ai->name, 0)) {
		cpuhpd_conn_send_error(c, req_id, EEXIST,
		                       "state '%s' has an instance named '%s' already", p->name,
		                       ai->name);
		return;
	}
	if (p->ninst >= CPUHPD_INSTANCES_MAX_PER_STATE ||
	    d->states.ninstances >= CPUHPD_INSTANCES_MAX) {
		cpuhpd_conn_send_error(
		    c, req_id, EDQUOT,
		    "too many instances: %u per state, %u in all; state '%s' has "
		    "%u",
		    CPUHPD_INSTANCES_MAX_PER_STATE, CPUHPD_INSTANCES_MAX, p->name, p->ninst);
		return;
	}
	s = new_record(c, req_id, &w);
	if (!s)
		return;
	memcpy(s->name, p->name, sizeof(s->name));
	snprintf(s->inst, sizeof(s->inst), "%s", ai->name);
	s->parent = cpuhpd_state_get(p);
	s->priority = p->priority;
	s->prepare = p->prepare;
	s->deadline_ms = p->deadline_ms;
	s->reg_req_id = p->reg_req_id;
	s->pid = p->pid;
	s->uid = p->uid;
	memcpy(s->comm, p->comm, sizeof(s->comm));
	cpuhpd_debug("client %u: adds instance '%s' to state '%s'%s", c->id, s->inst, p->name,
	             ai->nocalls ? " (nocalls)" : "");
	submit_register(c, req_id, s, w, ai->nocalls);
}

/* RemoveInstance: its teardowns on every CPU it is up on, last first; a reader too. */
void cpuhpd_states_remove_instance(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	const Cpuhp__RemoveInstance *ri = req->remove_instance;
	struct cpuhpd_state *p = cpuhpd_state_of_conn(c->d, c, ri->state_id);
	struct cpuhpd_state *s = p ? cpuhpd_instance_find(c->d, p, NULL, ri->instance_id) : NULL;

	if (s)
		submit_remove(c, req->id, s, ri->nocalls);
	else
		cpuhpd_conn_send_error(c, req->id, ENOENT,
		                       "no instance %" PRIu64 " of state %" PRIu64
		                       " on this connection",
		                       ri->instance_id, ri->state_id);
}
