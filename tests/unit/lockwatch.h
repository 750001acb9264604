/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * White-box helpers for the lock tests: observe a lock's internal state
 * (under its own mutex, as the library does) and wait until it reaches a
 * given state.  Waiting polls the state the test is about (with
 * sched_yield), never a clock: a test proceeds exactly when the lock got
 * there, and hangs (meson's timeout reports it) if it never does.
 */
#ifndef CPUHP_TESTS_LOCKWATCH_H
#define CPUHP_TESTS_LOCKWATCH_H

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>

#include <cpuhp/rcu_sync.h>

#include "internal.h"

#define WAIT_FOR(cond)                                                                             \
	do {                                                                                       \
		while (!(cond))                                                                    \
			sched_yield();                                                             \
	} while (0)

static inline unsigned lw_readers_waiting(struct cpuhp_rwsem *sem)
{
	unsigned n;

	cpuhp__futex_lock(&sem->lock);
	n = sem->nr_rwait;
	cpuhp__futex_unlock(&sem->lock);
	return n;
}

static inline unsigned lw_writers_queued(struct cpuhp_rwsem *sem)
{
	unsigned n = 0;

	cpuhp__futex_lock(&sem->lock);
	for (struct cpuhp__wwaiter *w = sem->whead; w; w = w->next)
		n++;
	cpuhp__futex_unlock(&sem->lock);
	return n;
}

static inline bool lw_blocked(struct cpuhp_rwsem *sem)
{
	return atomic_load(&sem->block);
}

/* A writer is draining readers: it holds ->block and sleeps on the futex. */
static inline bool lw_writer_draining(struct cpuhp_rwsem *sem)
{
	return atomic_load(&sem->block) && atomic_load(&sem->wwait);
}

static inline long lw_readers(struct cpuhp_rwsem *sem)
{
	return cpuhp__pcount_sum(&sem->readers);
}

static inline int lw_gp_state(struct cpuhp_rcu_sync *rss)
{
	int s;

	cpuhp__futex_lock(&rss->lock);
	s = atomic_load(&rss->state);
	cpuhp__futex_unlock(&rss->lock);
	return s;
}

static inline int lw_gp_count(struct cpuhp_rcu_sync *rss)
{
	int c;

	cpuhp__futex_lock(&rss->lock);
	c = rss->count;
	cpuhp__futex_unlock(&rss->lock);
	return c;
}

static inline unsigned long lw_gp_syncs(struct cpuhp_rcu_sync *rss)
{
	unsigned long n;

	cpuhp__futex_lock(&rss->lock);
	n = rss->nr_sync;
	cpuhp__futex_unlock(&rss->lock);
	return n;
}

static inline unsigned long lw_gp_fences(struct cpuhp_rcu_sync *rss)
{
	unsigned long n;

	cpuhp__futex_lock(&rss->lock);
	n = rss->nr_fences;
	cpuhp__futex_unlock(&rss->lock);
	return n;
}

static inline unsigned long lw_gp_callbacks(struct cpuhp_rcu_sync *rss)
{
	unsigned long n;

	cpuhp__futex_lock(&rss->lock);
	n = rss->nr_callbacks;
	cpuhp__futex_unlock(&rss->lock);
	return n;
}

static inline unsigned long lw_gp_linger_ends(struct cpuhp_rcu_sync *rss)
{
	unsigned long n;

	cpuhp__futex_lock(&rss->lock);
	n = rss->nr_linger_ends;
	cpuhp__futex_unlock(&rss->lock);
	return n;
}

/* Back to IDLE needs nothing queued: idle, or lingering (a slow reader ends it). */
static inline bool lw_idle_or_lingering(struct cpuhp_rcu_sync *rss)
{
	int s = lw_gp_state(rss);

	return s == CPUHP__GP_IDLE || s == CPUHP__GP_LINGER;
}

/*
 * The writers' budget (rcu_sync.c) as a test wants it: a re-enter cost of
 * @cost ns and a credit of @credit ns, accrued from now on.  The linger's
 * length then follows from these, whatever the clock measured.
 */
static inline void lw_set_budget(struct cpuhp_rcu_sync *rss, uint64_t cost, int64_t credit)
{
	cpuhp__futex_lock(&rss->lock);
	rss->reenter_ns = cost;
	rss->credit_ns = credit;
	rss->credit_at_ns = cpuhp__now_ns();
	cpuhp__futex_unlock(&rss->lock);
}

/*
 * A thread parked inside a liburcu read-side section until released: no
 * grace period can end meanwhile, so a queued rcu_sync callback cannot run
 * and a synchronize_rcu() cannot return.  That pins states for a test.
 */
struct lw_rcu_holder {
	pthread_t tid;
	sem_t in, go;
};

static inline void *lw_rcu_holder_main(void *p)
{
	struct lw_rcu_holder *h = p;

	cpuhp_rcu_read_lock();
	sem_post(&h->in);
	sem_wait(&h->go);
	cpuhp_rcu_read_unlock();
	return NULL;
}

/* Returns once the thread is inside its section. */
static inline void lw_rcu_hold(struct lw_rcu_holder *h)
{
	sem_init(&h->in, 0, 0);
	sem_init(&h->go, 0, 0);
	pthread_create(&h->tid, NULL, lw_rcu_holder_main, h);
	sem_wait(&h->in);
}

static inline void lw_rcu_release(struct lw_rcu_holder *h)
{
	sem_post(&h->go);
	pthread_join(h->tid, NULL);
}

/*
 * Block until rcu_sync is idle again (the callback broadcasts ->cond).  A
 * lingering exit (H) is ended by a reader on the slow path: we are that
 * reader, until its time has come.  Every move into LINGER broadcasts too.
 */
static inline void lw_wait_idle(struct cpuhp_rcu_sync *rss)
{
	cpuhp__futex_lock(&rss->lock);
	while (atomic_load(&rss->state) != CPUHP__GP_IDLE) {
		if (atomic_load(&rss->state) != CPUHP__GP_LINGER) {
			cpuhp__rcu_sync_wait_locked(rss);
			continue;
		}
		cpuhp__futex_unlock(&rss->lock);
		cpuhp__rcu_sync_linger_end(rss);
		sched_yield();
		cpuhp__futex_lock(&rss->lock);
	}
	cpuhp__futex_unlock(&rss->lock);
}

#endif /* CPUHP_TESTS_LOCKWATCH_H */
