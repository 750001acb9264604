/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One snapshot of the gauges; see snapshot.h. */
#include <string.h>

#include "cpuhpd.h"
#include "snapshot.h"

void cpuhpd_snapshot_plug(struct cpuhpd *d, const cpuhpd_gauge_fn *gauges,
                          void (*changed)(struct cpuhpd *d))
{
	d->snapshot.gauges = gauges;
	d->snapshot.changed = changed;
}

void cpuhpd_snapshot_take(const struct cpuhpd *d, struct cpuhpd_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	s->connections = d->nconns;
	s->writer = CPUHP__WRITER_STATE__WRITER_IDLE;
	for (const cpuhpd_gauge_fn *g = d->snapshot.gauges; g && *g; g++)
		(*g)(d, s);
}

void cpuhpd_snapshot_changed(struct cpuhpd *d)
{
	if (d->snapshot.changed)
		d->snapshot.changed(d);
}
