/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Changes made behind the daemon's back (chcpu, SMT control, suspend) are
 * noticed from kernel uevents: ACTION=online|offline|add|remove with
 * DEVPATH=/devices/system/cpu/cpuN on NETLINK_KOBJECT_UEVENT (group 1, sender
 * must be the kernel).  Each one makes the worker re-read the view; if the
 * online set differs from the daemon's copy, watchers get OnlineChanged with
 * external=true.  Re-reads coalesce: at most one queued behind the running one.
 *
 * Injection for simulated trees: with --uevent-socket PATH the daemon also
 * binds a Unix datagram socket at PATH (mode 0600) and treats every datagram
 * exactly like a kernel uevent, in the kernel's format:
 * "offline@/devices/system/cpu/cpu1\0ACTION=offline\0DEVPATH=/devices/system/cpu/cpu1\0".
 * A test changes the simulated cpuN/online, then sends that datagram.
 * Loop thread only.
 */
#ifndef CPUHPD_UEVENT_H
#define CPUHPD_UEVENT_H

#include <stdbool.h>

#include <uv.h>

#include "worker.h"

struct cpuhpd;

struct cpuhpd_uevent {
	int nl_fd, inj_fd;
	uv_poll_t nl_poll, inj_poll;
	bool nl_open, inj_open;
	struct cpuhpd_job refresh;
	bool busy;  /* refresh queued or running in the worker */
	bool again; /* another uevent came meanwhile: re-read once more */
};

/* Return: 0, or -errno after logging (only the injection socket is fatal). */
int cpuhpd_uevent_start(struct cpuhpd *d);
void cpuhpd_uevent_stop(struct cpuhpd *d);

/* Re-read the view in the worker (coalescing). */
void cpuhpd_uevent_refresh(struct cpuhpd *d);

#endif /* CPUHPD_UEVENT_H */
