/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Design 3 with the opt-in inline reader path, <cpuhp/rwsem-inline.h>,
 * against libcpuhp.so exactly as a program that includes that header gets
 * it.  (Issue 6's first way to the floor; the slot cache it depended on is
 * now in the library for everyone.)  Where the library runs with debug
 * checks or without membarrier, the inline functions call the library and
 * this row measures that.
 */
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
