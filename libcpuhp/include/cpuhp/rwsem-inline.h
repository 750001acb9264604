/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Opt-in inline reader fast path for cpuhp_rwsem.
 *
 * cpuhp_rwsem_read_lock_inline()/cpuhp_rwsem_read_unlock_inline() do what
 * cpuhp_rwsem_read_lock()/cpuhp_rwsem_read_unlock() do, without a call
 * while no writer is around: one TLS load, the lock's id, a store to this
 * thread's own counter, one load of the lock's state.  Everything else (a
 * writer coming, the thread's first use of a lock, locks past the first 64,
 * debug builds of the library, kernels without membarrier) goes to the
 * library.
 *
 * The price, as with liburcu's _LGPL_SOURCE inline functions: this header
 * knows a few bytes of the library's private layout.  They are tied to the
 * library by the symbol cpuhp__inline_abi_2, which a library with another
 * layout does not define, so a mismatch fails at link time, never at run
 * time.  Rebuild users of this header whenever libcpuhp's version changes.
 * A lock may be taken inline and released through the library and the
 * other way round.  Cancellation and signal handlers: as the calls these
 * stand for (rwsem.h); none is a cancellation point, and the handle's
 * lock, like cpuhp_rwsem_read_lock(), is not async-signal-safe.
 */
#ifndef CPUHP_RWSEM_INLINE_H
#define CPUHP_RWSEM_INLINE_H

#include <stdbool.h>

#include <cpuhp/export.h>
#include <cpuhp/rwsem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- private and unstable: checked against the library by static asserts --- */

/* The first bytes of struct cpuhp_rwsem. */
struct cpuhp__rwsem_head {
	unsigned id; /* this lock's reader counter; ids 0-63 are in the cached chunk */
};
/* Where the rcu_sync state (0 = idle) sits in struct cpuhp_rwsem. */
#define CPUHP__RWSEM_STATE_OFFSET 32

/*
 * This thread's counters for locks with ids 0-63 (a long each), or NULL
 * when the inline path must not run: the thread has no counters yet, or the
 * library runs without membarrier or with debug checks.
 */
/*
 * These four are ABI despite their cpuhp__ names: compiled into every user
 * of this header, exported by libcpuhp.map (which says when they change).
 */
CPUHP_EXPORT extern __thread long *cpuhp__inline_slots __attribute__((tls_model("initial-exec")));
CPUHP_EXPORT extern const int cpuhp__inline_abi_2;
/* The library's continuations of an inline path that found a writer coming. */
CPUHP_EXPORT void cpuhp__rwsem_read_lock_writer_coming(struct cpuhp_rwsem *sem);
CPUHP_EXPORT void cpuhp__rwsem_read_unlock_writer_coming(struct cpuhp_rwsem *sem);

/*
 * Three loads (the TLS pointer, the id, later the state) and the counter's
 * load and store: each load an inline path does not make is worth more on
 * this path than a compare, so everything is folded into the pointer and
 * the id.
 */
static inline long *cpuhp__inline_slot(struct cpuhp_rwsem *sem)
{
	unsigned id = ((const struct cpuhp__rwsem_head *)(void *)sem)->id;
	long *slots = cpuhp__inline_slots;

	/* The ABI tie: referencing it makes a mismatched library fail to link. */
	(void)cpuhp__inline_abi_2;
	if (__builtin_expect(slots != 0 && id < 64, 1))
		return &slots[id];
	return 0;
}

static inline bool cpuhp__inline_idle(struct cpuhp_rwsem *sem)
{
	/* I (acquire): a reader sees what the last writer did (linger_end_locked()). */
	return __atomic_load_n((int *)(void *)((char *)sem + CPUHP__RWSEM_STATE_OFFSET),
	                       __ATOMIC_ACQUIRE) == 0;
}

/* The two inline paths share these: @c is this thread's counter or NULL. */
static inline void cpuhp__inline_lock(struct cpuhp_rwsem *sem, long *c)
{
	if (__builtin_expect(c != 0, 1)) {
		/*
		 * H, lock half (libcpuhp/src/internal.h): the writer's membarrier
		 * fences us.  A copy of rwsem.c's fast_inc_fenced().
		 */
		__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (__builtin_expect(cpuhp__inline_idle(sem), 1))
			return;
		cpuhp__rwsem_read_lock_writer_coming(sem);
		return;
	}
	cpuhp_rwsem_read_lock(sem);
}

static inline void cpuhp__inline_unlock(struct cpuhp_rwsem *sem, long *c)
{
	if (__builtin_expect(c != 0, 1)) {
		/*
		 * H, unlock half, and B: the release orders our section before a
		 * writer that sums this decrement (C).  A copy of rwsem.c's fenced
		 * cpuhp_rwsem_read_unlock().  K: no fence before the slow half's
		 * load of ->wwait; a writer about to sleep for us issues a
		 * membarrier instead (wait_for_readers()).
		 */
		__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) - 1, __ATOMIC_RELEASE);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (__builtin_expect(!cpuhp__inline_idle(sem), 0))
			cpuhp__rwsem_read_unlock_writer_coming(sem);
		return;
	}
	cpuhp_rwsem_read_unlock(sem);
}

/* --- the API --- */

/** cpuhp_rwsem_read_lock_inline() - cpuhp_rwsem_read_lock(), inline. */
static inline void cpuhp_rwsem_read_lock_inline(struct cpuhp_rwsem *sem)
{
	cpuhp__inline_lock(sem, cpuhp__inline_slot(sem));
}

/** cpuhp_rwsem_read_unlock_inline() - cpuhp_rwsem_read_unlock(), inline. */
static inline void cpuhp_rwsem_read_unlock_inline(struct cpuhp_rwsem *sem)
{
	cpuhp__inline_unlock(sem, cpuhp__inline_slot(sem));
}

/**
 * struct cpuhp_rwsem_reader - one thread's handle on one lock's read side.
 *
 * The inline functions above find the calling thread's counter on every
 * call (a TLS load and the lock's id: about half their cost).  A handle
 * does that once; a loop that takes the same lock again and again keeps
 * the handle in registers and pays a store and a load per operation.
 * Pass it by value.  Opaque: use only through the functions below.
 *
 * A handle belongs to the thread that got it and is valid until that
 * thread exits or the lock is freed; using it on another thread corrupts
 * the lock's count (debug builds of the library never hand out counters,
 * so their checks still apply).  A fork child's thread keeps its handles.
 */
struct cpuhp_rwsem_reader {
	struct cpuhp_rwsem *sem;
	long *count; /* NULL: every operation goes through the library */
};

/**
 * cpuhp_rwsem_reader_get() - a read-side handle on @sem for this thread.
 *
 * Never fails: where the inline path cannot run (no membarrier, debug
 * checks, out of memory) the handle makes library calls.
 * Context: never blocks; not async-signal-safe (may allocate).
 */
CPUHP_EXPORT struct cpuhp_rwsem_reader cpuhp_rwsem_reader_get(struct cpuhp_rwsem *sem);

/** cpuhp_rwsem_reader_lock() - cpuhp_rwsem_read_lock() through a handle. */
static inline void cpuhp_rwsem_reader_lock(struct cpuhp_rwsem_reader r)
{
	cpuhp__inline_lock(r.sem, r.count);
}

/** cpuhp_rwsem_reader_unlock() - cpuhp_rwsem_read_unlock() through a handle. */
static inline void cpuhp_rwsem_reader_unlock(struct cpuhp_rwsem_reader r)
{
	cpuhp__inline_unlock(r.sem, r.count);
}

#ifdef __cplusplus
}
#endif

#endif /* CPUHP_RWSEM_INLINE_H */
