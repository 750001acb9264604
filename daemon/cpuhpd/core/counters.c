/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What cpuhpd counts; see counters.h. */
#include "errmap.h"

#include "cpuhpd.h"
#include "counters.h"

const double cpuhpd_counters_bucket_le[CPUHPD_COUNTERS_NBUCKETS] = {
    0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300,
};

void cpuhpd_counters_observe(struct cpuhpd_histogram *h, double seconds)
{
	unsigned i = 0;

	while (i < CPUHPD_COUNTERS_NBUCKETS && seconds > cpuhpd_counters_bucket_le[i])
		i++;
	if (i < CPUHPD_COUNTERS_NBUCKETS)
		h->bucket[i]++;
	h->count++;
	h->sum += seconds;
}

void cpuhpd_counters_hotplug(struct cpuhpd *d, enum cpuhpd_hp_kind kind,
                             enum cpuhpd_hp_result result, uint64_t waited_ns)
{
	d->counters.hotplugs[kind][result]++;
	cpuhpd_counters_observe(&d->counters.hotplug_duration, (double)waited_ns / 1e9);
}

void cpuhpd_counters_error(struct cpuhpd *d, int err)
{
	unsigned code = (unsigned)cpuhp__errmap_to_wire(err);

	d->counters.errors[code < 64 ? code : 0]++;
}
