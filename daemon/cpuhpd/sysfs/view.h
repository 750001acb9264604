/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The loop's view of the CPUs (d->view, cpus.h), and who hears that it
 * changed.  Read at start; after that only the worker reads sysfs, and
 * what it read comes here through cpuhpd_view_update(): after every
 * hotplug (hotplug/replies.c) and after uevents (uevent.c).  The
 * subscribers (the feature table lists them, table.c) hear of every
 * update, in their order:
 * metrics count an external change, watchers get PresentChanged (a CPU
 * hot-added or removed) and OnlineChanged, lease
 * holders hear of a bypass, hotplug states are reconciled.  A hotplug's own
 * change reaches the watchers from the hotplug, after its HotplugFinished,
 * and the states when the hotplug ends (cpuhpd_states_hotplug_end()).
 *
 * Loop thread only.
 */
#ifndef CPUHPD_VIEW_H
#define CPUHPD_VIEW_H

#include <stdbool.h>

#include <cpuhp/cpuset.h>

struct cpuhpd;
struct cpuhpd_cpus;

struct cpuhpd_view_change {
	/* Not cpuhpd's doing: a re-read after uevents.  A hotplug's own update is not. */
	bool external;
	bool changed; /* the online set differs from the last view */
	/* When changed: the online sets before and now as lists (NULL if out of memory). */
	const char *was, *now;
	/*
	 * The present set differs from the last view: a CPU was hot-added or
	 * removed.  cpuhpd never does that, so whichever read saw it (a
	 * uevent's, or a hotplug's that ran meanwhile) tells it.
	 */
	bool present_changed;
	struct cpuhp_cpuset added, removed;  /* when present_changed */
	struct cpuhp_cpuset online_was;      /* the online set before */
	char smt_was[CPUHP_SMT_CONTROL_MAX]; /* smt/control's word before */
};

typedef void (*cpuhpd_view_fn)(struct cpuhpd *d, const struct cpuhpd_view_change *ch);

/* Start: read the view from sysfs (logged on failure).  Return: 0 or -errno. */
int cpuhpd_view_start(struct cpuhpd *d);

/* Start: the subscribers, NULL-terminated, called in this order. */
void cpuhpd_view_plug(struct cpuhpd *d, const cpuhpd_view_fn *subscribers);

/*
 * The worker read @v: it is the view now; tell every subscriber.
 * Return: whether the online set changed.
 */
bool cpuhpd_view_update(struct cpuhpd *d, const struct cpuhpd_cpus *v, bool external);

#endif /* CPUHPD_VIEW_H */
