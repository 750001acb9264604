/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Design 1, the old get_online_cpus(): every reader takes one mutex to bump
 * a reference count.  The writer holds the mutex for its whole section (so
 * no reader can start) and, having taken it, waits on a condition variable
 * until the readers already inside have dropped the count to zero.
 */
#include <pthread.h>
#include <errno.h>
#include <stdlib.h>

#include "bench.h"

struct mutex_lock {
	pthread_mutex_t lock;
	pthread_cond_t drained;   /* signalled when refcount drops to 0 with a writer waiting */
	unsigned long refcount;   /* readers inside; under lock */
	unsigned writers_waiting; /* under lock; several writers may wait */
};

static int mutex_init(void **out)
{
	struct mutex_lock *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->drained, NULL);
	*out = m;
	return 0;
}

static void mutex_fini(void *lock)
{
	struct mutex_lock *m = lock;

	pthread_cond_destroy(&m->drained);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static inline void mutex_read_lock_inline(struct mutex_lock *m)
{
	pthread_mutex_lock(&m->lock);
	m->refcount++;
	pthread_mutex_unlock(&m->lock);
}

static inline void mutex_read_unlock_inline(struct mutex_lock *m)
{
	pthread_mutex_lock(&m->lock);
	if (--m->refcount == 0 && m->writers_waiting)
		pthread_cond_signal(&m->drained);
	pthread_mutex_unlock(&m->lock);
}

static void mutex_read_lock(void *lock)
{
	mutex_read_lock_inline(lock);
}

static void mutex_read_unlock(void *lock)
{
	mutex_read_unlock_inline(lock);
}

static void mutex_write_lock(void *lock)
{
	struct mutex_lock *m = lock;

	pthread_mutex_lock(&m->lock);
	m->writers_waiting++;
	while (m->refcount)
		pthread_cond_wait(&m->drained, &m->lock);
	m->writers_waiting--;
	/* Keep the mutex: readers now block in mutex_read_lock(). */
}

static void mutex_write_unlock(void *lock)
{
	struct mutex_lock *m = lock;

	/* Another writer may be parked on a count that is already zero. */
	if (m->writers_waiting && m->refcount == 0)
		pthread_cond_signal(&m->drained);
	pthread_mutex_unlock(&m->lock);
}

BENCH_DEFINE_READ_LOOP(mutex_read_loop, struct mutex_lock, mutex_read_lock_inline,
                       mutex_read_unlock_inline)

const struct bench_lock_ops bench_mutex = {
    .name = "mutex",
    .label = "1: mutex+refcount (old)",
    .init = mutex_init,
    .fini = mutex_fini,
    .read_lock = mutex_read_lock,
    .read_unlock = mutex_read_unlock,
    .write_lock = mutex_write_lock,
    .write_unlock = mutex_write_unlock,
    .read_loop = mutex_read_loop,
};
