/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpd: the daemon object that every module of the daemon shares (each
 * module's state is a member), and start and stop.
 *
 * Threads: everything here belongs to the libuv loop thread, except what
 * sysfs/worker.h says the worker thread touches.  The loop thread never
 * blocks on sysfs or on the hotplug lock.
 */
#ifndef CPUHPD_H
#define CPUHPD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

/* Every module's state is a member: the layers are about calls, not data. */
#include "base/list.h"
#include "sysfs/cpus.h"
#include "sysfs/topology.h"
#include "sysfs/uevent.h"
#include "sysfs/view.h"
#include "sysfs/worker.h"
#include "core/admit.h"
#include "core/conn.h"
#include "core/counters.h"
#include "core/dispatch.h"
#include "core/fdstore.h"
#include "core/gate.h"
#include "core/server.h"
#include "core/snapshot.h"
#include "core/watch.h"
#include "leases/fastlease.h"
#include "leases/grace.h"
#include "leases/lease.h"
#include "leases/policy.h"
#include "leases/revoke.h"
#include "states/states.h"
#include "hotplug/freeze.h"
#include "hotplug/hotplug.h"
#include "hotplug/plan.h"
#include "ops/metrics.h"
#include "ops/statusline.h"

struct cpuhpd_options {
	const char *socket_path;
	const char *sysfs_root;
	const char *admin_group; /* NULL: only uid 0 may hotplug */
	gid_t admin_gid;
	mode_t socket_mode;
	const char *socket_group; /* NULL: the socket keeps the group bind() gives it */
	gid_t socket_gid;
	unsigned max_connections;
	/* admit.c: connection and memory bounds, the request timeout (0: none) */
	unsigned reserved_connections;
	unsigned max_connections_per_uid;
	size_t max_buffered;
	size_t max_buffered_per_uid;
	unsigned client_timeout_ms;
	const char *uevent_socket; /* NULL: kernel uevents only */
	const char *runtime_dir;   /* NULL: $RUNTIME_DIRECTORY, else the socket's directory */
	bool no_netlink;
	bool verbose;
	enum cpuhpd_fast_mode fast_path;
	unsigned max_lease_ms;          /* 0: leases may be held for ever (policy.h) */
	unsigned max_leases_per_uid;    /* 0: no limit per non-admin uid */
	unsigned max_delay_ms;          /* a delay lease's longest delay (revoke.h), at least 1 */
	unsigned max_states_per_uid;    /* 0: no states for a non-admin uid (states.h) */
	unsigned max_state_deadline_ms; /* a non-admin state's longest call deadline */
	const char *metrics_file;       /* NULL: none */
	unsigned metrics_interval_ms;   /* rewrite it this often; 0: only after each hotplug */
	unsigned fd_store_max;          /* 0: systemd's $FDSTORE (fdstore.h) */
	unsigned restart_grace_ms;      /* grace.h */
	/* The configuration file and its drop-ins (the plan reads them again at a reload). */
	const char *config_file;         /* NULL: none (the dispatch fuzzer) */
	bool config_missing_ok;          /* the default file, which may be missing */
	struct cpuhpd_plan_cmdline plan; /* --offline-cpus, --smt, --online-new-cpus */
};

struct cpuhpd {
	uv_loop_t *loop;
	struct cpuhpd_options opt;
	struct cpuhpd_server server;
	int instance_fd; /* the flock()ed lock file of our sysfs tree (instance.c) */
	/* What it said at start: the last cpuhpd's pid (0: none, or a clean stop; grace.h). */
	struct cpuhpd_instance_prev {
		long pid;
		bool handover; /* a restart's stop left these in the fd store */
		unsigned clients, leases;
	} instance_prev;
	/* "DIR/cpuhpd-DEV-INO": the lock file's path but ".lock", for files of the tree; or NULL */
	char *instance_stem;
	struct cpuhpd_list conns; /* struct cpuhpd_conn.node */
	unsigned nconns;
	unsigned next_conn_id;
	const struct cpuhpd_conn_hooks *conn_hooks;
	struct cpuhpd_dispatch dispatch;
	struct cpuhpd_admit admit;
	struct cpuhpd_gate gate;
	struct cpuhpd_leases leases;
	struct cpuhpd_freezes freezes;
	struct cpuhpd_policy policy;
	struct cpuhpd_revoke revoke;
	struct cpuhpd_fastpath fast;
	struct cpuhpd_hotplug hotplug;
	struct cpuhpd_plan plan;
	struct cpuhpd_states states;
	struct cpuhpd_worker worker;
	struct cpuhpd_watchers watch;
	struct cpuhpd_uevent uevent;
	struct cpuhpd_counters counters;
	struct cpuhpd_snapshot_hooks snapshot;
	struct cpuhpd_metrics metrics;
	struct cpuhpd_fdstore fdstore;
	struct cpuhpd_grace grace;
	struct cpuhpd_statusline statusline;
	/* Last view read by the worker; status answers from it, never from sysfs (view.h). */
	struct cpuhpd_cpus view;
	const cpuhpd_view_fn *view_subscribers;
	/* Each CPU's topology, read while online and remembered (topology.h): loop and worker. */
	struct cpuhpd_topology topology;
	uv_signal_t sigterm, sigint;
	bool stopping; /* cpuhpd_stop() ran: refuse new work */
	bool stopped;  /* cpuhpd_stop_finish() ran: handles are closing */
	/*
	 * SIGTERM with the fd store on (stop.c): exit leaving the clients to the
	 * next cpuhpd; requests read meanwhile are kept for it (dispatch.c).
	 */
	bool handover;
	/* adopt.c replays the hotplug a SIGKILLed cpuhpd had in its worker (worker.h's resume) */
	bool resuming;
	uv_timer_t handover_timer; /* looks whether the work the stop lets finish is done */
	uint64_t handover_until;   /* uv_now() when clients that read no replies are closed */
};

/* Bring the services up in order (start.c): 0 or a negative errno, logged. */
int cpuhpd_start(struct cpuhpd *d);

/* Begin an orderly stop (signal, or fatal error after start): see stop.c. */
void cpuhpd_stop(struct cpuhpd *d);

/* Called when the last hotplug left the worker during a stop: close what remains. */
void cpuhpd_stop_finish(struct cpuhpd *d);

#endif /* CPUHPD_H */
