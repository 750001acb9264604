/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hotplug queue and the writer side of the gate (the states are
 * described in hotplug.h, the gate in gate.h).
 *
 * Invariant: the gate is closed exactly while the head is active.  Every
 * path that removes the head goes through leave_head(), which opens the
 * gate (letting in the readers that waited) and then activates the next
 * request.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmap.h"

#include "cpuhpd.h"
#include "conn.h"
#include "gate.h"
#include "holders.h"
#include "log.h"
#include "states.h"
#include "watch.h"

enum hp_state {
	HP_QUEUED,
	HP_WAIT_LEASES,
	HP_WORKER,
	HP_RUNNING,
};

struct hotplug_req {
	struct cpuhpd_list node;  /* in hotplug.queue */
	struct cpuhpd_conn *conn; /* NULL once the client is gone: the answer is dropped */
	uint64_t req_id;
	uint64_t seq;
	enum hp_state state;
	bool started;      /* HotplugStarted was broadcast: HotplugFinished must follow */
	uint64_t deadline; /* uv_now() milliseconds */
	uint32_t timeout_ms;
	char *cpus_str; /* the CPU list, canonical; SMT: "" until the worker found the siblings */
	enum cpuhpd_hp_kind kind;
	char desc[64];       /* "CPUs 2-3 offline", "SMT off": for log lines */
	uint64_t arrived_ns; /* uv_hrtime(), for the duration histogram */
	struct cpuhpd_job job;
	/* Who asked, kept for listings after the client is gone. */
	struct cpuhpd_peer peer;
	uint64_t arrived; /* uv_now() */
};

static const char *verb(bool online)
{
	return online ? "online" : "offline";
}

static struct hotplug_req *head(const struct cpuhpd *d)
{
	struct cpuhpd_list *n = cpuhpd_list_first(&d->hotplug.queue);

	return n ? cpuhpd_container_of(n, struct hotplug_req, node) : NULL;
}

static void timer_cb(uv_timer_t *t);

/*
 * Whether @h's deadline is judged now.  Not while the fast path is still
 * counting its leases for @h (a membarrier in flight): until then nobody
 * knows whether a lease is in the way, and a "try" (timeout 0) would always
 * fail.  cpuhpd_hotplug_gate_counted() re-arms when the count is in.
 */
static bool deadline_counts(const struct cpuhpd *d, const struct hotplug_req *h)
{
	if (h->state == HP_WAIT_LEASES)
		return !cpuhpd_gate_counting(d);
	return h->state == HP_QUEUED;
}

/* Arm the timer for the earliest deadline among requests not handed to the worker. */
static void arm(struct cpuhpd *d)
{
	struct cpuhpd_list *pos;
	uint64_t first = UINT64_MAX, now = uv_now(d->loop);

	cpuhpd_list_for_each(pos, &d->hotplug.queue)
	{
		struct hotplug_req *h = cpuhpd_container_of(pos, struct hotplug_req, node);

		if (deadline_counts(d, h) && h->deadline < first)
			first = h->deadline;
	}
	if (first == UINT64_MAX)
		uv_timer_stop(&d->hotplug.timer);
	else
		uv_timer_start(&d->hotplug.timer, timer_cb, first > now ? first - now : 0, 0);
}

/*
 * Take @h out of the queue and away from its client before answering: an
 * answer can close the client, and what that triggers (its leases ending,
 * cpuhpd_hotplug_conn_gone) must not find @h any more.
 * Return: the client to answer, or NULL if it is gone.
 */
static struct cpuhpd_conn *unlink_req(struct cpuhpd *d, struct hotplug_req *h)
{
	struct cpuhpd_conn *c = h->conn;

	cpuhpd_list_del(&h->node);
	d->hotplug.nqueued--;
	if (c) {
		c->npending--;
		h->conn = NULL;
	}
	/* Out of the stored state before its answer: a restart must not run it again. */
	cpuhpd_fdstore_changed(d);
	return c;
}

/*
 * Count how @h ended, and rewrite --metrics-file: called before the answer
 * goes out, so that a client that heard back finds its hotplug counted there.
 */
static void count(struct cpuhpd *d, const struct hotplug_req *h, enum cpuhpd_hp_result result)
{
	cpuhpd_counters_hotplug(d, h->kind, result, uv_hrtime() - h->arrived_ns);
	if (d->hotplug.ended)
		d->hotplug.ended(d);
	cpuhpd_snapshot_changed(d);
}

static void destroy_req(struct hotplug_req *h)
{
	cpuhpd_job_fini(&h->job);
	free(h->cpus_str);
	free(h);
}

static void reply_error(struct hotplug_req *h, struct cpuhpd_conn *c, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void reply_error(struct hotplug_req *h, struct cpuhpd_conn *c, int err, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cpuhpd_info("hotplug #%" PRIu64 " (%s): %s", h->seq, h->desc, msg);
	if (c)
		cpuhpd_conn_send_error(c, h->req_id, err, "%s", msg);
}

static void job_started(struct cpuhpd *d, struct cpuhpd_job *job);
static void job_done(struct cpuhpd *d, struct cpuhpd_job *job);

static void to_worker(struct cpuhpd *d, struct hotplug_req *h)
{
	uint64_t now = uv_now(d->loop);

	h->state = HP_WORKER;
	h->job.timeout_ms = h->deadline > now ? (unsigned)(h->deadline - now) : 0;
	/* No registration runs now (they are readers): the set of states is that of the job. */
	h->job.with_states = cpuhpd_states_any(d);
	cpuhpd_states_hotplug_begin(d);
	cpuhpd_debug("hotplug #%" PRIu64 ": no lease held; to the worker (%u ms left)", h->seq,
	             h->job.timeout_ms);
	cpuhpd_worker_submit(d, &h->job);
	arm(d);
}

/* Make the first request the active one, unless it already is. */
static void activate(struct cpuhpd *d)
{
	struct hotplug_req *h = head(d);
	unsigned held;

	if (!h || h->state != HP_QUEUED)
		return;
	h->state = HP_WAIT_LEASES;
	if (cpuhpd_gate_close(d)) {
		to_worker(d, h);
		return;
	}
	/* One snapshot: it sums every fast-path region, on the loop. */
	held = cpuhpd_holders_total(d);
	if (held) {
		char who[400];

		cpuhpd_holders_describe(d, who, sizeof(who));
		cpuhpd_info("hotplug #%" PRIu64 " (%s) waits for %u lease(s): %s", h->seq, h->desc,
		            held, who);
	} else if (cpuhpd_restart_holding(d)) {
		cpuhpd_info("hotplug #%" PRIu64 " (%s) waits for the restart grace: %" PRIu64
		            " ms left",
		            h->seq, h->desc, cpuhpd_restart_remaining_ms(d));
	} else
		cpuhpd_debug("hotplug #%" PRIu64 ": counting fast leases", h->seq);
	arm(d);
}

/*
 * The active request just left the queue: let the leases that waited on it
 * in, then start the next.  Granting can close clients, which can remove the
 * next request before it starts; activate() takes whatever is first then.
 */
static void leave_head(struct cpuhpd *d)
{
	cpuhpd_gate_open(d);
	if (!d->stopping)
		activate(d);
	arm(d);
	if (!d->hotplug.nqueued)
		cpuhpd_freeze_queue_empty(d);
}

static void expire(struct cpuhpd *d, struct hotplug_req *h)
{
	bool was_active = h->state == HP_WAIT_LEASES;
	struct cpuhpd_conn *c = unlink_req(d, h);

	if (was_active)
		cpuhpd_gate_writer_done(d);
	count(d, h, h->timeout_ms == 0 ? CPUHPD_HP_BUSY : CPUHPD_HP_TIMEOUT);

	/* A timeout of 0 means "try": the answer is EAGAIN, as for a lease. */
	if (was_active && cpuhpd_restart_holding(d))
		reply_error(h, c, h->timeout_ms ? ETIMEDOUT : EAGAIN,
		            "cpuhpd holds every hotplug for %" PRIu64 " ms more: the cpuhpd "
		            "before it ended without handing its clients over, whose lease "
		            "holders must notice first (--restart-grace-ms; see its log); "
		            "nothing was changed",
		            cpuhpd_restart_remaining_ms(d));
	else if (h->timeout_ms == 0 && was_active)
		reply_error(h, c, EAGAIN,
		            "%u lease(s) held and no timeout given; nothing was changed (ask with "
		            "a timeout to wait for them)",
		            cpuhpd_holders_total(d));
	else if (h->timeout_ms == 0)
		reply_error(h, c, EAGAIN,
		            "another hotplug is in progress and no timeout given; nothing was "
		            "changed");
	else if (was_active) {
		unsigned held = cpuhpd_holders_total(d);
		char who[400];

		cpuhpd_holders_describe(d, who, sizeof(who));
		reply_error(h, c, ETIMEDOUT,
		            "%s%s: timed out after %" PRIu32 " ms behind %u lease%s: %s; nothing "
		            "was changed",
		            h->kind == CPUHPD_HP_SMT ? "" : "CPU ",
		            h->kind == CPUHPD_HP_SMT ? h->desc : h->cpus_str, h->timeout_ms, held,
		            held == 1 ? "" : "s", who);
	} else
		reply_error(h, c, ETIMEDOUT,
		            "timed out after %" PRIu32 " ms behind earlier hotplug requests; "
		            "nothing was changed",
		            h->timeout_ms);
	destroy_req(h);
	if (was_active)
		leave_head(d);
}

static void timer_cb(uv_timer_t *t)
{
	struct cpuhpd *d = cpuhpd_container_of(t, struct cpuhpd, hotplug.timer);
	uint64_t now = uv_now(d->loop);
	struct cpuhpd_list *pos;

	/* Expiring the head grants leases, which can close connections and free requests: rescan.
	 */
again:
	cpuhpd_list_for_each(pos, &d->hotplug.queue)
	{
		struct hotplug_req *h = cpuhpd_container_of(pos, struct hotplug_req, node);

		if (deadline_counts(d, h) && h->deadline <= now) {
			expire(d, h);
			goto again;
		}
	}
	arm(d);
}

int cpuhpd_hotplug_init(struct cpuhpd *d)
{
	cpuhpd_list_init(&d->hotplug.queue);
	d->hotplug.next_seq = 1;
	return uv_timer_init(d->loop, &d->hotplug.timer);
}

void cpuhpd_hotplug_close(struct cpuhpd *d)
{
	uv_close((uv_handle_t *)&d->hotplug.timer, NULL);
}

/* Whether @c may hotplug; if not, it has been told why.  For SetOnline and SetSmt alike. */
static bool allowed(struct cpuhpd_conn *c, uint64_t req_id)
{
	struct cpuhpd *d = c->d;
	char why[CPUHPD_IDENTITY_MAX * 2 + 96];

	if (!c->peer.admin) {
		if (d->opt.admin_group)
			cpuhpd_conn_send_error(c, req_id, EPERM,
			                       "not allowed: hotplug is for root and members of "
			                       "group '%s'; uid %u is neither",
			                       d->opt.admin_group, (unsigned)c->peer.uid);
		else
			cpuhpd_conn_send_error(c, req_id, EPERM,
			                       "not allowed: hotplug is for root only (cpuhpd "
			                       "--admin-group GROUP allows a group); uid %u is not "
			                       "root",
			                       (unsigned)c->peer.uid);
		return false;
	}
	if (cpuhpd_freeze_active(d, why, sizeof(why))) {
		cpuhpd_conn_send_error(c, req_id, EBUSY,
		                       "CPU hotplug is frozen by %s (cpuhpctl freeze); nothing was "
		                       "changed: try again when it is thawed ('cpuhpctl leases' "
		                       "lists freezes)",
		                       why);
		return false;
	}
	return cpuhpd_conn_may_wait(c, req_id);
}

/* Queue a checked request: @h's kind, desc, cpus_str and job "in" fields are filled. */
static void enqueue(struct cpuhpd_conn *c, uint64_t req_id, struct hotplug_req *h,
                    uint32_t timeout_ms)
{
	struct cpuhpd *d = c->d;

	h->conn = c;
	h->peer = c->peer;
	h->arrived = uv_now(d->loop);
	h->arrived_ns = uv_hrtime();
	h->req_id = req_id;
	h->seq = d->hotplug.next_seq++;
	h->state = HP_QUEUED;
	h->timeout_ms = timeout_ms;
	h->deadline = uv_now(d->loop) + timeout_ms;
	h->job.started = job_started;
	h->job.done = job_done;
	h->job.states = cpuhpd_states_hotplug_cpu;
	atomic_init(&h->job.cancel, false);
	cpuhpd_list_add_tail(&d->hotplug.queue, &h->node);
	d->hotplug.nqueued++;
	c->npending++;
	cpuhpd_info("hotplug #%" PRIu64 ": client %u (pid %d, uid %u) asks %s, timeout %" PRIu32
	            " ms",
	            h->seq, c->id, (int)c->peer.pid, (unsigned)c->peer.uid, h->desc, timeout_ms);
	cpuhpd_snapshot_changed(d);
	cpuhpd_fdstore_changed(d);
	if (d->hotplug.nqueued == 1 && !d->stopping)
		activate(d);
	else
		arm(d);
}

void cpuhpd_hotplug_submit(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	const Cpuhp__SetOnline *so = req->set_online;
	uint64_t req_id = req->id;
	struct cpuhp_cpuset set;
	struct hotplug_req *h;
	int err;

	if (!allowed(c, req_id))
		return;
	err = cpuhp_cpuset_parse(so->cpus, &set);
	if (err == -ERANGE) {
		cpuhpd_conn_send_error(c, req_id, EINVAL,
		                       "CPU number too large in '%s' (CPUs are numbered below %u)",
		                       so->cpus, CPUHP_CPUSET_MAX);
		return;
	}
	if (err) {
		cpuhpd_conn_send_error(c, req_id, EINVAL,
		                       "invalid CPU list '%s': expected a range list such as "
		                       "2-3,5",
		                       so->cpus);
		return;
	}
	if (!cpuhp_cpuset_count(&set)) {
		cpuhpd_conn_send_error(c, req_id, EINVAL, "no CPU given: name at least one CPU");
		return;
	}
	if (cpuhp_cpuset_count(&set) > CPUHPD_HOTPLUG_MAX_CPUS) {
		cpuhpd_conn_send_error(c, req_id, ERANGE,
		                       "%u CPUs in one request; the reply can carry at most %u: "
		                       "split the list",
		                       cpuhp_cpuset_count(&set), CPUHPD_HOTPLUG_MAX_CPUS);
		return;
	}
	h = calloc(1, sizeof(*h));
	if (h)
		h->cpus_str = cpuhpd_cpus_to_str(&set);
	if (!h || !h->cpus_str) {
		free(h);
		cpuhpd_conn_send_error(c, req_id, ENOMEM, "cpuhpd is out of memory");
		return;
	}
	h->kind = CPUHPD_HP_CPUS;
	snprintf(h->desc, sizeof(h->desc), "CPUs %.40s%s %s", h->cpus_str,
	         strlen(h->cpus_str) > 40 ? "..." : "", verb(so->online));
	h->job.kind = CPUHPD_JOB_HOTPLUG;
	h->job.cpus = set;
	h->job.online = so->online;
	enqueue(c, req_id, h, so->timeout_ms);
}

/* Why smt/control's word @now refuses any change (errno), in words for the client. */
static const char *smt_refusal(int err, const char *now)
{
	switch (err) {
	case ENOENT:
		return "this sysfs tree has no devices/system/cpu/smt/control (a kernel without "
		       "SMT control); nothing was changed";
	case ENODEV:
		return !strcmp(now, "notimplemented")
		           ? "SMT control is not implemented for this machine (smt/control says "
		             "notimplemented); nothing was changed"
		           : "this machine has no SMT to control (smt/control says notsupported: "
		             "one hardware thread per core); nothing was changed";
	default:
		return "SMT was forced off (smt/control says forceoff): the kernel allows no "
		       "change until reboot; nothing was changed";
	}
}

void cpuhpd_hotplug_submit_smt(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	const Cpuhp__SetSmt *ss = req->set_smt;
	uint64_t req_id = req->id;
	struct cpuhpd *d = c->d;
	const char *w = ss->control ? ss->control : "";
	struct hotplug_req *h;
	int err;

	if (!allowed(c, req_id))
		return;
	if (strcmp(w, "on") && strcmp(w, "off") && strcmp(w, "forceoff")) {
		cpuhpd_conn_send_error(c, req_id, EINVAL,
		                       "SMT control '%.32s' is none of on, off, forceoff", w);
		return;
	}
	err = cpuhpd_cpus_smt_changeable(d->view.smt_control);
	if (err) {
		cpuhpd_conn_send_error(c, req_id, -err, "%s",
		                       smt_refusal(-err, d->view.smt_control));
		return;
	}
	h = calloc(1, sizeof(*h));
	if (h)
		h->cpus_str = strdup("");
	if (!h || !h->cpus_str) {
		free(h);
		cpuhpd_conn_send_error(c, req_id, ENOMEM, "cpuhpd is out of memory");
		return;
	}
	h->kind = CPUHPD_HP_SMT;
	snprintf(h->desc, sizeof(h->desc), "SMT %s", w);
	h->job.kind = CPUHPD_JOB_SMT;
	h->job.online = !strcmp(w, "on");
	snprintf(h->job.smt_control, sizeof(h->job.smt_control), "%s", w);
	enqueue(c, req_id, h, ss->timeout_ms);
}

void cpuhpd_hotplug_gate_drained(struct cpuhpd *d)
{
	struct hotplug_req *h = head(d);

	if (h && h->state == HP_WAIT_LEASES)
		to_worker(d, h);
}

void cpuhpd_hotplug_gate_counted(struct cpuhpd *d)
{
	arm(d);
}

static void job_started(struct cpuhpd *d, struct cpuhpd_job *job)
{
	struct hotplug_req *h = cpuhpd_container_of(job, struct hotplug_req, job);

	h->state = HP_RUNNING;
	h->started = true;
	if (h->kind == CPUHPD_HP_SMT) {
		/* The worker has found the siblings; watchers see them like an offline's CPUs. */
		char *s = cpuhpd_cpus_to_str(&job->cpus);

		if (s) {
			free(h->cpus_str);
			h->cpus_str = s;
		}
	}
	cpuhpd_snapshot_changed(d);
	cpuhpd_debug("hotplug #%" PRIu64 ": writing sysfs", h->seq);
	cpuhpd_watch_hotplug_started(d, h->cpus_str, job->online);
}

/*
 * Bytes of message each failed CPU may carry so that the reply (and the
 * HotplugFinished event, which repeats the results) stays within one frame:
 * what is left after the fixed fields (at most 24 bytes per result) and the
 * two CPU lists, shared out.  Plenty for any realistic request; the code of
 * each result is never cut.
 */
static size_t message_budget(const struct hotplug_req *h, const char *online, unsigned n,
                             size_t runs_bytes)
{
	size_t fixed =
	    512 + strlen(h->cpus_str) + (online ? strlen(online) : 0) + 24 * (size_t)n + runs_bytes;
	size_t per;

	if (!n || fixed >= CPUHP__FRAME_MAX)
		return 0;
	per = (CPUHP__FRAME_MAX - fixed) / n;
	return per < sizeof(h->job.results[0].msg) ? per : sizeof(h->job.results[0].msg) - 1;
}

/* Reply, events and log for a hotplug that ran; job->err == 0. */
static void finish_ran(struct cpuhpd *d, struct hotplug_req *h, struct cpuhpd_conn *c)
{
	struct cpuhpd_job *job = &h->job;
	Cpuhp__CpuResult *res = calloc(job->nresults ? job->nresults : 1, sizeof(*res));
	Cpuhp__CpuResult **resp = calloc(job->nresults ? job->nresults : 1, sizeof(*resp));
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__SetOnlineReply rep = CPUHP__SET_ONLINE_REPLY__INIT;
	Cpuhp__SmtReply smt = CPUHP__SMT_REPLY__INIT;
	struct cpuhpd_counters *m = &d->counters;
	char *online = NULL;
	bool all_ok = true, changed = false;
	Cpuhp__StateRun *wruns = NULL, **wrunp = NULL;
	size_t budget, runs_bytes = 0;
	unsigned nruns = 0, used = 0;
	unsigned nok = 0;

	if (!res || !resp) {
		free(res);
		free(resp);
		count(d, h, CPUHPD_HP_ERROR);
		reply_error(h, c, ENOMEM, "cpuhpd ran out of memory after the hotplug");
		return;
	}
	if (job->view_ok) {
		changed = cpuhpd_view_update(d, &job->view, false);
		online = cpuhpd_cpus_to_str(&d->view.online);
	} else {
		cpuhpd_warn("hotplug #%" PRIu64 ": cannot read the CPU masks back (%s)", h->seq,
		            job->err_what ? job->err_what : "?");
	}
	/*
	 * The state calls of every CPU, their messages cut to 100 bytes; if
	 * even that would take over half the frame, the replies carry none
	 * (the log has every call).
	 */
	for (unsigned i = 0; i < job->nresults; i++) {
		runs_bytes += strlen(job->results[i].failed_state) + 4;
		for (unsigned k = 0; k < job->results[i].nruns; k++)
			runs_bytes += 160 + strlen(job->results[i].runs[k].name) +
			              strlen(job->results[i].runs[k].comm);
		nruns += job->results[i].nruns;
	}
	if (runs_bytes > CPUHP__FRAME_MAX / 2) {
		cpuhpd_warn("hotplug #%" PRIu64 ": %u state calls are too many for the reply; "
		            "it carries none",
		            h->seq, nruns);
		runs_bytes = 0;
		nruns = 0;
	}
	wruns = calloc(nruns ? nruns : 1, sizeof(*wruns));
	wrunp = calloc(nruns ? nruns : 1, sizeof(*wrunp));
	if (!wruns || !wrunp)
		nruns = 0;
	budget = message_budget(h, online, job->nresults, runs_bytes);
	for (unsigned i = 0; i < job->nresults; i++) {
		struct cpuhpd_cpu_result *cr = &job->results[i];

		if (cr->err)
			cpuhpd_warn("hotplug #%" PRIu64 ": %s", h->seq, cr->msg);
		else
			cpuhpd_info("hotplug #%" PRIu64 ": %s", h->seq, cr->msg);
		/* The message is for failures only (proto/FRAMING.md), and must fit the frame. */
		if (!cr->err)
			cr->msg[0] = '\0';
		else if (strlen(cr->msg) > budget)
			cr->msg[budget] = '\0';
		cpuhp__cpu_result__init(&res[i]);
		res[i].cpu = cr->cpu;
		res[i].ok = cr->err == 0;
		res[i].changed = cr->changed;
		res[i].code =
		    cr->err ? cpuhp__errmap_to_wire(cr->err) : CPUHP__ERROR_CODE__ERR_UNKNOWN;
		res[i].message = (char *)cr->msg;
		res[i].failed_state = cr->failed_state;
		if (nruns && cr->nruns) {
			cpuhpd_states_runs_to_wire(cr->runs, cr->nruns, wruns + used, wrunp + used,
			                           100);
			res[i].n_states = cr->nruns;
			res[i].states = wrunp + used;
			used += cr->nruns;
		}
		resp[i] = &res[i];
		all_ok &= cr->err == 0;
		nok += cr->err == 0;
		if (cr->err)
			m->cpu_failed++;
		else if (cr->changed)
			m->cpu_changed++;
		else
			m->cpu_unchanged++;
	}
	if (h->kind == CPUHPD_HP_SMT)
		cpuhpd_info("hotplug #%" PRIu64 " done in %.1f ms: smt/control now %s, online CPUs "
		            "now %s",
		            h->seq, (double)(job->t_done_ns - job->t_locked_ns) / 1e6,
		            d->view.smt_control[0] ? d->view.smt_control : "?",
		            online ? online : "?");
	else
		cpuhpd_info("hotplug #%" PRIu64 " done in %.1f ms: online CPUs now %s", h->seq,
		            (double)(job->t_done_ns - job->t_locked_ns) / 1e6,
		            online ? online : "?");
	cpuhpd_counters_observe(&m->writer_hold, (double)(job->t_done_ns - job->t_locked_ns) / 1e9);
	count(d, h, all_ok ? CPUHPD_HP_OK : nok ? CPUHPD_HP_PARTIAL : CPUHPD_HP_FAILED);
	rep.n_results = job->nresults;
	rep.results = resp;
	rep.online = online ? online : (char *)"";
	r.id = h->req_id;
	if (h->kind == CPUHPD_HP_SMT) {
		smt.cpus = &rep;
		smt.control = d->view.smt_control;
		smt.active = d->view.smt_active;
		r.body_case = CPUHP__RESPONSE__BODY_SMT;
		r.smt = &smt;
	} else {
		r.body_case = CPUHP__RESPONSE__BODY_SET_ONLINE;
		r.set_online = &rep;
	}
	if (c)
		cpuhpd_conn_send(c, &r);
	cpuhpd_watch_hotplug_finished(d, h->cpus_str, job->online, all_ok, resp, job->nresults);
	if (changed)
		cpuhpd_watch_online_changed(d, online ? online : "", false);
	free(online);
	free(wrunp);
	free(wruns);
	free(resp);
	free(res);
}

static void job_done(struct cpuhpd *d, struct cpuhpd_job *job)
{
	struct hotplug_req *h = cpuhpd_container_of(job, struct hotplug_req, job);
	struct cpuhpd_conn *c = unlink_req(d, h);

	/*
	 * The fast path opens before the answer goes out: a client that reads
	 * it and takes a lease at once gets it, as a socket acquire would (it is
	 * served after this callback, when leave_head() has opened the gate).
	 */
	cpuhpd_gate_writer_done(d);

	if (!job->err) {
		finish_ran(d, h, c);
	} else {
		bool changed = false;

		/* An SMT write the kernel refused may still have moved some siblings. */
		if (job->view_ok)
			changed = cpuhpd_view_update(d, &job->view, false);
		count(d, h,
		      job->err == -ETIMEDOUT ? (h->timeout_ms ? CPUHPD_HP_TIMEOUT : CPUHPD_HP_BUSY)
		      : job->err == -ECANCELED ? CPUHPD_HP_CANCELED
		      : h->started             ? CPUHPD_HP_FAILED
		      : h->kind == CPUHPD_HP_SMT && job->err_what &&
		              !strcmp(job->err_what, "smt/control")
		          ? CPUHPD_HP_FAILED
		          : CPUHPD_HP_ERROR);
		if (h->kind == CPUHPD_HP_SMT && job->err_what &&
		    !strcmp(job->err_what, "smt/control") && !h->started)
			reply_error(h, c, -job->err, "%s", smt_refusal(-job->err, job->smt_before));
		else if (h->kind == CPUHPD_HP_SMT && job->err_what &&
		         !strcmp(job->err_what, "smt/control"))
			reply_error(
			    h, c, -job->err,
			    "the kernel refused '%s' in %s/devices/system/cpu/smt/control: %s "
			    "(smt/control said %s)%s",
			    job->smt_control, d->opt.sysfs_root, strerror(-job->err),
			    job->smt_before,
			    changed ? "; some CPUs changed: see 'cpuhpctl status'"
			            : "; nothing was changed");
		else if (job->err == -ETIMEDOUT && h->timeout_ms == 0)
			reply_error(h, c, EAGAIN,
			            "in-process readers hold the hotplug lock and no timeout "
			            "given; nothing was changed");
		else if (job->err == -ETIMEDOUT)
			reply_error(h, c, ETIMEDOUT,
			            "timed out after %" PRIu32 " ms waiting for in-process readers "
			            "of the hotplug lock; nothing was changed",
			            h->timeout_ms);
		else if (job->err == -ECANCELED)
			reply_error(h, c, ECANCELED,
			            "cpuhpd is shutting down; nothing was changed");
		else if (job->err_what)
			reply_error(h, c, -job->err,
			            "cannot read %s/devices/system/cpu/%s: %s; nothing was changed",
			            d->opt.sysfs_root, job->err_what, strerror(-job->err));
		else
			reply_error(h, c, -job->err, "hotplug failed: %s", strerror(-job->err));
		if (h->started)
			cpuhpd_watch_hotplug_finished(d, h->cpus_str, job->online, false, NULL, 0);
		if (changed) {
			char *online = cpuhpd_cpus_to_str(&d->view.online);

			cpuhpd_watch_online_changed(d, online ? online : "", false);
			free(online);
		}
	}
	cpuhpd_states_hotplug_end(d);
	destroy_req(h);
	leave_head(d);
	if (d->hotplug.settled)
		d->hotplug.settled(d);
}

void cpuhpd_hotplug_conn_gone(struct cpuhpd_conn *c)
{
	struct cpuhpd *d = c->d;
	struct cpuhpd_list *pos;

again:
	cpuhpd_list_for_each(pos, &d->hotplug.queue)
	{
		struct hotplug_req *h = cpuhpd_container_of(pos, struct hotplug_req, node);

		bool was_active = h->state == HP_WAIT_LEASES;

		if (h->conn != c)
			continue;
		if (h->state >= HP_WORKER) {
			/* It runs to the end; only its answer is lost. */
			c->npending--;
			h->conn = NULL;
			continue;
		}
		cpuhpd_info("hotplug #%" PRIu64 " dropped: its client %u disconnected", h->seq,
		            c->id);
		count(d, h, CPUHPD_HP_DROPPED);
		unlink_req(d, h);
		destroy_req(h);
		if (was_active)
			leave_head(d);
		goto again;
	}
}

void cpuhpd_hotplug_cancel(struct cpuhpd *d)
{
	struct cpuhpd_list *pos;

	/* An answer can close a client, which can free other requests: rescan after each. */
again:
	cpuhpd_list_for_each(pos, &d->hotplug.queue)
	{
		struct hotplug_req *h = cpuhpd_container_of(pos, struct hotplug_req, node);
		struct cpuhpd_conn *c;

		if (h->state >= HP_WORKER) {
			/* Waiting for in-process readers: gives up once it has the lock. */
			atomic_store(&h->job.cancel, true);
			continue;
		}
		c = unlink_req(d, h);
		count(d, h, CPUHPD_HP_CANCELED);
		reply_error(h, c, ECANCELED, "cpuhpd is shutting down; nothing was changed");
		destroy_req(h);
		goto again;
	}
	uv_timer_stop(&d->hotplug.timer);
}

void cpuhpd_hotplug_gauges(const struct cpuhpd *d, struct cpuhpd_snapshot *s)
{
	const struct hotplug_req *h = head(d);

	s->hotplugs_queued = d->hotplug.nqueued;
	s->hotplug_seq = h ? h->seq : 0;
	s->writer = !h                       ? CPUHP__WRITER_STATE__WRITER_IDLE
	            : h->state == HP_RUNNING ? CPUHP__WRITER_STATE__WRITER_RUNNING
	                                     : CPUHP__WRITER_STATE__WRITER_WAITING;
}

int cpuhpd_hotplug_list(const struct cpuhpd *d, Cpuhp__LeaseList *out)
{
	const struct cpuhpd_list *pos;
	uint64_t now = uv_now(d->loop);
	size_t n = 0;

	out->n_hotplugs = 0;
	out->hotplugs = calloc(d->hotplug.nqueued + 1, sizeof(*out->hotplugs));
	if (!out->hotplugs)
		return -ENOMEM;
	cpuhpd_list_for_each(pos, &d->hotplug.queue)
	{
		const struct hotplug_req *h = cpuhpd_container_of(pos, struct hotplug_req, node);
		Cpuhp__HotplugInfo *hi = calloc(1, sizeof(*hi));

		if (!hi)
			return -ENOMEM; /* the caller frees what is there */
		cpuhp__hotplug_info__init(hi);
		out->hotplugs[n++] = hi;
		out->n_hotplugs = n;
		hi->seq = h->seq;
		hi->cpus = h->cpus_str;
		hi->online = h->job.online;
		hi->state = h->state == HP_QUEUED    ? CPUHP__WRITER_STATE__WRITER_IDLE
		            : h->state == HP_RUNNING ? CPUHP__WRITER_STATE__WRITER_RUNNING
		                                     : CPUHP__WRITER_STATE__WRITER_WAITING;
		hi->pid = (uint32_t)h->peer.pid;
		hi->uid = (uint32_t)h->peer.uid;
		hi->comm = (char *)h->peer.comm;
		hi->waited_ms = now > h->arrived ? now - h->arrived : 0;
		hi->timeout_ms = h->timeout_ms;
	}
	return 0;
}

bool cpuhpd_hotplug_in_worker(const struct cpuhpd *d)
{
	const struct hotplug_req *h = head(d);

	return h && h->state >= HP_WORKER;
}

void cpuhpd_hotplug_hold(struct cpuhpd *d)
{
	struct hotplug_req *h = head(d);

	/* Waiting for in-process readers: gives up (ECANCELED) once it has the lock. */
	if (h && h->state >= HP_WORKER)
		atomic_store(&h->job.cancel, true);
	uv_timer_stop(&d->hotplug.timer);
}

/* @h as the request its client sent, its timeout what is left of it. */
static void save_req(struct cpuhpd *d, FILE *f, const struct hotplug_req *h)
{
	Cpuhp__Request rq = CPUHP__REQUEST__INIT;
	Cpuhp__SetOnline so = CPUHP__SET_ONLINE__INIT;
	Cpuhp__SetSmt ss = CPUHP__SET_SMT__INIT;
	uint64_t now = uv_now(d->loop);
	uint32_t left = h->deadline > now ? (uint32_t)(h->deadline - now) : 1;

	rq.id = h->req_id;
	if (h->kind == CPUHPD_HP_SMT) {
		ss.control = (char *)h->job.smt_control;
		ss.timeout_ms = h->timeout_ms ? left : 0;
		rq.body_case = CPUHP__REQUEST__BODY_SET_SMT;
		rq.set_smt = &ss;
	} else {
		so.cpus = h->cpus_str;
		so.online = h->job.online;
		so.timeout_ms = h->timeout_ms ? left : 0;
		rq.body_case = CPUHP__REQUEST__BODY_SET_ONLINE;
		rq.set_online = &so;
	}
	cpuhpd_fdstore_put_request(f, h->conn->id, &rq);
}

void cpuhpd_hotplug_save(struct cpuhpd *d, FILE *f)
{
	struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &d->hotplug.queue)
	{
		const struct hotplug_req *h = cpuhpd_container_of(pos, struct hotplug_req, node);

		if (h->conn && h->conn->stored && !h->conn->closing)
			save_req(d, f, h);
	}
}
