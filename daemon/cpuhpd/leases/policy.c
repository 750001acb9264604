/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Lease limits and bypass detection; see policy.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "core/conn.h"
#include "core/fdstore.h"
#include "core/gate.h"
#include "core/route.h"
#include "holders.h"
#include "policy.h"

static void timer_cb(uv_timer_t *t);

int cpuhpd_policy_init(struct cpuhpd *d)
{
	d->policy.revocations = d->policy.bypasses = 0;
	return uv_timer_init(d->loop, &d->policy.timer);
}

void cpuhpd_policy_close(struct cpuhpd *d)
{
	uv_close((uv_handle_t *)&d->policy.timer, NULL);
}

bool cpuhpd_policy_may_lease(struct cpuhpd_conn *c, uint64_t req_id)
{
	struct cpuhpd *d = c->d;
	struct cpuhpd_list *pos;
	unsigned n = 0;

	if (!d->opt.max_leases_per_uid || c->peer.admin)
		return true;
	/* Such a uid has no fast path (policy.h): its leases are all in the tables. */
	cpuhpd_list_for_each(pos, &d->conns)
	{
		const struct cpuhpd_conn *o = cpuhpd_container_of(pos, struct cpuhpd_conn, node);

		if (o->peer.uid == c->peer.uid && !o->closing)
			n += o->nleases + o->nwaiting_leases;
	}
	if (n < d->opt.max_leases_per_uid)
		return true;
	cpuhpd_conn_send_error(c, req_id, EDQUOT,
	                       "uid %u already holds or waits for %u lease(s), the limit per "
	                       "user (cpuhpd --max-leases-per-uid %u); release one first",
	                       (unsigned)c->peer.uid, n, d->opt.max_leases_per_uid);
	return false;
}

/* The oldest socket lease's deadline, or UINT64_MAX if none is held. */
static uint64_t first_deadline(struct cpuhpd *d)
{
	uint64_t first = UINT64_MAX;
	struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &d->conns)
	{
		const struct cpuhpd_conn *c = cpuhpd_container_of(pos, struct cpuhpd_conn, node);

		for (unsigned i = 0; i < c->nleases; i++)
			if (c->leases[i].since + d->opt.max_lease_ms < first)
				first = c->leases[i].since + d->opt.max_lease_ms;
	}
	return first;
}

static void arm(struct cpuhpd *d)
{
	uint64_t first = first_deadline(d), now = uv_now(d->loop);

	if (first == UINT64_MAX)
		uv_timer_stop(&d->policy.timer);
	else
		uv_timer_start(&d->policy.timer, timer_cb, first > now ? first - now : 0, 0);
}

void cpuhpd_policy_lease_granted(struct cpuhpd *d)
{
	/* A new lease's deadline is the latest of all: only an idle timer needs arming. */
	if (d->opt.max_lease_ms && !uv_is_active((uv_handle_t *)&d->policy.timer))
		arm(d);
}

/* Why a lease was revoked, in the words of a log line and of its release's error. */
static int why_revoked(char *buf, size_t size, const struct cpuhpd *d, Cpuhp__RevokeReason reason,
                       uint64_t hotplug_id, uint32_t delay_ms)
{
	switch (reason) {
	case CPUHP__REVOKE_REASON__REVOKE_DELAY:
		return snprintf(buf, size,
		                "a delay lease, and hotplug #%" PRIu64
		                " waited its delay of %" PRIu32 " ms after its notice",
		                hotplug_id, delay_ms);
	case CPUHP__REVOKE_REASON__REVOKE_FORCED:
		return snprintf(buf, size,
		                "hotplug #%" PRIu64 " was forced (cpuhpctl --force), and its grace "
		                "for the holders to let go is over",
		                hotplug_id);
	default:
		return snprintf(buf, size, "cpuhpd --max-lease-ms is %u", d->opt.max_lease_ms);
	}
}

/* Tell @c's client (where its notices go) that @rv was revoked. */
static void tell(struct cpuhpd_conn *c, Cpuhp__LeaseRevoked *rv)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Event ev = CPUHP__EVENT__INIT;

	ev.kind_case = CPUHP__EVENT__KIND_LEASE_REVOKED;
	ev.lease_revoked = rv;
	r.id = 0;
	r.body_case = CPUHP__RESPONSE__BODY_EVENT;
	r.event = &ev;
	cpuhpd_conn_send(cpuhpd_route_target(c), &r);
}

void cpuhpd_policy_revoke(struct cpuhpd_conn *c, unsigned i, Cpuhp__RevokeReason reason,
                          uint64_t hotplug_id)
{
	struct cpuhpd *d = c->d;
	struct cpuhpd_lease *l = &c->leases[i];
	Cpuhp__LeaseRevoked rv = CPUHP__LEASE_REVOKED__INIT;
	uint64_t now = uv_now(d->loop), held = now > l->since ? now - l->since : 0;
	char why[160];

	why_revoked(why, sizeof(why), d, reason, hotplug_id, l->delay_ms);
	cpuhpd_warn("lease %" PRIu64 " of client %u, pid %d (%s)%s%s%s, revoked after %" PRIu64
	            " ms: %s",
	            l->id, c->id, (int)c->peer.pid,
	            l->who   ? l->who
	            : c->who ? c->who
	                     : c->peer.comm,
	            l->why || c->why ? " '" : "",
	            l->why   ? l->why
	            : c->why ? c->why
	                     : "",
	            l->why || c->why ? "'" : "", held, why);
	c->revoked[c->revoked_next % CPUHPD_CONN_REVOKED_KEPT] =
	    (struct cpuhpd_revoked){.id = l->id,
	                            .held_ms = held,
	                            .hotplug_id = hotplug_id,
	                            .delay_ms = l->delay_ms,
	                            .reason = (uint8_t)reason};
	c->revoked_next++;
	rv.lease_id = l->id;
	rv.held_ms = held;
	rv.max_lease_ms =
	    reason == CPUHP__REVOKE_REASON__REVOKE_MAX_LEASE ? d->opt.max_lease_ms : 0;
	rv.reason = reason;
	rv.hotplug_id = hotplug_id;
	rv.delay_ms = l->delay_ms;
	free(l->who);
	free(l->why);
	c->leases[i] = c->leases[--c->nleases];
	d->leases.held--;
	d->policy.revocations++;
	cpuhpd_snapshot_changed(d);
	/* Gone from the stored state before its holder hears of it (fdstore.h). */
	cpuhpd_fdstore_conn_changed(c);
	tell(c, &rv);
}

void cpuhpd_policy_revoked_fast(struct cpuhpd_conn *c, unsigned n, uint64_t since,
                                uint32_t delay_ms, Cpuhp__RevokeReason reason, uint64_t hotplug_id)
{
	struct cpuhpd *d = c->d;
	Cpuhp__LeaseRevoked rv = CPUHP__LEASE_REVOKED__INIT;
	uint64_t now = uv_now(d->loop), held = since && now > since ? now - since : 0;
	char why[160];

	why_revoked(why, sizeof(why), d, reason, hotplug_id, delay_ms);
	cpuhpd_warn("%u fast lease(s) of client %u, pid %d (%s)%s%s%s, revoked: %s", n, c->id,
	            (int)c->peer.pid, c->who ? c->who : c->peer.comm, c->why ? " '" : "",
	            c->why ? c->why : "", c->why ? "'" : "", why);
	d->policy.revocations += n;
	cpuhpd_snapshot_changed(d);
	rv.fast = true;
	rv.count = n;
	rv.held_ms = held;
	rv.reason = reason;
	rv.hotplug_id = hotplug_id;
	rv.delay_ms = delay_ms;
	tell(c, &rv);
}

static void timer_cb(uv_timer_t *t)
{
	struct cpuhpd *d = cpuhpd_container_of(t, struct cpuhpd, policy.timer);
	uint64_t now = uv_now(d->loop);
	struct cpuhpd_list *pos;
	bool any = false;

	/* A notice can close its connection (and free it): walk again after each. */
again:
	cpuhpd_list_for_each(pos, &d->conns)
	{
		struct cpuhpd_conn *c = cpuhpd_container_of(pos, struct cpuhpd_conn, node);

		for (unsigned i = 0; i < c->nleases && !c->closing; i++) {
			if (c->leases[i].since + d->opt.max_lease_ms <= now) {
				cpuhpd_policy_revoke(c, i, CPUHP__REVOKE_REASON__REVOKE_MAX_LEASE,
				                     0);
				any = true;
				goto again;
			}
		}
	}
	if (any)
		cpuhpd_gate_check(d); /* a hotplug may have waited for those */
	arm(d);
}

bool cpuhpd_policy_release_revoked(struct cpuhpd_conn *c, uint64_t req_id, uint64_t lease_id)
{
	for (unsigned i = 0; i < CPUHPD_CONN_REVOKED_KEPT; i++) {
		struct cpuhpd_revoked *rv = &c->revoked[i];

		char why[160];

		if (rv->id != lease_id || !lease_id)
			continue;
		rv->id = 0;
		why_revoked(why, sizeof(why), c->d, (Cpuhp__RevokeReason)rv->reason, rv->hotplug_id,
		            rv->delay_ms);
		cpuhpd_conn_send_error(
		    c, req_id, ETIME,
		    "lease %" PRIu64 " was revoked after %" PRIu64
		    " ms, since %s: it was no longer "
		    "held from then on; %s",
		    lease_id, rv->held_ms, why,
		    rv->reason == CPUHP__REVOKE_REASON__REVOKE_MAX_LEASE
		        ? "hold leases for less, or ask the administrator for a longer limit"
		        : "let go of leases when a hotplug's notice comes (HotplugPending)");
		return true;
	}
	return false;
}

/* Tell @c that its @n leases were bypassed, and mark its socket ones. */
static void notify_bypass(struct cpuhpd_conn *c, unsigned n, const char *was, const char *now)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Event ev = CPUHP__EVENT__INIT;
	Cpuhp__LeaseBypassed bp = CPUHP__LEASE_BYPASSED__INIT;

	for (unsigned i = 0; i < c->nleases; i++)
		c->leases[i].bypassed = true;
	if (c->nleases)
		cpuhpd_fdstore_conn_changed(c); /* their release says so after a restart too */
	bp.online = (char *)now;
	bp.was = (char *)was;
	bp.leases = n;
	ev.kind_case = CPUHP__EVENT__KIND_LEASE_BYPASSED;
	ev.lease_bypassed = &bp;
	r.id = 0;
	r.body_case = CPUHP__RESPONSE__BODY_EVENT;
	r.event = &ev;
	cpuhpd_conn_send(c, &r);
}

void cpuhpd_policy_online_changed(struct cpuhpd *d, const char *was, const char *now)
{
	unsigned held = cpuhpd_holders_total(d);
	struct cpuhpd_list *pos;
	uint64_t told = 0;
	char who[400];

	if (!held)
		return;
	d->policy.bypasses++;
	cpuhpd_holders_describe(d, who, sizeof(who));
	cpuhpd_warn("CPUs changed behind cpuhpd's back (online %s, was %s) while %u lease(s) "
	            "were held: %s; the holders are told (an echo into sysfs, chcpu or firmware "
	            "bypassed the leases: hotplug through cpuhpd instead)",
	            now, was, held, who);
	/*
	 * A notice can close its connection: walk again after each, and tell
	 * each connection once, marked with this bypass's number.
	 */
again:
	cpuhpd_list_for_each(pos, &d->conns)
	{
		struct cpuhpd_conn *c = cpuhpd_container_of(pos, struct cpuhpd_conn, node);
		unsigned n = c->nleases + cpuhpd_fastpath_conn_held(c);

		if (c->closing || !n || c->bypass_seq == d->policy.bypasses)
			continue;
		c->bypass_seq = d->policy.bypasses;
		told++;
		notify_bypass(c, n, was, now);
		goto again;
	}
	cpuhpd_debug("bypass %" PRIu64 ": %" PRIu64 " connection(s) told", d->policy.bypasses,
	             told);
}

void cpuhpd_policy_gauges(const struct cpuhpd *d, struct cpuhpd_snapshot *s)
{
	s->bypasses = d->policy.bypasses;
	s->revocations = d->policy.revocations;
}

void cpuhpd_policy_view_changed(struct cpuhpd *d, const struct cpuhpd_view_change *ch)
{
	/* Not cpuhpd's doing: its hotplugs wait for every lease and re-read themselves. */
	if (!ch->external || !ch->changed)
		return;
	/*
	 * Every region, before the holders are counted: a fast lease taken as
	 * the change was noticed, whose count the sums may not show yet, is
	 * marked as surely as one taken long before.
	 */
	cpuhpd_fastpath_bypassed(d);
	if (ch->was && ch->now)
		cpuhpd_policy_online_changed(d, ch->was, ch->now);
}
