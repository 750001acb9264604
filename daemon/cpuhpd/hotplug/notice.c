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
#include <stdlib.h>
#include <string.h>

#include "errmap.h"

#include "cpuhpd.h"
#include "base/log.h"
#include "core/conn.h"
#include "core/fdstore.h"
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
 * Send @ev with id 0 to @n connections @to.  Marked first (->told_seq) and
 * the state text written once, before any of them hears it; a send can
 * close connections (ours, and through what that ends, others), whose
 * memory stays until the loop iteration ends: a closed one is skipped.
 */
static void tell(struct cpuhpd *d, const struct hotplug_req *h, Cpuhp__Event *ev,
                 struct cpuhpd_conn **to, unsigned n)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;

	r.body_case = CPUHP__RESPONSE__BODY_EVENT;
	r.event = ev;
	if (n)
		cpuhpd_fdstore_changed(d);
	for (unsigned i = 0; i < n && !h->gone; i++)
		cpuhpd_conn_send(to[i], &r);
}

/*
 * The connections to tell of @h: where the notices of each one that holds
 * a lease go, if it does not watch (a watcher had it already) and was not
 * told of @h yet (a client's several connections, a restart).
 * Return: how many, in @to (nconns entries); ->told_seq is set.
 */
static unsigned holders(struct cpuhpd *d, const struct hotplug_req *h, struct cpuhpd_conn **to)
{
	struct cpuhpd_list *pos;
	unsigned n = 0;

	cpuhpd_list_for_each(pos, &d->conns)
	{
		struct cpuhpd_conn *c = cpuhpd_container_of(pos, struct cpuhpd_conn, node), *t;

		if (!c->nleases && !cpuhpd_fastpath_conn_waited(c))
			continue;
		t = cpuhpd_route_target(c);
		if (t->watching || t->told_seq == h->seq)
			continue;
		t->told_seq = h->seq;
		cpuhpd_fdstore_conn_stale(t);
		to[n++] = t;
	}
	return n;
}

void cpuhpd_notice_pending(struct cpuhpd *d, struct hotplug_req *h)
{
	Cpuhp__Event ev = CPUHP__EVENT__INIT;
	Cpuhp__HotplugPending hp = CPUHP__HOTPLUG_PENDING__INIT;
	uint64_t now = uv_now(d->loop);
	struct cpuhpd_conn **to = calloc(d->nconns + 1, sizeof(*to));
	uint64_t t0 = uv_hrtime();
	unsigned told = 0;

	hp.hotplug_id = h->seq;
	what(h, &hp.cpus, &hp.online, &hp.smt);
	hp.timeout_ms = h->deadline > now ? (uint32_t)(h->deadline - now) : 0;
	hp.force = h->force;
	hp.force_grace_ms = h->force_grace_ms;
	ev.kind_case = CPUHP__EVENT__KIND_HOTPLUG_PENDING;
	ev.hotplug_pending = &hp;
	/* Told by the cpuhpd before a restart: the holders not told yet are, below. */
	if (!h->resumed)
		cpuhpd_watch_event(d, &ev);
	if (!to)
		cpuhpd_err("hotplug #%" PRIu64 ": out of memory telling its lease holders it waits",
		           h->seq);
	else if (!h->gone)
		tell(d, h, &ev, to, told = holders(d, h, to));
	free(to);
	cpuhpd_debug("hotplug #%" PRIu64 ": pending, %u holder connection(s) told in %.3f ms",
	             h->seq, told, (double)(uv_hrtime() - t0) / 1e6);
}

void cpuhpd_notice_cancelled(struct cpuhpd *d, struct hotplug_req *h, int err, const char *msg)
{
	Cpuhp__Event ev = CPUHP__EVENT__INIT;
	Cpuhp__HotplugCancelled hc = CPUHP__HOTPLUG_CANCELLED__INIT;
	struct cpuhpd_conn **to;
	struct cpuhpd_list *pos;
	bool marked = false;
	unsigned n = 0;

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
	/* Those told of it that do not watch, whatever they hold now. */
	to = calloc(d->nconns + 1, sizeof(*to));
	if (!to) {
		cpuhpd_err("hotplug #%" PRIu64 ": out of memory telling its lease holders it ended",
		           h->seq);
		return;
	}
	cpuhpd_list_for_each(pos, &d->conns)
	{
		struct cpuhpd_conn *c = cpuhpd_container_of(pos, struct cpuhpd_conn, node);

		if (c->told_seq != h->seq)
			continue;
		c->told_seq = 0;
		cpuhpd_fdstore_conn_stale(c);
		marked = true;
		if (!c->watching)
			to[n++] = c;
	}
	/* Watchers only: their lines changed all the same. */
	if (marked && !n)
		cpuhpd_fdstore_changed(d);
	tell(d, h, &ev, to, n);
	free(to);
}

void cpuhpd_notice_save(const struct cpuhpd_conn *c, FILE *f)
{
	unsigned to = cpuhpd_route_saved(c);
	uint32_t delay = cpuhpd_fastpath_conn_delay(c);

	if (to || c->told_seq || delay)
		fprintf(f, "ready %u %u %" PRIu64 " %" PRIu32 "\n", c->id, to, c->told_seq, delay);
}

int cpuhpd_notice_adopt(struct cpuhpd_conn *c, const struct cpuhpd_saved_conn *sc)
{
	c->told_seq = sc->told_seq;
	/* Connections come back in the order they were accepted, the one named first. */
	if (sc->notices_to && cpuhpd_route_link(c, sc->notices_to))
		cpuhpd_debug("client %u: its notices stay here: client %u did not come back", c->id,
		             sc->notices_to);
	return 0;
}
