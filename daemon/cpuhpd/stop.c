/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Orderly stop on SIGTERM/SIGINT: stop accepting (the socket file goes
 * unless systemd owns it), answer ECANCELED to every lease and hotplug still
 * waiting, let a hotplug already writing sysfs finish (one still waiting for
 * in-process readers gives up as soon as it gets the lock), then close the
 * clients and every handle so that uv_run() returns and main exits 0.
 *
 * With the fd store on (fdstore.h), SIGTERM is a restart's first half
 * instead: the clients stay, in the store, for the next cpuhpd.  Nothing is
 * cancelled and nobody is told anything: fast acquires go to the socket,
 * requests read from now on are kept for the next daemon (dispatch.c), a
 * hotplug in the worker finishes (one still waiting for in-process readers
 * gives up with ECANCELED, "nothing was changed"), a state call in flight
 * is answered or cut after CPUHPD_STATES_STOP_GRACE_MS, replies are flushed (a client that does not
 * read them for a second is closed and taken out of the store: it sees EOF); then the state text is
 * written a last time and the process exits 0 without closing anything.
 */
#include <errno.h>

#include "cpuhpd.h"
#include "base/instance.h"
#include "base/log.h"
#include "base/notify.h"
#include "core/conn.h"
#include "leases/holders.h"
#include "states/states.h"
#include "table.h"

/* How long a restart waits for clients to take their replies. */
#define FLUSH_MS 1000
/* How often a restart looks whether the work it lets finish is done. */
#define POLL_MS 5

static bool keep_done(struct cpuhpd *d)
{
	struct cpuhpd_list *pos, *tmp;
	bool late = uv_now(d->loop) >= d->handover_until;

	if (cpuhpd_hotplug_in_worker(d) || cpuhpd_states_running(d))
		return false;
	cpuhpd_list_for_each_safe(pos, tmp, &d->conns)
	{
		struct cpuhpd_conn *c = cpuhpd_container_of(pos, struct cpuhpd_conn, node);

		if (!c->queued)
			continue;
		if (!late)
			return false;
		cpuhpd_conn_close(c, "restart: it did not read its replies; closed, so that it "
		                     "sees EOF");
	}
	return true;
}

static void keep_poll(uv_timer_t *t)
{
	struct cpuhpd *d = cpuhpd_container_of(t, struct cpuhpd, handover_timer);

	if (!keep_done(d))
		return;
	uv_timer_stop(t);
	cpuhpd_stop_finish(d);
}

/*
 * Whether a former client may count on what it held: a lease, a state, a
 * freeze.  If so, a next cpuhpd that does not get it back waits its grace.
 */
static bool holds_anything(struct cpuhpd *d)
{
	return cpuhpd_holders_total(d) || cpuhpd_states_any(d) || d->freezes.n;
}

/*
 * SIGTERM with the store on: see the top of this file.  Whether it is a
 * restart or a stop, only the service manager knows, by what it does with
 * the store next (a stop empties it): both are said.
 */
static void stop_keep(struct cpuhpd *d)
{
	cpuhpd_info(
	    "stopping: %u client(s) holding %u lease(s) go to the fd store: a restart "
	    "hands them to the next cpuhpd; a stop empties the store, and then their leases "
	    "end (the clients see EOF)",
	    d->nconns, cpuhpd_holders_total(d));
	d->handover = true;
	cpuhpd_notify("STOPPING=1");
	cpuhpd_features_run(d, cpuhpd_features.handover);
	d->handover_until = uv_now(d->loop) + FLUSH_MS;
	if (keep_done(d)) {
		cpuhpd_stop_finish(d);
		return;
	}
	/* Never closed: the process ends with the loop as it is (finish_keep). */
	uv_timer_init(d->loop, &d->handover_timer);
	uv_timer_start(&d->handover_timer, keep_poll, POLL_MS, POLL_MS);
}

/* The last of a restart's stop: the last state text, then leave the loop as it is. */
static void finish_keep(struct cpuhpd *d)
{
	cpuhpd_fdstore_finish(d);
	/* A stop that empties the store then ends nothing anyone counts on: no grace next. */
	if (holds_anything(d))
		cpuhpd_instance_handover(d, d->nconns, cpuhpd_holders_total(d));
	else
		cpuhpd_instance_clean(d);
	cpuhpd_info("state handed over to the fd store: %u client(s), %u lease(s)", d->nconns,
	            cpuhpd_holders_total(d));
	uv_stop(d->loop);
}

void cpuhpd_stop(struct cpuhpd *d)
{
	if (d->stopping) {
		cpuhpd_info("already stopping: waiting for the hotplug in progress");
		return;
	}
	d->stopping = true;
	/* The hotplug in the worker finishes; the stop goes on when it is back. */
	d->hotplug.settled = cpuhpd_stop_finish;
	if (cpuhpd_fdstore_keeps(d)) {
		stop_keep(d);
		return;
	}
	cpuhpd_info("stopping");
	cpuhpd_notify("STOPPING=1");
	cpuhpd_features_run(d, cpuhpd_features.stop);
	if (cpuhpd_hotplug_in_worker(d))
		cpuhpd_info("waiting for the hotplug in progress to finish");
	else
		cpuhpd_stop_finish(d);
}

void cpuhpd_stop_finish(struct cpuhpd *d)
{
	struct cpuhpd_list *n;

	if (d->stopped)
		return;
	if (d->handover) {
		if (keep_done(d)) {
			d->stopped = true;
			finish_keep(d);
		}
		return;
	}
	d->stopped = true;
	/* Nothing held that a former holder might still count on: no grace for the next one. */
	if (!holds_anything(d))
		cpuhpd_instance_clean(d);
	/* Id 0: the error concerns the connection, which closes (proto/FRAMING.md). */
	while ((n = cpuhpd_list_first(&d->conns))) {
		struct cpuhpd_conn *c = cpuhpd_container_of(n, struct cpuhpd_conn, node);

		cpuhpd_conn_send_error(c, 0, ECANCELED, "cpuhpd is shutting down");
		cpuhpd_conn_close(c, NULL);
	}
	cpuhpd_features_run(d, cpuhpd_features.close);
	uv_close((uv_handle_t *)&d->sigterm, NULL);
	uv_close((uv_handle_t *)&d->sigint, NULL);
}
