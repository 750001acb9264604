/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The gate; see gate.h. */
#include "cpuhpd.h"
#include "gate.h"

void cpuhpd_gate_plug(struct cpuhpd *d, const struct cpuhpd_gate_source *sources, unsigned n,
                      const struct cpuhpd_gate_engine *engine)
{
	d->gate.sources = sources;
	d->gate.nsources = n;
	d->gate.engine = engine;
	d->gate.closed = false;
}

static bool drained(const struct cpuhpd *d)
{
	for (unsigned i = 0; i < d->gate.nsources; i++)
		if (d->gate.sources[i].holding(d))
			return false;
	return true;
}

bool cpuhpd_gate_close(struct cpuhpd *d)
{
	const struct cpuhpd_gate *g = &d->gate;

	/* Closed first: a source that looks at the gate while it blocks sees it closed. */
	d->gate.closed = true;
	for (unsigned i = 0; i < g->nsources; i++)
		if (g->sources[i].block)
			g->sources[i].block(d);
	return drained(d);
}

void cpuhpd_gate_writer_done(struct cpuhpd *d)
{
	const struct cpuhpd_gate *g = &d->gate;

	for (unsigned i = 0; i < g->nsources; i++)
		if (g->sources[i].writer_done)
			g->sources[i].writer_done(d);
}

void cpuhpd_gate_open(struct cpuhpd *d)
{
	const struct cpuhpd_gate *g = &d->gate;

	d->gate.closed = false;
	/*
	 * In registration order, each letting in all that waited: nothing
	 * closes the gate again before the last one is done (the next hotplug
	 * becomes active only after this returns).
	 */
	for (unsigned i = 0; i < g->nsources; i++)
		if (g->sources[i].unblock)
			g->sources[i].unblock(d);
}

bool cpuhpd_gate_closed(const struct cpuhpd *d)
{
	return d->gate.closed;
}

void cpuhpd_gate_check(struct cpuhpd *d)
{
	if (d->gate.closed && drained(d))
		d->gate.engine->drained(d);
}

void cpuhpd_gate_counted(struct cpuhpd *d)
{
	cpuhpd_gate_check(d);
	/* Still closed and held: the hotplug's deadline, maybe passed meanwhile, counts again. */
	d->gate.engine->counted(d);
}

bool cpuhpd_gate_counting(const struct cpuhpd *d)
{
	const struct cpuhpd_gate *g = &d->gate;

	if (!g->closed)
		return false;
	for (unsigned i = 0; i < g->nsources; i++)
		if (g->sources[i].counting && g->sources[i].counting(d))
			return true;
	return false;
}

bool cpuhpd_gate_awaits(const struct cpuhpd *d, pid_t pid)
{
	const struct cpuhpd_gate *g = &d->gate;

	if (!g->closed)
		return false;
	for (unsigned i = 0; i < g->nsources; i++)
		if (g->sources[i].awaits && g->sources[i].awaits(d, pid))
			return true;
	return false;
}
