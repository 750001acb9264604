/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SetSmt (`cpuhpctl smt`): a hotplug request like SetOnline, with the same
 * rights, queue, gate and deadlines; what the kernel would refuse is
 * refused at once from the last view's smt/control (hotplug.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpuhpd.h"
#include "sysfs/cpus.h"
#include "core/conn.h"
#include "hotplug.h"
#include "plan.h"
#include "request.h"

void cpuhpd_hotplug_submit_smt(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	const Cpuhp__SetSmt *ss = req->set_smt;
	uint64_t req_id = req->id;
	struct cpuhpd *d = c->d;
	const char *w = ss->control ? ss->control : "";
	struct hotplug_req *h;
	int err;

	if (!cpuhpd_hotplug_allowed(c, req_id))
		return;
	if (strcmp(w, "on") && strcmp(w, "off") && strcmp(w, "forceoff")) {
		cpuhpd_conn_send_error(c, req_id, EINVAL,
		                       "SMT control '%.32s' is none of on, off, forceoff", w);
		return;
	}
	err = cpuhpd_cpus_smt_changeable(d->view.smt_control);
	if (err) {
		cpuhpd_conn_send_error(c, req_id, -err, "%s",
		                       cpuhpd_hotplug_smt_refusal(-err, d->view.smt_control));
		return;
	}
	if (!cpuhpd_plan_admit(c, req_id, NULL, false, w, ss->persist))
		return;
	h = cpuhpd_hotplug_new_smt(w);
	if (!h) {
		cpuhpd_conn_send_error(c, req_id, ENOMEM, "cpuhpd is out of memory");
		return;
	}
	h->force = ss->force;
	h->force_grace_ms = ss->force_grace_ms;
	cpuhpd_hotplug_enqueue(c, req_id, h, ss->timeout_ms);
}

struct hotplug_req *cpuhpd_hotplug_new_smt(const char *word)
{
	struct hotplug_req *h = calloc(1, sizeof(*h));

	if (h)
		h->cpus_str = strdup("");
	if (!h || !h->cpus_str) {
		free(h);
		return NULL;
	}
	h->kind = CPUHPD_HP_SMT;
	snprintf(h->desc, sizeof(h->desc), "SMT %s", word);
	h->job.kind = CPUHPD_JOB_SMT;
	h->job.online = !strcmp(word, "on");
	snprintf(h->job.smt_control, sizeof(h->job.smt_control), "%s", word);
	return h;
}
