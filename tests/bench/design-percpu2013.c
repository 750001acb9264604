/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Design 2, the first percpu hotplug-lock patch (2013), redone in user space
 * with liburcu memb standing in for preempt_disable()/synchronize_sched().
 *
 * Counts are per thread (a slot per thread, each on its own cache line,
 * written only by its thread) instead of per CPU: the writer only needs the
 * sum.  The state tells readers what to do:
 *   FAST:  increment the slot inside an RCU read-side section, no barrier;
 *   SLOW:  increment with a full barrier and look at the state again;
 *   BLOCK: undo the increment and sleep until the writer is done.
 *
 * Barrier pairs (each argued where it is issued):
 *   A (reader, after its slow-path increment)  pairs with D (writer, after storing BLOCK)
 *   B (reader, before its slow-path decrement) pairs with C (writer, after summing)
 *   The grace periods stand in for every barrier the fast path leaves out.
 *
 * Writers are serialised by a mutex (the kernel used cpu_add_remove_lock).
 * Waiting uses one mutex and two condition variables, and every change of a
 * waited-for condition is followed by a broadcast under that mutex, so no
 * wake-up is lost.  Not reproduced: the per-task recursion count.
 */
#define _LGPL_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include <urcu/urcu-memb.h>

#include "bench.h"

#define P13_MAX_THREADS 64

enum p13_state { READERS_FAST, READERS_SLOW, READERS_BLOCK };

struct p13_slot {
	unsigned long count; /* written by its thread only, read by the writer */
} __attribute__((aligned(BENCH_CACHELINE)));

struct p13_lock {
	int state;                 /* enum p13_state; written by the writer only */
	unsigned waitcount;        /* readers sleeping on BLOCK; atomic */
	unsigned nslots;           /* slots handed out; atomic */
	pthread_mutex_t writers;   /* one writer at a time */
	pthread_mutex_t wait_lock; /* protects the sleeps below */
	pthread_cond_t readers_cv; /* state left BLOCK */
	pthread_cond_t writer_cv;  /* a count or waitcount went down */
	struct p13_slot slots[P13_MAX_THREADS];
};

/* This thread's slot in the (one) lock being measured. */
static __thread struct p13_slot *p13_self;
static __thread bool p13_registered_here;

#define smp_mb()            __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define load_relaxed(p)     __atomic_load_n((p), __ATOMIC_RELAXED)
#define store_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

static int p13_init(void **out)
{
	struct p13_lock *l = aligned_alloc(BENCH_CACHELINE, sizeof(*l));

	if (!l)
		return -ENOMEM;
	*l = (struct p13_lock){.state = READERS_FAST};
	pthread_mutex_init(&l->writers, NULL);
	pthread_mutex_init(&l->wait_lock, NULL);
	pthread_cond_init(&l->readers_cv, NULL);
	pthread_cond_init(&l->writer_cv, NULL);
	*out = l;
	return 0;
}

static void p13_fini(void *lock)
{
	struct p13_lock *l = lock;

	pthread_cond_destroy(&l->writer_cv);
	pthread_cond_destroy(&l->readers_cv);
	pthread_mutex_destroy(&l->wait_lock);
	pthread_mutex_destroy(&l->writers);
	free(l);
}

static void p13_thread_init(void *lock)
{
	struct p13_lock *l = lock;
	unsigned i = __atomic_fetch_add(&l->nslots, 1, __ATOMIC_RELAXED);

	if (i >= P13_MAX_THREADS)
		BENCH_CHECK(-ENOSPC);
	p13_self = &l->slots[i];
	if (!URCU_TLS(urcu_memb_reader).registered) {
		urcu_memb_register_thread();
		p13_registered_here = true;
	}
}

static void p13_thread_fini(void *lock)
{
	(void)lock;
	if (p13_registered_here)
		urcu_memb_unregister_thread();
	p13_registered_here = false;
	p13_self = NULL;
}

static void p13_wake_writer(struct p13_lock *l)
{
	pthread_mutex_lock(&l->wait_lock);
	pthread_cond_broadcast(&l->writer_cv);
	pthread_mutex_unlock(&l->wait_lock);
}

static void p13_put_slow(struct p13_lock *l)
{
	/*
	 * B matches C: the critical section is ordered before the decrement,
	 * so a writer that sees the decrement also sees the section finished.
	 */
	smp_mb();
	store_relaxed(&p13_self->count, p13_self->count - 1);
	p13_wake_writer(l);
}

static __attribute__((noinline)) void p13_get_slow(struct p13_lock *l)
{
	for (;;) {
		store_relaxed(&p13_self->count, p13_self->count + 1);
		/*
		 * A matches D.  If this load misses the writer's BLOCK, the
		 * writer's sum (after D) sees the increment and waits for us.
		 * If it sees BLOCK, the increment is undone below, so the
		 * writer missing it is harmless.
		 */
		smp_mb();
		if (load_relaxed(&l->state) != READERS_BLOCK)
			return;
		/* Counted before the undo so the outgoing writer waits for us. */
		__atomic_fetch_add(&l->waitcount, 1, __ATOMIC_SEQ_CST);
		p13_put_slow(l);
		pthread_mutex_lock(&l->wait_lock);
		while (load_relaxed(&l->state) == READERS_BLOCK)
			pthread_cond_wait(&l->readers_cv, &l->wait_lock);
		pthread_mutex_unlock(&l->wait_lock);
		if (__atomic_sub_fetch(&l->waitcount, 1, __ATOMIC_SEQ_CST) == 0)
			p13_wake_writer(l);
	}
}

static inline void p13_read_lock_inline(struct p13_lock *l)
{
	bool fast;

	/* The RCU section is preempt_disable(): a grace period waits for it. */
	urcu_memb_read_lock();
	fast = load_relaxed(&l->state) == READERS_FAST;
	if (fast)
		store_relaxed(&p13_self->count, p13_self->count + 1);
	urcu_memb_read_unlock();
	if (__builtin_expect(!fast, 0))
		p13_get_slow(l); /* may sleep: outside the RCU section */
}

static inline void p13_read_unlock_inline(struct p13_lock *l)
{
	bool fast;

	urcu_memb_read_lock();
	fast = load_relaxed(&l->state) == READERS_FAST;
	if (fast)
		store_relaxed(&p13_self->count, p13_self->count - 1);
	urcu_memb_read_unlock();
	if (__builtin_expect(!fast, 0))
		p13_put_slow(l);
}

static void p13_read_lock(void *lock)
{
	p13_read_lock_inline(lock);
}

static void p13_read_unlock(void *lock)
{
	p13_read_unlock_inline(lock);
}

static unsigned long p13_sum(struct p13_lock *l)
{
	unsigned long sum = 0;
	unsigned n = __atomic_load_n(&l->nslots, __ATOMIC_RELAXED);

	if (n > P13_MAX_THREADS)
		n = P13_MAX_THREADS;
	for (unsigned i = 0; i < n; i++)
		sum += load_relaxed(&l->slots[i].count);
	/* C matches B: seeing a reader's decrement means its section is over. */
	smp_mb();
	return sum;
}

static void p13_set_state(struct p13_lock *l, enum p13_state s)
{
	/* Under wait_lock so that a reader checking before it sleeps cannot miss it. */
	pthread_mutex_lock(&l->wait_lock);
	store_relaxed(&l->state, s);
	pthread_cond_broadcast(&l->readers_cv);
	pthread_mutex_unlock(&l->wait_lock);
}

static void p13_write_lock(void *lock)
{
	struct p13_lock *l = lock;

	pthread_mutex_lock(&l->writers);
	p13_set_state(l, READERS_SLOW);
	/* After this every reader sees SLOW: no more barrier-free increments. */
	urcu_memb_synchronize_rcu();
	p13_set_state(l, READERS_BLOCK);
	/* D matches A: store BLOCK, then read the counts. */
	smp_mb();
	pthread_mutex_lock(&l->wait_lock);
	while (p13_sum(l) != 0)
		pthread_cond_wait(&l->writer_cv, &l->wait_lock);
	pthread_mutex_unlock(&l->wait_lock);
}

static void p13_write_unlock(void *lock)
{
	struct p13_lock *l = lock;

	/* Readers stop blocking but keep their barriers ... */
	p13_set_state(l, READERS_SLOW);
	/* ... until every reader has seen SLOW instead of BLOCK ... */
	urcu_memb_synchronize_rcu();
	/* ... then go fast again. */
	store_relaxed(&l->state, READERS_FAST);
	/* Everyone this writer blocked gets in before the next writer. */
	pthread_mutex_lock(&l->wait_lock);
	while (__atomic_load_n(&l->waitcount, __ATOMIC_SEQ_CST) != 0)
		pthread_cond_wait(&l->writer_cv, &l->wait_lock);
	pthread_mutex_unlock(&l->wait_lock);
	pthread_mutex_unlock(&l->writers);
}

BENCH_DEFINE_READ_LOOP(p13_read_loop, struct p13_lock, p13_read_lock_inline, p13_read_unlock_inline)

const struct bench_lock_ops bench_percpu2013 = {
    .name = "percpu2013",
    .label = "2: percpu 2013 patch",
    .init = p13_init,
    .fini = p13_fini,
    .read_lock = p13_read_lock,
    .read_unlock = p13_read_unlock,
    .write_lock = p13_write_lock,
    .write_unlock = p13_write_unlock,
    .thread_init = p13_thread_init,
    .thread_fini = p13_thread_fini,
    .read_loop = p13_read_loop,
};
