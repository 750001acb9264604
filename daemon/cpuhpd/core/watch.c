/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Event fan-out to watching clients; see watch.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "conn.h"
#include "fdstore.h"
#include "watch.h"

int cpuhpd_watch_init(struct cpuhpd *d)
{
	cpuhpd_list_init(&d->watch.list);
	return 0;
}

static void watch(struct cpuhpd_conn *c, uint64_t req_id)
{
	c->watching = true;
	c->watch_id = req_id;
	c->watch_seq = c->d->watch.seq;
	cpuhpd_list_add_tail(&c->d->watch.list, &c->watch_node);
}

void cpuhpd_watch_start(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	uint64_t req_id = req->id;
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__WatchStarted ws = CPUHP__WATCH_STARTED__INIT;

	if (c->watching) {
		cpuhpd_conn_send_error(c, req_id, EALREADY,
		                       "this connection already watches (request %" PRIu64
		                       "); one watch per connection",
		                       c->watch_id);
		return;
	}
	watch(c, req_id);
	cpuhpd_fdstore_conn_changed(c);
	r.id = req_id;
	r.body_case = CPUHP__RESPONSE__BODY_WATCH_STARTED;
	r.watch_started = &ws;
	cpuhpd_conn_send(c, &r);
}

int cpuhpd_watch_adopt(struct cpuhpd_conn *c, const struct cpuhpd_saved_conn *sc)
{
	if (sc->watch_id)
		watch(c, sc->watch_id);
	return 0;
}

void cpuhpd_watch_conn_gone(struct cpuhpd_conn *c)
{
	if (!c->watching)
		return;
	cpuhpd_list_del(&c->watch_node);
	c->watching = false;
	c->d->watch.gen++;
}

void cpuhpd_watch_event(struct cpuhpd *d, Cpuhp__Event *ev)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	uint64_t seq = ++d->watch.seq;
	struct cpuhpd_list *pos;
	uint64_t gen;

	r.body_case = CPUHP__RESPONSE__BODY_EVENT;
	r.event = ev;
	/*
	 * A send can close its connection, and what that sets off (leases
	 * ending, a hotplug dropped, leases granted) can close others: any of
	 * them may be the next node.  So restart the walk whenever the list
	 * changed, skipping those that already have this event.
	 */
again:
	gen = d->watch.gen;
	cpuhpd_list_for_each(pos, &d->watch.list)
	{
		struct cpuhpd_conn *c = cpuhpd_container_of(pos, struct cpuhpd_conn, watch_node);

		if (c->watch_seq == seq)
			continue;
		c->watch_seq = seq;
		r.id = c->watch_id;
		cpuhpd_conn_send(c, &r);
		if (d->watch.gen != gen)
			goto again;
	}
}

void cpuhpd_watch_hotplug_started(struct cpuhpd *d, const char *cpus, bool online)
{
	Cpuhp__Event ev = CPUHP__EVENT__INIT;
	Cpuhp__HotplugStarted hs = CPUHP__HOTPLUG_STARTED__INIT;

	hs.cpus = (char *)cpus;
	hs.online = online;
	ev.kind_case = CPUHP__EVENT__KIND_HOTPLUG_STARTED;
	ev.hotplug_started = &hs;
	cpuhpd_watch_event(d, &ev);
}

void cpuhpd_watch_hotplug_finished(struct cpuhpd *d, const char *cpus, bool online, bool ok,
                                   Cpuhp__CpuResult **results, unsigned nresults)
{
	Cpuhp__Event ev = CPUHP__EVENT__INIT;
	Cpuhp__HotplugFinished hf = CPUHP__HOTPLUG_FINISHED__INIT;

	hf.cpus = (char *)cpus;
	hf.online = online;
	hf.ok = ok;
	hf.results = results;
	hf.n_results = nresults;
	ev.kind_case = CPUHP__EVENT__KIND_HOTPLUG_FINISHED;
	ev.hotplug_finished = &hf;
	cpuhpd_watch_event(d, &ev);
}

void cpuhpd_watch_online_changed(struct cpuhpd *d, const char *online, bool external)
{
	Cpuhp__Event ev = CPUHP__EVENT__INIT;
	Cpuhp__OnlineChanged oc = CPUHP__ONLINE_CHANGED__INIT;

	cpuhpd_info("online CPUs now %s%s", online, external ? " (changed outside cpuhpd)" : "");
	oc.online = (char *)online;
	oc.external = external;
	ev.kind_case = CPUHP__EVENT__KIND_ONLINE_CHANGED;
	ev.online_changed = &oc;
	cpuhpd_watch_event(d, &ev);
}

/* "CPU 4 is now present (offline)": @set's CPUs that are (@online) in @of, in one line. */
static void log_present(const struct cpuhp_cpuset *set, const struct cpuhp_cpuset *of, bool online,
                        bool added)
{
	struct cpuhp_cpuset part;
	char *list;
	bool one;

	cpuhp_cpuset_zero(&part);
	for (int cpu = -1; (cpu = cpuhp_cpuset_next(set, cpu)) >= 0;)
		if (cpuhp_cpuset_has(of, (unsigned)cpu) == online)
			cpuhp_cpuset_add(&part, (unsigned)cpu);
	if (!cpuhp_cpuset_count(&part))
		return;
	list = cpuhpd_cpus_to_str(&part);
	one = cpuhp_cpuset_count(&part) == 1;
	if (added)
		cpuhpd_info("CPU%s %s %s now present (%s)", one ? "" : "s", list ? list : "?",
		            one ? "is" : "are", online ? "online" : "offline");
	else
		cpuhpd_info("CPU%s %s %s no longer present (%s %s)", one ? "" : "s",
		            list ? list : "?", one ? "is" : "are", one ? "it was" : "they were",
		            online ? "online" : "offline");
	free(list);
}

/* A CPU hot-added or removed: logged, and told to the watchers. */
static void present_changed(struct cpuhpd *d, const struct cpuhpd_view_change *ch)
{
	Cpuhp__Event ev = CPUHP__EVENT__INIT;
	Cpuhp__PresentChanged pc = CPUHP__PRESENT_CHANGED__INIT;
	char *present = cpuhpd_cpus_to_str(&d->view.present);
	char *added = cpuhpd_cpus_to_str(&ch->added);
	char *removed = cpuhpd_cpus_to_str(&ch->removed);
	char *online = cpuhpd_cpus_to_str(&d->view.online);

	log_present(&ch->added, &d->view.online, false, true);
	log_present(&ch->added, &d->view.online, true, true);
	log_present(&ch->removed, &ch->online_was, false, false);
	log_present(&ch->removed, &ch->online_was, true, false);
	if (present && added && removed && online) {
		pc.present = present;
		pc.added = added;
		pc.removed = removed;
		pc.online = online;
		ev.kind_case = CPUHP__EVENT__KIND_PRESENT_CHANGED;
		ev.present_changed = &pc;
		cpuhpd_watch_event(d, &ev);
	} else {
		cpuhpd_warn("out of memory: watchers were not told that the present CPUs changed");
	}
	free(present);
	free(added);
	free(removed);
	free(online);
}

void cpuhpd_watch_view_changed(struct cpuhpd *d, const struct cpuhpd_view_change *ch)
{
	if (ch->present_changed)
		present_changed(d, ch);
	/* A hotplug's own change is announced after its HotplugFinished, by the hotplug. */
	if (ch->external && ch->changed && ch->now)
		cpuhpd_watch_online_changed(d, ch->now, true);
}
