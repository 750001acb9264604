/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Prototype of an opt-in inline read path for cpuhp_rwsem (issue 6), as a
 * program would get it from a header such as <cpuhp/rwsem-inline.h> under
 * #define CPUHP_INLINE: the library's own fast path, compiled into the
 * caller, with the library's functions as the slow path.  It needs the
 * private layouts (struct cpuhp_rwsem, cpuhp__thread, cpuhp__slot), the
 * thread pointer cpuhp__self and liburcu's inline read side (_LGPL_SOURCE).
 *
 * Two variants:
 *  - cpuhp-inline: the library's fast path exactly (thread -> chunk table
 *    -> chunk -> slot);
 *  - cpuhp-inline-cached: the same, but this thread's slot for the last lock
 *    it used is cached in two thread-locals keyed by the counter id, which
 *    removes the chunk-table walk (what a flatter slot lookup would give).
 *
 * Built against the renamed static copy of libcpuhp (static-copy.py), whose
 * struct layout this file sees through internal.h.  The library's debug
 * checks keep per-thread books in the fast path, which an inline copy would
 * bypass: with CPUHP_DEBUG_CHECKS both variants just call the library.
 */
#define _LGPL_SOURCE
#include "internal.h"

#include "bench.h"

#if !CPUHP_DEBUG
static inline __attribute__((always_inline)) struct cpuhp__slot *
inline_slot(struct cpuhp_rwsem *sem)
{
	struct cpuhp__thread *t = cpuhp__self;

	return cpuhp__likely(t) ? cpuhp__slot_fast(t, &sem->readers) : NULL;
}

/* +1 or -1 on the fast path; false if the caller must call the library. */
static inline __attribute__((always_inline)) bool inline_fast(struct cpuhp_rwsem *sem,
                                                              struct cpuhp__slot *s, long v)
{
	bool idle;

	urcu_memb_read_lock();
	idle = cpuhp__rcu_sync_is_idle(&sem->rss);
	if (cpuhp__likely(idle))
		cpuhp__slot_add(s, v, v > 0 ? memory_order_relaxed : memory_order_release);
	urcu_memb_read_unlock();
	return idle;
}

static inline __attribute__((always_inline)) void inline_read_lock(struct cpuhp_rwsem *sem)
{
	struct cpuhp__slot *s = inline_slot(sem);

	if (cpuhp__unlikely(!s || !inline_fast(sem, s, 1)))
		cpuhp_rwsem_read_lock(sem);
}

static inline __attribute__((always_inline)) void inline_read_unlock(struct cpuhp_rwsem *sem)
{
	struct cpuhp__slot *s = inline_slot(sem);

	if (cpuhp__unlikely(!s || !inline_fast(sem, s, -1)))
		cpuhp_rwsem_read_unlock(sem);
}

/* The last counter this thread used (id + 1; 0 = none) and its slot. */
static __thread unsigned cached_id;
static __thread struct cpuhp__slot *cached_slot;

static inline __attribute__((always_inline)) struct cpuhp__slot *
cached_lookup(struct cpuhp_rwsem *sem)
{
	struct cpuhp__slot *s;

	if (cpuhp__likely(cached_id == sem->readers.id + 1))
		return cached_slot;
	/* A thread's slot for an id stays put until the thread exits. */
	s = inline_slot(sem);
	if (s) {
		cached_id = sem->readers.id + 1;
		cached_slot = s;
	}
	return s;
}

static inline __attribute__((always_inline)) void cached_read_lock(struct cpuhp_rwsem *sem)
{
	struct cpuhp__slot *s = cached_lookup(sem);

	if (cpuhp__unlikely(!s || !inline_fast(sem, s, 1)))
		cpuhp_rwsem_read_lock(sem);
}

static inline __attribute__((always_inline)) void cached_read_unlock(struct cpuhp_rwsem *sem)
{
	struct cpuhp__slot *s = cached_lookup(sem);

	if (cpuhp__unlikely(!s || !inline_fast(sem, s, -1)))
		cpuhp_rwsem_read_unlock(sem);
}
#else
#define inline_read_lock   cpuhp_rwsem_read_lock
#define inline_read_unlock cpuhp_rwsem_read_unlock
#define cached_read_lock   cpuhp_rwsem_read_lock
#define cached_read_unlock cpuhp_rwsem_read_unlock
#endif

static int proto_init(void **out)
{
	struct cpuhp_rwsem *sem;
	int err = cpuhp_rwsem_new(&sem);

	if (!err)
		*out = sem;
	return err;
}

static void proto_fini(void *lock)
{
	cpuhp_rwsem_free(lock);
}

static void proto_write_lock(void *lock)
{
	cpuhp_rwsem_write_lock(lock);
}

static void proto_write_unlock(void *lock)
{
	cpuhp_rwsem_write_unlock(lock);
}

static void inline_lock_op(void *lock)
{
	inline_read_lock(lock);
}

static void inline_unlock_op(void *lock)
{
	inline_read_unlock(lock);
}

static void cached_lock_op(void *lock)
{
	cached_read_lock(lock);
}

static void cached_unlock_op(void *lock)
{
	cached_read_unlock(lock);
}

BENCH_DEFINE_READ_LOOP(inline_loop, struct cpuhp_rwsem, inline_read_lock, inline_read_unlock)
BENCH_DEFINE_READ_LOOP(cached_loop, struct cpuhp_rwsem, cached_read_lock, cached_read_unlock)

const struct bench_lock_ops bench_cpuhp_inline = {
    .name = "cpuhp-inline",
    .label = "proto: 3 with inline read path",
    .init = proto_init,
    .fini = proto_fini,
    .read_lock = inline_lock_op,
    .read_unlock = inline_unlock_op,
    .write_lock = proto_write_lock,
    .write_unlock = proto_write_unlock,
    .read_loop = inline_loop,
    .note = CPUHP_DEBUG ? "debug-checks build: the inline prototype calls the library"
                        : "the library's fast path compiled into the caller (static copy).",
};

const struct bench_lock_ops bench_cpuhp_inline_cached = {
    .name = "cpuhp-inline-cached",
    .label = "proto: 3 inline + cached slot",
    .init = proto_init,
    .fini = proto_fini,
    .read_lock = cached_lock_op,
    .read_unlock = cached_unlock_op,
    .write_lock = proto_write_lock,
    .write_unlock = proto_write_unlock,
    .read_loop = cached_loop,
    .note = CPUHP_DEBUG ? "debug-checks build: the inline prototype calls the library"
                        : "inline, and the slot of the last lock used cached in TLS.",
};
