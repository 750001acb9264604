/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A hotplug's notices: HotplugPending when it becomes the one to run and
 * has to wait, HotplugCancelled when it then ends without running.  To
 * every watcher (with its Watch id), and to every lease holder that does
 * not watch (id 0, at the connection its notices go to: route.h), once
 * each: a client can let go of what it holds now instead of at its
 * natural end.  A holder's connection remembers the hotplug it was told
 * of (->told_seq), which is who hears of the cancel, and survives a
 * restart in the state text.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "errmap.h"

#include "cpuhpd.h"
#include "base/log.h"
#include "core/conn.h"
#include "core/route.h"
#include "core/watch.h"
#include "leases/fastlease.h"
#include "request.h"

/* What @h does, as both events say it. */
static void what(const struct hotplug_req *h, char **cpus, protobuf_c_boolean *online, char **smt)
{
	bool is_smt = h->kind == CPUHPD_HP_SMT;

	*cpus = is_smt ? (char *)"" : h->cpus_str;
	*online = h->job.online;
	*smt = is_smt ? (char *)h->job.smt_control : (char *)"";
}

/*
 * Send @ev with id 0 to each connection that holds a lease and does not
 * watch (a watcher had it already), at most once per hotplug @h:
 * Return: how many were told.
 */
static unsigned tell_holders(struct cpuhpd *d, const struct hotplug_req *h, Cpuhp__Event *ev)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	struct cpuhpd_list *pos;
	unsigned told = 0, n;

	r.body_case = CPUHP__RESPONSE__BODY_EVENT;
	r.event = ev;
	/* A send can close connections (ours, and through what that ends, others): walk again. */
again:
	n = d->nconns;
	cpuhpd_list_for_each(pos, &d->conns)
	{
		struct cpuhpd_conn *c = cpuhpd_container_of(pos, struct cpuhpd_conn, node), *to;

		if (!c->nleases && !cpuhpd_fastpath_conn_waited(c))
			continue;
		to = cpuhpd_route_target(c);
		if (to->watching || to->told_seq == h->seq)
			continue;
		to->told_seq = h->seq;
		told++;
		cpuhpd_conn_send(to, &r);
		/* Its client left with what closed (queue.c keeps @h until we return). */
		if (h->gone)
			break;
		if (d->nconns != n)
			goto again;
	}
	return told;
}

void cpuhpd_notice_pending(struct cpuhpd *d, struct hotplug_req *h)
{
	Cpuhp__Event ev = CPUHP__EVENT__INIT;
	Cpuhp__HotplugPending hp = CPUHP__HOTPLUG_PENDING__INIT;
	uint64_t now = uv_now(d->loop);
	unsigned told;

	hp.hotplug_id = h->seq;
	what(h, &hp.cpus, &hp.online, &hp.smt);
	hp.timeout_ms = h->deadline > now ? (uint32_t)(h->deadline - now) : 0;
	hp.force = h->force;
	hp.force_grace_ms = h->force_grace_ms;
	ev.kind_case = CPUHP__EVENT__KIND_HOTPLUG_PENDING;
	ev.hotplug_pending = &hp;
	cpuhpd_watch_event(d, &ev);
	told = tell_holders(d, h, &ev);
	cpuhpd_debug("hotplug #%" PRIu64 ": pending, %u holder connection(s) told", h->seq, told);
}

void cpuhpd_notice_cancelled(struct cpuhpd *d, struct hotplug_req *h, int err, const char *msg)
{
	Cpuhp__Event ev = CPUHP__EVENT__INIT;
	Cpuhp__HotplugCancelled hc = CPUHP__HOTPLUG_CANCELLED__INIT;
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	struct cpuhpd_list *pos;
	unsigned n;

	if (!h->noticed || h->cancel_told)
		return;
	h->cancel_told = true;
	hc.hotplug_id = h->seq;
	what(h, &hc.cpus, &hc.online, &hc.smt);
	hc.code = cpuhp__errmap_to_wire(err);
	hc.message = (char *)msg;
	ev.kind_case = CPUHP__EVENT__KIND_HOTPLUG_CANCELLED;
	ev.hotplug_cancelled = &hc;
	cpuhpd_watch_event(d, &ev);
	r.body_case = CPUHP__RESPONSE__BODY_EVENT;
	r.event = &ev;
	/* Those told of it that do not watch; whatever they hold now. */
again:
	n = d->nconns;
	cpuhpd_list_for_each(pos, &d->conns)
	{
		struct cpuhpd_conn *c = cpuhpd_container_of(pos, struct cpuhpd_conn, node);

		if (c->told_seq != h->seq)
			continue;
		c->told_seq = 0;
		if (c->watching)
			continue;
		cpuhpd_conn_send(c, &r);
		if (d->nconns != n)
			goto again;
	}
}
