/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Design 3 with the opt-in inline reader path, <cpuhp/rwsem-inline.h>,
 * against libcpuhp.so exactly as a program that includes that header gets
 * it.  Where the library runs with debug
 * checks or without membarrier, the inline functions call the library and
 * this row measures that.
 */
#include <stddef.h>

#include <cpuhp/rwsem-inline.h>

#include "bench.h"

static int inline_init(void **out)
{
	struct cpuhp_rwsem *sem;
	int err = cpuhp_rwsem_new(&sem);

	if (!err)
		*out = sem;
	return err;
}

static void inline_fini(void *lock)
{
	cpuhp_rwsem_free(lock);
}

static void inline_read_lock(void *lock)
{
	cpuhp_rwsem_read_lock_inline(lock);
}

static void inline_read_unlock(void *lock)
{
	cpuhp_rwsem_read_unlock_inline(lock);
}

static void inline_write_lock(void *lock)
{
	cpuhp_rwsem_write_lock(lock);
}

static void inline_write_unlock(void *lock)
{
	cpuhp_rwsem_write_unlock(lock);
}

BENCH_DEFINE_READ_LOOP(inline_read_loop, struct cpuhp_rwsem, cpuhp_rwsem_read_lock_inline,
                       cpuhp_rwsem_read_unlock_inline)

const struct bench_lock_ops bench_cpuhp_inline = {
    .name = "cpuhp-inline",
    .label = "3: cpuhp_rwsem, <cpuhp/rwsem-inline.h>",
    .init = inline_init,
    .fini = inline_fini,
    .read_lock = inline_read_lock,
    .read_unlock = inline_read_unlock,
    .write_lock = inline_write_lock,
    .write_unlock = inline_write_unlock,
    .read_loop = inline_read_loop,
};

/*
 * The same inline path through a reader handle (struct cpuhp_rwsem_reader):
 * each benchmark thread gets its handle once, as a user would before a hot
 * loop, and the loop keeps it in registers.
 */
static __thread struct cpuhp_rwsem_reader bench_handle;

static void handle_thread_init(void *lock)
{
	bench_handle = cpuhp_rwsem_reader_get(lock);
}

static void handle_thread_fini(void *lock)
{
	(void)lock;
	bench_handle.sem = NULL;
}

static struct cpuhp_rwsem_reader handle_for(void *lock)
{
	if (bench_handle.sem != lock)
		handle_thread_init(lock);
	return bench_handle;
}

static void handle_read_lock(void *lock)
{
	cpuhp_rwsem_reader_lock(handle_for(lock));
}

static void handle_read_unlock(void *lock)
{
	cpuhp_rwsem_reader_unlock(handle_for(lock));
}

static __attribute__((noinline)) void handle_read_loop(void *lock, uint64_t n)
{
	struct cpuhp_rwsem_reader r = handle_for(lock);

	for (uint64_t i = 0; i < n; i++) {
		cpuhp_rwsem_reader_lock(r);
		cpuhp_rwsem_reader_unlock(r);
	}
}

const struct bench_lock_ops bench_cpuhp_handle = {
    .name = "cpuhp-handle",
    .label = "3: cpuhp_rwsem, reader handle (rwsem-inline.h)",
    .init = inline_init,
    .fini = inline_fini,
    .read_lock = handle_read_lock,
    .read_unlock = handle_read_unlock,
    .write_lock = inline_write_lock,
    .write_unlock = inline_write_unlock,
    .thread_init = handle_thread_init,
    .thread_fini = handle_thread_fini,
    .read_loop = handle_read_loop,
    .note = "cpuhp_rwsem_reader_get() once per thread, then cpuhp_rwsem_reader_lock/unlock() "
            "with the handle in registers.",
};
