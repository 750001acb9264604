/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The gate: the one place a hotplug asks whether it may go on.
 *
 * Everything a hotplug must wait for is a source, registered once in the
 * feature table (table.c) in the order the gate walks them: the fast
 * path, socket leases, hotplug-state registrations and removals (readers
 * too), the restart grace.  Each says whether it holds anything now, and
 * may be told when the gate closes and opens.
 *
 *   OPEN    no hotplug is active: readers (leases, registrations) go in.
 *   CLOSED  a hotplug is active (cpuhpd_gate_close()): new readers wait,
 *           and the hotplug goes on once no source holds anything: at
 *           once (cpuhpd_gate_close() says so), or later through the
 *           engine's drained callback, when a source that let go calls
 *           cpuhpd_gate_check().
 *
 * CLOSED -> OPEN (cpuhpd_gate_open(), when the hotplug finished, timed out
 * or was cancelled) unblocks every source in registration order, so what
 * waited is let in, in that order and each in its arrival order, before
 * the next hotplug may close the gate again: every reader that waited on
 * hotplug H is in before a later hotplug H2 starts.  This is writer
 * preference with fairness: a stream of readers cannot starve a hotplug,
 * and a stream of hotplugs cannot starve a reader.
 *
 * Loop thread only.
 */
#ifndef CPUHPD_GATE_H
#define CPUHPD_GATE_H

#include <stdbool.h>
#include <sys/types.h>

struct cpuhpd;

struct cpuhpd_gate_source {
	const char *name; /* for the README and debuggers */
	/* Something a hotplug must wait for is held (or not known yet: ->counting). */
	bool (*holding)(const struct cpuhpd *d);
	/* Optional.  The gate closed: stop letting readers in. */
	void (*block)(struct cpuhpd *d);
	/*
	 * Optional.  The hotplug's writer section is over and its answer goes
	 * out next: readers that need no answer of cpuhpd may go in now.
	 */
	void (*writer_done)(struct cpuhpd *d);
	/* Optional.  The gate opened: let in what waited, in arrival order. */
	void (*unblock)(struct cpuhpd *d);
	/*
	 * Optional.  While closed: it does not know yet whether it holds
	 * anything (a barrier in flight), so no deadline can be judged.
	 */
	bool (*counting)(const struct cpuhpd *d);
	/* Optional.  The hotplug waits for process @pid now (a lease it asks for would never come).
	 */
	bool (*awaits)(const struct cpuhpd *d, pid_t pid);
};

/* The hotplug engine's side. */
struct cpuhpd_gate_engine {
	/* Closed, and no source holds anything any more: the hotplug may go on. */
	void (*drained)(struct cpuhpd *d);
	/* A source finished counting: the hotplug's deadline counts again. */
	void (*counted)(struct cpuhpd *d);
};

struct cpuhpd_gate {
	const struct cpuhpd_gate_source *sources; /* in registration order */
	unsigned nsources;
	const struct cpuhpd_gate_engine *engine;
	bool closed;
};

/* Start: the sources (@n of them, walked in this order) and the engine.  The gate is open. */
void cpuhpd_gate_plug(struct cpuhpd *d, const struct cpuhpd_gate_source *sources, unsigned n,
                      const struct cpuhpd_gate_engine *engine);

/*
 * cpuhpd_gate_close() - a hotplug became active: block every source.
 * Return: true if nothing is held (the hotplug may go on now); otherwise
 * the engine's ->drained comes once nothing is.
 */
bool cpuhpd_gate_close(struct cpuhpd *d);

/* The active hotplug's writer section ended, before its answer goes out. */
void cpuhpd_gate_writer_done(struct cpuhpd *d);

/* The active hotplug left: unblock every source, in registration order. */
void cpuhpd_gate_open(struct cpuhpd *d);

bool cpuhpd_gate_closed(const struct cpuhpd *d);

/* A source may hold less now: if closed and nothing is held, the engine's ->drained. */
void cpuhpd_gate_check(struct cpuhpd *d);

/* A source finished counting: cpuhpd_gate_check(), then the engine's ->counted. */
void cpuhpd_gate_counted(struct cpuhpd *d);

/* Closed, and some source does not know yet whether it holds anything. */
bool cpuhpd_gate_counting(const struct cpuhpd *d);

/* Closed, and the hotplug waits for process @pid (a reader of @pid would wait for ever). */
bool cpuhpd_gate_awaits(const struct cpuhpd *d, pid_t pid);

#endif /* CPUHPD_GATE_H */
