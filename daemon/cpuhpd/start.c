/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bring the daemon's services up, in dependency order: the CPU view from
 * sysfs, the lease and hotplug state (and the fast path, whose shared
 * memory the server hands out), the sysfs worker thread, then the socket
 * and the uevent watch, which let the world in.  One place for main() and
 * the dispatch fuzzer, so that the fuzzer runs the daemon main() runs.
 */
#include <string.h>

#include "cpuhpd.h"
#include "adopt.h"
#include "admit.h"
#include "cpus.h"
#include "fastlease.h"
#include "fdstore.h"
#include "hotplug.h"
#include "lease.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "restart.h"
#include "server.h"
#include "states.h"
#include "uevent.h"
#include "worker.h"

int cpuhpd_start(struct cpuhpd *d)
{
	const char *which = NULL;
	uv_os_fd_t bound = -1;
	int err;

	/* First: LISTEN_FDS may hold a previous instance's clients (fdstore.h). */
	err = cpuhpd_fdstore_take(d);
	if (err)
		return err;
	err = cpuhpd_cpus_read(d->opt.sysfs_root, &d->view, &which);
	if (err) {
		cpuhpd_err("cannot read %s/devices/system/cpu/%s: %s; is --sysfs-root right?",
		           d->opt.sysfs_root, which, strerror(-err));
		return err;
	}
	cpuhpd_list_init(&d->conns);
	cpuhpd_list_init(&d->watch.list);
	cpuhpd_freeze_init(d);
	if ((err = cpuhpd_admit_init(d)) || (err = cpuhpd_lease_init(d)) ||
	    (err = cpuhpd_policy_init(d)) || (err = cpuhpd_hotplug_init(d)) ||
	    (err = cpuhpd_states_init(d)) || (err = cpuhpd_fastpath_start(d)))
		return err;
	err = cpuhpd_worker_start(d);
	if (err) {
		cpuhpd_err("cannot start the worker thread: %s", uv_strerror(err));
		return err;
	}
	err = cpuhpd_metrics_start(d);
	if (err) {
		cpuhpd_err("cannot start the --metrics-file timer: %s", uv_strerror(err));
		return err;
	}
	cpuhpd_notify_status_init(d);
	/* The previous instance's clients, before anyone new can come in. */
	if ((err = cpuhpd_adopt(d)) || (err = cpuhpd_server_start(d)))
		return err;
	if (!d->server.activated)
		uv_fileno((uv_handle_t *)&d->server.pipe, &bound);
	cpuhpd_fdstore_ready(d, bound);
	if ((err = cpuhpd_restart_start(d)) || (err = cpuhpd_uevent_start(d)))
		return err;
	return 0;
}
