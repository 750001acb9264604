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
 * The same thread ends the exit windows of fenced (H) rcu_syncs
 * (cpuhp__defer_window()): there no grace period is needed, only a delay,
 * so at its deadline the thread calls the entry's expire function itself
 * (under ->lock) instead of call_rcu().  Each entry has its own deadline;
 * the timer is armed for the earliest.  Wherever the thread is missing (it
 * cannot start, its timerfd broke, a fork child), such an entry goes to
 * call_rcu() with its rcu callback like any other: later, never lost.
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

/* A window shorter than this is not worth a timer interrupt of its own. */
#define CPUHP__DEFER_MIN_NS 1000L

static struct {
	pthread_mutex_t lock;
	struct cpuhp__deferred *head; /* queued, not yet due */
	int tfd;                      /* -1: no thread (yet, or in a fork child) */
	bool armed;                   /* the timer will fire at ->armed_at */
	bool broken;                  /* no thread (it could not start, its timerfd went bad) */
	uint64_t armed_at;            /* CLOCK_MONOTONIC ns */
} defer = {PTHREAD_MUTEX_INITIALIZER, NULL, -1, false, false, 0};

/* What the last queueing cost its caller, ns (a statistic: relaxed). */
static _Atomic uint64_t queue_cost_ns;

/* For tests: callbacks a fork child found queued and handed over itself. */
unsigned long cpuhp__defer_child_handovers;

uint64_t cpuhp__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t cpuhp__defer_queue_cost_ns(void)
{
	return atomic_load_explicit(&queue_cost_ns, memory_order_relaxed);
}

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

/* Under ->lock: arm the timer for the earliest deadline queued, if any. */
static void rearm_locked(void)
{
	struct itimerspec at = {{0, 0}, {0, 0}};
	uint64_t first = UINT64_MAX;

	for (struct cpuhp__deferred *d = defer.head; d; d = d->next)
		if (d->deadline_ns < first)
			first = d->deadline_ns;
	defer.armed = false;
	if (first == UINT64_MAX)
		return;
	at.it_value.tv_sec = (time_t)(first / 1000000000u);
	at.it_value.tv_nsec = (long)(first % 1000000000u);
	/* Fails only if the descriptor was closed under us. */
	if (timerfd_settime(defer.tfd, TFD_TIMER_ABSTIME, &at, NULL)) {
		flush_locked(true);
		return;
	}
	defer.armed = true;
	defer.armed_at = first;
}

/*
 * Under ->lock, on the timer thread: every entry whose deadline has come
 * goes to call_rcu(), or to its expire function, which may ask for more
 * time.  An expire function that returns 0 is done with its entry, whose
 * owner may free it at once: it is not touched again.
 */
static void run_due_locked(void)
{
	struct cpuhp__deferred *d = defer.head, *keep = NULL;
	uint64_t now = cpuhp__now_ns();

	defer.head = NULL;
	while (d) {
		struct cpuhp__deferred *next = d->next;

		if (d->deadline_ns > now) {
			d->next = keep;
			keep = d;
		} else if (!d->expire) {
			call_now(d->head, d->func);
		} else {
			uint64_t more;

			more = d->expire(d);
			if (more) {
				d->deadline_ns =
				    now + (more < CPUHP__DEFER_MIN_NS ? CPUHP__DEFER_MIN_NS : more);
				d->next = keep;
				keep = d;
			}
		}
		d = next;
	}
	defer.head = keep;
	rearm_locked();
}

static void *defer_thread(void *arg)
{
	int tfd = (int)(intptr_t)arg;

	/* read() is a cancellation point; nothing may cancel us mid-queue. */
	(void)cpuhp__cancel_off();
	/* call_rcu() wants a registered thread; registering once keeps it off the loop. */
	CPUHP_BUG_ON(!cpuhp__thread_get(), "rcu_sync",
	             "out of memory registering the timer thread");
	for (;;) {
		uint64_t expirations;
		bool bad = read(tfd, &expirations, sizeof(expirations)) < 0 && errno != EINTR &&
		           errno != EAGAIN;

		pthread_mutex_lock(&defer.lock);
		if (bad && defer.tfd == tfd)
			flush_locked(true);
		else if (!bad)
			run_due_locked();
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
		/* close() is a cancellation point; we hold ->lock (internal.h). */
		int cancel = cpuhp__cancel_off();

		close(tfd);
		cpuhp__cancel_restore(cancel);
		goto broken;
	}
	defer.tfd = tfd;
	return true;
broken:
	defer.broken = true;
	return false;
}

/* Queue @d to be due @delay_ns from now; call_rcu() at once if there is no thread. */
static void queue(struct cpuhp__deferred *d, uint64_t delay_ns)
{
	uint64_t t0 = cpuhp__now_ns();

	d->deadline_ns = t0 + (delay_ns < CPUHP__DEFER_MIN_NS ? CPUHP__DEFER_MIN_NS : delay_ns);
	pthread_mutex_lock(&defer.lock);
	/*
	 * Under ->lock, whichever way it goes: a fork finds @d either not
	 * queued at all (->queued still false: its owner's fork handler
	 * queues it again in the child) or queued here or in liburcu.
	 */
	atomic_store_explicit(&d->queued, true, memory_order_relaxed);
	if (!start_locked()) {
		call_now(d->head, d->func);
		pthread_mutex_unlock(&defer.lock);
		return;
	}
	d->next = defer.head;
	defer.head = d;
	if (!defer.armed || d->deadline_ns < defer.armed_at)
		rearm_locked();
	pthread_mutex_unlock(&defer.lock);
	/* Not through *d: its expire may have run and its owner freed it. */
	atomic_store_explicit(&queue_cost_ns, cpuhp__now_ns() - t0, memory_order_relaxed);
}

void cpuhp__call_rcu_deferred(struct cpuhp__deferred *d, struct rcu_head *head,
                              void (*func)(struct rcu_head *head))
{
	d->head = head;
	d->func = func;
	d->expire = NULL;
	queue(d, CPUHP__DEFER_NS);
}

void cpuhp__defer_window(struct cpuhp__deferred *d, uint64_t delay_ns,
                         uint64_t (*expire)(struct cpuhp__deferred *d), struct rcu_head *head,
                         void (*func)(struct rcu_head *head))
{
	d->head = head;
	d->func = func;
	d->expire = expire;
	queue(d, delay_ns);
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

	/* Cancellation is off: fork.c's prepare turned it off for the whole fork. */
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
