/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hotplug states across a restart (states.h): their records and the
 * registrations and removals waiting for the gate, in the state text; the
 * states again, live, on the adopted connections.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "base/statetext.h"
#include "core/conn.h"
#include "core/fdstore.h"
#include "state.h"
#include "states.h"
#include "work.h"

void cpuhpd_states_save(const struct cpuhpd_conn *c, FILE *f)
{
	const struct cpuhpd_list *pos;

	/* Taken over with the connection: its calls come in batches after a restart too. */
	if (c->state_batch)
		fprintf(f, "batch %u\n", c->id);
	cpuhpd_list_for_each(pos, &c->d->states.list)
	{
		const struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);
		char *cpus;

		if (!s->live || s->conn != c)
			continue;
		cpus = cpuhpd_cpus_to_str(&s->cpus);
		if (s->parent) {
			/* After its state's line and its older instances': the list's order. */
			fprintf(f, "inst %u %" PRIu64 " %" PRIu64, c->id, s->parent->id, s->id);
			cpuhpd_statetext_str(f, s->inst);
			cpuhpd_statetext_str(f, cpus);
		} else {
			fprintf(f, "state %u %" PRIu64 " %" PRIu64 " %" PRId32 " %" PRIu32, c->id,
			        s->id, s->reg_req_id, s->priority, s->deadline_ms);
			cpuhpd_statetext_str(f, s->name);
			cpuhpd_statetext_str(f, cpus);
			fprintf(f, " %u",
			        (s->prepare ? CPUHPD_SAVED_PREPARE : 0) |
			            (s->multi ? CPUHPD_SAVED_MULTI : 0));
		}
		fputc('\n', f);
		free(cpus);
		for (int cpu = -1; (cpu = cpuhp_cpuset_next(&s->unsure, cpu)) >= 0;)
			fprintf(f, "call %u %" PRIu64 " %d\n", c->id, s->id, cpu);
	}
}

/* A registration or removal waiting for the gate, as the request its client sent. */
static void save_waiting(FILE *f, const struct state_work *w)
{
	Cpuhp__Request rq = CPUHP__REQUEST__INIT;
	Cpuhp__RegisterState rs = CPUHP__REGISTER_STATE__INIT;
	Cpuhp__RemoveState rm = CPUHP__REMOVE_STATE__INIT;
	Cpuhp__AddInstance ai = CPUHP__ADD_INSTANCE__INIT;
	Cpuhp__RemoveInstance ri = CPUHP__REMOVE_INSTANCE__INIT;

	rq.id = w->req_id;
	if (w->target->parent && w->kind == W_REGISTER) {
		ai.state_id = w->target->parent->id;
		ai.name = (char *)w->target->inst;
		ai.nocalls = w->nocalls;
		rq.body_case = CPUHP__REQUEST__BODY_ADD_INSTANCE;
		rq.add_instance = &ai;
	} else if (w->target->parent) {
		ri.state_id = w->target->parent->id;
		ri.instance_id = w->target->id;
		ri.nocalls = w->nocalls;
		rq.body_case = CPUHP__REQUEST__BODY_REMOVE_INSTANCE;
		rq.remove_instance = &ri;
	} else if (w->kind == W_REGISTER) {
		rs.name = (char *)w->target->name;
		rs.priority = w->target->priority;
		rs.deadline_ms = w->target->deadline_ms;
		rs.nocalls = w->nocalls;
		rs.section = w->target->prepare ? CPUHP__STATE_SECTION__SECTION_PREPARE
		                                : CPUHP__STATE_SECTION__SECTION_ONLINE;
		rs.multi = w->target->multi;
		rq.body_case = CPUHP__REQUEST__BODY_REGISTER_STATE;
		rq.register_state = &rs;
	} else {
		rm.state_id = w->target->id;
		rm.nocalls = w->nocalls;
		rq.body_case = CPUHP__REQUEST__BODY_REMOVE_STATE;
		rq.remove_state = &rm;
	}
	cpuhpd_fdstore_put_request(f, w->conn->id, &rq, false);
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

	c->state_batch = sc->state_batch;
	for (unsigned i = 0; i < sc->nstates; i++) {
		const struct cpuhpd_saved_state *ss = &sc->states[i];
		struct cpuhpd_state *s, *p = NULL;

		if (ss->parent) {
			/* An instance: after its state, which is this conn's and multi. */
			p = cpuhpd_state_of_conn(d, c, ss->parent);
			if (!p || !p->multi || !cpuhpd_state_name_ok(ss->name) ||
			    cpuhpd_instance_find(d, p, ss->name, 0) ||
			    p->ninst >= CPUHPD_INSTANCES_MAX_PER_STATE ||
			    d->states.ninstances >= CPUHPD_INSTANCES_MAX)
				return -EINVAL;
		} else if (!cpuhpd_state_name_ok(ss->name) || cpuhpd_state_find(d, ss->name) ||
		           ss->deadline_ms > CPUHPD_STATES_MAX_DEADLINE_MS ||
		           d->states.nstates >= CPUHPD_STATES_MAX ||
		           cpuhpd_state_count_conn(d, c) >= CPUHPD_STATES_MAX_PER_CONN) {
			return -EINVAL;
		}
		s = calloc(1, sizeof(*s));
		if (!s)
			return -ENOMEM;
		if (ss->cpus && cpuhp_cpuset_parse(ss->cpus, &s->cpus)) {
			free(s);
			return -EINVAL;
		}
		/* Calls the last cpuhpd sent, unanswered: due again whichever way (engine.c). */
		for (unsigned k = 0; k < ss->nunsure; k++) {
			if (cpuhp_cpuset_add(&s->unsure, ss->unsure[k])) {
				free(s);
				return -EINVAL;
			}
		}
		s->refs = 1;
		s->id = ss->id;
		if (s->id >= d->states.next_state_id)
			d->states.next_state_id = s->id + 1;
		if (p) {
			memcpy(s->name, p->name, sizeof(s->name));
			snprintf(s->inst, sizeof(s->inst), "%s", ss->name);
			s->parent = cpuhpd_state_get(p);
			s->priority = p->priority;
			s->prepare = p->prepare;
			s->deadline_ms = p->deadline_ms;
			s->reg_req_id = p->reg_req_id;
		} else {
			snprintf(s->name, sizeof(s->name), "%s", ss->name);
			s->priority = ss->priority;
			s->prepare = ss->kind & CPUHPD_SAVED_PREPARE;
			s->multi = ss->kind & CPUHPD_SAVED_MULTI;
			s->deadline_ms =
			    ss->deadline_ms ? ss->deadline_ms : CPUHPD_STATES_DEFAULT_DEADLINE_MS;
			s->reg_req_id = ss->reg_req_id;
		}
		s->conn = c;
		s->conn_id = c->id;
		s->pid = c->peer.pid;
		s->uid = c->peer.uid;
		snprintf(s->comm, sizeof(s->comm), "%.15s", c->peer.comm);
		cpuhpd_state_insert(d, s);
		s->live = true;
		cpuhpd_info("restart: state '%s'%s%s%s of client %u (pid %d) kept, started on %s",
		            s->name, p ? " instance '" : "", s->inst, p ? "'" : "", c->id,
		            (int)s->pid, ss->cpus ? ss->cpus : "no CPU");
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
