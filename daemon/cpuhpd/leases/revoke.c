/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Leases revoked for a pending hotplug; see revoke.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "core/conn.h"
#include "core/gate.h"
#include "fastlease.h"
#include "policy.h"
#include "revoke.h"

static void timer_cb(uv_timer_t *t);

int cpuhpd_revoke_init(struct cpuhpd *d)
{
	d->revoke.seq = 0;
	return uv_timer_init(d->loop, &d->revoke.timer);
}

void cpuhpd_revoke_close(struct cpuhpd *d)
{
	uv_close((uv_handle_t *)&d->revoke.timer, NULL);
}

/*
 * The earliest end of a delay still running, or UINT64_MAX.  With
 * @now_due, revoke the first lease or region whose delay is over instead:
 * Return: 0 then, once something was revoked (the caller walks again,
 * since telling its holder can close connections).
 */
static uint64_t walk(struct cpuhpd *d, bool now_due)
{
	uint64_t first = UINT64_MAX, now = uv_now(d->loop), at = d->revoke.noticed_at;
	struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &d->conns)
	{
		struct cpuhpd_conn *c = cpuhpd_container_of(pos, struct cpuhpd_conn, node);
		uint32_t fast_delay = cpuhpd_fastpath_conn_delay(c);

		for (unsigned i = 0; i < c->nleases; i++) {
			uint64_t end = at + c->leases[i].delay_ms;

			if (!c->leases[i].delay_ms)
				continue;
			if (now_due && end <= now) {
				cpuhpd_policy_revoke(c, i, CPUHP__REVOKE_REASON__REVOKE_DELAY,
				                     d->revoke.seq);
				return 0;
			}
			if (end < first)
				first = end;
		}
		if (!fast_delay || !cpuhpd_fastpath_conn_waited(c))
			continue;
		if (now_due && at + fast_delay <= now) {
			uint64_t since = c->fast_since;
			unsigned n = cpuhpd_fastpath_revoke(c);

			if (!n)
				continue; /* released meanwhile */
			cpuhpd_policy_revoked_fast(c, n, since, fast_delay,
			                           CPUHP__REVOKE_REASON__REVOKE_DELAY,
			                           d->revoke.seq);
			return 0;
		}
		if (at + fast_delay < first)
			first = at + fast_delay;
	}
	return first;
}

static void arm(struct cpuhpd *d)
{
	uint64_t first = d->revoke.seq ? walk(d, false) : UINT64_MAX, now = uv_now(d->loop);

	if (first == UINT64_MAX)
		uv_timer_stop(&d->revoke.timer);
	else
		uv_timer_start(&d->revoke.timer, timer_cb, first > now ? first - now : 0, 0);
}

static void timer_cb(uv_timer_t *t)
{
	struct cpuhpd *d = cpuhpd_container_of(t, struct cpuhpd, revoke.timer);
	bool any = false;

	while (d->revoke.seq && walk(d, true) == 0)
		any = true;
	/* The hotplug may go on now, which ends the pending (cpuhpd_revoke_over()). */
	if (any)
		cpuhpd_gate_check(d);
	arm(d);
}

void cpuhpd_revoke_pending(struct cpuhpd *d, uint64_t seq, uint64_t noticed_at)
{
	d->revoke.seq = seq;
	d->revoke.noticed_at = noticed_at;
	arm(d);
}

void cpuhpd_revoke_over(struct cpuhpd *d)
{
	d->revoke.seq = 0;
	uv_timer_stop(&d->revoke.timer);
}

static void row_free(Cpuhp__LeaseInfo *li)
{
	if (!li)
		return;
	free(li->comm);
	free(li->who);
	free(li->why);
	free(li);
}

void cpuhpd_revoke_list_free(Cpuhp__LeaseInfo **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		row_free(list[i]);
	free(list);
}

/* A row of the forced hotplug's reply: @c's socket lease @l, or (NULL) its @n fast leases. */
static Cpuhp__LeaseInfo *row(const struct cpuhpd_conn *c, const struct cpuhpd_lease *l, unsigned n,
                             uint64_t now)
{
	Cpuhp__LeaseInfo *li = calloc(1, sizeof(*li));
	const char *who = l && l->who ? l->who : c->who ? c->who : "";
	const char *why = l && l->why ? l->why : c->why ? c->why : "";
	uint64_t since = l ? l->since : c->fast_since;
	uint32_t delay = l ? l->delay_ms : cpuhpd_fastpath_conn_delay(c);

	if (!li)
		return NULL;
	cpuhp__lease_info__init(li);
	li->lease_id = l ? l->id : 0;
	li->kind = l ? CPUHP__LEASE_KIND__LEASE_SOCKET : CPUHP__LEASE_KIND__LEASE_FAST;
	li->count = l ? 1 : n;
	li->pid = (uint32_t)c->peer.pid;
	li->uid = (uint32_t)c->peer.uid;
	li->comm = strdup(c->peer.comm);
	li->who = strdup(who);
	li->why = strdup(why);
	li->held_ms = since && now > since ? now - since : 0;
	li->connection = c->id;
	li->mode = delay ? CPUHP__LEASE_MODE__LEASE_DELAY : CPUHP__LEASE_MODE__LEASE_BLOCK;
	li->delay_ms = delay;
	if (!li->comm || !li->who || !li->why) {
		row_free(li);
		return NULL;
	}
	return li;
}

/* What a forced hotplug revoked, for its reply. */
struct rows {
	Cpuhp__LeaseInfo **v;
	size_t n, cap;
	bool oom; /* a row could not be made: the list is incomplete */
};

static void add(struct rows *r, Cpuhp__LeaseInfo *li)
{
	if (li && r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		Cpuhp__LeaseInfo **v = realloc(r->v, cap * sizeof(*v));

		if (v) {
			r->v = v;
			r->cap = cap;
		}
	}
	if (li && r->n < r->cap) {
		r->v[r->n++] = li;
	} else {
		row_free(li);
		r->oom = true;
	}
}

size_t cpuhpd_revoke_all(struct cpuhpd *d, uint64_t seq, Cpuhp__LeaseInfo ***out)
{
	uint64_t now = uv_now(d->loop);
	struct rows r = {0};
	struct cpuhpd_list *pos;

	/* Telling a holder can close connections: walk again after each revocation. */
again:
	cpuhpd_list_for_each(pos, &d->conns)
	{
		struct cpuhpd_conn *c = cpuhpd_container_of(pos, struct cpuhpd_conn, node);

		if (c->nleases) {
			add(&r, row(c, &c->leases[0], 1, now));
			cpuhpd_policy_revoke(c, 0, CPUHP__REVOKE_REASON__REVOKE_FORCED, seq);
			goto again;
		}
		if (cpuhpd_fastpath_conn_waited(c)) {
			uint64_t since = c->fast_since;
			uint32_t delay = cpuhpd_fastpath_conn_delay(c);
			Cpuhp__LeaseInfo *li = row(c, NULL, cpuhpd_fastpath_conn_held(c), now);
			unsigned n = cpuhpd_fastpath_revoke(c);

			if (!n) { /* released meanwhile */
				row_free(li);
				continue;
			}
			if (li)
				li->count = n;
			add(&r, li);
			cpuhpd_policy_revoked_fast(c, n, since, delay,
			                           CPUHP__REVOKE_REASON__REVOKE_FORCED, seq);
			goto again;
		}
	}
	cpuhpd_info("hotplug #%" PRIu64 " forced: %zu holder(s) revoked%s", seq, r.n,
	            r.oom ? " (out of memory listing them all)" : "");
	*out = r.v;
	return r.n;
}
