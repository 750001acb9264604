/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Events: cpuhp_client_watch(), the queue of events that arrive while a
 * call waits for its reply (request.c queues them), and
 * cpuhp_client_next_event(), which turns them into the public struct and
 * adds the client's own: LOST (the queue overflowed) and LEASES_LOST (the
 * connection ended with leases held, counted by conn.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client-internal.h"
#include "errmap.h"

void cpuhp__client_queue_event(struct cpuhp_client *c, Cpuhp__Response *ev)
{
	if (c->qlen == CPUHP_CLIENT_EVENT_QUEUE_MAX) {
		c->lost++;
		cpuhp__response__free_unpacked(ev, NULL);
		return;
	}
	c->queue[(c->qhead + c->qlen) % CPUHP_CLIENT_EVENT_QUEUE_MAX] = ev;
	c->qlen++;
}

/* The oldest queued event; NULL if none. */
static Cpuhp__Response *dequeue_event(struct cpuhp_client *c)
{
	Cpuhp__Response *ev;

	if (!c->qlen)
		return NULL;
	ev = c->queue[c->qhead];
	c->qhead = (c->qhead + 1) % CPUHP_CLIENT_EVENT_QUEUE_MAX;
	c->qlen--;
	return ev;
}

void cpuhp__client_events_free(struct cpuhp_client *c)
{
	Cpuhp__Response *ev;

	while ((ev = dequeue_event(c)))
		cpuhp__response__free_unpacked(ev, NULL);
}

int cpuhp_client_watch(struct cpuhp_client *c)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__Watch w = CPUHP__WATCH__INIT;
	int ret;

	if ((ret = cpuhp__client_enter(c)) < 0)
		return ret;
	if (c->watch_id)
		return cpuhp__client_leave(
		    c, cpuhp__client_error(c, -EALREADY, "this connection already watches"));
	req.body_case = CPUHP__REQUEST__BODY_WATCH;
	req.watch = &w;
	ret =
	    cpuhp__client_request_locked(c, &req, CPUHP__RESPONSE__BODY_WATCH_STARTED, NULL, NULL);
	if (ret == 0)
		c->watch_id = req.id;
	return cpuhp__client_leave(c, ret);
}

/* 1 with @ev filled; 0 for an event kind this client does not know; -EPROTO. */
static int convert_event(struct cpuhp_client *c, const Cpuhp__Event *in,
                         struct cpuhp_client_event *ev)
{
	size_t i;
	int ret;

	memset(ev, 0, sizeof(*ev));
	switch (in->kind_case) {
	case CPUHP__EVENT__KIND_HOTPLUG_STARTED:
		ev->type = CPUHP_CLIENT_EVENT_HOTPLUG_STARTED;
		ev->online = in->hotplug_started->online;
		ret = cpuhp__client_parse_cpus(c, "hotplug", in->hotplug_started->cpus, &ev->cpus);
		break;
	case CPUHP__EVENT__KIND_HOTPLUG_FINISHED:
		ev->type = CPUHP_CLIENT_EVENT_HOTPLUG_FINISHED;
		ev->online = in->hotplug_finished->online;
		ev->ok = in->hotplug_finished->ok;
		ret = cpuhp__client_parse_cpus(c, "hotplug", in->hotplug_finished->cpus, &ev->cpus);
		for (i = 0; ret == 0 && i < in->hotplug_finished->n_results; i++) {
			const Cpuhp__CpuResult *r = in->hotplug_finished->results[i];

			if (!r->ok && cpuhp_cpuset_add(&ev->failed, r->cpu) < 0)
				ret = cpuhp__client_error(c, -EPROTO, "cpuhpd sent CPU %u", r->cpu);
		}
		break;
	case CPUHP__EVENT__KIND_ONLINE_CHANGED:
		ev->type = CPUHP_CLIENT_EVENT_ONLINE_CHANGED;
		ev->external = in->online_changed->external;
		ret = cpuhp__client_parse_cpus(c, "online", in->online_changed->online,
		                               &ev->online_cpus);
		break;
	case CPUHP__EVENT__KIND_PRESENT_CHANGED: {
		const Cpuhp__PresentChanged *pc = in->present_changed;

		ev->type = CPUHP_CLIENT_EVENT_PRESENT_CHANGED;
		ev->external = true;
		ret = cpuhp__client_parse_cpus(c, "present", pc->present, &ev->present_cpus);
		if (ret == 0)
			ret = cpuhp__client_parse_cpus(c, "added", pc->added, &ev->added);
		if (ret == 0)
			ret = cpuhp__client_parse_cpus(c, "removed", pc->removed, &ev->removed);
		if (ret == 0)
			ret = cpuhp__client_parse_cpus(c, "online", pc->online, &ev->online_cpus);
		break;
	}
	case CPUHP__EVENT__KIND_LEASE_REVOKED: {
		const Cpuhp__LeaseRevoked *rv = in->lease_revoked;

		ev->type = CPUHP_CLIENT_EVENT_LEASE_REVOKED;
		ev->lease_id = rv->lease_id;
		ev->held_ms = rv->held_ms;
		ev->max_lease_ms = rv->max_lease_ms;
		ev->revoke_reason = rv->reason == CPUHP__REVOKE_REASON__REVOKE_DELAY
		                        ? CPUHP_CLIENT_REVOKED_DELAY
		                    : rv->reason == CPUHP__REVOKE_REASON__REVOKE_FORCED
		                        ? CPUHP_CLIENT_REVOKED_FORCED
		                        : CPUHP_CLIENT_REVOKED_MAX_LEASE;
		ev->hotplug_id = rv->hotplug_id;
		ev->fast = rv->fast;
		ev->count = rv->fast ? rv->count : 1;
		ev->delay_ms = rv->delay_ms;
		ret = 0;
		break;
	}
	case CPUHP__EVENT__KIND_HOTPLUG_PENDING: {
		const Cpuhp__HotplugPending *hp = in->hotplug_pending;

		ev->type = CPUHP_CLIENT_EVENT_HOTPLUG_PENDING;
		ev->hotplug_id = hp->hotplug_id;
		ev->online = hp->online;
		snprintf(ev->smt, sizeof(ev->smt), "%s", hp->smt);
		ev->timeout_ms = hp->timeout_ms;
		ev->force = hp->force;
		ev->force_grace_ms = hp->force_grace_ms;
		ret = cpuhp__client_parse_cpus(c, "hotplug", hp->cpus, &ev->cpus);
		break;
	}
	case CPUHP__EVENT__KIND_HOTPLUG_CANCELLED: {
		const Cpuhp__HotplugCancelled *hc = in->hotplug_cancelled;

		ev->type = CPUHP_CLIENT_EVENT_HOTPLUG_CANCELLED;
		ev->hotplug_id = hc->hotplug_id;
		ev->online = hc->online;
		snprintf(ev->smt, sizeof(ev->smt), "%s", hc->smt);
		ev->error = cpuhp__errmap_from_wire(hc->code);
		snprintf(ev->message, sizeof(ev->message), "%s", hc->message);
		ret = cpuhp__client_parse_cpus(c, "hotplug", hc->cpus, &ev->cpus);
		break;
	}
	case CPUHP__EVENT__KIND_LEASE_BYPASSED:
		ev->type = CPUHP_CLIENT_EVENT_LEASE_BYPASSED;
		ev->external = true;
		ev->leases = in->lease_bypassed->leases;
		ret = cpuhp__client_parse_cpus(c, "online", in->lease_bypassed->online,
		                               &ev->online_cpus);
		break;
	default:
		return 0; /* a newer daemon's event: skip it */
	}
	return ret < 0 ? ret : 1;
}

/* The next event from the queue or the socket, skipping kinds we do not know. */
static int next_event_locked(struct cpuhp_client *c, int timeout_ms, struct cpuhp_client_event *ev)
{
	for (;;) {
		Cpuhp__Response *resp = dequeue_event(c);
		int ret;

		if (!resp && c->lost) {
			memset(ev, 0, sizeof(*ev));
			ev->type = CPUHP_CLIENT_EVENT_LOST;
			ev->lost = c->lost;
			c->lost = 0;
			return 0;
		}
		/* After the events that came before the end, and once. */
		if (!resp && c->leases_lost_pending) {
			memset(ev, 0, sizeof(*ev));
			ev->type = CPUHP_CLIENT_EVENT_LEASES_LOST;
			ev->leases = c->leases_lost;
			c->leases_lost_pending = false;
			return 0;
		}
		if (!resp) {
			if (c->dead)
				return cpuhp__client_dead_error(c);
			/* Calls read until their reply, so no reply can be pending here. */
			ret = cpuhp__client_read(c, timeout_ms, &resp);
			if (ret < 0 && c->leases_lost_pending)
				continue;
			if (ret < 0)
				return ret;
			if (resp->body_case == CPUHP__RESPONSE__BODY_ERROR && resp->id == 0) {
				/* About the connection (shutdown...), which the daemon now closes.
				 */
				ret = cpuhp__client_take_error(c, resp->error);
				cpuhp__response__free_unpacked(resp, NULL);
				cpuhp__client_end(c, ret, c->message);
				if (c->leases_lost_pending)
					continue;
				return ret;
			}
			if (resp->body_case != CPUHP__RESPONSE__BODY_EVENT ||
			    (resp->id != c->watch_id && resp->id != 0)) {
				cpuhp__response__free_unpacked(resp, NULL);
				return cpuhp__client_kill(c, -EPROTO,
				                          "cpuhpd sent a reply nobody asked for");
			}
		}
		ret = convert_event(c, resp->event, ev);
		cpuhp__response__free_unpacked(resp, NULL);
		if (ret != 0)
			return ret < 0 ? ret : 0;
	}
}

int cpuhp_client_next_event(struct cpuhp_client *c, int timeout_ms, struct cpuhp_client_event *ev)
{
	/* Over 3 KiB of masks: filled on the heap so @ev stays untouched on failure. */
	struct cpuhp_client_event *tmp;
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	tmp = malloc(sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	if ((ret = cpuhp__client_enter(c)) < 0) {
		free(tmp);
		return ret;
	}
	/* Without a watch only notices come (id 0): take those that are there. */
	if (!c->watch_id && timeout_ms != 0 && !c->qlen && !c->leases_lost_pending)
		ret = cpuhp__client_error(c, -EINVAL,
		                          "not watching: call cpuhp_client_watch() first (or ask "
		                          "with a timeout of 0 for the notices only)");
	else
		ret = next_event_locked(c, timeout_ms, tmp);
	if (ret == 0)
		memcpy(ev, tmp, sizeof(*ev));
	free(tmp);
	return cpuhp__client_leave(c, ret);
}
