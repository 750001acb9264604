/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The lease table (lease.h).  Invariant: waiters exist only while the gate
 * is closed, because opening it grants all of them before anything else
 * runs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "core/admit.h"
#include "core/conn.h"
#include "core/fdstore.h"
#include "core/gate.h"
#include "delay.h"

struct lease_waiter {
	struct cpuhpd_list node; /* in leases.waiters */
	struct cpuhpd_conn *conn;
	uint64_t req_id;
	uint64_t deadline; /* uv_now() milliseconds */
	uint32_t timeout_ms;
	char *who, *why;     /* the request's, for the lease; NULL: the connection's */
	uint64_t arrived_ns; /* uv_hrtime(), for the lease-wait histogram */
	uint32_t delay_ms;   /* as granted (cpuhpd_delay_grant()); 0: a block lease */
	bool clipped;
};

static void waiter_free(struct lease_waiter *w)
{
	free(w->who);
	free(w->why);
	free(w);
}

static void lease_fini(struct cpuhpd_lease *l)
{
	free(l->who);
	free(l->why);
	l->who = l->why = NULL;
}

int cpuhpd_lease_init(struct cpuhpd *d)
{
	struct cpuhpd_leases *l = &d->leases;

	l->next_id = 1;
	cpuhpd_list_init(&l->waiters);
	return uv_timer_init(d->loop, &l->timer);
}

void cpuhpd_lease_close(struct cpuhpd *d)
{
	uv_close((uv_handle_t *)&d->leases.timer, NULL);
}

/*
 * Grant a lease to @c, taking @who and @why (freed if @c is gone); it was
 * asked for at @arrived_ns (uv_hrtime()), with a delay of @delay_ms (0: a
 * block lease), less than asked if @clipped.
 */
static void grant(struct cpuhpd *d, struct cpuhpd_conn *c, uint64_t req_id, char *who, char *why,
                  uint64_t arrived_ns, uint32_t delay_ms, bool clipped)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__LeaseGranted g = CPUHP__LEASE_GRANTED__INIT;

	if (c->closing) {
		free(who);
		free(why);
		return;
	}
	g.lease_id = d->leases.next_id++;
	/* Count it before sending: a failed send closes c, which drops the lease again. */
	c->leases[c->nleases++] = (struct cpuhpd_lease){.id = g.lease_id,
	                                                .since = uv_now(d->loop),
	                                                .who = who,
	                                                .why = why,
	                                                .delay_ms = delay_ms};
	d->leases.held++;
	cpuhpd_policy_lease_granted(d);
	d->counters.leases_granted++;
	cpuhpd_counters_observe(&d->counters.lease_wait, (double)(uv_hrtime() - arrived_ns) / 1e9);
	cpuhpd_snapshot_changed(d);
	/* In the stored state before the client hears of it (fdstore.h). */
	cpuhpd_fdstore_conn_changed(c);
	g.mode = delay_ms ? CPUHP__LEASE_MODE__LEASE_DELAY : CPUHP__LEASE_MODE__LEASE_BLOCK;
	g.delay_ms = delay_ms;
	g.delay_clipped = clipped;
	r.id = req_id;
	r.body_case = CPUHP__RESPONSE__BODY_LEASE_GRANTED;
	r.lease_granted = &g;
	cpuhpd_conn_send(c, &r);
}

static void unlink_waiter(struct cpuhpd *d, struct lease_waiter *w)
{
	cpuhpd_list_del(&w->node);
	d->leases.nwaiters--;
	w->conn->nwaiting_leases--;
	w->conn->npending--;
	cpuhpd_fdstore_conn_changed(w->conn);
}

static void timer_cb(uv_timer_t *t);

/* Arm the timer for the earliest deadline; called after a waiter came or expired. */
static void arm(struct cpuhpd *d)
{
	struct cpuhpd_leases *l = &d->leases;
	struct cpuhpd_list *pos;
	uint64_t first = UINT64_MAX, now = uv_now(d->loop);

	cpuhpd_list_for_each(pos, &l->waiters)
	{
		struct lease_waiter *w = cpuhpd_container_of(pos, struct lease_waiter, node);

		if (w->deadline < first)
			first = w->deadline;
	}
	if (first == UINT64_MAX)
		uv_timer_stop(&l->timer);
	else
		uv_timer_start(&l->timer, timer_cb, first > now ? first - now : 0, 0);
}

static void timer_cb(uv_timer_t *t)
{
	struct cpuhpd *d = cpuhpd_container_of(t, struct cpuhpd, leases.timer);
	uint64_t now = uv_now(d->loop);
	struct cpuhpd_list *pos, *tmp;

	/*
	 * Answering a waiter can close its connection, which removes that
	 * connection's other waiters: restart the walk after every answer.
	 */
again:
	cpuhpd_list_for_each_safe(pos, tmp, &d->leases.waiters)
	{
		struct lease_waiter *w = cpuhpd_container_of(pos, struct lease_waiter, node);

		if (w->deadline > now)
			continue;
		unlink_waiter(d, w);
		d->counters.lease_timeouts++;
		cpuhpd_conn_send_error(w->conn, w->req_id, ETIMEDOUT,
		                       "no lease within %" PRIu32
		                       " ms: a CPU hotplug was waiting or running all that time",
		                       w->timeout_ms);
		waiter_free(w);
		goto again;
	}
	arm(d);
}

/* Queue a waiter (taking @who and @why); Return: it, or NULL (ENOMEM, both freed). */
static struct lease_waiter *add_waiter(struct cpuhpd_conn *c, uint64_t req_id, uint32_t timeout_ms,
                                       uint64_t deadline, char *who, char *why, uint32_t delay_ms,
                                       bool clipped)
{
	struct cpuhpd *d = c->d;
	struct lease_waiter *w = calloc(1, sizeof(*w));

	if (!w) {
		free(who);
		free(why);
		return NULL;
	}
	w->conn = c;
	w->req_id = req_id;
	w->timeout_ms = timeout_ms;
	w->deadline = deadline;
	w->who = who;
	w->why = why;
	w->arrived_ns = uv_hrtime();
	w->delay_ms = delay_ms;
	w->clipped = clipped;
	cpuhpd_list_add_tail(&d->leases.waiters, &w->node);
	d->leases.nwaiters++;
	c->nwaiting_leases++;
	c->npending++;
	/* Timeouts differ, so the newcomer's deadline may be the earliest. */
	arm(d);
	cpuhpd_fdstore_conn_changed(c);
	return w;
}

void cpuhpd_lease_acquire(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	const Cpuhp__LeaseAcquire *acq = req->lease_acquire;
	uint64_t req_id = req->id;
	struct cpuhpd *d = c->d;
	uint32_t timeout_ms = acq->timeout_ms;
	struct lease_waiter *w;
	bool clipped;
	uint32_t delay_ms = cpuhpd_delay_grant(d, acq->mode, acq->delay_ms, &clipped);

	if (c->nleases + c->nwaiting_leases >= CPUHPD_CONN_MAX_LEASES) {
		cpuhpd_conn_send_error(c, req_id, EDQUOT,
		                       "this connection already holds or waits for %u leases, the "
		                       "limit per connection; release one first",
		                       CPUHPD_CONN_MAX_LEASES);
		return;
	}
	if (!cpuhpd_policy_may_lease(c, req_id))
		return;
	if (!cpuhpd_gate_closed(d)) {
		grant(d, c, req_id, cpuhpd_identity_dup(acq->who), cpuhpd_identity_dup(acq->why),
		      uv_hrtime(), delay_ms, clipped);
		return;
	}
	/* Its hotplug waits for this very callback: the lease would never come. */
	if (cpuhpd_gate_awaits(d, c->peer.pid)) {
		cpuhpd_conn_send_error(c, req_id, EDEADLK,
		                       "a lease asked from inside a hotplug state callback would "
		                       "wait for ever (the hotplug waits for the callback); do not "
		                       "take leases in callbacks");
		return;
	}
	if (timeout_ms == 0) {
		d->counters.lease_busy++;
		cpuhpd_conn_send_error(c, req_id, EAGAIN,
		                       "a CPU hotplug is waiting or running; ask again, or ask "
		                       "with a timeout to wait for it");
		return;
	}
	if (!cpuhpd_conn_may_wait(c, req_id))
		return;
	w = add_waiter(c, req_id, timeout_ms, uv_now(d->loop) + timeout_ms,
	               cpuhpd_identity_dup(acq->who), cpuhpd_identity_dup(acq->why), delay_ms,
	               clipped);
	if (!w)
		cpuhpd_conn_send_error(c, req_id, ENOMEM, "cpuhpd is out of memory");
}

/* Return: 0 if @c does not hold it, 1 if it did, 2 if CPUs changed under it meanwhile. */
static int drop_lease(struct cpuhpd_conn *c, uint64_t lease_id)
{
	for (unsigned i = 0; i < c->nleases; i++) {
		if (c->leases[i].id == lease_id) {
			int ret = c->leases[i].bypassed ? 2 : 1;

			lease_fini(&c->leases[i]);
			c->leases[i] = c->leases[--c->nleases];
			c->d->leases.held--;
			cpuhpd_snapshot_changed(c->d);
			cpuhpd_fdstore_conn_changed(c);
			cpuhpd_admit_dropped(c->d); /* its names may be the last of many */
			return ret;
		}
	}
	return 0;
}

void cpuhpd_lease_release(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	uint64_t req_id = req->id, lease_id = req->lease_release->lease_id;
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__LeaseReleased rel = CPUHP__LEASE_RELEASED__INIT;
	struct cpuhpd *d = c->d;
	int held = drop_lease(c, lease_id);

	if (held == 2) {
		/* Released all the same; the error is the holder's warning (policy.h). */
		cpuhpd_conn_send_error(c, req_id, ESTALE,
		                       "lease %" PRIu64 " is released, but the online CPUs changed "
		                       "behind cpuhpd's back while it was held (sysfs written "
		                       "directly, chcpu, firmware): what it protected may be stale",
		                       lease_id);
		cpuhpd_gate_check(d);
		return;
	}
	if (!held && cpuhpd_policy_release_revoked(c, req_id, lease_id))
		return;
	if (!held) {
		cpuhpd_conn_send_error(c, req_id, ESRCH,
		                       "no lease %" PRIu64 " on this connection (leases belong to "
		                       "the connection that acquired them)",
		                       lease_id);
		return;
	}
	rel.lease_id = lease_id;
	r.id = req_id;
	r.body_case = CPUHP__RESPONSE__BODY_LEASE_RELEASED;
	r.lease_released = &rel;
	cpuhpd_conn_send(c, &r);
	cpuhpd_gate_check(d);
}

void cpuhpd_lease_conn_gone(struct cpuhpd_conn *c)
{
	struct cpuhpd *d = c->d;
	struct cpuhpd_list *pos, *tmp;
	unsigned had = c->nleases;

	cpuhpd_list_for_each_safe(pos, tmp, &d->leases.waiters)
	{
		struct lease_waiter *w = cpuhpd_container_of(pos, struct lease_waiter, node);

		if (w->conn == c) {
			unlink_waiter(d, w);
			waiter_free(w);
		}
	}
	for (unsigned i = 0; i < had; i++)
		lease_fini(&c->leases[i]);
	free(c->who);
	free(c->why);
	c->who = c->why = NULL;
	d->leases.held -= had;
	if (had)
		cpuhpd_snapshot_changed(d);
	c->nleases = 0;
	if (had)
		cpuhpd_debug("client %u: %u lease(s) ended with the connection", c->id, had);
	if (had)
		cpuhpd_gate_check(d);
}

void cpuhpd_lease_gauges(const struct cpuhpd *d, struct cpuhpd_snapshot *s)
{
	s->leases_held = d->leases.held;
	s->leases_waiting = d->leases.nwaiters;
}

bool cpuhpd_lease_holding(const struct cpuhpd *d)
{
	return d->leases.held != 0;
}

/*
 * Grant every waiter, in arrival order.  Pop one at a time: granting can
 * close a connection, which removes that connection's later waiters from
 * the list under us.
 */
static void grant_waiters(struct cpuhpd *d)
{
	struct cpuhpd_leases *l = &d->leases;
	struct cpuhpd_list *n;

	while ((n = cpuhpd_list_first(&l->waiters))) {
		struct lease_waiter *w = cpuhpd_container_of(n, struct lease_waiter, node);
		struct cpuhpd_conn *c = w->conn;
		uint64_t req_id = w->req_id;
		char *who = w->who, *why = w->why;
		uint64_t arrived_ns = w->arrived_ns;
		uint32_t delay_ms = w->delay_ms;
		bool clipped = w->clipped;

		unlink_waiter(d, w);
		free(w);
		grant(d, c, req_id, who, why, arrived_ns, delay_ms, clipped);
	}
	uv_timer_stop(&l->timer);
}

void cpuhpd_lease_unblock(struct cpuhpd *d)
{
	grant_waiters(d);
}

void cpuhpd_lease_cancel_waiters(struct cpuhpd *d)
{
	struct cpuhpd_list *n;

	while ((n = cpuhpd_list_first(&d->leases.waiters))) {
		struct lease_waiter *w = cpuhpd_container_of(n, struct lease_waiter, node);
		struct cpuhpd_conn *c = w->conn;
		uint64_t req_id = w->req_id;

		unlink_waiter(d, w);
		waiter_free(w);
		cpuhpd_conn_send_error(c, req_id, ECANCELED, "cpuhpd is shutting down");
	}
	uv_timer_stop(&d->leases.timer);
}

void cpuhpd_lease_save(const struct cpuhpd_conn *c, FILE *f)
{
	const struct cpuhpd_list *pos;

	for (unsigned i = 0; i < c->nleases; i++) {
		const struct cpuhpd_lease *l = &c->leases[i];

		fprintf(f, "lease %u %" PRIu64 " %" PRIu64 " %d", c->id, l->id, l->since,
		        l->bypassed);
		cpuhpd_statetext_str(f, l->who);
		cpuhpd_statetext_str(f, l->why);
		if (l->delay_ms)
			fprintf(f, " %" PRIu32, l->delay_ms);
		fputc('\n', f);
	}
	if (!c->nwaiting_leases)
		return;
	cpuhpd_list_for_each(pos, &c->d->leases.waiters)
	{
		const struct lease_waiter *w = cpuhpd_container_of(pos, struct lease_waiter, node);

		if (w->conn != c)
			continue;
		fprintf(f, "wait %u %" PRIu64 " %" PRIu64 " %" PRIu32, c->id, w->req_id,
		        w->deadline, w->timeout_ms);
		cpuhpd_statetext_str(f, w->who);
		cpuhpd_statetext_str(f, w->why);
		if (w->delay_ms)
			fprintf(f, " %" PRIu32, w->delay_ms);
		fputc('\n', f);
	}
}

int cpuhpd_lease_adopt(struct cpuhpd_conn *c, const struct cpuhpd_saved_conn *sc)
{
	struct cpuhpd *d = c->d;

	if (sc->nleases + sc->nwaits > CPUHPD_CONN_MAX_LEASES)
		return -E2BIG;
	for (unsigned i = 0; i < sc->nleases; i++) {
		const struct cpuhpd_saved_lease *s = &sc->leases[i];
		struct cpuhpd_lease *l = &c->leases[c->nleases];

		*l = (struct cpuhpd_lease){.id = s->id,
		                           .since = s->since,
		                           .bypassed = s->bypassed,
		                           .delay_ms = s->delay_ms};
		l->who = cpuhpd_identity_dup(s->who);
		l->why = cpuhpd_identity_dup(s->why);
		c->nleases++;
		d->leases.held++;
		if (s->id >= d->leases.next_id)
			d->leases.next_id = s->id + 1;
	}
	/* Still waiting, with the deadline they had: the gate decides anew. */
	for (unsigned i = 0; i < sc->nwaits; i++) {
		const struct cpuhpd_saved_wait *s = &sc->waits[i];

		if (!add_waiter(c, s->req_id, s->timeout_ms, s->deadline,
		                cpuhpd_identity_dup(s->who), cpuhpd_identity_dup(s->why),
		                s->delay_ms, false))
			return -ENOMEM;
	}
	return 0;
}

void cpuhpd_lease_adopted(struct cpuhpd *d)
{
	/* The gate opens at start: waiters that came back are granted, in their order. */
	if (!cpuhpd_gate_closed(d) && d->leases.nwaiters)
		grant_waiters(d);
}

void cpuhpd_lease_save_ids(const struct cpuhpd *d, struct cpuhpd_saved *ids)
{
	ids->next_lease_id = d->leases.next_id;
}

void cpuhpd_lease_adopt_ids(struct cpuhpd *d, const struct cpuhpd_saved *s)
{
	if (s->next_lease_id > d->leases.next_id)
		d->leases.next_id = s->next_lease_id;
}
