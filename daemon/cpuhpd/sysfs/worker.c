/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The worker thread and the jobs it runs (see worker.h).  A hotplug
 * job is one writer section of the process-wide hotplug lock: it excludes the
 * daemon's in-process readers, re-reads the online set, writes each CPU that
 * is not yet in the asked state, and reads the set back, all under the lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpuhp/hotplug.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "worker.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void post(struct cpuhpd_worker *w, struct cpuhpd_job_msg *m)
{
	uv_mutex_lock(&w->lock);
	cpuhpd_list_add_tail(&w->msgs, &m->node);
	uv_mutex_unlock(&w->lock);
	uv_async_send(&w->async);
}

/* What the kernel's answer means for the person reading it. */
static const char *explain(int err, bool online)
{
	switch (err) {
	case ENOENT:
		return "the CPU is not hot pluggable (it has no online file)";
	case EBUSY:
		return online ? "the kernel is busy: CPU hotplug is disabled right now"
		              : "the kernel refused: it is the last online CPU, or CPU hotplug "
		                "is disabled right now";
	case EPERM:
		return "the kernel does not allow it (not hot pluggable, or an SMT sibling "
		       "while SMT is off)";
	case ECANCELED:
		/*
		 * The kernel boots an SMT sibling that never ran once, to set it
		 * up, then parks it again while SMT is off, and answers that first
		 * try ECANCELED (later ones EPERM).  Not cpuhpd's stop, whose
		 * cancels say so.
		 */
		return online ? "the kernel canceled it: while SMT is off, an SMT sibling that "
		                "never ran is booted once and parked again (later tries answer "
		                "EPERM); turn SMT on first (cpuhpctl smt on)"
		              : "the kernel canceled it (a hotplug callback refused, and the "
		                "kernel rolled back)";
	case EACCES:
		return "permission denied: cpuhpd must run as root to hotplug";
	case EOPNOTSUPP:
		return "the platform does not support taking this CPU offline";
	case EINVAL:
		return "the kernel rejected the write (CPU not present?)";
	case EIO:
		/*
		 * cpuhp_sysfs_set_online() returns EIO for three things it cannot
		 * tell apart afterwards: the kernel's own EIO (a hotplug step
		 * failed and was rolled back), a short write, and a file that
		 * does not read back the new state.  Name all three.
		 */
		return "an I/O error from the kernel, a short write, or a read-back that differs";
	default:
		return strerror(err);
	}
}

/*
 * Hand the state calls of one section on one side of @r's write to the
 * loop and wait for them: the hotplug lock stays held meanwhile, as the
 * kernel holds its own around its callbacks.  @prepare: the PREPARE
 * section's (startup before the write of an online, teardown after the
 * write of an offline), else the ONLINE section's.  Return: 0, or the
 * failed call's positive errno (never for a PREPARE teardown: those cannot
 * fail, the engine logs them).
 */
static int ask_states(struct cpuhpd_worker *w, struct cpuhpd_job *job, struct cpuhpd_cpu_result *r,
                      bool teardown, bool rollback, bool prepare)
{
	int err;

	job->sc.r = r;
	job->sc.teardown = teardown;
	job->sc.rollback = rollback;
	job->sc.prepare = prepare;
	job->sc.done = false;
	job->sc.err = 0;
	post(w, &job->msg_states);
	uv_mutex_lock(&w->lock);
	while (!job->sc.done)
		uv_cond_wait(&w->states_cond, &w->lock);
	err = job->sc.err;
	uv_mutex_unlock(&w->lock);
	return err;
}

/*
 * The PREPARE teardowns (the kernel's DEAD) once @r's CPU is gone; as a
 * @rollback when they undo this hotplug's PREPARE startups.
 */
static void dead_after(struct cpuhpd_worker *w, struct cpuhpd_job *job, struct cpuhpd_cpu_result *r,
                       bool rollback)
{
	ask_states(w, job, r, true, rollback, true);
}

/*
 * The states' startup after @r's CPU came online.  A failure, rolled back
 * by the states (teardown of the ONLINE states started), takes the CPU
 * offline again, and then its PREPARE states are torn down: the whole way
 * back, as the kernel rolls back.
 * Return: 0, or the failed call's errno (in r->err, with r's message).
 */
static int startup_after(struct cpuhpd_worker *w, struct cpuhpd_job *job,
                         struct cpuhpd_cpu_result *r)
{
	int err = ask_states(w, job, r, false, false, false), e2;
	size_t l;

	if (!err)
		return 0;
	e2 = cpuhp_sysfs_set_online(w->root, r->cpu, false);
	l = strlen(r->msg);
	r->err = err;
	r->changed = !!e2;
	if (e2)
		snprintf(r->msg + l, sizeof(r->msg) - l,
		         "; and taking it offline again failed (%s): it stays online",
		         strerror(-e2));
	else
		dead_after(w, job, r, true);
	return err;
}

/*
 * See @r's CPU into the asked state, with its states' calls around the
 * write: an online is PREPARE startups, the write, ONLINE startups; an
 * offline ONLINE teardowns, the write, PREPARE teardowns.  @prepared: the
 * ONLINE teardowns ran already (SMT off runs them before its control
 * write); only the write, a refused write's rollback and the PREPARE
 * teardowns are left to do here.
 */
static void run_cpu(struct cpuhpd_worker *w, struct cpuhpd_job *job,
                    const struct cpuhpd_cpus *before, struct cpuhpd_cpu_result *r, bool prepared)
{
	const char *root = w->root;
	bool online = job->online;
	const char *verb = online ? "bring online" : "take offline";
	int err;

	if (!cpuhp_cpuset_has(&before->possible, r->cpu)) {
		r->err = ENOENT;
		snprintf(r->msg, sizeof(r->msg), "CPU %u does not exist", r->cpu);
		return;
	}
	if (!cpuhp_cpuset_has(&before->present, r->cpu)) {
		r->err = ENOENT;
		snprintf(r->msg, sizeof(r->msg), "CPU %u is not present", r->cpu);
		return;
	}
	if (cpuhp_cpuset_has(&before->online, r->cpu) == online) {
		snprintf(r->msg, sizeof(r->msg), "CPU %u is already %s", r->cpu,
		         online ? "online" : "offline");
		/*
		 * Resumed: the calls after the write that the kill cut short run
		 * now: an online's startups (a refusal rolling back every state
		 * started there and taking the CPU offline, as without the kill),
		 * an offline's PREPARE teardowns.  Its calls before the write all
		 * ended, or the write would not have been made.  SMT off's
		 * control write took it offline after its ONLINE teardowns: the
		 * PREPARE teardowns are due.
		 */
		if (job->with_states && online && job->resume)
			startup_after(w, job, r);
		else if (job->with_states && !online && (job->resume || prepared))
			dead_after(w, job, r, false);
		return;
	}
	/* Before the write; a failure rolled back keeps the CPU as it is. */
	if (job->with_states && !prepared) {
		err = ask_states(w, job, r, !online, false, online);
		if (err) {
			r->err = err;
			return;
		}
	}
	err = cpuhp_sysfs_set_online(root, r->cpu, online);
	if (err) {
		r->err = -err;
		snprintf(r->msg, sizeof(r->msg),
		         "CPU %u: cannot %s: %s (%s/devices/system/cpu/cpu%u/online: %s)", r->cpu,
		         verb, explain(-err, online), root ? root : "/sys", r->cpu, strerror(-err));
		/* Refused after the calls before it: undo them (ONLINE startups, PREPARE
		 * teardowns). */
		if (job->with_states)
			ask_states(w, job, r, online, true, online);
		return;
	}
	r->changed = true;
	/* After the write; an ONLINE startup failure takes the CPU offline again. */
	if (job->with_states && online && startup_after(w, job, r))
		return;
	if (job->with_states && !online)
		dead_after(w, job, r, false);
	snprintf(r->msg, sizeof(r->msg), "CPU %u %s", r->cpu, online ? "enabled" : "disabled");
}

/* Leases are gone (the loop saw to that); in-process readers may remain.  Return: 0 locked. */
static int lock_for(struct cpuhpd_job *job)
{
	int err = cpuhp_hotplug_begin_timeout(job->timeout_ms);

	if (err) {
		job->err = err;
		return err;
	}
	if (atomic_load(&job->cancel)) {
		cpuhp_hotplug_done();
		job->err = -ECANCELED;
		return -ECANCELED;
	}
	job->t_locked_ns = now_ns();
	return 0;
}

static void run_hotplug(struct cpuhpd_worker *w, struct cpuhpd_job *job)
{
	struct cpuhpd_cpus before;
	int cpu = -1;
	unsigned i = 0;
	int err;

	if (lock_for(job))
		return;
	post(w, &job->msg_started);

	/* What the writes need; the view is read whole once they are done. */
	err = cpuhpd_cpus_read_some(w->root, &job->cpus, &before, &job->err_what);
	if (err) {
		cpuhp_hotplug_done();
		job->err = err;
		return;
	}
	job->results = calloc(cpuhp_cpuset_count(&job->cpus), sizeof(*job->results));
	if (!job->results) {
		cpuhp_hotplug_done();
		job->err = -ENOMEM;
		return;
	}
	/* Ascending order, like chcpu; a failure does not stop the others. */
	while ((cpu = cpuhp_cpuset_next(&job->cpus, cpu)) >= 0) {
		job->results[i].cpu = (unsigned)cpu;
		run_cpu(w, job, &before, &job->results[i], false);
		i++;
	}
	job->nresults = i;
	job->view_ok = !cpuhpd_cpus_read(w->root, &job->view, &job->err_what);
	cpuhp_hotplug_done();
	job->t_done_ns = now_ns();
}

/*
 * SMT off, before the control write: the states' teardown of each online
 * sibling (@tmp: one result a sibling, ascending).  The kernel takes them
 * all offline within that one write, so this is the last moment to
 * prepare.  A failure (rolled back for its own CPU by the states) rolls
 * back the siblings torn down before it too, last first, and the write is
 * not made: every online sibling's result says so, the failed one naming
 * the state.
 * Return: 0 with *@torn the siblings torn down, or the failed call's errno.
 */
static int smt_teardown(struct cpuhpd_worker *w, struct cpuhpd_job *job,
                        const struct cpuhpd_cpus *before, struct cpuhpd_cpu_result *tmp, unsigned n,
                        struct cpuhp_cpuset *torn)
{
	unsigned failed = n;
	int err = 0;

	cpuhp_cpuset_zero(torn);
	for (unsigned i = 0; i < n && failed == n; i++) {
		if (!cpuhp_cpuset_has(&before->online, tmp[i].cpu))
			continue;
		err = ask_states(w, job, &tmp[i], true, false, false);
		if (err)
			failed = i;
		else
			cpuhp_cpuset_add(torn, tmp[i].cpu);
	}
	if (failed == n)
		return 0;
	tmp[failed].err = err;
	for (unsigned k = n; k-- > 0;) {
		struct cpuhpd_cpu_result *r = &tmp[k];

		if (k == failed || !cpuhp_cpuset_has(&before->online, r->cpu))
			continue;
		if (cpuhp_cpuset_has(torn, r->cpu))
			ask_states(w, job, r, false, true, false);
		r->err = ECANCELED;
		snprintf(
		    r->msg, sizeof(r->msg),
		    "CPU %u: SMT %s was not made: the teardown of CPU %u failed (state '%s')%s",
		    r->cpu, job->smt_control, tmp[failed].cpu, tmp[failed].failed_state,
		    cpuhp_cpuset_has(torn, r->cpu) ? "; rolled back: its states started again"
		                                   : "");
	}
	cpuhp_cpuset_zero(torn);
	return err;
}

/*
 * SMT on, before the control write: the PREPARE startups of each CPU the
 * write may bring (@tmp: one result each, ascending), as before any
 * online's write.  A failure (rolled back for its own CPU by the states)
 * tears down the CPUs prepared before it, last first, and the write is not
 * made.  Return: 0 with *@prep the CPUs prepared, or the failed call's errno.
 */
static int smt_prepare(struct cpuhpd_worker *w, struct cpuhpd_job *job,
                       const struct cpuhpd_cpus *before, struct cpuhpd_cpu_result *tmp, unsigned n,
                       struct cpuhp_cpuset *prep)
{
	unsigned failed = n;
	int err = 0;

	cpuhp_cpuset_zero(prep);
	for (unsigned i = 0; i < n && failed == n; i++) {
		if (cpuhp_cpuset_has(&before->online, tmp[i].cpu))
			continue;
		err = ask_states(w, job, &tmp[i], false, false, true);
		if (err)
			failed = i;
		else
			cpuhp_cpuset_add(prep, tmp[i].cpu);
	}
	if (failed == n)
		return 0;
	tmp[failed].err = err;
	for (unsigned k = n; k-- > 0;) {
		struct cpuhpd_cpu_result *r = &tmp[k];

		if (k == failed || cpuhp_cpuset_has(&before->online, r->cpu))
			continue;
		if (cpuhp_cpuset_has(prep, r->cpu))
			dead_after(w, job, r, true);
		r->err = ECANCELED;
		snprintf(r->msg, sizeof(r->msg),
		         "CPU %u: SMT %s was not made: the PREPARE startup of CPU %u failed "
		         "(state '%s')%s",
		         r->cpu, job->smt_control, tmp[failed].cpu, tmp[failed].failed_state,
		         cpuhp_cpuset_has(prep, r->cpu) ? "; rolled back: its states torn down"
		                                        : "");
	}
	cpuhp_cpuset_zero(prep);
	return err;
}

/* After SMT on: the CPUs prepared that are still offline and that nothing brings get undone. */
static void smt_unprepare(struct cpuhpd_worker *w, struct cpuhpd_job *job,
                          struct cpuhpd_cpu_result *tmp, unsigned n,
                          const struct cpuhp_cpuset *prep, const struct cpuhpd_cpus *now)
{
	for (unsigned k = n; k-- > 0;)
		if (cpuhp_cpuset_has(prep, tmp[k].cpu) &&
		    !cpuhp_cpuset_has(&now->online, tmp[k].cpu) &&
		    !cpuhp_cpuset_has(&job->cpus, tmp[k].cpu))
			dead_after(w, job, &tmp[k], true);
}

/* The control write failed: start the states again on the siblings torn down that stayed. */
static void smt_untorn(struct cpuhpd_worker *w, struct cpuhpd_job *job,
                       struct cpuhpd_cpu_result *tmp, unsigned n, const struct cpuhp_cpuset *torn)
{
	for (unsigned k = n; k-- > 0;)
		if (cpuhp_cpuset_has(torn, tmp[k].cpu) &&
		    (!job->view_ok || cpuhp_cpuset_has(&job->view.online, tmp[k].cpu)))
			ask_states(w, job, &tmp[k], false, true, false);
}

static void free_results(struct cpuhpd_cpu_result *r, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(r[i].runs);
	free(r);
}

/*
 * One writer section: write smt/control, then see each sibling thread into
 * the asked state.  On a real kernel the control write has moved them all
 * already (and "on" brings back every present CPU it allows); on a
 * simulated tree, where nothing acts on that write, the per-CPU writes do
 * it.  So the states' calls go around the control write: teardown of the
 * siblings before "off", startup of every CPU the write brought after "on";
 * run_cpu() makes those the per-CPU writes need.  Each CPU is reported
 * against the state it had when the lock was taken.
 */
static void run_smt(struct cpuhpd_worker *w, struct cpuhpd_job *job)
{
	struct cpuhpd_cpus before, mid;
	struct cpuhpd_cpu_result *tmp = NULL;
	struct cpuhp_cpuset report, cand, torn, prep;
	unsigned n = 0, i = 0, k = 0;
	int cpu = -1, err;

	cpuhp_cpuset_zero(&torn);
	cpuhp_cpuset_zero(&prep);
	if (lock_for(job))
		return;
	err = cpuhpd_cpus_read(w->root, &before, &job->err_what);
	if (err)
		goto out_unlock;
	memcpy(job->smt_before, before.smt_control, sizeof(job->smt_before));
	err = cpuhpd_cpus_smt_changeable(before.smt_control);
	if (err) {
		job->err_what = "smt/control";
		goto out_unlock;
	}
	cpuhpd_cpus_smt_secondaries(w->root, &before, &job->cpus);
	/* A result for each sibling, and for "on" each CPU the write may bring. */
	cand = job->cpus;
	while (job->online && (cpu = cpuhp_cpuset_next(&before.present, cpu)) >= 0)
		if (!cpuhp_cpuset_has(&before.online, (unsigned)cpu))
			cpuhp_cpuset_add(&cand, (unsigned)cpu);
	n = cpuhp_cpuset_count(&cand);
	tmp = calloc(n ? n : 1, sizeof(*tmp));
	if (!tmp) {
		err = -ENOMEM;
		goto out_unlock;
	}
	for (cpu = -1, i = 0; (cpu = cpuhp_cpuset_next(&cand, cpu)) >= 0; i++)
		tmp[i].cpu = (unsigned)cpu;
	post(w, &job->msg_started);

	if (job->with_states && (job->online ? smt_prepare(w, job, &before, tmp, n, &prep)
	                                     : smt_teardown(w, job, &before, tmp, n, &torn))) {
		/* Refused by a state: no write; the results say why. */
		job->view_ok = !cpuhpd_cpus_read(w->root, &job->view, &job->err_what);
		goto unlock_report;
	}
	err = cpuhp_sysfs_set_smt(w->root, job->smt_control);
	if (!err)
		err = cpuhpd_cpus_read(w->root, &mid, &job->err_what);
	else
		job->err_what = "smt/control";
	if (err) {
		job->view_ok = !cpuhpd_cpus_read(w->root, &job->view, &job->err_what);
		smt_untorn(w, job, tmp, n, &torn);
		if (job->view_ok)
			smt_unprepare(w, job, tmp, n, &prep, &job->view);
		goto out_unlock;
	}
	/* The CPUs the write brought ("on"): run_cpu() finds them online already. */
	for (i = 0; job->with_states && job->online && i < n; i++)
		if (!cpuhp_cpuset_has(&before.online, tmp[i].cpu) &&
		    cpuhp_cpuset_has(&mid.online, tmp[i].cpu))
			startup_after(w, job, &tmp[i]);
	if (job->with_states && job->online)
		smt_unprepare(w, job, tmp, n, &prep, &mid);
	for (i = 0; i < n; i++)
		if (cpuhp_cpuset_has(&job->cpus, tmp[i].cpu) && !tmp[i].err)
			run_cpu(w, job, &mid, &tmp[i], cpuhp_cpuset_has(&torn, tmp[i].cpu));
	job->view_ok = !cpuhpd_cpus_read(w->root, &job->view, &job->err_what);

unlock_report:
	cpuhp_hotplug_done();
	job->t_done_ns = now_ns();

	/*
	 * The siblings, any other CPU the kernel moved ("on" brings back every
	 * present one it allows), and any CPU whose states were called.
	 */
	report = job->cpus;
	cpu = -1;
	while (job->view_ok && (cpu = cpuhp_cpuset_next(&before.present, cpu)) >= 0)
		if (cpuhp_cpuset_has(&before.online, (unsigned)cpu) !=
		    cpuhp_cpuset_has(&job->view.online, (unsigned)cpu))
			cpuhp_cpuset_add(&report, (unsigned)cpu);
	for (i = 0; i < n; i++)
		if (tmp[i].nruns || tmp[i].err)
			cpuhp_cpuset_add(&report, tmp[i].cpu);
	job->results = calloc(cpuhp_cpuset_count(&report) + 1, sizeof(*job->results));
	if (!job->results) {
		free_results(tmp, n);
		job->err = -ENOMEM;
		return;
	}
	cpu = -1;
	i = 0;
	while ((cpu = cpuhp_cpuset_next(&report, cpu)) >= 0) {
		struct cpuhpd_cpu_result *r = &job->results[k++];
		bool was = cpuhp_cpuset_has(&before.online, (unsigned)cpu);
		bool now = job->view_ok ? cpuhp_cpuset_has(&job->view.online, (unsigned)cpu) : was;

		/* Both ascending: the results of tmp outside the report are none. */
		while (i < n && tmp[i].cpu < (unsigned)cpu)
			i++;
		if (i < n && tmp[i].cpu == (unsigned)cpu) {
			*r = tmp[i];
			tmp[i].runs = NULL; /* moved */
		} else {
			r->cpu = (unsigned)cpu;
		}
		if (r->err)
			continue;
		r->changed = was != now;
		if (r->changed)
			snprintf(r->msg, sizeof(r->msg), "CPU %d %s", cpu,
			         now ? "enabled" : "disabled");
	}
	job->nresults = k;
	free_results(tmp, n);
	return;

out_unlock:
	cpuhp_hotplug_done();
	free_results(tmp, n);
	job->err = err;
}

static void run_refresh(struct cpuhpd_worker *w, struct cpuhpd_job *job)
{
	job->err = cpuhpd_cpus_read(w->root, &job->view, &job->err_what);
	job->view_ok = !job->err;
}

static void worker_main(void *arg)
{
	struct cpuhpd_worker *w = arg;

	uv_mutex_lock(&w->lock);
	for (;;) {
		struct cpuhpd_list *n;
		struct cpuhpd_job *job;

		while (cpuhpd_list_empty(&w->jobs) && !w->stop)
			uv_cond_wait(&w->cond, &w->lock);
		if (w->stop)
			break;
		n = cpuhpd_list_first(&w->jobs);
		cpuhpd_list_del(n);
		uv_mutex_unlock(&w->lock);

		job = cpuhpd_container_of(n, struct cpuhpd_job, node);
		if (job->kind == CPUHPD_JOB_HOTPLUG)
			run_hotplug(w, job);
		else if (job->kind == CPUHPD_JOB_SMT)
			run_smt(w, job);
		else
			run_refresh(w, job);
		/*
		 * Before "done": a client told that its CPU came online finds that
		 * CPU's topology read when it asks next.
		 */
		if (job->view_ok)
			cpuhpd_topology_learn(w->topology, w->root, &job->view.online);
		post(w, &job->msg_done);

		uv_mutex_lock(&w->lock);
	}
	uv_mutex_unlock(&w->lock);
}

static void async_cb(uv_async_t *a)
{
	struct cpuhpd *d = cpuhpd_container_of(a, struct cpuhpd, worker.async);
	struct cpuhpd_worker *w = &d->worker;
	struct cpuhpd_list msgs, *n;

	cpuhpd_list_init(&msgs);
	uv_mutex_lock(&w->lock);
	if (!cpuhpd_list_empty(&w->msgs)) {
		/* Move the whole queue: its order (started before done) is kept. */
		msgs.next = w->msgs.next;
		msgs.prev = w->msgs.prev;
		msgs.next->prev = &msgs;
		msgs.prev->next = &msgs;
		cpuhpd_list_init(&w->msgs);
	}
	uv_mutex_unlock(&w->lock);

	/* Unlink each message before its callback: "done" may free the job holding it. */
	while ((n = cpuhpd_list_first(&msgs))) {
		struct cpuhpd_job_msg *m = cpuhpd_container_of(n, struct cpuhpd_job_msg, node);

		cpuhpd_list_del(n);
		if (m->kind == CPUHPD_MSG_DONE)
			m->job->done(d, m->job);
		else if (m->kind == CPUHPD_MSG_STATES)
			m->job->states(d, m->job);
		else if (m->job->started)
			m->job->started(d, m->job);
	}
}

int cpuhpd_worker_start(struct cpuhpd *d)
{
	struct cpuhpd_worker *w = &d->worker;
	int err;

	w->root = d->opt.sysfs_root;
	w->topology = &d->topology;
	cpuhpd_list_init(&w->jobs);
	cpuhpd_list_init(&w->msgs);
	err = uv_mutex_init(&w->lock);
	if (err)
		return err;
	err = uv_cond_init(&w->cond);
	if (err)
		goto fail_cond;
	err = uv_cond_init(&w->states_cond);
	if (err) {
		uv_cond_destroy(&w->cond);
		goto fail_cond;
	}
	err = uv_async_init(d->loop, &w->async, async_cb);
	if (err)
		goto fail_async;
	err = uv_thread_create(&w->thread, worker_main, w);
	if (err)
		goto fail_thread;
	w->running = true;
	return 0;

fail_thread:
	uv_close((uv_handle_t *)&w->async, NULL);
fail_async:
	uv_cond_destroy(&w->states_cond);
	uv_cond_destroy(&w->cond);
fail_cond:
	uv_mutex_destroy(&w->lock);
	cpuhpd_err("cannot start the worker thread: %s", uv_strerror(err));
	return err;
}

void cpuhpd_worker_stop(struct cpuhpd *d)
{
	struct cpuhpd_worker *w = &d->worker;

	if (!w->running)
		return;
	uv_mutex_lock(&w->lock);
	w->stop = true;
	uv_cond_signal(&w->cond);
	uv_mutex_unlock(&w->lock);
	uv_thread_join(&w->thread);
	uv_close((uv_handle_t *)&w->async, NULL);
	uv_cond_destroy(&w->states_cond);
	uv_cond_destroy(&w->cond);
	uv_mutex_destroy(&w->lock);
	w->running = false;
}

void cpuhpd_worker_submit(struct cpuhpd *d, struct cpuhpd_job *job)
{
	struct cpuhpd_worker *w = &d->worker;

	job->err = 0;
	job->err_what = NULL;
	job->view_ok = false;
	job->results = NULL;
	job->nresults = 0;
	job->msg_started.job = job;
	job->msg_started.kind = CPUHPD_MSG_STARTED;
	job->msg_done.job = job;
	job->msg_done.kind = CPUHPD_MSG_DONE;
	job->msg_states.job = job;
	job->msg_states.kind = CPUHPD_MSG_STATES;
	uv_mutex_lock(&w->lock);
	cpuhpd_list_add_tail(&w->jobs, &job->node);
	uv_cond_signal(&w->cond);
	uv_mutex_unlock(&w->lock);
}

void cpuhpd_worker_states_done(struct cpuhpd *d, struct cpuhpd_job *job, int err)
{
	struct cpuhpd_worker *w = &d->worker;

	uv_mutex_lock(&w->lock);
	job->sc.err = err;
	job->sc.done = true;
	uv_cond_signal(&w->states_cond);
	uv_mutex_unlock(&w->lock);
}

void cpuhpd_job_fini(struct cpuhpd_job *job)
{
	for (unsigned i = 0; i < job->nresults; i++)
		free(job->results[i].runs);
	free(job->results);
	job->results = NULL;
	job->nresults = 0;
}
