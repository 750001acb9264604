/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Opt-in inline reader fast path for cpuhp_rwsem.
 *
 * cpuhp_rwsem_read_lock_inline()/cpuhp_rwsem_read_unlock_inline() do what
 * cpuhp_rwsem_read_lock()/cpuhp_rwsem_read_unlock() do, without a call
 * while no writer is around: one TLS load, a store to this thread's own
 * counter, one load of the lock's state.  Everything else (a writer coming,
 * the thread's first use of a lock, locks past the first 64, debug builds
 * of the library, kernels without membarrier) goes to the library.
 *
 * The price, as with liburcu's _LGPL_SOURCE inline functions: this header
 * knows a few bytes of the library's private layout.  They are tied to the
 * library by the symbol cpuhp__inline_abi_1, which a library with another
 * layout does not define, so a mismatch fails at link time, never at run
 * time.  Rebuild users of this header whenever libcpuhp's version changes.
 * A lock may be taken inline and released through the library and the
 * other way round.
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
	unsigned id;
	unsigned chunk; /* which of this thread's counter chunks; 0 is cached */
	unsigned slot;	/* which counter in it */
};
/* Where the rcu_sync state (0 = idle) sits in struct cpuhp_rwsem. */
#define CPUHP__RWSEM_STATE_OFFSET 32

struct cpuhp__slot;
/* This thread's first counter chunk (a long per lock), or NULL. */
CPUHP_EXPORT extern __thread struct cpuhp__slot *cpuhp__chunk0
	__attribute__((tls_model("initial-exec")));
/* Set by the library when the inline path is valid (see above). */
CPUHP_EXPORT extern bool cpuhp__inline_ok;
CPUHP_EXPORT extern const int cpuhp__inline_abi_1;
/* The library's continuations of an inline path that found a writer coming. */
CPUHP_EXPORT void cpuhp__rwsem_read_lock_backout(struct cpuhp_rwsem *sem);
CPUHP_EXPORT void cpuhp__rwsem_read_unlock_writer(struct cpuhp_rwsem *sem);

static inline long *cpuhp__inline_slot(struct cpuhp_rwsem *sem)
{
	const struct cpuhp__rwsem_head *h = (const struct cpuhp__rwsem_head *)(void *)sem;
	long *chunk0 = (long *)(void *)cpuhp__chunk0;

	/* The ABI tie: referencing it makes a mismatched library fail to link. */
	(void)cpuhp__inline_abi_1;
	if (__builtin_expect(cpuhp__inline_ok && h->chunk == 0 && chunk0 != 0, 1))
		return &chunk0[h->slot];
	return 0;
}

static inline bool cpuhp__inline_idle(struct cpuhp_rwsem *sem)
{
	/* Acquire: a reader sees what the last writer did (pairs with its release). */
	return __atomic_load_n((int *)(void *)((char *)sem + CPUHP__RWSEM_STATE_OFFSET),
			       __ATOMIC_ACQUIRE) == 0;
}

/* --- the API --- */

/** cpuhp_rwsem_read_lock_inline() - cpuhp_rwsem_read_lock(), inline. */
static inline void cpuhp_rwsem_read_lock_inline(struct cpuhp_rwsem *sem)
{
	long *c = cpuhp__inline_slot(sem);

	if (__builtin_expect(c != 0, 1)) {
		/* Label H (libcpuhp/src/internal.h): the writer's membarrier fences us. */
		__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (__builtin_expect(cpuhp__inline_idle(sem), 1))
			return;
		cpuhp__rwsem_read_lock_backout(sem);
		return;
	}
	cpuhp_rwsem_read_lock(sem);
}

/** cpuhp_rwsem_read_unlock_inline() - cpuhp_rwsem_read_unlock(), inline. */
static inline void cpuhp_rwsem_read_unlock_inline(struct cpuhp_rwsem *sem)
{
	long *c = cpuhp__inline_slot(sem);

	if (__builtin_expect(c != 0, 1)) {
		/* Release: our section before a writer that sums this decrement (B). */
		__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) - 1, __ATOMIC_RELEASE);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (__builtin_expect(!cpuhp__inline_idle(sem), 0))
			cpuhp__rwsem_read_unlock_writer(sem);
		return;
	}
	cpuhp_rwsem_read_unlock(sem);
}

#ifdef __cplusplus
}
#endif

#endif /* CPUHP_RWSEM_INLINE_H */
