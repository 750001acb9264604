/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ListLeases; see listing.h. */
#include <errno.h>
#include <stdlib.h>

#include "cpuhpd.h"
#include "core/conn.h"
#include "core/page.h"
#include "leases/holders.h"
#include "listing.h"

/* The three lists, one after the other in a page's order (page.h). */
enum { PART_LEASES, PART_HOTPLUGS, PART_FREEZES };

static void free_list(Cpuhp__LeaseList *ll)
{
	for (size_t i = 0; i < ll->n_leases; i++)
		free(ll->leases[i]);
	free(ll->leases);
	for (size_t i = 0; i < ll->n_hotplugs; i++)
		free(ll->hotplugs[i]);
	free(ll->hotplugs);
	for (size_t i = 0; i < ll->n_freezes; i++)
		free(ll->freezes[i]);
	free(ll->freezes);
}

/* Every lease row, oldest first (the holders' order), into @all. */
static int leases(struct cpuhpd *d, Cpuhp__LeaseList *all, struct cpuhpd_holder **v)
{
	uint64_t now = uv_now(d->loop);
	ssize_t n = cpuhpd_holders_collect(d, v);

	if (n < 0)
		return (int)n;
	all->leases = calloc((size_t)n + 1, sizeof(*all->leases));
	if (!all->leases)
		return -ENOMEM;
	for (ssize_t i = 0; i < n; i++) {
		const struct cpuhpd_holder *h = &(*v)[i];
		Cpuhp__LeaseInfo *li = calloc(1, sizeof(*li));

		if (!li)
			return -ENOMEM;
		cpuhp__lease_info__init(li);
		all->leases[all->n_leases++] = li;
		li->lease_id = h->lease_id;
		li->kind =
		    h->lease_id ? CPUHP__LEASE_KIND__LEASE_SOCKET : CPUHP__LEASE_KIND__LEASE_FAST;
		li->count = h->count;
		li->pid = (uint32_t)h->conn->peer.pid;
		li->uid = (uint32_t)h->conn->peer.uid;
		li->comm = (char *)h->conn->peer.comm;
		li->who = (char *)h->who;
		li->why = (char *)h->why;
		li->held_ms = now > h->since ? now - h->since : 0;
		li->connection = h->conn->id;
		li->mode =
		    h->delay_ms ? CPUHP__LEASE_MODE__LEASE_DELAY : CPUHP__LEASE_MODE__LEASE_BLOCK;
		li->delay_ms = h->delay_ms;
	}
	return 0;
}

/*
 * The rows of @all with their keys: a lease by (since, id, connection; a
 * fast row has id 0 and one connection), a hotplug by its number, a freeze
 * by its id.
 */
static struct cpuhpd_page_row *rows_of(const Cpuhp__LeaseList *all, const struct cpuhpd_holder *v,
                                       size_t *n)
{
	struct cpuhpd_page_row *r;
	size_t k = 0;

	*n = all->n_leases + all->n_hotplugs + all->n_freezes;
	r = calloc(*n + 1, sizeof(*r));
	if (!r)
		return NULL;
	for (size_t i = 0; i < all->n_leases; i++)
		r[k++] = (struct cpuhpd_page_row){
		    {PART_LEASES, v[i].since, v[i].lease_id, v[i].conn->id}, &all->leases[i]->base};
	for (size_t i = 0; i < all->n_hotplugs; i++)
		r[k++] = (struct cpuhpd_page_row){{PART_HOTPLUGS, all->hotplugs[i]->seq},
		                                  &all->hotplugs[i]->base};
	for (size_t i = 0; i < all->n_freezes; i++)
		r[k++] = (struct cpuhpd_page_row){{PART_FREEZES, all->freezes[i]->freeze_id},
		                                  &all->freezes[i]->base};
	return r;
}

/* The page's rows into @ll, whose arrays point at @all's messages. */
static int fill(Cpuhp__LeaseList *ll, const struct cpuhpd_page_row *rows,
                const struct cpuhpd_page *pg)
{
	ll->leases = calloc(pg->count + 1, sizeof(*ll->leases));
	ll->hotplugs = calloc(pg->count + 1, sizeof(*ll->hotplugs));
	ll->freezes = calloc(pg->count + 1, sizeof(*ll->freezes));
	if (!ll->leases || !ll->hotplugs || !ll->freezes)
		return -ENOMEM;
	for (size_t i = pg->first; i < pg->first + pg->count; i++) {
		ProtobufCMessage *m = (ProtobufCMessage *)rows[i].msg;

		switch (rows[i].key[0]) {
		case PART_LEASES:
			ll->leases[ll->n_leases++] = (Cpuhp__LeaseInfo *)m;
			break;
		case PART_HOTPLUGS:
			ll->hotplugs[ll->n_hotplugs++] = (Cpuhp__HotplugInfo *)m;
			break;
		default:
			ll->freezes[ll->n_freezes++] = (Cpuhp__FreezeInfo *)m;
			break;
		}
	}
	return 0;
}

void cpuhpd_listing_request(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	const Cpuhp__ListLeases *ask = req->list_leases;
	uint64_t req_id = req->id;
	struct cpuhpd *d = c->d;
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__LeaseList all = CPUHP__LEASE_LIST__INIT, ll = CPUHP__LEASE_LIST__INIT;
	struct cpuhpd_holder *v = NULL;
	struct cpuhpd_page_row *rows = NULL;
	struct cpuhpd_page pg;
	size_t n;

	/* A forged fast count shows capped, and its connection closes (as for Status). */
	cpuhpd_fastpath_police(d);
	if (leases(d, &all, &v) || cpuhpd_hotplug_list(d, &all) || cpuhpd_freeze_list(d, &all) ||
	    !(rows = rows_of(&all, v, &n)))
		goto oom;
	if (cpuhpd_page_cut(rows, n, ask->after, ask->limit, &pg)) {
		cpuhpd_conn_send_error(c, req_id, EINVAL,
		                       "ListLeases.after is not a cursor this cpuhpd gave; ask "
		                       "again from the first page");
		goto out;
	}
	if (fill(&ll, rows, &pg))
		goto oom;
	ll.restart_grace_ms = (uint32_t)cpuhpd_grace_remaining_ms(d);
	ll.more = pg.more;
	ll.next.data = pg.next;
	ll.next.len = pg.next_len;
	r.id = req_id;
	r.body_case = CPUHP__RESPONSE__BODY_LEASE_LIST;
	r.lease_list = &ll;
	cpuhpd_conn_send(c, &r);
	goto out;
oom:
	cpuhpd_conn_send_error(c, req_id, ENOMEM, "cpuhpd is out of memory");
out:
	/* @ll's arrays point at @all's messages, which are freed once, with @all. */
	free(ll.leases);
	free(ll.hotplugs);
	free(ll.freezes);
	free_list(&all);
	free(rows);
	free(v);
}
