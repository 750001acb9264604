/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reader leases: cpuhp_client_lease_acquire() and _release(), a fast lease
 * first (client-fastpath.h, inline, no lock) and otherwise a socket lease;
 * a named lease (_acquire_as) and the asynchronous acquires, on
 * connections of their own (call.c), whose leases the handle holds
 * (held.c).
 */
#include <errno.h>
#include <stdio.h>

#include "client-fastpath.h"
#include "client-internal.h"

#define LEASE_LOST_FMT                                                                             \
	"lease %#llx died with the connection to cpuhpd (the daemon stopped, died or closed "      \
	"it): CPUs may have changed since; reconnect"

int cpuhp__client_lease_lost(struct cpuhp_client *c, uint64_t id)
{
	char msg[CPUHP_CLIENT_MESSAGE_MAX];

	snprintf(msg, sizeof(msg), LEASE_LOST_FMT, (unsigned long long)id);
	return cpuhp__client_note(c, -ECONNRESET, msg);
}

void cpuhp__lease_mode(const struct cpuhp_client *c, Cpuhp__LeaseAcquire *acq)
{
	acq->mode = c->delay_ms ? CPUHP__LEASE_MODE__LEASE_DELAY : CPUHP__LEASE_MODE__LEASE_BLOCK;
	acq->delay_ms = c->delay_ms;
}

int cpuhp_client_set_lease_delay(struct cpuhp_client *c, unsigned delay_ms, unsigned *granted_ms)
{
	unsigned got = delay_ms;
	int ret;

	if ((ret = cpuhp__client_enter(c)) < 0)
		return ret;
	if (delay_ms && !c->max_delay_ms)
		return cpuhp__client_leave(
		    c, cpuhp__client_error(c, -EOPNOTSUPP,
		                           "this cpuhpd is too old for delay leases (it says no "
		                           "--max-delay-ms); its leases are all block leases"));
	/* The fast path's region has its mode for life, and so do leases held. */
	if (atomic_load_explicit(&c->fast, memory_order_relaxed) || c->nfb)
		return cpuhp__client_leave(
		    c, cpuhp__client_error(c, -EBUSY,
		                           "this handle took leases already: set the lease "
		                           "delay before its first lease (or on a new handle)"));
	if (got > c->max_delay_ms)
		got = c->max_delay_ms;
	c->delay_ms = got;
	if (granted_ms)
		*granted_ms = got;
	return cpuhp__client_leave(c, 0);
}

/* End socket lease @id held on @c's own connection, under ->lock. */
static int socket_release_locked(struct cpuhp_client *c, uint64_t id)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__LeaseRelease rel = CPUHP__LEASE_RELEASE__INIT;

	rel.lease_id = id;
	req.body_case = CPUHP__REQUEST__BODY_LEASE_RELEASE;
	req.lease_release = &rel;
	return cpuhp__client_request_locked(c, &req, CPUHP__RESPONSE__BODY_LEASE_RELEASED, NULL,
	                                    NULL);
}

static int take_granted(struct cpuhp_client *c, const Cpuhp__Response *resp, void *arg)
{
	uint64_t id = resp->lease_granted->lease_id;
	/* Known, so that its release after the connection ended says so. */
	int ret = cpuhp__held_add(c, id, NULL, false);

	if (ret == 0)
		*(uint64_t *)arg = id;
	else
		socket_release_locked(c, id);
	return ret;
}

/* A socket lease on @c itself: the handle has no fast path. */
static int socket_acquire(struct cpuhp_client *c, unsigned timeout_ms, uint64_t *lease_id)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__LeaseAcquire acq = CPUHP__LEASE_ACQUIRE__INIT;

	acq.timeout_ms = timeout_ms;
	cpuhp__lease_mode(c, &acq);
	req.body_case = CPUHP__REQUEST__BODY_LEASE_ACQUIRE;
	req.lease_acquire = &acq;
	return cpuhp__client_request(c, &req, CPUHP__RESPONSE__BODY_LEASE_GRANTED, take_granted,
	                             lease_id);
}

/* Everything but a fast lease granted at the first try: out of line, so that has no frame. */
static int acquire_waiting(struct cpuhp_client *c, struct cpuhp__fast *f, unsigned timeout_ms,
                           uint64_t *lease_id)
{
	int ret;

	if (!f && c->fast_offered) {
		ret = cpuhp__client_fast_get(c, &f);
		if (ret < 0)
			return ret;
		if (f && cpuhp__fast_acquire(c, f, lease_id) == 0)
			return 0;
	}
	if (f)
		return cpuhp__fast_slow_acquire(c, f, timeout_ms, lease_id);
	return socket_acquire(c, timeout_ms, lease_id);
}

__attribute__((noinline, cold)) static int
acquire_slow(struct cpuhp_client *c, struct cpuhp__fast *f, unsigned timeout_ms, uint64_t *lease_id)
{
	int ret;

	/* A fork child: the handle's connection and leases are its parent's (fork.c). */
	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	/* It may wait: close on another thread must wake it, and free @c only after. */
	if (cpuhp__client_get(c) < 0)
		return cpuhp__client_note(c, -ECANCELED, CPUHP__CANCELED_MSG);
	ret = acquire_waiting(c, f, timeout_ms, lease_id);
	/* A lease got meanwhile is in @c's table (or its region): close ends it. */
	if (cpuhp__client_closing(c))
		ret = cpuhp__client_note(c, -ECANCELED, CPUHP__CANCELED_MSG);
	cpuhp__client_put(c);
	return ret;
}

int cpuhp_client_lease_acquire(struct cpuhp_client *c, unsigned timeout_ms, uint64_t *lease_id)
{
	/* No lock, no message: the handle's lock may be held by a call waiting for a hotplug. */
	struct cpuhp__fast *f = atomic_load_explicit(&c->fast, memory_order_acquire);

	if (__builtin_expect(f != NULL, 1) && cpuhp__fast_acquire(c, f, lease_id) == 0)
		return 0;
	return acquire_slow(c, f, timeout_ms, lease_id);
}

__attribute__((noinline, cold)) static int release_slow(struct cpuhp_client *c,
                                                        struct cpuhp__fast *f, uint64_t lease_id)
{
	struct cpuhp_client *w = NULL;
	bool known;
	int ret;

	(void)f;
	if (cpuhp__client_forked(c)) {
		cpuhp__client_forked_error(c);
		return -ESRCH;
	}
	known = cpuhp__held_take(c, lease_id, false, &w);
	if (w) {
		/* Held on a connection of its own (call.c): its only lease. */
		ret = cpuhp_client_lease_release(w, lease_id);
		if (ret < 0 && cpuhp__client_conn_ended(w))
			ret = cpuhp__client_lease_lost(c, lease_id);
		/* The daemon's words (revoked, stale) are for the caller of @c. */
		else if (ret < 0)
			cpuhp__client_note(c, ret, cpuhp_client_last_message(w));
		cpuhp_client_close(w);
		return ret;
	}
	if ((ret = cpuhp__client_enter(c)) < 0)
		return ret;
	/* Died with the connection: no round trip to a daemon that is gone. */
	if (known && atomic_load_explicit(&c->ended, memory_order_relaxed))
		return cpuhp__client_leave(c, cpuhp__client_error(c, -ECONNRESET, LEASE_LOST_FMT,
		                                                  (unsigned long long)lease_id));
	ret = socket_release_locked(c, lease_id);
	if (ret < 0 && known && atomic_load_explicit(&c->ended, memory_order_relaxed))
		ret = cpuhp__client_error(c, -ECONNRESET, LEASE_LOST_FMT,
		                          (unsigned long long)lease_id);
	return cpuhp__client_leave(c, ret);
}

/* A fast id on a handle without the fast path: nothing to end. */
__attribute__((noinline, cold)) static int release_unknown(struct cpuhp_client *c,
                                                           uint64_t lease_id)
{
	int ret;

	if (cpuhp__client_forked(c)) {
		cpuhp__client_forked_error(c);
		return -ESRCH;
	}
	/* Revoked with its region, which the handle has not replaced (yet). */
	if (atomic_load_explicit(&c->retired, memory_order_acquire))
		return cpuhp__fast_release_refused(c, NULL, lease_id);
	if ((ret = cpuhp__client_enter(c)) < 0)
		return ret;
	return cpuhp__client_leave(c, cpuhp__client_error(c, -ESRCH,
	                                                  "no fast lease %#llx on this handle (it "
	                                                  "has no fast path; the id is from "
	                                                  "another handle)",
	                                                  (unsigned long long)lease_id));
}

int cpuhp_client_lease_release(struct cpuhp_client *c, uint64_t lease_id)
{
	struct cpuhp__fast *f = atomic_load_explicit(&c->fast, memory_order_acquire);

	if (__builtin_expect((lease_id & CPUHP_CLIENT_FAST_LEASE) != 0, 1))
		return f ? cpuhp__fast_release(c, f, lease_id) : release_unknown(c, lease_id);
	return release_slow(c, f, lease_id);
}

int cpuhp__client_lease_begin_own(struct cpuhp_client *c, unsigned timeout_ms, const char *who,
                                  const char *why, struct cpuhp_client_call **out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__LeaseAcquire acq = CPUHP__LEASE_ACQUIRE__INIT;
	char hwho[CPUHP_CLIENT_IDENTITY_MAX + 1], hwhy[CPUHP_CLIENT_IDENTITY_MAX + 1];

	cpuhp__identity_names(c, &who, &why, &hwho, &hwhy);
	acq.who = (char *)who;
	acq.why = (char *)why;
	acq.timeout_ms = timeout_ms;
	cpuhp__lease_mode(c, &acq);
	req.body_case = CPUHP__REQUEST__BODY_LEASE_ACQUIRE;
	req.lease_acquire = &acq;
	return cpuhp__call_begin(c, &req, CPUHP__RESPONSE__BODY_LEASE_GRANTED, out);
}

int cpuhp_client_lease_acquire_begin(struct cpuhp_client *c, unsigned timeout_ms,
                                     struct cpuhp_client_call **out)
{
	struct cpuhp__fast *f;
	uint64_t id;
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	/* Acquire: pairs with the release that publishes c->fast (fastpath.c). */
	f = atomic_load_explicit(&c->fast, memory_order_acquire);
	if (!f && c->fast_offered) {
		ret = cpuhp__client_fast_get(c, &f);
		if (ret < 0)
			return ret;
	}
	if (!f)
		return cpuhp__client_lease_begin_own(c, timeout_ms, NULL, NULL, out);
	ret = cpuhp__fast_acquire(c, f, &id);
	if (ret != 0)
		ret = cpuhp__fast_try(c, f, timeout_ms, &id);
	if (ret < 0)
		return ret;
	if (ret == 1 && cpuhp__client_in_state_cb)
		return cpuhp__client_deadlk(c);
	if (ret == 1)
		return cpuhp__client_lease_begin_own(c, timeout_ms, NULL, NULL, out);
	ret = cpuhp__call_granted(c, id, out);
	if (ret < 0)
		cpuhp_client_lease_release(c, id);
	return ret;
}

int cpuhp_client_lease_acquire_as_begin(struct cpuhp_client *c, unsigned timeout_ms,
                                        const char *who, const char *why,
                                        struct cpuhp_client_call **out)
{
	int ret;

	if ((ret = cpuhp__identity_check(c, who, why)) < 0)
		return ret;
	return cpuhp__client_lease_begin_own(c, timeout_ms, who, why, out);
}

int cpuhp_client_call_lease_acquire(const struct cpuhp_client_call *call, uint64_t *lease_id)
{
	return cpuhp__call_id(call, CPUHP__RESPONSE__BODY_LEASE_GRANTED, lease_id);
}

int cpuhp_client_lease_acquire_as(struct cpuhp_client *c, unsigned timeout_ms, const char *who,
                                  const char *why, uint64_t *lease_id)
{
	struct cpuhp_client_call *call;
	uint64_t id;
	int ret;

	if (cpuhp__client_get(c) < 0)
		return cpuhp__client_note(c, -ECANCELED, CPUHP__CANCELED_MSG);
	ret = cpuhp_client_lease_acquire_as_begin(c, timeout_ms, who, why, &call);
	if (ret == 0) {
		ret = cpuhp__client_call_wait(call);
		if (ret == 0)
			ret = cpuhp_client_call_lease_acquire(call, &id);
		if (ret < 0)
			cpuhp__client_note(c, ret, cpuhp_client_call_message(call));
		cpuhp_client_call_free(call);
	}
	/* As in acquire_slow(): a lease got meanwhile ends with @c. */
	if (cpuhp__client_closing(c))
		ret = cpuhp__client_note(c, -ECANCELED, CPUHP__CANCELED_MSG);
	else if (ret == 0)
		*lease_id = id;
	cpuhp__client_put(c);
	return ret;
}
