/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Debug checks (-Ddebug_checks=true): misuse of a cpuhp_rwsem that would
 * otherwise corrupt a count or deadlock silently is reported, naming the
 * lock, and aborts.  Without debug checks these are empty inlines
 * (internal.h) and this file compiles to nothing.
 *
 * The counts kept here are not part of the lock's ordering: relaxed, and
 * read only to decide whether to report.
 */
#include <pthread.h>

#include "internal.h"

#if CPUHP_DEBUG
void cpuhp__debug_read_locked(struct cpuhp_rwsem *sem, struct cpuhp__slot *s)
{
	atomic_fetch_add_explicit(&sem->dbg_readers, 1, memory_order_relaxed);
	if (s)
		s->held++;
}

void cpuhp__debug_read_unlocked(struct cpuhp_rwsem *sem, struct cpuhp__slot *s)
{
	long before = atomic_fetch_sub_explicit(&sem->dbg_readers, 1, memory_order_relaxed);

	CPUHP_BUG_ON(before <= 0, sem->readers.name,
	             "read unlock without a read lock (more unlocks than locks)");
	if (s)
		s->held--;
}

void cpuhp__debug_recursive_wait(struct cpuhp_rwsem *sem, struct cpuhp__slot *s)
{
	CPUHP_BUG_ON(s && s->held > 0, sem->readers.name,
	             "recursive read lock while a writer waits: the writer waits for this "
	             "thread's outer read lock, this thread waits for the writer (deadlock); use "
	             "cpuhp_get_online_cpus() for recursion");
}

void cpuhp__debug_write_locked(struct cpuhp_rwsem *sem)
{
	struct cpuhp__thread *t = cpuhp__thread_get();

	atomic_store(&sem->dbg_owner, pthread_self());
	atomic_store(&sem->dbg_owned, 1);
	if (t)
		t->write_held++;
}

void cpuhp__debug_write_unlocked(struct cpuhp_rwsem *sem)
{
	struct cpuhp__thread *t = cpuhp__self;

	CPUHP_BUG_ON(!atomic_load(&sem->dbg_owned) ||
	                 !pthread_equal(atomic_load(&sem->dbg_owner), pthread_self()),
	             sem->readers.name,
	             "write unlock by a thread that does not hold the write lock");
	atomic_store(&sem->dbg_owned, 0);
	if (t)
		t->write_held--;
}

static void debug_exit_check(struct cpuhp__pcount *pc, long held)
{
	struct cpuhp_rwsem *sem = cpuhp__container_of(pc, struct cpuhp_rwsem, readers);

	CPUHP_BUG_ON(atomic_load(&sem->dbg_readers) > 0, sem->readers.name,
	             "thread exits inside a read-side critical section (%ld read lock(s) "
	             "taken and not released)",
	             held);
}

/* Called for every lock (registry lock held): report one this thread write-holds. */
static void debug_exit_write_check(struct cpuhp__pcount *pc)
{
	struct cpuhp_rwsem *sem = cpuhp__container_of(pc, struct cpuhp_rwsem, readers);

	CPUHP_BUG_ON(atomic_load(&sem->dbg_owned) &&
	                 pthread_equal(atomic_load(&sem->dbg_owner), pthread_self()),
	             sem->readers.name, "thread exits holding the write lock");
}

void cpuhp__debug_thread_exit(struct cpuhp__thread *t)
{
	if (t->write_held) {
		/* ->write_held is only a count: find the lock, to name it. */
		cpuhp__registry_lock();
		cpuhp__registry_for_each_counter(debug_exit_write_check);
		cpuhp__registry_unlock();
		CPUHP_BUG("cpuhp_rwsem", "thread exits holding %u write lock(s)", t->write_held);
	}
	cpuhp__pcount_debug_exit(t, debug_exit_check);
}
#endif /* CPUHP_DEBUG */
