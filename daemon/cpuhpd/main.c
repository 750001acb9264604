/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpd: the CPU hotplug daemon.  It owns the writer side of the hotplug
 * lock for every process on the machine: clients take reader leases over a
 * Unix socket, and the daemon takes CPUs online or offline through sysfs only
 * while no lease is held.  This file is main: options, start, run, exit.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cpuhp/version.h>

#include "cpuhpd.h"
#include "base/instance.h"
#include "base/log.h"
#include "base/notify.h"
#include "options.h"

/* Every client holds a socket: 1,000 clients need more than the usual soft limit of 1024. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			cpuhpd_warn("cannot raise the open-files limit: %m");
	}
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct cpuhpd *d = s->data;

	cpuhpd_info("%s received", signum == SIGTERM ? "SIGTERM" : "SIGINT");
	cpuhpd_stop(d);
}

/* The services (start.c), then the signals that stop them. */
static int start(struct cpuhpd *d)
{
	char *online;
	int err = cpuhpd_start(d);

	if (err)
		return err;
	uv_signal_init(d->loop, &d->sigterm);
	uv_signal_init(d->loop, &d->sigint);
	d->sigterm.data = d->sigint.data = d;
	uv_signal_start(&d->sigterm, on_signal, SIGTERM);
	uv_signal_start(&d->sigint, on_signal, SIGINT);
	online = cpuhpd_cpus_to_str(&d->view.online);
	cpuhpd_info("cpuhpd %s listening on %s%s (mode %04o), sysfs %s, online CPUs %s",
	            CPUHP_VERSION_STRING, d->opt.socket_path,
	            d->server.activated ? " (socket activation)" : "", (unsigned)d->opt.socket_mode,
	            d->opt.sysfs_root, online ? online : "?");
	free(online);
	return 0;
}

int main(int argc, char **argv)
{
	static struct cpuhpd d;
	int r;

	r = cpuhpd_options_parse(argc, argv, &d.opt);
	if (r)
		return r > 0 ? 0 : 2;
	cpuhpd_log_set_verbose(d.opt.verbose);
	/* A client that vanishes mid-reply must cost an EPIPE, not the daemon. */
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	d.loop = uv_default_loop();
	/* Before anything is served or bound: a second daemon touches nothing. */
	if (cpuhpd_instance_lock(&d))
		return 1;
	if (start(&d)) {
		/* Nothing has been served yet: exit without an orderly stop. */
		if (d.server.open && !d.server.activated)
			cpuhpd_server_stop(&d);
		cpuhpd_worker_stop(&d);
		return 1;
	}
	cpuhpd_notify("READY=1");
	uv_run(d.loop, UV_RUN_DEFAULT);
	if (d.handover) {
		/* Nothing closed: the fd store keeps every client for the next cpuhpd (stop.c). */
		cpuhpd_info("stopped; the clients are in the fd store");
		return 0;
	}
	uv_loop_close(d.loop);
	cpuhpd_info("stopped");
	return 0;
}
