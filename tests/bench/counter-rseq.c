/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Counters alone, no lock: what one increment+decrement pair costs as a
 * restartable sequence on this CPU's slot, and as the atomic fallback
 * (sched_getcpu() and a lock-prefixed add).  Compare with the floor, a
 * per-thread counter.
 */
#include <errno.h>
#include <stdlib.h>

#include "rseq-percpu.h"

static int counter_init(void **out)
{
	struct pcpu_counter *c = malloc(sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	err = pcpu_counter_init(c);
	if (err) {
		free(c);
		return err;
	}
	*out = c;
	return 0;
}

static void counter_fini(void *lock)
{
	pcpu_counter_fini(lock);
	free(lock);
}

static inline void rseq_inc(struct pcpu_counter *c)
{
	pcpu_counter_add(c, 1);
}

static inline void rseq_dec(struct pcpu_counter *c)
{
	pcpu_counter_add(c, -1);
}

static inline void atomic_inc(struct pcpu_counter *c)
{
	pcpu__add_fallback(c, 1);
}

static inline void atomic_dec(struct pcpu_counter *c)
{
	pcpu__add_fallback(c, -1);
}

static void rseq_inc_op(void *c)
{
	rseq_inc(c);
}

static void rseq_dec_op(void *c)
{
	rseq_dec(c);
}

static void atomic_inc_op(void *c)
{
	atomic_inc(c);
}

static void atomic_dec_op(void *c)
{
	atomic_dec(c);
}

BENCH_DEFINE_READ_LOOP(rseq_loop, struct pcpu_counter, rseq_inc, rseq_dec)
BENCH_DEFINE_READ_LOOP(atomic_loop, struct pcpu_counter, atomic_inc, atomic_dec)

const struct bench_lock_ops bench_counter_rseq = {
    .name = "rseq-counter",
    .label = "counter: rseq per-CPU inc+dec",
    .init = counter_init,
    .fini = counter_fini,
    .read_lock = rseq_inc_op,
    .read_unlock = rseq_dec_op,
    .read_loop = rseq_loop,
    .uses_rseq = true,
    .note = "per-CPU counter pair only (no lock): restartable sequence; atomic fallback "
            "when glibc did not register rseq (as under valgrind).",
};

const struct bench_lock_ops bench_counter_atomic = {
    .name = "atomic-counter",
    .label = "counter: sched_getcpu+atomic",
    .init = counter_init,
    .fini = counter_fini,
    .read_lock = atomic_inc_op,
    .read_unlock = atomic_dec_op,
    .read_loop = atomic_loop,
    .note = "per-CPU counter pair only (no lock): the rseq counter's fallback.",
};
