/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpuhpd's plan: cpuhp_client_plan(), and cpuhp_client_persist() for the hotplug requests. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-internal.h"

int cpuhp_client_persist(struct cpuhp_client *c, bool persist)
{
	int ret;

	if ((ret = cpuhp__client_enter(c)) < 0)
		return ret;
	c->persist = persist;
	return cpuhp__client_leave(c, 0);
}

/* The plan and every string it points to, in one allocation for cpuhp_client_plan_free(). */
struct plan_block {
	struct cpuhp_client_plan plan;
	struct cpuhp_client_plan_problem *problems;
	char *strings; /* each string, NUL-terminated, one after the other */
	size_t used, size;
};

/* Bytes a string takes in the block. */
static size_t room(const char *s)
{
	return strlen(s ? s : "") + 1;
}

static const char *keep(struct plan_block *b, const char *s)
{
	char *at = b->strings + b->used;

	s = s ? s : "";
	memcpy(at, s, strlen(s) + 1);
	b->used += strlen(s) + 1;
	return at;
}

static int take_plan(struct cpuhp_client *c, const Cpuhp__Response *resp, void *arg)
{
	const Cpuhp__Plan *in = resp->plan;
	struct plan_block *b;
	struct cpuhp_client_plan *p;
	size_t size = room(in->files) + room(in->errors) + room(in->reload_error) +
	              room(in->smt_control) + room(in->smt_problem) + room(in->last_conflict);
	static const char *const keys[] = {"offline-cpus", "smt", "online-new-cpus"};
	int ret;

	for (size_t i = 0; i < in->n_settings && i < 3; i++)
		size += room(in->settings[i]->key) + room(in->settings[i]->value) +
		        room(in->settings[i]->source) + room(in->settings[i]->overridden);
	for (size_t i = 0; i < 3; i++)
		size += room(keys[i]);
	for (size_t i = 0; i < in->n_problems; i++)
		size += room(in->problems[i]->message);
	b = calloc(1, sizeof(*b));
	if (b) {
		b->strings = malloc(size);
		b->problems = calloc(in->n_problems + 1, sizeof(*b->problems));
	}
	if (!b || !b->strings || !b->problems) {
		if (b) {
			free(b->strings);
			free(b->problems);
		}
		free(b);
		return cpuhp__client_error(c, -ENOMEM, "out of memory for the plan");
	}
	b->size = size;
	p = &b->plan;
	/* Each key in its place, whatever a daemon sends, so that settings[i] is always named. */
	for (size_t i = 0; i < 3; i++) {
		p->settings[i].key = keep(b, keys[i]);
		p->settings[i].value = p->settings[i].source = p->settings[i].overridden =
		    p->settings[i].key + strlen(keys[i]); /* "" */
	}
	for (size_t i = 0; i < in->n_settings && i < 3; i++) {
		const Cpuhp__PlanSetting *s = in->settings[i];

		for (size_t k = 0; k < 3; k++) {
			if (!s->key || strcmp(s->key, keys[k]))
				continue;
			p->settings[k].value = keep(b, s->value);
			p->settings[k].source = keep(b, s->source);
			p->settings[k].overridden = keep(b, s->overridden);
		}
	}
	p->files = keep(b, in->files);
	p->errors = keep(b, in->errors);
	p->reload_error = keep(b, in->reload_error);
	p->smt_control = keep(b, in->smt_control);
	p->smt_problem = keep(b, in->smt_problem);
	p->last_conflict = keep(b, in->last_conflict);
	if ((ret = cpuhp__client_parse_cpus(c, "plan", in->to_offline, &p->to_offline)) < 0 ||
	    (ret = cpuhp__client_parse_cpus(c, "plan", in->to_online, &p->to_online)) < 0 ||
	    (ret = cpuhp__client_parse_cpus(c, "plan", in->absent, &p->absent)) < 0 ||
	    (ret = cpuhp__client_parse_cpus(c, "plan", in->unknown, &p->unknown)) < 0) {
		cpuhp_client_plan_free(p);
		return ret;
	}
	for (size_t i = 0; i < in->n_problems; i++) {
		b->problems[i].cpu = in->problems[i]->cpu;
		b->problems[i].message = keep(b, in->problems[i]->message);
	}
	p->n_problems = in->n_problems;
	p->problems = b->problems;
	p->smt_differs = in->smt_differs;
	p->conflicts = in->conflicts;
	p->last_conflict_ago_ms = in->last_conflict_ago_ms;
	p->retry_in_ms = in->retry_in_ms;
	p->backoff_ms = in->backoff_ms;
	p->streak = in->streak;
	p->hotplugs = in->hotplugs;
	p->hotplug_seq = in->hotplug_seq;
	*(struct cpuhp_client_plan **)arg = p;
	return 0;
}

int cpuhp_client_plan(struct cpuhp_client *c, struct cpuhp_client_plan **out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__GetPlan gp = CPUHP__GET_PLAN__INIT;

	req.body_case = CPUHP__REQUEST__BODY_GET_PLAN;
	req.get_plan = &gp;
	return cpuhp__client_request(c, &req, CPUHP__RESPONSE__BODY_PLAN, take_plan, out);
}

void cpuhp_client_plan_free(struct cpuhp_client_plan *plan)
{
	struct plan_block *b = (struct plan_block *)plan;

	if (!b)
		return;
	free(b->problems);
	free(b->strings);
	free(b);
}
