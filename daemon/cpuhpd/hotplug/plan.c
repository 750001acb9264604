/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The plan in force, kept by hotplugs in cpuhpd's own name; see plan.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "sysfs/cpus.h"
#include "sysfs/view.h"
#include "plan.h"
#include "request.h"

static const char *const smt_words[] = {
    [CPUHPD_PLAN_SMT_ANY] = "",
    [CPUHPD_PLAN_SMT_ON] = "on",
    [CPUHPD_PLAN_SMT_OFF] = "off",
};

/* Whether smt/control's @word is what the plan's @smt asks ("forceoff" is off too). */
static bool smt_matches(enum cpuhpd_plan_smt smt, const char *word)
{
	if (smt == CPUHPD_PLAN_SMT_ON)
		return !strcmp(word, "on");
	if (smt == CPUHPD_PLAN_SMT_OFF)
		return !strcmp(word, "off") || !strcmp(word, "forceoff");
	return true;
}

static void timer_cb(uv_timer_t *t);

void cpuhpd_plan_poke(struct cpuhpd *d)
{
	struct cpuhpd_plan *pl = &d->plan;
	uint64_t now;

	if (!pl->timer_init || d->stopping)
		return;
	now = uv_now(d->loop);
	uv_timer_start(&pl->timer, timer_cb, pl->due > now ? pl->due - now : 0, 0);
}

/* A conflict or a retry: the next application waits for the backoff.  Return: the delay, ms. */
static uint64_t trouble(struct cpuhpd *d)
{
	struct cpuhpd_plan *pl = &d->plan;
	uint64_t now = uv_now(d->loop), delay;

	if (pl->streak && now - pl->last_trouble < CPUHPD_PLAN_QUIET_MS)
		pl->streak++;
	else
		pl->streak = 1;
	pl->last_trouble = now;
	delay = cpuhpd_plan_backoff(pl->streak);
	pl->due = now + delay;
	return delay;
}

/* The problem recorded for @cpu, or NULL. */
static struct cpuhpd_plan_problem *problem_of(struct cpuhpd_plan *pl, unsigned cpu)
{
	for (unsigned i = 0; i < pl->nproblems; i++)
		if (pl->problems[i].cpu == cpu)
			return &pl->problems[i];
	return NULL;
}

/* @cpu could not be applied (@msg): reported, and left alone until it or the plan changes. */
static void stick(struct cpuhpd_plan *pl, unsigned cpu, const char *msg)
{
	struct cpuhpd_plan_problem *p = problem_of(pl, cpu), *grown;

	cpuhpd_warn("plan: cannot apply to CPU %u: %s; not tried again until the plan or the CPU "
	            "changes ('cpuhpctl plan' lists it)",
	            cpu, msg);
	cpuhp_cpuset_add(&pl->stuck, cpu);
	if (!p) {
		grown = realloc(pl->problems, (pl->nproblems + 1) * sizeof(*grown));
		if (!grown)
			return; /* the log has it */
		pl->problems = grown;
		p = &pl->problems[pl->nproblems++];
		p->cpu = cpu;
	}
	snprintf(p->msg, sizeof(p->msg), "%s", msg);
}

/* The CPUs of @set may be tried again. */
static void unstick(struct cpuhpd_plan *pl, const struct cpuhp_cpuset *set)
{
	unsigned k = 0;

	for (unsigned i = 0; i < pl->nproblems; i++) {
		if (cpuhp_cpuset_has(set, pl->problems[i].cpu)) {
			cpuhp_cpuset_del(&pl->stuck, pl->problems[i].cpu);
			continue;
		}
		pl->problems[k++] = pl->problems[i];
	}
	pl->nproblems = k;
	for (int cpu = -1; (cpu = cpuhp_cpuset_next(set, cpu)) >= 0;)
		cpuhp_cpuset_del(&pl->stuck, (unsigned)cpu);
}

static void unstick_all(struct cpuhpd_plan *pl)
{
	free(pl->problems);
	pl->problems = NULL;
	pl->nproblems = 0;
	cpuhp_cpuset_zero(&pl->stuck);
	pl->smt_problem[0] = '\0';
}

/* One of its hotplugs ended (queue.c, through ->own_done). */
static void own_done(struct cpuhpd *d, const struct hotplug_req *h, int err)
{
	struct cpuhpd_plan *pl = &d->plan;
	const struct cpuhpd_job *job = &h->job;

	pl->busy = 0;
	pl->hotplugs++;
	if (d->stopping)
		return;
	if (err && h->kind == CPUHPD_HP_SMT && job->err_what &&
	    !strcmp(job->err_what, "smt/control")) {
		snprintf(pl->smt_problem, sizeof(pl->smt_problem),
		         "the kernel refused smt/control '%s': %s (it said %s)", job->smt_control,
		         strerror(err), job->smt_before);
		cpuhpd_warn("plan: cannot apply smt %s: %s; not tried again until the plan changes",
		            job->smt_control, pl->smt_problem);
	} else if (err) {
		uint64_t delay = trouble(d);

		cpuhpd_warn("plan: hotplug #%" PRIu64
		            " (%s) did not run (%s): cpuhpd tries again in "
		            "%" PRIu64 " ms",
		            h->seq, h->desc, strerror(err), delay);
	}
	for (unsigned i = 0; !err && i < job->nresults; i++) {
		const struct cpuhpd_cpu_result *r = &job->results[i];

		if (r->err)
			stick(pl, r->cpu, r->msg);
	}
	cpuhpd_plan_poke(d);
}

/* Queue @h in cpuhpd's name for the plan (@why: "plan", "new CPU"); 0 or -errno. */
static int queue_own(struct cpuhpd *d, struct hotplug_req *h, const char *why)
{
	int err;

	if (!h)
		return -ENOMEM;
	h->own = why;
	h->own_done = own_done;
	err = cpuhpd_hotplug_enqueue_own(d, h, CPUHPD_PLAN_TIMEOUT_MS);
	if (err) {
		cpuhpd_hotplug_free(h);
		return err;
	}
	d->plan.busy = h->seq;
	return 0;
}

/* @set without the CPUs that a queued request takes toward @online already. */
static void minus_queued(const struct cpuhpd *d, struct cpuhp_cpuset *set, bool online)
{
	for (int cpu = -1; (cpu = cpuhp_cpuset_next(set, cpu)) >= 0;)
		if (cpuhpd_hotplug_queued_toward(d, (unsigned)cpu, online))
			cpuhp_cpuset_del(set, (unsigned)cpu);
}

/* What the plan asks of the CPUs as the view has them: one hotplug of it at a time. */
static void apply(struct cpuhpd *d)
{
	struct cpuhpd_plan *pl = &d->plan;
	const struct cpuhpd_plan_decl *p = &pl->decl;
	const struct cpuhpd_cpus *v = &d->view;
	struct cpuhp_cpuset set;
	int err = 0;

	if (d->stopping || d->handover || pl->busy || !pl->started)
		return;
	if (pl->due > uv_now(d->loop)) {
		cpuhpd_plan_poke(d);
		return;
	}
	/* SMT first: its control write moves many CPUs ("on" brings back every present one). */
	if (p->smt != CPUHPD_PLAN_SMT_ANY && !pl->smt_problem[0] &&
	    !smt_matches(p->smt, v->smt_control)) {
		int why = cpuhpd_cpus_smt_changeable(v->smt_control);

		if (why) {
			snprintf(pl->smt_problem, sizeof(pl->smt_problem), "%s",
			         cpuhpd_hotplug_smt_refusal(-why, v->smt_control));
			cpuhpd_warn("plan: cannot apply smt %s: %s", smt_words[p->smt],
			            pl->smt_problem);
		} else if (!cpuhpd_hotplug_queued_smt(d, smt_words[p->smt])) {
			err = queue_own(d, cpuhpd_hotplug_new_smt(smt_words[p->smt]), "plan");
			goto out;
		}
	}
	cpuhpd_cpus_and(&set, &p->offline, &v->present);
	cpuhpd_cpus_and(&set, &set, &v->online);
	cpuhpd_cpus_andnot(&set, &set, &pl->stuck);
	minus_queued(d, &set, false);
	if (cpuhp_cpuset_count(&set)) {
		err = queue_own(d, cpuhpd_hotplug_new_cpus(&set, false), "plan");
		goto out;
	}
	cpuhpd_cpus_and(&set, &pl->new_cpus, &v->present);
	cpuhpd_cpus_andnot(&set, &set, &v->online);
	cpuhpd_cpus_andnot(&set, &set, &p->offline);
	cpuhpd_cpus_andnot(&set, &set, &pl->stuck);
	minus_queued(d, &set, true);
	if (p->online_new && cpuhp_cpuset_count(&set))
		err = queue_own(d, cpuhpd_hotplug_new_cpus(&set, true), "new CPU");
out:
	/* -EBUSY: frozen; the thaw looks again.  -ENOMEM: the next change does. */
	if (err == -ENOMEM)
		cpuhpd_err("plan: out of memory: not applied now");
}

static void timer_cb(uv_timer_t *t)
{
	apply(cpuhpd_container_of(t, struct cpuhpd, plan.timer));
}

/* What cpuhpd knows of a writer behind its back: never who (the uevent names nobody). */
static const char *writer_words(const struct cpuhp_cpuset *added, unsigned cpu)
{
	if (cpuhp_cpuset_has(added, cpu))
		return "it came online with its hot-add, before cpuhpd could bring it up through "
		       "the hotplug states: most likely a udev rule that onlines new CPUs "
		       "(cpuhpd(8), "
		       "UDEV)";
	return "the kernel's uevent names no writer: an echo into cpuN/online, chcpu, a udev "
	       "rule or the hypervisor";
}

/* A change behind cpuhpd's back contradicted the plan: count it, log it, undo it later. */
static void conflict(struct cpuhpd *d, const char *what, const char *who)
{
	struct cpuhpd_plan *pl = &d->plan;
	uint64_t now = uv_now(d->loop), delay;

	pl->conflicts++;
	delay = trouble(d);
	snprintf(pl->last_conflict_msg, sizeof(pl->last_conflict_msg), "%s (%s)", what, who);
	pl->last_conflict = now;
	if (pl->streak > 1)
		cpuhpd_warn(
		    "plan contradicted behind cpuhpd's back: %s; conflict %u in a row (%" PRIu64
		    " in all): cpuhpd applies the plan again in %" PRIu64 " ms, backing off (%s)",
		    what, pl->streak, pl->conflicts, delay, who);
	else
		cpuhpd_warn(
		    "plan contradicted behind cpuhpd's back: %s; cpuhpd applies it again (%s)",
		    what, who);
}

/* The setting of @key as a log line's words: "offline-cpus = 2-3 (FILE:LINE)". */
static void setting_words(const struct cpuhpd_plan_decl *p, enum cpuhpd_plan_key key, char *buf,
                          size_t size)
{
	const struct cpuhpd_plan_setting *s = &p->setting[key];

	snprintf(buf, size, "%s = %.120s %s %.200s", cpuhpd_plan_key_names[key],
	         s->set ? s->value : "", s->set ? "from" : "(not", s->set ? s->source : "set)");
}

static void find_conflicts(struct cpuhpd *d, const struct cpuhpd_view_change *ch,
                           const struct cpuhp_cpuset *pending_before)
{
	struct cpuhpd_plan *pl = &d->plan;
	const struct cpuhpd_plan_decl *p = &pl->decl;
	const struct cpuhpd_cpus *v = &d->view;
	struct cpuhp_cpuset up, set;
	char what[600], src[360], *list;
	int cpu;

	/* Came online now: not online before (or not there at all). */
	cpuhpd_cpus_andnot(&up, &v->online, &ch->online_was);
	cpuhpd_cpus_and(&set, &up, &p->offline);
	if ((cpu = cpuhp_cpuset_next(&set, -1)) >= 0 && (list = cpuhpd_cpus_to_str(&set))) {
		setting_words(p, CPUHPD_PLAN_OFFLINE, src, sizeof(src));
		snprintf(what, sizeof(what),
		         "CPU %s came online, but the plan keeps it offline (%s)", list, src);
		conflict(d, what, writer_words(&ch->added, (unsigned)cpu));
		free(list);
	}
	if (p->smt != CPUHPD_PLAN_SMT_ANY && smt_matches(p->smt, ch->smt_was) &&
	    !smt_matches(p->smt, v->smt_control)) {
		setting_words(p, CPUHPD_PLAN_SMT, src, sizeof(src));
		snprintf(what, sizeof(what), "smt/control went from %s to %s (%s)", ch->smt_was,
		         v->smt_control, src);
		conflict(d, what,
		         "the kernel's uevents name no writer: an echo into smt/control, or a tool "
		         "that writes it");
	}
	/* New CPUs that someone else brought online before cpuhpd did. */
	cpuhpd_cpus_or(&set, pending_before, &ch->added);
	cpuhpd_cpus_and(&set, &set, &up);
	cpuhpd_cpus_andnot(&set, &set, &p->offline);
	if (p->online_new && (cpu = cpuhp_cpuset_next(&set, -1)) >= 0 &&
	    (list = cpuhpd_cpus_to_str(&set))) {
		setting_words(p, CPUHPD_PLAN_NEW, src, sizeof(src));
		snprintf(what, sizeof(what),
		         "the new CPU %s came online by someone else's hand, without the states' "
		         "startups before it ran anything (%s)",
		         list, src);
		conflict(d, what, writer_words(&ch->added, (unsigned)cpu));
		free(list);
	}
}

void cpuhpd_plan_view_changed(struct cpuhpd *d, const struct cpuhpd_view_change *ch)
{
	struct cpuhpd_plan *pl = &d->plan;
	struct cpuhp_cpuset pending = pl->new_cpus, moved;

	if (!pl->started)
		return;
	if (ch->present_changed) {
		/* Gone: nothing to do for them, and if they come back they are new again. */
		cpuhpd_cpus_andnot(&pl->new_cpus, &pl->new_cpus, &ch->removed);
		unstick(pl, &ch->removed);
		if (pl->decl.online_new)
			cpuhpd_cpus_or(&pl->new_cpus, &pl->new_cpus, &ch->added);
	}
	if (ch->external) {
		find_conflicts(d, ch, &pending);
		/* Changed behind cpuhpd's back: what could not be applied to them may be now. */
		cpuhpd_cpus_xor(&moved, &d->view.online, &ch->online_was);
		unstick(pl, &moved);
		if (strcmp(ch->smt_was, d->view.smt_control))
			pl->smt_problem[0] = '\0';
	}
	cpuhpd_cpus_andnot(&pl->new_cpus, &pl->new_cpus, &d->view.online);
	cpuhpd_plan_poke(d);
}

/* The udev rule's file (plan.h): there exactly while online-new-cpus is in force. */
static void update_flag(struct cpuhpd *d)
{
	struct cpuhpd_plan *pl = &d->plan;
	int fd;

	if (!pl->flag)
		return;
	if (pl->decl.online_new && !pl->flag_written) {
		fd = open(pl->flag, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0) {
			cpuhpd_warn("plan: cannot write %s: %m; the udev rule for new CPUs "
			            "(cpuhpd(8), UDEV) does not wait for cpuhpd",
			            pl->flag);
			return;
		}
		close(fd);
		pl->flag_written = true;
	} else if (!pl->decl.online_new && (pl->flag_written || access(pl->flag, F_OK) == 0)) {
		unlink(pl->flag);
		pl->flag_written = false;
	}
}

/* The plan in the log: each key with its source, and the CPUs it names that cannot be. */
static void log_plan(struct cpuhpd *d, const char *when)
{
	const struct cpuhpd_plan_decl *p = &d->plan.decl;
	struct cpuhp_cpuset unknown;
	char words[CPUHPD_PLAN_NKEYS][360], *list;
	bool any = false;

	for (int k = 0; k < CPUHPD_PLAN_NKEYS; k++) {
		setting_words(p, (enum cpuhpd_plan_key)k, words[k], sizeof(words[k]));
		any |= p->setting[k].set;
	}
	if (!any)
		cpuhpd_info("plan %s: none (no offline-cpus, smt or online-new-cpus%s%s)", when,
		            p->files ? " in " : "", p->files ? p->files : "");
	else
		cpuhpd_info("plan %s: %s; %s; %s", when, words[0], words[1], words[2]);
	cpuhpd_cpus_andnot(&unknown, &p->offline, &d->view.possible);
	if (cpuhp_cpuset_count(&unknown) && (list = cpuhpd_cpus_to_str(&unknown))) {
		char *possible = cpuhpd_cpus_to_str(&d->view.possible);

		cpuhpd_warn("plan: offline-cpus names CPU %s, which this machine does not have "
		            "(possible: %s): left out",
		            list, possible ? possible : "?");
		free(possible);
		free(list);
	}
}

int cpuhpd_plan_reload(struct cpuhpd *d)
{
	struct cpuhpd_plan *pl = &d->plan;
	struct cpuhpd_plan_decl n;
	int r;

	if (!d->opt.config_file)
		return 0;
	r = cpuhpd_plan_load(d->opt.config_file, d->opt.config_missing_ok, &d->opt.plan, &n);
	if (r || n.nerrors) {
		free(pl->reload_error);
		pl->reload_error = strdup(n.errors ? n.errors : "out of memory");
		cpuhpd_err("plan: reload: %s; the plan in force stays", pl->reload_error);
		cpuhpd_plan_decl_free(&n);
		return r ? r : -EINVAL;
	}
	cpuhpd_plan_decl_free(&pl->decl);
	pl->decl = n;
	free(pl->reload_error);
	pl->reload_error = NULL;
	if (!pl->decl.online_new)
		cpuhp_cpuset_zero(&pl->new_cpus);
	unstick_all(pl);
	pl->due = 0;
	log_plan(d, "reloaded");
	update_flag(d);
	cpuhpd_plan_poke(d);
	return 0;
}

static void on_sighup(uv_signal_t *s, int signum)
{
	struct cpuhpd *d = cpuhpd_container_of(s, struct cpuhpd, plan.sighup);

	(void)signum;
	cpuhpd_info("SIGHUP received: reloading the plan");
	cpuhpd_plan_reload(d);
}

int cpuhpd_plan_start(struct cpuhpd *d)
{
	struct cpuhpd_plan *pl = &d->plan;
	char *slash;
	int err;

	if (d->opt.config_file) {
		err = cpuhpd_plan_load(d->opt.config_file, d->opt.config_missing_ok, &d->opt.plan,
		                       &pl->decl);
		if (err) {
			cpuhpd_err("plan: out of memory reading it");
			return err;
		}
	}
	err = uv_timer_init(d->loop, &pl->timer);
	if (err)
		return err;
	pl->timer_init = true;
	err = uv_signal_init(d->loop, &pl->sighup);
	if (err)
		return err;
	pl->sighup_init = true;
	uv_signal_start(&pl->sighup, on_sighup, SIGHUP);
	/* Beside the lock file: "DIR/cpuhpd-DEV-INO" is the stem. */
	slash = d->instance_stem ? strrchr(d->instance_stem, '/') : NULL;
	if (slash && asprintf(&pl->flag, "%.*s/online-new-cpus", (int)(slash - d->instance_stem),
	                      d->instance_stem) < 0)
		pl->flag = NULL;
	pl->started = true;
	log_plan(d, "at start");
	update_flag(d);
	/* Now, not from the timer: queued before the socket listens, it is the first hotplug. */
	apply(d);
	return 0;
}

void cpuhpd_plan_close(struct cpuhpd *d)
{
	struct cpuhpd_plan *pl = &d->plan;

	if (pl->timer_init)
		uv_close((uv_handle_t *)&pl->timer, NULL);
	if (pl->sighup_init)
		uv_close((uv_handle_t *)&pl->sighup, NULL);
	pl->timer_init = pl->sighup_init = false;
	/* A restart's stop keeps it: the next cpuhpd goes on where this one stops. */
	if (pl->flag && pl->flag_written && !d->handover)
		unlink(pl->flag);
	cpuhpd_plan_decl_free(&pl->decl);
	free(pl->reload_error);
	free(pl->problems);
	free(pl->flag);
	pl->reload_error = NULL;
	pl->problems = NULL;
	pl->flag = NULL;
	pl->nproblems = 0;
	pl->started = false;
}
