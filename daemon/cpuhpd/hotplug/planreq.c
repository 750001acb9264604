/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The plan and the clients (plan.h): GetPlan, and what SetOnline and SetSmt
 * must respect of it, or change with it (persist).  Reads and writes the
 * plan's data; the looks that apply it come from the hotplug's end.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpuhpd.h"
#include "base/conffile.h"
#include "base/log.h"
#include "core/conn.h"
#include "sysfs/cpus.h"
#include "plan.h"

/* A CPU list for the wire: malloc()ed, "" for none; NULL when out of memory. */
static char *list(const struct cpuhp_cpuset *set)
{
	return cpuhpd_cpus_to_str(set);
}

void cpuhpd_plan_request(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	struct cpuhpd *d = c->d;
	const struct cpuhpd_plan *pl = &d->plan;
	const struct cpuhpd_plan_decl *p = &pl->decl;
	const struct cpuhpd_cpus *v = &d->view;
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Plan out = CPUHP__PLAN__INIT;
	Cpuhp__PlanSetting set[CPUHPD_PLAN_NKEYS], *setp[CPUHPD_PLAN_NKEYS];
	Cpuhp__PlanProblem *probs = calloc(pl->nproblems + 1, sizeof(*probs));
	Cpuhp__PlanProblem **probp = calloc(pl->nproblems + 1, sizeof(*probp));
	struct cpuhp_cpuset s;
	char *lists[5] = {0};
	uint64_t now = uv_now(d->loop);
	unsigned streak = pl->streak;
	bool oom = !probs || !probp;

	for (int k = 0; k < CPUHPD_PLAN_NKEYS; k++) {
		const struct cpuhpd_plan_setting *ps = &p->setting[k];

		cpuhp__plan_setting__init(&set[k]);
		set[k].key = (char *)cpuhpd_plan_key_names[k];
		set[k].value = ps->set ? ps->value : (char *)"";
		set[k].source = ps->set ? ps->source : (char *)"";
		set[k].overridden = ps->overridden ? ps->overridden : (char *)"";
		setp[k] = &set[k];
	}
	out.n_settings = CPUHPD_PLAN_NKEYS;
	out.settings = setp;
	out.files = p->files ? p->files : (char *)"";
	out.errors = p->errors ? p->errors : (char *)"";
	out.reload_error = pl->reload_error ? pl->reload_error : (char *)"";
	/* Where the machine differs, from the view every answer is made of. */
	cpuhpd_cpus_and(&s, &p->offline, &v->online);
	lists[0] = list(&s);
	cpuhpd_cpus_and(&s, &pl->new_cpus, &v->present);
	cpuhpd_cpus_andnot(&s, &s, &v->online);
	cpuhpd_cpus_andnot(&s, &s, &p->offline);
	cpuhpd_cpus_andnot(&s, &s, &pl->stuck);
	lists[1] = list(&s);
	cpuhpd_cpus_and(&s, &p->offline, &v->possible);
	cpuhpd_cpus_andnot(&s, &s, &v->present);
	lists[2] = list(&s);
	cpuhpd_cpus_andnot(&s, &p->offline, &v->possible);
	lists[3] = list(&s);
	for (int i = 0; i < 4; i++)
		oom |= !lists[i];
	if (oom) {
		cpuhpd_conn_send_error(c, req->id, ENOMEM, "cpuhpd is out of memory");
		goto out;
	}
	out.to_offline = lists[0];
	out.to_online = lists[1];
	out.absent = lists[2];
	out.unknown = lists[3];
	out.smt_control = (char *)v->smt_control;
	out.smt_differs = (p->smt == CPUHPD_PLAN_SMT_ON && strcmp(v->smt_control, "on")) ||
	                  (p->smt == CPUHPD_PLAN_SMT_OFF && strcmp(v->smt_control, "off") &&
	                   strcmp(v->smt_control, "forceoff"));
	for (unsigned i = 0; i < pl->nproblems; i++) {
		cpuhp__plan_problem__init(&probs[i]);
		probs[i].cpu = pl->problems[i].cpu;
		probs[i].message = (char *)pl->problems[i].msg;
		probp[i] = &probs[i];
	}
	out.n_problems = pl->nproblems;
	out.problems = probp;
	out.smt_problem = (char *)pl->smt_problem;
	out.conflicts = pl->conflicts;
	out.last_conflict = (char *)pl->last_conflict_msg;
	out.last_conflict_ago_ms = pl->conflicts ? now - pl->last_conflict : 0;
	out.retry_in_ms = pl->due > now ? (uint32_t)(pl->due - now) : 0;
	/* What the next trouble would wait: the streak goes on within the quiet time. */
	if (!streak || now - pl->last_trouble >= CPUHPD_PLAN_QUIET_MS)
		streak = 0;
	out.backoff_ms = (uint32_t)cpuhpd_plan_backoff(streak + 1);
	out.streak = streak;
	out.hotplugs = pl->hotplugs;
	out.hotplug_seq = pl->busy;
	r.id = req->id;
	r.body_case = CPUHP__RESPONSE__BODY_PLAN;
	r.plan = &out;
	cpuhpd_conn_send(c, &r);
out:
	for (int i = 0; i < 5; i++)
		free(lists[i]);
	free(probs);
	free(probp);
}

/* Refuse @req_id: @what goes against @key's setting. */
static void refuse(struct cpuhpd_conn *c, uint64_t req_id, enum cpuhpd_plan_key key,
                   const char *what)
{
	const struct cpuhpd_plan_setting *s = &c->d->plan.decl.setting[key];

	cpuhpd_conn_send_error(c, req_id, EBUSY,
	                       "%s goes against the plan: %s = %s (%s); nothing was changed. "
	                       "Add --persist to change the plan too, or change that setting "
	                       "and run 'systemctl reload cpuhpd'",
	                       what, cpuhpd_plan_key_names[key], s->value, s->source);
}

/* Persist @key = @value for @c's request; Return: whether it is written (else @c was told). */
static bool persist(struct cpuhpd_conn *c, uint64_t req_id, enum cpuhpd_plan_key key,
                    const char *value)
{
	struct cpuhpd *d = c->d;
	struct cpuhpd_plan *pl = &d->plan;
	const char *blocked;
	char who[160], err[CPUHPD_CONF_ERR_MAX + 64];
	int r;

	if (!d->opt.config_file) {
		cpuhpd_conn_send_error(
		    c, req_id, EOPNOTSUPP,
		    "this cpuhpd reads no configuration file: nothing to persist "
		    "to; nothing was changed");
		return false;
	}
	blocked = cpuhpd_plan_persist_blocked(d->opt.config_file, &pl->decl, key);
	if (blocked) {
		cpuhpd_conn_send_error(
		    c, req_id, EBUSY,
		    "%s is set by %s, which wins over cpuhpd's drop-in %s: --persist would not "
		    "count; change it there (then systemctl reload cpuhpd); nothing was changed",
		    cpuhpd_plan_key_names[key], blocked, CPUHPD_PLAN_PERSIST_NAME);
		return false;
	}
	snprintf(who, sizeof(who), "pid %d (%s) uid %u", (int)c->peer.pid, c->peer.comm,
	         (unsigned)c->peer.uid);
	r = cpuhpd_plan_persist(d->opt.config_file, &pl->decl, key, value, who, err, sizeof(err));
	if (r) {
		cpuhpd_warn("plan: %s asked to persist %s = %s: %s", who,
		            cpuhpd_plan_key_names[key], value, err);
		cpuhpd_conn_send_error(c, req_id, r == -ENOMEM ? ENOMEM : EIO,
		                       "cannot persist %s = %s: %s; nothing was changed",
		                       cpuhpd_plan_key_names[key], value, err);
		return false;
	}
	cpuhpd_info("plan: %s = %s (%s), persisted for %s", cpuhpd_plan_key_names[key], value,
	            pl->decl.setting[key].source, who);
	/* What could not be applied is tried again under the new setting. */
	free(pl->problems);
	pl->problems = NULL;
	pl->nproblems = 0;
	cpuhp_cpuset_zero(&pl->stuck);
	pl->smt_problem[0] = '\0';
	pl->due = 0;
	return true;
}

bool cpuhpd_plan_admit(struct cpuhpd_conn *c, uint64_t req_id, const struct cpuhp_cpuset *set,
                       bool online, const char *smt, bool persist_it)
{
	const struct cpuhpd_plan_decl *p = &c->d->plan.decl;
	struct cpuhp_cpuset against, now;
	char *value, what[120];
	bool ok;

	if (smt) {
		bool on = !strcmp(smt, "on");

		if (persist_it && !strcmp(smt, "forceoff")) {
			cpuhpd_conn_send_error(c, req_id, EINVAL,
			                       "the plan keeps smt on or off: forceoff lasts until "
			                       "reboot anyway (persist 'off' to keep SMT off after "
			                       "it); nothing was changed");
			return false;
		}
		if (persist_it)
			return persist(c, req_id, CPUHPD_PLAN_SMT, on ? "on" : "off");
		if ((p->smt == CPUHPD_PLAN_SMT_ON && !on) ||
		    (p->smt == CPUHPD_PLAN_SMT_OFF && on)) {
			snprintf(what, sizeof(what), "SMT %s", smt);
			refuse(c, req_id, CPUHPD_PLAN_SMT, what);
			return false;
		}
		return true;
	}
	cpuhpd_cpus_and(&against, set, &p->offline);
	if (!persist_it) {
		if (!online || !cpuhp_cpuset_count(&against))
			return true;
		value = cpuhpd_cpus_to_str(&against);
		snprintf(what, sizeof(what), "bringing CPU %.80s online", value ? value : "?");
		free(value);
		refuse(c, req_id, CPUHPD_PLAN_OFFLINE, what);
		return false;
	}
	/* A CPU this machine cannot have would sit in the plan for nothing. */
	cpuhpd_cpus_andnot(&now, set, &c->d->view.possible);
	if (cpuhp_cpuset_count(&now)) {
		char *possible = cpuhpd_cpus_to_str(&c->d->view.possible);

		value = cpuhpd_cpus_to_str(&now);
		cpuhpd_conn_send_error(
		    c, req_id, EINVAL,
		    "CPU %.80s does not exist on this machine (possible: %.80s): "
		    "not persisted; nothing was changed",
		    value ? value : "?", possible ? possible : "?");
		free(value);
		free(possible);
		return false;
	}
	/* offline-cpus with @set in (offline) or out (online). */
	if (online)
		cpuhpd_cpus_andnot(&now, &p->offline, set);
	else
		cpuhpd_cpus_or(&now, &p->offline, set);
	value = cpuhpd_cpus_to_str(&now);
	if (!value) {
		cpuhpd_conn_send_error(c, req_id, ENOMEM, "cpuhpd is out of memory");
		return false;
	}
	ok = persist(c, req_id, CPUHPD_PLAN_OFFLINE, value);
	free(value);
	return ok;
}
