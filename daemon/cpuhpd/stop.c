/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Orderly stop on SIGTERM/SIGINT: stop accepting (the socket file goes
 * unless systemd owns it), answer ECANCELED to every lease and hotplug still
 * waiting, let a hotplug already writing sysfs finish (one still waiting for
 * in-process readers gives up as soon as it gets the lock), then close the
 * clients and every handle so that uv_run() returns and main exits 0.
 */
#include <errno.h>

#include "cpuhpd.h"
#include "conn.h"
#include "log.h"
#include "notify.h"
#include "states.h"

void cpuhpd_stop(struct cpuhpd *d)
{
	bool in_worker;

	if (d->stopping) {
		cpuhpd_info("already stopping: waiting for the hotplug in progress");
		return;
	}
	d->stopping = true;
	cpuhpd_info("stopping");
	cpuhpd_notify("STOPPING=1");
	/* First: fast acquires go to the socket from now on, and get ECANCELED there. */
	cpuhpd_fastpath_stop(d);
	cpuhpd_server_stop(d);
	in_worker = cpuhpd_hotplug_cancel(d);
	cpuhpd_lease_cancel_waiters(d);
	cpuhpd_freeze_cancel(d);
	cpuhpd_states_cancel(d);
	if (in_worker)
		cpuhpd_info("waiting for the hotplug in progress to finish");
	else
		cpuhpd_stop_finish(d);
}

void cpuhpd_stop_finish(struct cpuhpd *d)
{
	struct cpuhpd_list *n;

	if (d->stopped)
		return;
	d->stopped = true;
	/* Id 0: the error concerns the connection, which closes (proto/FRAMING.md). */
	while ((n = cpuhpd_list_first(&d->conns))) {
		struct cpuhpd_conn *c = cpuhpd_container_of(n, struct cpuhpd_conn, node);

		cpuhpd_conn_send_error(c, 0, ECANCELED, "cpuhpd is shutting down");
		cpuhpd_conn_close(c, NULL);
	}
	cpuhpd_admit_close(d);
	cpuhpd_fastpath_close(d);
	cpuhpd_uevent_stop(d);
	cpuhpd_worker_stop(d);
	cpuhpd_lease_close(d);
	cpuhpd_policy_close(d);
	cpuhpd_hotplug_close(d);
	cpuhpd_states_close(d);
	cpuhpd_metrics_stop(d);
	cpuhpd_notify_status_close(d);
	uv_close((uv_handle_t *)&d->sigterm, NULL);
	uv_close((uv_handle_t *)&d->sigint, NULL);
}
