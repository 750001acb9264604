/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Prototype: design 2 (design-percpu2013.c) with restartable sequences in
 * place of liburcu.  A reader's fast path is ONE restartable sequence that
 * reads the state and, if it is FAST, adds +-1 to this CPU's slot (no
 * registration, no RCU section, no barrier).  The writer's grace period is
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ): when it returns, every
 * sequence that saw FAST has committed (and its add is visible) or will
 * restart and see the new state, as a preempt-disabled section does for
 * synchronize_sched() in the kernel.
 *
 * Slow-path adds are atomic and go to a second per-CPU array: an atomic add
 * into a slot that a sequence which saw FAST is still updating with its
 * plain load/add/store could be overwritten.
 *
 * Barrier pairs, as in design 2: A (reader, after its slow increment) with
 * D (writer, after storing BLOCK); B (reader, before its slow decrement)
 * with C (writer, after summing).  The membarrier covers the fast path.
 *
 * Without rseq or the membarrier command, readers always take the slow path
 * (the writer never sets FAST): correct, just slower.
 *
 * Two reader flavours share the writer: rseq-rwsem counts per CPU (no
 * registration at all); rseq-thread keeps design 2's per-thread slots and
 * uses the restartable sequence only as the section the membarrier waits
 * out (no CPU number to read, and the thread's slot address is constant).
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rseq-percpu.h"

enum rl_state { RL_FAST = 0, RL_SLOW, RL_BLOCK };

#define RL_MAX_THREADS 64

struct rl_tslot {
	long count; /* written by its thread only */
} __attribute__((aligned(BENCH_CACHELINE)));

struct rl_lock {
	int state;                /* written by the writer; read inside sequences */
	int idle_state;           /* RL_FAST, or RL_SLOW when there is no fast path */
	unsigned waitcount;       /* readers sleeping on BLOCK; atomic */
	struct pcpu_counter fast; /* rseq adds that saw FAST */
	struct pcpu_counter slow; /* atomic adds */
	unsigned nthreads;        /* per-thread slots handed out; atomic */
	struct rl_tslot tslots[RL_MAX_THREADS];
	pthread_mutex_t writers;
	pthread_mutex_t wait_lock;
	pthread_cond_t readers_cv; /* state left BLOCK */
	pthread_cond_t writer_cv;  /* a count or waitcount went down */
};

#define smp_mb()            __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define load_relaxed(p)     __atomic_load_n((p), __ATOMIC_RELAXED)
#define store_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/* The fast path needs rseq in this process and the rseq membarrier. */
static bool rl_fast_path_possible(void)
{
	int cmds = membarrier(MEMBARRIER_CMD_QUERY);

	if (!pcpu_rseq_enabled() || cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ))
		return false;
	return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ) == 0;
}

/* This thread's slot in the (one) rseq-thread lock being measured. */
static __thread struct rl_tslot *rl_self;

static int rl_init(void **out)
{
	struct rl_lock *l = aligned_alloc(BENCH_CACHELINE, sizeof(*l));
	int err;

	if (!l)
		return -ENOMEM;
	memset(l, 0, sizeof(*l));
	err = pcpu_counter_init(&l->fast);
	if (!err) {
		err = pcpu_counter_init(&l->slow);
		if (err)
			pcpu_counter_fini(&l->fast);
	}
	if (err) {
		free(l);
		return err;
	}
	l->idle_state = rl_fast_path_possible() ? RL_FAST : RL_SLOW;
	l->state = l->idle_state;
	pthread_mutex_init(&l->writers, NULL);
	pthread_mutex_init(&l->wait_lock, NULL);
	pthread_cond_init(&l->readers_cv, NULL);
	pthread_cond_init(&l->writer_cv, NULL);
	*out = l;
	return 0;
}

static void rl_fini(void *lock)
{
	struct rl_lock *l = lock;

	pthread_cond_destroy(&l->writer_cv);
	pthread_cond_destroy(&l->readers_cv);
	pthread_mutex_destroy(&l->wait_lock);
	pthread_mutex_destroy(&l->writers);
	pcpu_counter_fini(&l->slow);
	pcpu_counter_fini(&l->fast);
	free(l);
}

/* Every sequence that saw the old state has committed or will restart. */
static void rl_grace(struct rl_lock *l)
{
	if (l->idle_state == RL_FAST)
		BENCH_CHECK(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) ? -errno : 0);
}

static void rl_wake_writer(struct rl_lock *l)
{
	pthread_mutex_lock(&l->wait_lock);
	pthread_cond_broadcast(&l->writer_cv);
	pthread_mutex_unlock(&l->wait_lock);
}

static void rl_put_slow(struct rl_lock *l)
{
	/* B matches C: the critical section before the decrement. */
	smp_mb();
	pcpu__add_fallback(&l->slow, -1);
	rl_wake_writer(l);
}

static __attribute__((noinline)) void rl_get_slow(struct rl_lock *l)
{
	for (;;) {
		pcpu__add_fallback(&l->slow, 1);
		/* A matches D: if we miss BLOCK, the writer's sum sees us. */
		smp_mb();
		if (load_relaxed(&l->state) != RL_BLOCK)
			return;
		__atomic_fetch_add(&l->waitcount, 1, __ATOMIC_SEQ_CST);
		rl_put_slow(l);
		pthread_mutex_lock(&l->wait_lock);
		while (load_relaxed(&l->state) == RL_BLOCK)
			pthread_cond_wait(&l->readers_cv, &l->wait_lock);
		pthread_mutex_unlock(&l->wait_lock);
		if (__atomic_sub_fetch(&l->waitcount, 1, __ATOMIC_SEQ_CST) == 0)
			rl_wake_writer(l);
	}
}

static void rl_thread_init(void *lock)
{
	struct rl_lock *l = lock;
	unsigned i = __atomic_fetch_add(&l->nthreads, 1, __ATOMIC_RELAXED);

	if (i >= RL_MAX_THREADS)
		BENCH_CHECK(-ENOSPC);
	rl_self = &l->tslots[i];
}

static void rl_thread_fini(void *lock)
{
	(void)lock;
	rl_self = NULL;
}

static inline void rl_read_lock_inline(struct rl_lock *l)
{
	if (__builtin_expect(!pcpu_counter_add_if_zero(&l->fast, 1, &l->state), 0))
		rl_get_slow(l);
}

static inline void rl_read_unlock_inline(struct rl_lock *l)
{
	if (__builtin_expect(!pcpu_counter_add_if_zero(&l->fast, -1, &l->state), 0))
		rl_put_slow(l);
}

static inline void rlt_read_lock_inline(struct rl_lock *l)
{
	if (__builtin_expect(!rseq_add_if_zero(&rl_self->count, 1, &l->state), 0))
		rl_get_slow(l);
}

static inline void rlt_read_unlock_inline(struct rl_lock *l)
{
	if (__builtin_expect(!rseq_add_if_zero(&rl_self->count, -1, &l->state), 0))
		rl_put_slow(l);
}

/* Out of line, as a library function would be (no PLT, though). */
static __attribute__((noinline)) void rlt_read_lock(void *lock)
{
	rlt_read_lock_inline(lock);
}

static __attribute__((noinline)) void rlt_read_unlock(void *lock)
{
	rlt_read_unlock_inline(lock);
}

static void rl_read_lock(void *lock)
{
	rl_read_lock_inline(lock);
}

static void rl_read_unlock(void *lock)
{
	rl_read_unlock_inline(lock);
}

static long rl_sum(struct rl_lock *l)
{
	long sum = pcpu_counter_sum(&l->fast) + pcpu_counter_sum(&l->slow);
	unsigned n = __atomic_load_n(&l->nthreads, __ATOMIC_RELAXED);

	for (unsigned i = 0; i < n && i < RL_MAX_THREADS; i++)
		sum += load_relaxed(&l->tslots[i].count);

	/* C matches B. */
	smp_mb();
	return sum;
}

static void rl_set_state(struct rl_lock *l, enum rl_state s)
{
	pthread_mutex_lock(&l->wait_lock);
	store_relaxed(&l->state, s);
	pthread_cond_broadcast(&l->readers_cv);
	pthread_mutex_unlock(&l->wait_lock);
}

static void rl_write_lock(void *lock)
{
	struct rl_lock *l = lock;

	pthread_mutex_lock(&l->writers);
	rl_set_state(l, RL_SLOW);
	rl_grace(l);
	rl_set_state(l, RL_BLOCK);
	/* D matches A. */
	smp_mb();
	pthread_mutex_lock(&l->wait_lock);
	while (rl_sum(l) != 0)
		pthread_cond_wait(&l->writer_cv, &l->wait_lock);
	pthread_mutex_unlock(&l->wait_lock);
}

static void rl_write_unlock(void *lock)
{
	struct rl_lock *l = lock;

	rl_set_state(l, RL_SLOW);
	rl_grace(l);
	store_relaxed(&l->state, l->idle_state);
	pthread_mutex_lock(&l->wait_lock);
	while (__atomic_load_n(&l->waitcount, __ATOMIC_SEQ_CST) != 0)
		pthread_cond_wait(&l->writer_cv, &l->wait_lock);
	pthread_mutex_unlock(&l->wait_lock);
	pthread_mutex_unlock(&l->writers);
}

BENCH_DEFINE_READ_LOOP(rl_read_loop, struct rl_lock, rl_read_lock_inline, rl_read_unlock_inline)
BENCH_DEFINE_READ_LOOP(rlt_read_loop, struct rl_lock, rlt_read_lock_inline, rlt_read_unlock_inline)
BENCH_DEFINE_READ_LOOP(rlt_call_loop, void, rlt_read_lock, rlt_read_unlock)

const struct bench_lock_ops bench_rseq_rwsem = {
    .name = "rseq-rwsem",
    .label = "proto: design 2 on rseq+membarrier",
    .init = rl_init,
    .fini = rl_fini,
    .read_lock = rl_read_lock,
    .read_unlock = rl_read_unlock,
    .write_lock = rl_write_lock,
    .write_unlock = rl_write_unlock,
    .read_loop = rl_read_loop,
    .uses_rseq = true,
    .note = "design 2 with liburcu replaced: reader = one restartable sequence on a per-CPU "
            "slot, grace period = membarrier(PRIVATE_EXPEDITED_RSEQ); inline in the caller.",
};

const struct bench_lock_ops bench_rseq_thread = {
    .name = "rseq-thread",
    .label = "proto: rseq section, per-thread slot",
    .init = rl_init,
    .fini = rl_fini,
    .read_lock = rlt_read_lock,
    .read_unlock = rlt_read_unlock,
    .write_lock = rl_write_lock,
    .write_unlock = rl_write_unlock,
    .thread_init = rl_thread_init,
    .thread_fini = rl_thread_fini,
    .read_loop = rlt_read_loop,
    .uses_rseq = true,
    .note = "as rseq-rwsem, but the sequence guards a per-thread slot (the counters "
            "libcpuhp already has) instead of a per-CPU one.",
};

const struct bench_lock_ops bench_rseq_thread_call = {
    .name = "rseq-thread-call",
    .label = "proto: rseq per-thread, 2 calls",
    .init = rl_init,
    .fini = rl_fini,
    .read_lock = rlt_read_lock,
    .read_unlock = rlt_read_unlock,
    .write_lock = rl_write_lock,
    .write_unlock = rl_write_unlock,
    .thread_init = rl_thread_init,
    .thread_fini = rl_thread_fini,
    .read_loop = rlt_call_loop,
    .uses_rseq = true,
    .note = "rseq-thread's read path behind two out-of-line calls: what it would cost "
            "inside libcpuhp.so without an inline header (minus the PLT).",
};
