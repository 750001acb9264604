/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Watch: clients that sent Watch get every event (hotplug started/finished,
 * online set changed) as a Response carrying the Watch request's id.  Each
 * event goes through the client's bounded write queue (conn.h): a
 * watcher that stops reading is disconnected, never buffered without limit.
 * Loop thread only.
 */
#ifndef CPUHPD_WATCH_H
#define CPUHPD_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "cpuhp.pb-c.h"

#include "base/list.h"
#include "base/statetext.h"

struct cpuhpd;
struct cpuhpd_conn;
struct cpuhpd_view_change;

struct cpuhpd_watchers {
	struct cpuhpd_list list; /* struct cpuhpd_conn.watch_node */
	uint64_t seq;            /* numbers events, to send each once per watcher */
	uint64_t gen;            /* bumped when a watcher leaves */
};

/* Start: no watcher yet.  Return: 0. */
int cpuhpd_watch_init(struct cpuhpd *d);

/* Handle Watch: answers WatchStarted, or EALREADY on a second Watch. */
void cpuhpd_watch_start(struct cpuhpd_conn *c, const Cpuhp__Request *req);
void cpuhpd_watch_conn_gone(struct cpuhpd_conn *c);
/* A restart: if @sc watched before, @c gets the events from now on.  Return: 0. */
int cpuhpd_watch_adopt(struct cpuhpd_conn *c, const struct cpuhpd_saved_conn *sc);

/*
 * Send @ev to every watcher, once each, with its Watch id.  A send can
 * close connections; the walk survives it.
 */
void cpuhpd_watch_event(struct cpuhpd *d, Cpuhp__Event *ev);

void cpuhpd_watch_hotplug_started(struct cpuhpd *d, const char *cpus, bool online);
void cpuhpd_watch_hotplug_finished(struct cpuhpd *d, const char *cpus, bool online, bool ok,
                                   Cpuhp__CpuResult **results, unsigned nresults);
void cpuhpd_watch_online_changed(struct cpuhpd *d, const char *online, bool external);
/* The view's subscriber (view.h): watchers hear of an external change. */
void cpuhpd_watch_view_changed(struct cpuhpd *d, const struct cpuhpd_view_change *ch);

#endif /* CPUHPD_WATCH_H */
