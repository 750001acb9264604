/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who holds what: cpuhp_client_list_leases() (every lease, the hotplugs
 * queued and the freezes, like `systemd-inhibit --list`), and its
 * asynchronous form on a connection of its own
 * (cpuhp_client_list_leases_begin(), cpuhp_client_call_list_leases()).
 * cpuhpd answers in pages that fit a frame; each call asks for every page
 * and gives the rows of all of them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Room for @more rows after @n in the array at *@v of @size-byte rows.  Return: 0; -ENOMEM. */
static int grow(void *v, size_t n, size_t more, size_t size)
{
	void **p = v;
	void *g = realloc(*p, (n + more + 1) * size);

	if (!g)
		return -ENOMEM;
	memset((char *)g + n * size, 0, (more + 1) * size);
	*p = g;
	return 0;
}

/* Page @in appended to @l.  Return: 0; -EPROTO, -ENOMEM (message set on @c). */
static int append_page(struct cpuhp_client *c, const Cpuhp__LeaseList *in,
                       struct cpuhp_client_lease_list *l)
{
	int ret;

	if (grow(&l->leases, l->n_leases, in->n_leases, sizeof(*l->leases)) ||
	    grow(&l->hotplugs, l->n_hotplugs, in->n_hotplugs, sizeof(*l->hotplugs)) ||
	    grow(&l->freezes, l->n_freezes, in->n_freezes, sizeof(*l->freezes)))
		return cpuhp__client_error(c, -ENOMEM, "out of memory");
	for (size_t i = 0; i < in->n_leases; i++)
		cpuhp__lease_info_from_wire(&l->leases[l->n_leases++], in->leases[i]);
	for (size_t i = 0; i < in->n_hotplugs; i++) {
		const Cpuhp__HotplugInfo *hi = in->hotplugs[i];
		struct cpuhp_client_hotplug_info *o = &l->hotplugs[l->n_hotplugs];

		ret = cpuhp__client_parse_cpus(c, "hotplug", hi->cpus, &o->cpus);
		if (ret < 0)
			return ret;
		l->n_hotplugs++;
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
		snprintf(o->reason, sizeof(o->reason), "%s", hi->reason ? hi->reason : "");
		o->force = hi->force;
		o->force_grace_ms = hi->force_grace_ms;
		snprintf(o->smt, sizeof(o->smt), "%s", hi->smt ? hi->smt : "");
	}
	for (size_t i = 0; i < in->n_freezes; i++) {
		const Cpuhp__FreezeInfo *fi = in->freezes[i];
		struct cpuhp_client_freeze_info *o = &l->freezes[l->n_freezes++];

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
	/* The last page's word is the freshest. */
	l->restart_grace_ms = in->restart_grace_ms;
	return 0;
}

static int take_page(struct cpuhp_client *c, const Cpuhp__Response *resp, void *arg)
{
	return append_page(c, resp->lease_list, arg);
}

static void list_request(Cpuhp__Request *req, Cpuhp__ListLeases *ll, ProtobufCBinaryData after)
{
	ll->after = after;
	req->body_case = CPUHP__REQUEST__BODY_LIST_LEASES;
	req->list_leases = ll;
}

static int again(struct cpuhp_client *c, const Cpuhp__Response *resp, uint64_t *id)
{
	const Cpuhp__LeaseList *page = resp->lease_list;
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__ListLeases ll = CPUHP__LIST_LEASES__INIT;

	list_request(&req, &ll, page->next);
	return cpuhp__client_next_page(
	    c, page->next, page->n_leases + page->n_hotplugs + page->n_freezes, &req, id);
}

int cpuhp_client_list_leases(struct cpuhp_client *c, struct cpuhp_client_lease_list **out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__ListLeases ll = CPUHP__LIST_LEASES__INIT;
	struct cpuhp_client_lease_list *l = calloc(1, sizeof(*l));
	int ret;

	if (!l)
		return cpuhp__client_note(c, -ENOMEM, "out of memory");
	list_request(&req, &ll, (ProtobufCBinaryData){0, NULL});
	ret = cpuhp__client_pages(c, &req, CPUHP__RESPONSE__BODY_LEASE_LIST, again, take_page, l);
	if (ret < 0) {
		cpuhp_client_lease_list_free(l);
		return ret;
	}
	*out = l;
	return 0;
}

int cpuhp_client_list_leases_begin(struct cpuhp_client *c, struct cpuhp_client_call **out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__ListLeases ll = CPUHP__LIST_LEASES__INIT;

	list_request(&req, &ll, (ProtobufCBinaryData){0, NULL});
	return cpuhp__call_begin_pages(c, &req, CPUHP__RESPONSE__BODY_LEASE_LIST, again, out);
}

int cpuhp_client_call_list_leases(struct cpuhp_client_call *call,
                                  struct cpuhp_client_lease_list **out)
{
	Cpuhp__Response *const *pages;
	struct cpuhp_client_lease_list *l;
	struct cpuhp_client *w;
	size_t n;
	int ret = cpuhp__call_pages(call, CPUHP__RESPONSE__BODY_LEASE_LIST, &pages, &n, &w);

	if (ret < 0)
		return ret;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		ret = append_page(w, pages[i]->lease_list, l);
		if (ret < 0) {
			cpuhp_client_lease_list_free(l);
			return ret;
		}
	}
	*out = l;
	return 0;
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
