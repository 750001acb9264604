/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-thread counters and the registry of threads that hold them.
 *
 * Each counter (one per cpuhp_rwsem) has a small integer id; each thread has
 * a table of 64-slot chunks indexed by id, allocated when the thread first
 * touches a counter in that chunk.  A slot is written only by its thread
 * (a plain load and store, no lock prefix), so readers on different CPUs
 * never write the same cache line.  The value of a counter is the sum of its
 * slots in every registered thread plus ->shared.
 *
 * Invariants:
 *  - A thread's ->chunks/->nchunks change only in that thread, under the
 *    registry lock; other threads read them only under the registry lock.
 *  - When a thread exits, its non-zero slots move into ->shared under the
 *    registry lock, so a sum (also under that lock) never sees half a move.
 *  - A counter's slots are all zero while its id is free: destroy clears them.
 *  - The registry lock is never taken inside an RCU read-side section
 *    (synchronize_rcu() holds liburcu's registry lock while it waits for
 *    readers, and registration takes liburcu's lock under ours).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

__thread struct cpuhp__thread *cpuhp__self CPUHP__TLS_IE;
__thread struct cpuhp__slot *cpuhp__chunk0 CPUHP__TLS_IE;
CPUHP_EXPORT __thread long *cpuhp__inline_slots CPUHP__TLS_IE;

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct cpuhp__thread *registry;  /* every registered thread */
static struct cpuhp__pcount **counters; /* id -> counter, NULL when free */
static unsigned nr_counters;
static pthread_key_t exit_key;

#define CHUNK_BYTES                                                                                \
	((sizeof(struct cpuhp__slot) * CPUHP__CHUNK_SLOTS + CPUHP__FALSE_SHARING - 1) /            \
	 CPUHP__FALSE_SHARING * CPUHP__FALSE_SHARING)

void cpuhp__registry_lock(void)
{
	pthread_mutex_lock(&registry_mutex);
}

void cpuhp__registry_unlock(void)
{
	pthread_mutex_unlock(&registry_mutex);
}

static void registry_unlink(struct cpuhp__thread *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		registry = t->next;
	if (t->next)
		t->next->prev = t->prev;
}

static void thread_free(struct cpuhp__thread *t)
{
	for (unsigned i = 0; i < t->nchunks; i++)
		free(t->chunks[i]);
	free(t->chunks);
	free(t);
}

/* pthread key destructor: runs as the thread exits. */
static void thread_exit(void *arg)
{
	struct cpuhp__thread *t = arg;

	/*
	 * First: an outstanding cpuhp_get_online_cpus() is also a read lock
	 * of the hotplug lock, which the debug checks below would report
	 * less precisely.
	 */
	CPUHP_BUG_ON(t->hotplug_depth, "cpuhp_hotplug_lock",
	             "thread exits holding cpuhp_get_online_cpus() %u time(s)", t->hotplug_depth);
	if (CPUHP_DEBUG)
		cpuhp__debug_thread_exit(t);

	cpuhp__registry_lock();
	for (unsigned c = 0; c < t->nchunks; c++) {
		if (!t->chunks[c])
			continue;
		for (unsigned s = 0; s < CPUHP__CHUNK_SLOTS; s++) {
			long v = atomic_load_explicit(&t->chunks[c][s].count, memory_order_relaxed);

			/* B (internal.h): the thread's read sections before the move. */
			if (v)
				atomic_fetch_add_explicit(
				    &counters[c * CPUHP__CHUNK_SLOTS + s]->shared, v,
				    memory_order_release);
		}
	}
	registry_unlink(t);
	if (t->urcu_registered_by_us)
		urcu_memb_unregister_thread();
	cpuhp__registry_unlock();

	cpuhp__self = NULL;
	cpuhp__chunk0 = NULL;
	cpuhp__inline_slots = NULL;
	thread_free(t);
}

struct cpuhp__thread *cpuhp__thread_slow(void)
{
	struct cpuhp__thread *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	if (pthread_setspecific(exit_key, t)) {
		free(t);
		return NULL;
	}
	cpuhp__registry_lock();
	/* The application (or liburcu's call_rcu worker) may have registered it. */
	if (!URCU_TLS(urcu_memb_reader).registered) {
		urcu_memb_register_thread();
		t->urcu_registered_by_us = true;
	}
	t->urcu = &URCU_TLS(urcu_memb_reader);
	t->next = registry;
	if (registry)
		registry->prev = t;
	registry = t;
	cpuhp__registry_unlock();
	cpuhp__self = t;
	return t;
}

struct cpuhp__slot *cpuhp__slot_slow(struct cpuhp__thread *t, const struct cpuhp__pcount *pc)
{
	struct cpuhp__slot *s = cpuhp__slot_fast(t, pc);
	struct cpuhp__slot **old = NULL;

	if (s)
		return s;
	cpuhp__registry_lock();
	if (pc->chunk >= t->nchunks) {
		unsigned n = t->nchunks ? t->nchunks : 4;
		struct cpuhp__slot **grown;

		while (n <= pc->chunk)
			n *= 2;
		grown = calloc(n, sizeof(*grown));
		if (!grown)
			goto out;
		if (t->nchunks)
			memcpy(grown, t->chunks, t->nchunks * sizeof(*grown));
		old = t->chunks;
		t->chunks = grown;
		t->nchunks = n;
	}
	if (!t->chunks[pc->chunk]) {
		struct cpuhp__slot *chunk = aligned_alloc(CPUHP__FALSE_SHARING, CHUNK_BYTES);

		if (!chunk)
			goto out;
		memset(chunk, 0, CHUNK_BYTES);
		t->chunks[pc->chunk] = chunk;
		if (pc->chunk == 0) {
			cpuhp__chunk0 = chunk;
			/* <cpuhp/rwsem-inline.h>'s view: NULL where the inline path may not run. */
			cpuhp__inline_slots = cpuhp__inline_ok ? (long *)(void *)chunk : NULL;
		}
	}
	s = &t->chunks[pc->chunk][pc->slot];
out:
	cpuhp__registry_unlock();
	free(old);
	return s;
}

int cpuhp__pcount_init(struct cpuhp__pcount *pc, const char *name)
{
	unsigned id;

	cpuhp__registry_lock();
	for (id = 0; id < nr_counters && counters[id]; id++)
		;
	if (id == nr_counters) {
		unsigned n = nr_counters ? 2 * nr_counters : CPUHP__CHUNK_SLOTS;
		struct cpuhp__pcount **grown = realloc(counters, n * sizeof(*grown));

		if (!grown) {
			cpuhp__registry_unlock();
			return -ENOMEM;
		}
		memset(grown + nr_counters, 0, (n - nr_counters) * sizeof(*grown));
		counters = grown;
		nr_counters = n;
	}
	counters[id] = pc;
	pc->id = id;
	pc->chunk = id / CPUHP__CHUNK_SLOTS;
	pc->slot = id % CPUHP__CHUNK_SLOTS;
	pc->name = name;
	atomic_init(&pc->shared, 0);
	cpuhp__registry_unlock();
	return 0;
}

void cpuhp__pcount_destroy(struct cpuhp__pcount *pc)
{
	cpuhp__registry_lock();
	/* Slots may be +1 here and -1 there (released on another thread). */
	for (struct cpuhp__thread *t = registry; t; t = t->next) {
		if (pc->chunk < t->nchunks && t->chunks[pc->chunk]) {
			struct cpuhp__slot *s = &t->chunks[pc->chunk][pc->slot];

			atomic_store_explicit(&s->count, 0, memory_order_relaxed);
#if CPUHP_DEBUG
			s->held = 0;
#endif
		}
	}
	counters[pc->id] = NULL;
	cpuhp__registry_unlock();
}

long cpuhp__pcount_sum_locked(struct cpuhp__pcount *pc)
{
	/* C (internal.h): a reader's section happens before its decrement we count. */
	long sum = atomic_load_explicit(&pc->shared, memory_order_acquire);

	for (struct cpuhp__thread *t = registry; t; t = t->next)
		if (pc->chunk < t->nchunks && t->chunks[pc->chunk])
			sum += atomic_load_explicit(&t->chunks[pc->chunk][pc->slot].count,
			                            memory_order_acquire); /* C */
	return sum;
}

long cpuhp__pcount_sum(struct cpuhp__pcount *pc)
{
	long sum;

	cpuhp__registry_lock();
	sum = cpuhp__pcount_sum_locked(pc);
	cpuhp__registry_unlock();
	return sum;
}

#if CPUHP_DEBUG
void cpuhp__pcount_debug_exit(struct cpuhp__thread *t,
                              void (*check)(struct cpuhp__pcount *pc, long held))
{
	cpuhp__registry_lock();
	for (unsigned c = 0; c < t->nchunks; c++)
		for (unsigned s = 0; t->chunks[c] && s < CPUHP__CHUNK_SLOTS; s++)
			if (t->chunks[c][s].held > 0)
				check(counters[c * CPUHP__CHUNK_SLOTS + s], t->chunks[c][s].held);
	cpuhp__registry_unlock();
}
#endif

void cpuhp__registry_forget_others(void)
{
	struct cpuhp__thread *t = registry, *next;

	for (; t; t = next) {
		next = t->next;
		if (t == cpuhp__self)
			continue;
		/*
		 * The thread does not exist in the child, but its liburcu
		 * reader record is still linked in liburcu's registry, inside
		 * a TLS block that glibc will hand to the next new thread (the
		 * call_rcu worker, for one): a grace period would then wait
		 * on, or walk through, garbage.  Unlink it, as liburcu's own
		 * call_rcu workers unregister around fork.  Only this thread
		 * runs now, so liburcu's registry lock is not needed.
		 */
		if (t->urcu->registered)
			cds_list_del(&t->urcu->node);
		/* Its read locks do not exist in the child either. */
		registry_unlink(t);
		thread_free(t);
	}
}

unsigned cpuhp__registry_count_locked(void)
{
	unsigned n = 0;

	for (struct cpuhp__thread *t = registry; t; t = t->next)
		n++;
	return n;
}

void cpuhp__registry_for_each_counter(void (*fn)(struct cpuhp__pcount *pc))
{
	for (unsigned id = 0; id < nr_counters; id++)
		if (counters[id])
			fn(counters[id]);
}

__attribute__((constructor)) static void cpuhp_lib_init(void)
{
	int err = pthread_key_create(&exit_key, thread_exit);

	CPUHP_BUG_ON(err, "libcpuhp", "pthread_key_create failed: %s", strerror(err));
	cpuhp__membarrier_init();
	cpuhp__fork_init();
	cpuhp__hotplug_init();
}
