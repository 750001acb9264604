/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Baselines: glibc's pthread_rwlock with its default (reader-preferring)
 * kind and with PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "bench.h"

static int rw_init_kind(void **out, int kind)
{
	pthread_rwlockattr_t attr;
	pthread_rwlock_t *rw = malloc(sizeof(*rw));
	int err;

	if (!rw)
		return -ENOMEM;
	pthread_rwlockattr_init(&attr);
	err = pthread_rwlockattr_setkind_np(&attr, kind);
	if (!err)
		err = pthread_rwlock_init(rw, &attr);
	pthread_rwlockattr_destroy(&attr);
	if (err) {
		free(rw);
		return -err;
	}
	*out = rw;
	return 0;
}

static int rw_init_default(void **out)
{
	return rw_init_kind(out, PTHREAD_RWLOCK_DEFAULT_NP);
}

static int rw_init_writer(void **out)
{
	return rw_init_kind(out, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
}

static void rw_fini(void *lock)
{
	pthread_rwlock_destroy(lock);
	free(lock);
}

static void rw_read_lock(void *lock)
{
	pthread_rwlock_rdlock(lock);
}

static void rw_read_unlock(void *lock)
{
	pthread_rwlock_unlock(lock);
}

static void rw_write_lock(void *lock)
{
	pthread_rwlock_wrlock(lock);
}

static void rw_write_unlock(void *lock)
{
	pthread_rwlock_unlock(lock);
}

BENCH_DEFINE_READ_LOOP(rw_read_loop, pthread_rwlock_t, pthread_rwlock_rdlock, pthread_rwlock_unlock)

const struct bench_lock_ops bench_rwlock = {
    .name = "rwlock",
    .label = "pthread_rwlock",
    .init = rw_init_default,
    .fini = rw_fini,
    .read_lock = rw_read_lock,
    .read_unlock = rw_read_unlock,
    .write_lock = rw_write_lock,
    .write_unlock = rw_write_unlock,
    .read_loop = rw_read_loop,
};

const struct bench_lock_ops bench_rwlock_wr = {
    .name = "rwlock-wr",
    .label = "pthread_rwlock writer-pref",
    .init = rw_init_writer,
    .fini = rw_fini,
    .read_lock = rw_read_lock,
    .read_unlock = rw_read_unlock,
    .write_lock = rw_write_lock,
    .write_unlock = rw_write_unlock,
    .read_loop = rw_read_loop,
};
