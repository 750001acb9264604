/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ListLeases; see listing.h. */
#include <errno.h>
#include <stdlib.h>

#include "cpuhpd.h"
#include "core/conn.h"
#include "leases/holders.h"
#include "listing.h"

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

void cpuhpd_listing_request(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	uint64_t req_id = req->id;
	struct cpuhpd *d = c->d;
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__LeaseList ll = CPUHP__LEASE_LIST__INIT;
	uint64_t now = uv_now(d->loop);
	struct cpuhpd_holder *v = NULL;
	ssize_t n;

	/* A forged fast count shows capped, and its connection closes (as for Status). */
	cpuhpd_fastpath_police(d);
	n = cpuhpd_holders_collect(d, &v);
	if (n < 0)
		goto oom;
	ll.leases = calloc((size_t)n + 1, sizeof(*ll.leases));
	if (!ll.leases)
		goto oom;
	for (ssize_t i = 0; i < n; i++) {
		Cpuhp__LeaseInfo *li = calloc(1, sizeof(*li));

		if (!li)
			goto oom;
		cpuhp__lease_info__init(li);
		ll.leases[ll.n_leases++] = li;
		li->lease_id = v[i].lease_id;
		li->kind =
		    v[i].lease_id ? CPUHP__LEASE_KIND__LEASE_SOCKET : CPUHP__LEASE_KIND__LEASE_FAST;
		li->count = v[i].count;
		li->pid = (uint32_t)v[i].conn->peer.pid;
		li->uid = (uint32_t)v[i].conn->peer.uid;
		li->comm = (char *)v[i].conn->peer.comm;
		li->who = (char *)v[i].who;
		li->why = (char *)v[i].why;
		li->held_ms = now > v[i].since ? now - v[i].since : 0;
		li->connection = v[i].conn->id;
		li->mode =
		    v[i].delay_ms ? CPUHP__LEASE_MODE__LEASE_DELAY : CPUHP__LEASE_MODE__LEASE_BLOCK;
		li->delay_ms = v[i].delay_ms;
	}
	if (cpuhpd_hotplug_list(d, &ll) || cpuhpd_freeze_list(d, &ll))
		goto oom;
	ll.restart_grace_ms = (uint32_t)cpuhpd_grace_remaining_ms(d);
	r.id = req_id;
	r.body_case = CPUHP__RESPONSE__BODY_LEASE_LIST;
	r.lease_list = &ll;
	cpuhpd_conn_send(c, &r);
	goto out;
oom:
	cpuhpd_conn_send_error(c, req_id, ENOMEM, "cpuhpd is out of memory");
out:
	free_list(&ll);
	free(v);
}
