/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The floor: what a read lock+unlock pair cannot go below on this machine,
 * a thread-local increment and decrement.  The empty asm with a memory
 * clobber makes the compiler store after the increment and reload before
 * the decrement, as a real lock's counter would; nothing else is added.
 * floor-call makes the same pair through two out-of-line calls: the least
 * a lock whose read path is a library function can cost.
 */
#include "bench.h"

static __thread unsigned long floor_count;

static inline void floor_inc(void *lock)
{
	(void)lock;
	floor_count++;
	__asm__ __volatile__("" ::: "memory");
}

static inline void floor_dec(void *lock)
{
	(void)lock;
	floor_count--;
	__asm__ __volatile__("" ::: "memory");
}

static int floor_init(void **lock)
{
	static char token;

	*lock = &token;
	return 0;
}

static void floor_fini(void *lock)
{
	(void)lock;
}

static void floor_read_lock(void *lock)
{
	floor_inc(lock);
}

static void floor_read_unlock(void *lock)
{
	floor_dec(lock);
}

BENCH_DEFINE_READ_LOOP(floor_read_loop, void, floor_inc, floor_dec)

const struct bench_lock_ops bench_floor = {
    .name = "floor",
    .label = "floor (TLS inc+dec)",
    .init = floor_init,
    .fini = floor_fini,
    .read_lock = floor_read_lock,
    .read_unlock = floor_read_unlock,
    .read_loop = floor_read_loop,
};

static __attribute__((noinline)) void floor_inc_call(void *lock)
{
	floor_inc(lock);
}

static __attribute__((noinline)) void floor_dec_call(void *lock)
{
	floor_dec(lock);
}

BENCH_DEFINE_READ_LOOP(floor_call_loop, void, floor_inc_call, floor_dec_call)

const struct bench_lock_ops bench_floor_call = {
    .name = "floor-call",
    .label = "floor, 2 calls (TLS inc+dec)",
    .init = floor_init,
    .fini = floor_fini,
    .read_lock = floor_inc_call,
    .read_unlock = floor_dec_call,
    .read_loop = floor_call_loop,
};
