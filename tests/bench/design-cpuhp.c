/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Design 3: libcpuhp's cpuhp_rwsem through its public API only, exactly as a
 * program that includes <cpuhp/rwsem.h> calls it.  Built twice: linked
 * against libcpuhp.so (bench_cpuhp) and, with BENCH_CPUHP_STATIC, into the
 * statically linked copy whose symbols are renamed (bench_cpuhp_static;
 * see static-copy.py).
 */
#include <cpuhp/rwsem.h>

#include "bench.h"

#ifdef BENCH_CPUHP_STATIC
#define OPS   bench_cpuhp_static
#define NAME  "cpuhp-static"
#define LABEL "3: cpuhp_rwsem, static"
#else
#define OPS   bench_cpuhp
#define NAME  "cpuhp"
#define LABEL "3: cpuhp_rwsem (libcpuhp.so)"
#endif

static int cpuhp_init(void **out)
{
	struct cpuhp_rwsem *sem;
	int err = cpuhp_rwsem_new(&sem);

	if (!err)
		*out = sem;
	return err;
}

static void cpuhp_fini(void *lock)
{
	cpuhp_rwsem_free(lock);
}

static void cpuhp_read_lock(void *lock)
{
	cpuhp_rwsem_read_lock(lock);
}

static void cpuhp_read_unlock(void *lock)
{
	cpuhp_rwsem_read_unlock(lock);
}

static void cpuhp_write_lock(void *lock)
{
	cpuhp_rwsem_write_lock(lock);
}

static void cpuhp_write_unlock(void *lock)
{
	cpuhp_rwsem_write_unlock(lock);
}

BENCH_DEFINE_READ_LOOP(cpuhp_read_loop, struct cpuhp_rwsem, cpuhp_rwsem_read_lock,
                       cpuhp_rwsem_read_unlock)

const struct bench_lock_ops OPS = {
    .name = NAME,
    .label = LABEL,
    .init = cpuhp_init,
    .fini = cpuhp_fini,
    .read_lock = cpuhp_read_lock,
    .read_unlock = cpuhp_read_unlock,
    .write_lock = cpuhp_write_lock,
    .write_unlock = cpuhp_write_unlock,
    .read_loop = cpuhp_read_loop,
};
