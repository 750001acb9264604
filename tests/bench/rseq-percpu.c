/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Set-up and the slow paths of the rseq per-CPU counter (rseq-percpu.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cpuhp/cpuset.h>

#include "rseq-percpu.h"

bool pcpu__use_rseq;
#ifdef PCPU_COUNT_ABORTS
__thread unsigned long pcpu_aborts;
#endif

bool pcpu_rseq_enabled(void)
{
	/* glibc sets __rseq_size to 0 when it did not register rseq. */
	return __rseq_size >= PCPU_RSEQ_CS + 8;
}

/* One more than the highest possible CPU: every cpu_id the kernel reports is below it. */
static unsigned possible_cpus(void)
{
	struct cpuhp_cpuset *set = malloc(sizeof(*set));
	int cpu, last = -1;

	if (set && !cpuhp_sysfs_read_mask(NULL, CPUHP_MASK_POSSIBLE, set))
		for (cpu = cpuhp_cpuset_next(set, -1); cpu >= 0; cpu = cpuhp_cpuset_next(set, cpu))
			last = cpu;
	free(set);
	if (last < 0) {
		/* No sysfs (a container without /sys): the configured CPUs. */
		long n = sysconf(_SC_NPROCESSORS_CONF);

		return n > 0 ? (unsigned)n : 1;
	}
	return (unsigned)last + 1;
}

int pcpu_counter_init(struct pcpu_counter *c)
{
	unsigned n = possible_cpus();
	struct pcpu_slot *slots = aligned_alloc(BENCH_CACHELINE, (size_t)n * sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	memset(slots, 0, (size_t)n * sizeof(*slots));
	c->slots = slots;
	c->nslots = n;
	pcpu__use_rseq = pcpu_rseq_enabled();
	return 0;
}

void pcpu_counter_fini(struct pcpu_counter *c)
{
	free(c->slots);
	c->slots = NULL;
}

long pcpu_counter_sum(const struct pcpu_counter *c)
{
	long sum = 0;

	for (unsigned i = 0; i < c->nslots; i++)
		sum += __atomic_load_n(&c->slots[i].value, __ATOMIC_RELAXED);
	return sum;
}

void pcpu__add_fallback(struct pcpu_counter *c, long v)
{
	int cpu = sched_getcpu();

	if (cpu < 0 || (unsigned)cpu >= c->nslots)
		cpu = 0;
	/* Other threads on this or (after a migration) other CPUs share the slot. */
	__atomic_fetch_add(&c->slots[cpu].value, v, __ATOMIC_RELAXED);
}
