/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who holds what: cpuhp_client_list_leases() (every lease, the hotplugs
 * queued and the freezes, like `systemd-inhibit --list`), and its
 * asynchronous form on a connection of its own
 * (cpuhp_client_list_leases_begin(), cpuhp_client_call_list_leases()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "client-internal.h"

void cpuhp__lease_info_from_wire(struct cpuhp_client_lease_info *o, const Cpuhp__LeaseInfo *li)
{
	o->lease_id = li->lease_id;
	o->fast = li->kind == CPUHP__LEASE_KIND__LEASE_FAST;
	o->count = li->count;
	o->pid = li->pid;
	o->uid = li->uid;
	snprintf(o->comm, sizeof(o->comm), "%s", li->comm);
	snprintf(o->who, sizeof(o->who), "%s", li->who);
	snprintf(o->why, sizeof(o->why), "%s", li->why);
	o->held_ms = li->held_ms;
	o->connection = li->connection;
	o->delay_ms = li->mode == CPUHP__LEASE_MODE__LEASE_DELAY ? li->delay_ms : 0;
}

/* @in for cpuhp_client_lease_list_free(); -EPROTO, -ENOMEM (message set on @c). */
static int convert_list(struct cpuhp_client *c, const Cpuhp__LeaseList *in,
                        struct cpuhp_client_lease_list **out)
{
	struct cpuhp_client_lease_list *l;
	int ret;

	l = calloc(1, sizeof(*l));
	if (!l)
		return cpuhp__client_error(c, -ENOMEM, "out of memory");
	l->leases = calloc(in->n_leases + 1, sizeof(*l->leases));
	l->hotplugs = calloc(in->n_hotplugs + 1, sizeof(*l->hotplugs));
	l->freezes = calloc(in->n_freezes + 1, sizeof(*l->freezes));
	if (!l->leases || !l->hotplugs || !l->freezes) {
		cpuhp_client_lease_list_free(l);
		return cpuhp__client_error(c, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < in->n_leases; i++)
		cpuhp__lease_info_from_wire(&l->leases[i], in->leases[i]);
	l->n_leases = in->n_leases;
	for (size_t i = 0; i < in->n_hotplugs; i++) {
		const Cpuhp__HotplugInfo *hi = in->hotplugs[i];
		struct cpuhp_client_hotplug_info *o = &l->hotplugs[i];

		ret = cpuhp__client_parse_cpus(c, "hotplug", hi->cpus, &o->cpus);
		if (ret < 0) {
			cpuhp_client_lease_list_free(l);
			return ret;
		}
		o->seq = hi->seq;
		o->online = hi->online;
		o->state =
		    hi->state == CPUHP__WRITER_STATE__WRITER_RUNNING   ? CPUHP_CLIENT_WRITER_RUNNING
		    : hi->state == CPUHP__WRITER_STATE__WRITER_WAITING ? CPUHP_CLIENT_WRITER_WAITING
		                                                       : CPUHP_CLIENT_WRITER_IDLE;
		o->pid = hi->pid;
		o->uid = hi->uid;
		snprintf(o->comm, sizeof(o->comm), "%s", hi->comm);
		o->waited_ms = hi->waited_ms;
		o->timeout_ms = hi->timeout_ms;
		o->force = hi->force;
		o->force_grace_ms = hi->force_grace_ms;
		snprintf(o->smt, sizeof(o->smt), "%s", hi->smt ? hi->smt : "");
	}
	l->n_hotplugs = in->n_hotplugs;
	for (size_t i = 0; i < in->n_freezes; i++) {
		const Cpuhp__FreezeInfo *fi = in->freezes[i];
		struct cpuhp_client_freeze_info *o = &l->freezes[i];

		o->freeze_id = fi->freeze_id;
		o->granted = fi->granted;
		o->pid = fi->pid;
		o->uid = fi->uid;
		snprintf(o->comm, sizeof(o->comm), "%s", fi->comm);
		snprintf(o->who, sizeof(o->who), "%s", fi->who);
		snprintf(o->why, sizeof(o->why), "%s", fi->why);
		o->held_ms = fi->held_ms;
		o->connection = fi->connection;
	}
	l->n_freezes = in->n_freezes;
	l->restart_grace_ms = in->restart_grace_ms;
	*out = l;
	return 0;
}

static int take_list(struct cpuhp_client *c, const Cpuhp__Response *resp, void *arg)
{
	return convert_list(c, resp->lease_list, arg);
}

static void list_request(Cpuhp__Request *req, Cpuhp__ListLeases *ll)
{
	req->body_case = CPUHP__REQUEST__BODY_LIST_LEASES;
	req->list_leases = ll;
}

int cpuhp_client_list_leases(struct cpuhp_client *c, struct cpuhp_client_lease_list **out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__ListLeases ll = CPUHP__LIST_LEASES__INIT;

	list_request(&req, &ll);
	return cpuhp__client_request(c, &req, CPUHP__RESPONSE__BODY_LEASE_LIST, take_list, out);
}

int cpuhp_client_list_leases_begin(struct cpuhp_client *c, struct cpuhp_client_call **out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__ListLeases ll = CPUHP__LIST_LEASES__INIT;

	list_request(&req, &ll);
	return cpuhp__call_begin(c, &req, CPUHP__RESPONSE__BODY_LEASE_LIST, out);
}

int cpuhp_client_call_list_leases(struct cpuhp_client_call *call,
                                  struct cpuhp_client_lease_list **out)
{
	const Cpuhp__Response *resp;
	struct cpuhp_client *w;
	int ret = cpuhp__call_reply(call, CPUHP__RESPONSE__BODY_LEASE_LIST, &resp, &w);

	return ret < 0 ? ret : convert_list(w, resp->lease_list, out);
}

void cpuhp_client_lease_list_free(struct cpuhp_client_lease_list *list)
{
	if (!list)
		return;
	free(list->leases);
	free(list->hotplugs);
	free(list->freezes);
	free(list);
}
