/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How a hotplug request ends (request.h): counted, logged, answered, and
 * told to the watchers, whether it ran, failed in the worker or never got
 * there.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmap.h"

#include "cpuhpd.h"
#include "base/log.h"
#include "sysfs/view.h"
#include "core/conn.h"
#include "core/counters.h"
#include "core/snapshot.h"
#include "core/watch.h"
#include "states/states.h"
#include "request.h"

/*
 * Count how @h ended, and rewrite --metrics-file: called before the answer
 * goes out, so that a client that heard back finds its hotplug counted there.
 */
void cpuhpd_hotplug_count(struct cpuhpd *d, const struct hotplug_req *h,
                          enum cpuhpd_hp_result result)
{
	cpuhpd_counters_hotplug(d, h->kind, result, uv_hrtime() - h->arrived_ns);
	if (d->hotplug.ended)
		d->hotplug.ended(d);
	cpuhpd_snapshot_changed(d);
}

void cpuhpd_hotplug_reply_error(struct hotplug_req *h, struct cpuhpd_conn *c, int err,
                                const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cpuhpd_info("hotplug #%" PRIu64 " (%s): %s", h->seq, h->desc, msg);
	/* Those told it was pending hear that it will not run (unless it started already). */
	if (!h->started)
		cpuhpd_notice_cancelled(h->d, h, err, msg);
	if (c)
		cpuhpd_conn_send_error(c, h->req_id, err, "%s", msg);
}

/* Why smt/control's word @now refuses any change (errno), in words for the client. */
const char *cpuhpd_hotplug_smt_refusal(int err, const char *now)
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
static void reply_ran(struct cpuhpd *d, struct hotplug_req *h, struct cpuhpd_conn *c)
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
		cpuhpd_hotplug_count(d, h, CPUHPD_HP_ERROR);
		cpuhpd_hotplug_reply_error(h, c, ENOMEM,
		                           "cpuhpd ran out of memory after the hotplug");
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
	cpuhpd_hotplug_count(d, h,
	                     all_ok ? CPUHPD_HP_OK
	                     : nok  ? CPUHPD_HP_PARTIAL
	                            : CPUHPD_HP_FAILED);
	rep.n_results = job->nresults;
	rep.results = resp;
	rep.online = online ? online : (char *)"";
	rep.revoked = h->revoked;
	rep.n_revoked = h->nrevoked;
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

/* Reply, events and log for a hotplug that failed in the worker; job->err != 0. */
static void reply_failed(struct cpuhpd *d, struct hotplug_req *h, struct cpuhpd_conn *c)
{
	struct cpuhpd_job *job = &h->job;
	bool changed = false;

	/* An SMT write the kernel refused may still have moved some siblings. */
	if (job->view_ok)
		changed = cpuhpd_view_update(d, &job->view, false);
	cpuhpd_hotplug_count(
	    d, h,
	    job->err == -ETIMEDOUT   ? (h->timeout_ms ? CPUHPD_HP_TIMEOUT : CPUHPD_HP_BUSY)
	    : job->err == -ECANCELED ? CPUHPD_HP_CANCELED
	    : h->started             ? CPUHPD_HP_FAILED
	    : h->kind == CPUHPD_HP_SMT && job->err_what && !strcmp(job->err_what, "smt/control")
	        ? CPUHPD_HP_FAILED
	        : CPUHPD_HP_ERROR);
	if (h->kind == CPUHPD_HP_SMT && job->err_what && !strcmp(job->err_what, "smt/control") &&
	    !h->started)
		cpuhpd_hotplug_reply_error(h, c, -job->err, "%s",
		                           cpuhpd_hotplug_smt_refusal(-job->err, job->smt_before));
	else if (h->kind == CPUHPD_HP_SMT && job->err_what && !strcmp(job->err_what, "smt/control"))
		cpuhpd_hotplug_reply_error(
		    h, c, -job->err,
		    "the kernel refused '%s' in %s/devices/system/cpu/smt/control: %s "
		    "(smt/control said %s)%s",
		    job->smt_control, d->opt.sysfs_root, strerror(-job->err), job->smt_before,
		    changed ? "; some CPUs changed: see 'cpuhpctl status'"
		            : "; nothing was changed");
	else if (job->err == -ETIMEDOUT && h->timeout_ms == 0)
		cpuhpd_hotplug_reply_error(
		    h, c, EAGAIN,
		    "in-process readers hold the hotplug lock and no timeout "
		    "given; nothing was changed");
	else if (job->err == -ETIMEDOUT)
		cpuhpd_hotplug_reply_error(h, c, ETIMEDOUT,
		                           "timed out after %" PRIu32
		                           " ms waiting for in-process readers "
		                           "of the hotplug lock; nothing was changed",
		                           h->timeout_ms);
	else if (job->err == -ECANCELED)
		cpuhpd_hotplug_reply_error(h, c, ECANCELED,
		                           "cpuhpd is shutting down; nothing was changed");
	else if (job->err_what)
		cpuhpd_hotplug_reply_error(
		    h, c, -job->err,
		    "cannot read %s/devices/system/cpu/%s: %s; nothing was changed",
		    d->opt.sysfs_root, job->err_what, strerror(-job->err));
	else
		cpuhpd_hotplug_reply_error(h, c, -job->err, "hotplug failed: %s",
		                           strerror(-job->err));
	if (h->started)
		cpuhpd_watch_hotplug_finished(d, h->cpus_str, job->online, false, NULL, 0);
	if (changed) {
		char *online = cpuhpd_cpus_to_str(&d->view.online);

		cpuhpd_watch_online_changed(d, online ? online : "", false);
		free(online);
	}
}

void cpuhpd_hotplug_reply(struct cpuhpd *d, struct hotplug_req *h, struct cpuhpd_conn *c)
{
	if (!h->job.err)
		reply_ran(d, h, c);
	else
		reply_failed(d, h, c);
}
