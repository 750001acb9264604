/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * call_rcu() off the caller's time: rcu_sync's last exit queues its callback
 * here instead of calling call_rcu() itself.
 *
 * Why: liburcu's call_rcu() wakes its worker thread with a futex whenever
 * the worker sleeps, which is nearly always when writers are rare.  Waking a
 * thread whose CPU is idle costs the caller 5-13 us on the VMs we measure
 * (tests/bench), more than the rest of a burst of ten writers together.
 * Arming a timer does not wake anyone: the kernel's timer interrupt wakes
 * our thread later, on nobody's time, and that thread makes the call_rcu()
 * calls.  The price is CPUHP__DEFER_NS more on the slow path for readers,
 * against the ~10 ms by which liburcu's worker batches callbacks anyway.
 *
 * The thread starts on first use and then sleeps in read() on its timerfd;
 * it never wakes on its own, so an idle process pays nothing.  If it cannot
 * be started (no memory, no timerfd), or its timerfd is closed under it,
 * callers fall back to call_rcu().
 *
 * fork: prepare takes ->lock first (fork.c), so the child never inherits a
 * half-updated queue; the child has no timer thread (and shares the
 * parent's timerfd), so it drops both and hands any queued callback to
 * call_rcu() at once.  Nothing waits while holding ->lock: callers queue
 * without holding their own locks, and call_rcu() does not block.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "internal.h"

/* One millisecond: far past a burst of writers, small against liburcu's 10. */
#define CPUHP__DEFER_NS 1000000L

static struct {
	pthread_mutex_t lock;
	struct cpuhp__deferred *head; /* queued, not yet handed to call_rcu() */
	int tfd;                      /* -1: no thread (yet, or in a fork child) */
	bool armed;                   /* the timer will fire for ->head */
	bool broken;                  /* no thread (it could not start, its timerfd went bad) */
} defer = {PTHREAD_MUTEX_INITIALIZER, NULL, -1, false, false};

/* For tests: callbacks a fork child found queued and handed over itself. */
unsigned long cpuhp__defer_child_handovers;

/*
 * Our accesses to what holds @head come before the callback, which may let
 * its owner free it; TSan cannot see that through liburcu (internal.h).
 */
static void call_now(struct rcu_head *head, void (*func)(struct rcu_head *head))
{
	cpuhp__tsan_release(head);
	urcu_memb_call_rcu(head, func);
}

static void hand_over(struct cpuhp__deferred *d)
{
	while (d) {
		struct cpuhp__deferred *next = d->next;

		/* *d is not ours once its call is made. */
		call_now(d->head, d->func);
		d = next;
	}
}

/*
 * Under ->lock: hand over everything queued.  With @give_up, the timerfd
 * stopped working (an application that closes every descriptor, say): from
 * now on callers call call_rcu() themselves.  The descriptor is not closed:
 * its number may belong to someone else by now.
 */
static void flush_locked(bool give_up)
{
	struct cpuhp__deferred *d = defer.head;

	defer.head = NULL;
	defer.armed = false;
	if (give_up) {
		defer.tfd = -1;
		defer.broken = true;
	}
	/*
	 * Under ->lock: a fork then finds each callback either still queued
	 * (the child hands it over) or given to liburcu (whose fork handlers
	 * carry it over).
	 */
	hand_over(d);
}

static void *defer_thread(void *arg)
{
	int tfd = (int)(intptr_t)arg;

	/* call_rcu() wants a registered thread; registering once keeps it off the loop. */
	CPUHP_BUG_ON(!cpuhp__thread_get(), "rcu_sync",
	             "out of memory registering the timer thread");
	for (;;) {
		uint64_t expirations;
		bool bad = read(tfd, &expirations, sizeof(expirations)) < 0 && errno != EINTR &&
		           errno != EAGAIN;

		pthread_mutex_lock(&defer.lock);
		flush_locked(bad && defer.tfd == tfd);
		pthread_mutex_unlock(&defer.lock);
		if (bad)
			return NULL;
	}
}

/* Under ->lock: the timer thread exists, or false if it cannot. */
static bool start_locked(void)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t tid;
	int tfd, err;

	if (defer.tfd >= 0)
		return true;
	if (defer.broken)
		return false;
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (tfd < 0)
		goto broken;
	/* Signals stay with the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&tid, &attr, defer_thread, (void *)(intptr_t)tfd);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		close(tfd);
		goto broken;
	}
	defer.tfd = tfd;
	return true;
broken:
	defer.broken = true;
	return false;
}

void cpuhp__call_rcu_deferred(struct cpuhp__deferred *d, struct rcu_head *head,
                              void (*func)(struct rcu_head *head))
{
	static const struct itimerspec in_a_while = {.it_value = {0, CPUHP__DEFER_NS}};

	d->head = head;
	d->func = func;
	pthread_mutex_lock(&defer.lock);
	if (!start_locked()) {
		pthread_mutex_unlock(&defer.lock);
		call_now(head, func);
		return;
	}
	d->next = defer.head;
	defer.head = d;
	if (!defer.armed) {
		/* Fails only if the descriptor was closed under us. */
		if (timerfd_settime(defer.tfd, 0, &in_a_while, NULL))
			flush_locked(true);
		else
			defer.armed = true;
	}
	pthread_mutex_unlock(&defer.lock);
}

void cpuhp__defer_before_fork(void)
{
	pthread_mutex_lock(&defer.lock);
}

void cpuhp__defer_after_fork_parent(void)
{
	pthread_mutex_unlock(&defer.lock);
}

/* After liburcu's call_rcu workers are back: hand the queue over now. */
void cpuhp__defer_after_fork_child(void)
{
	struct cpuhp__deferred *d = defer.head;

	if (defer.tfd >= 0)
		close(defer.tfd);
	defer.tfd = -1;
	defer.head = NULL;
	defer.armed = false;
	defer.broken = false;
	if (d)
		CPUHP_BUG_ON(!cpuhp__thread_get(), "rcu_sync", "out of memory in a fork child");
	for (struct cpuhp__deferred *i = d; i; i = i->next)
		cpuhp__defer_child_handovers++;
	hand_over(d);
	pthread_mutex_unlock(&defer.lock);
}
