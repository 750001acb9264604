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
 * Each entry has its own deadline; the timer is armed for the earliest.
 * Wherever the thread is missing (its timerfd broke, a fork child), an
 * entry goes to call_rcu() with its rcu callback: later, never lost.
 *
 * The thread waits the grace period of a due G entry itself, with
 * synchronize_rcu(), rather than handing it to liburcu's call_rcu():
 * liburcu would then start its worker thread, and liburcu aborts the
 * process when it cannot ("call_rcu_data_init: Unrecoverable error").  So
 * our thread is the only one an exit needs, and we start it ourselves,
 * checking the error.  The entries stay queued through the grace period
 * (marked ->gp_wanted, then ->gp_passed), so that a fork finds them here.
 *
 * Every grace period the library waits, on any thread, goes through
 * cpuhp__synchronize_rcu(), and a fork waits for those in progress
 * (gp_lock, below): liburcu holds its grace-period mutex through one and
 * its registry mutex while it scans the readers, and it has no fork
 * handlers for them, so a child that inherited them held would hang in
 * its first grace period or in registering a thread.
 *
 * The thread starts when the first G writer enters (cpuhp__defer_prepare(),
 * on a path that may block anyway; H exits need no thread), and then
 * sleeps in read() on its timerfd; it never wakes on its own, so an idle
 * process pays nothing.  If it cannot be started (no thread can be
 * created: RLIMIT_NPROC, no address space; no timerfd), queueing fails and
 * the caller does without (rcu_sync.c: the exit waits its grace period
 * itself).  If its timerfd is closed under it, the queue goes to
 * call_rcu(), as it does in a fork child.
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

/* A delay shorter than this is not worth a timer interrupt of its own. */
#define CPUHP__DEFER_MIN_NS 1000L

static struct {
	pthread_mutex_t lock;
	struct cpuhp__deferred *head; /* queued, not yet done */
	int tfd;                      /* -1: no thread (yet, or in a fork child) */
	bool armed;                   /* the timer will fire at ->armed_at */
	bool broken;                  /* no thread (it could not start, its timerfd went bad) */
	uint64_t armed_at;            /* CLOCK_MONOTONIC ns */
} defer = {PTHREAD_MUTEX_INITIALIZER, NULL, -1, false, false, 0};

/*
 * Read-held through each of the library's synchronize_rcu() calls (they
 * still run concurrently, and liburcu lets them share one grace period);
 * write-held across fork().  Writers first, so that grace periods waited
 * back to back by other threads cannot keep a fork waiting.
 */
static pthread_rwlock_t gp_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

/* Set once the thread runs or cannot: cpuhp__defer_prepare()'s quick look. */
static _Atomic bool settled;

/* For tests: callbacks a fork child found queued and handed over itself. */
unsigned long cpuhp__defer_child_handovers;

uint64_t cpuhp__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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
		call_now(&d->rcu, d->ops->func);
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

	/* Entries waiting for the grace period in progress are run after it. */
	for (struct cpuhp__deferred *d = defer.head; d; d = d->next)
		if (!d->gp_wanted && d->deadline_ns < first)
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
 * and whose grace period has passed goes to its expire function, which
 * may ask for more time and another grace period; one whose grace period
 * has not passed yet is marked ->gp_wanted, and the return value says a
 * grace period is wanted.  An expire function that returns 0 is done with
 * its entry, whose owner may free it at once: it is not touched again.
 */
static bool run_due_locked(void)
{
	struct cpuhp__deferred *d = defer.head, *keep = NULL;
	uint64_t now = cpuhp__now_ns();
	bool want_gp = false;

	defer.head = NULL;
	while (d) {
		struct cpuhp__deferred *next = d->next;

		if (d->deadline_ns > now) {
			d->next = keep;
			keep = d;
		} else if (!d->gp_passed) {
			d->gp_wanted = true;
			want_gp = true;
			d->next = keep;
			keep = d;
		} else {
			uint64_t more;

			more = d->ops->expire(d);
			if (more) {
				d->deadline_ns =
				    now + (more < CPUHP__DEFER_MIN_NS ? CPUHP__DEFER_MIN_NS : more);
				d->gp_passed = false;
				d->next = keep;
				keep = d;
			}
		}
		d = next;
	}
	defer.head = keep;
	rearm_locked();
	return want_gp;
}

void cpuhp__synchronize_rcu(void)
{
	/* synchronize_rcu() may poll(), a cancellation point (internal.h). */
	int cancel = cpuhp__cancel_off();

	pthread_rwlock_rdlock(&gp_lock);
	urcu_memb_synchronize_rcu();
	pthread_rwlock_unlock(&gp_lock);
	cpuhp__cancel_restore(cancel);
}

/*
 * With ->lock held on entry and on return, dropped meanwhile: one grace
 * period for the entries marked ->gp_wanted.  They stay queued, and their
 * owners leave them alone until their expire function has run
 * (rcu_sync.c), so nothing but a fork can look at them meanwhile; fork
 * takes gp_lock first.  Entries queued during the grace period are not
 * marked: it may have begun before their exit.
 */
static void wait_gp_unlocked(void)
{
	pthread_mutex_unlock(&defer.lock);
	/* J (internal.h): after the marked entries' exits; their expire stores IDLE. */
	cpuhp__synchronize_rcu();
	pthread_mutex_lock(&defer.lock);
	for (struct cpuhp__deferred *d = defer.head; d; d = d->next) {
		if (d->gp_wanted) {
			/* Our accesses to the entry's owner come after its exit's. */
			cpuhp__tsan_acquire(&d->rcu);
			d->gp_wanted = false;
			d->gp_passed = true;
		}
	}
}

static void *defer_thread(void *arg)
{
	int tfd = (int)(intptr_t)arg;

	/*
	 * read() and synchronize_rcu() (which may poll()) are cancellation
	 * points: nothing may cancel us mid-queue or mid-grace-period.
	 */
	(void)cpuhp__cancel_off();
	/*
	 * call_rcu() (flush_locked() only) wants a registered thread;
	 * registering allocates nothing, and where it still fails
	 * (pthread_setspecific(), pcount.c) liburcu's read lock inside
	 * call_rcu() guards only its worker data, which nobody frees.
	 */
	(void)cpuhp__thread_get();
	for (;;) {
		uint64_t expirations;
		bool bad = read(tfd, &expirations, sizeof(expirations)) < 0 && errno != EINTR &&
		           errno != EAGAIN;

		pthread_mutex_lock(&defer.lock);
		if (bad && defer.tfd == tfd)
			flush_locked(true);
		else if (!bad)
			while (run_due_locked())
				wait_gp_unlocked();
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
	atomic_store_explicit(&settled, true, memory_order_relaxed);
	return true;
broken:
	defer.broken = true;
	atomic_store_explicit(&settled, true, memory_order_relaxed);
	return false;
}

void cpuhp__defer_prepare(void)
{
	/* A hint only: start_locked() decides under ->lock. */
	if (atomic_load_explicit(&settled, memory_order_relaxed))
		return;
	pthread_mutex_lock(&defer.lock);
	(void)start_locked();
	pthread_mutex_unlock(&defer.lock);
}

/*
 * Queue @d to be due CPUHP__DEFER_NS from now, a grace period after that.
 * False if there is no thread to run it: then @d is not taken, and
 * ->queued stays false.
 */
bool cpuhp__defer_gp(struct cpuhp__deferred *d, const struct cpuhp__defer_ops *ops)
{
	d->ops = ops;
	d->deadline_ns = cpuhp__now_ns() + CPUHP__DEFER_NS;
	d->gp_wanted = false;
	d->gp_passed = false;
	pthread_mutex_lock(&defer.lock);
	if (!start_locked()) {
		pthread_mutex_unlock(&defer.lock);
		return false;
	}
	/*
	 * Under ->lock: a fork finds @d either not queued at all (->queued
	 * still false: its owner's fork handler queues it again in the
	 * child) or queued here.
	 */
	atomic_store_explicit(&d->queued, true, memory_order_relaxed);
	/* Our accesses to what holds @d come before the timer thread's. */
	cpuhp__tsan_release(&d->rcu);
	d->next = defer.head;
	defer.head = d;
	if (!defer.armed || d->deadline_ns < defer.armed_at)
		rearm_locked();
	pthread_mutex_unlock(&defer.lock);
	return true;
}

void cpuhp__defer_before_fork(void)
{
	/* No grace period of ours in progress, and none starts, until the fork is done. */
	pthread_rwlock_wrlock(&gp_lock);
	pthread_mutex_lock(&defer.lock);
}

void cpuhp__defer_after_fork_parent(void)
{
	pthread_mutex_unlock(&defer.lock);
	pthread_rwlock_unlock(&gp_lock);
}

/*
 * In a fork child: gp_lock as new.  Not unlocked: glibc's rwlock records
 * its writer's thread id, which the forking thread no longer has here.
 */
static void gp_lock_init_after_fork_child(void)
{
#ifdef CPUHP__TSAN
	pthread_rwlockattr_t a;
	int err = pthread_rwlockattr_init(&a);

	if (!err)
		err =
		    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	if (!err)
		err = pthread_rwlock_init(&gp_lock, &a);
	CPUHP_BUG_ON(err, "rcu_sync", "cannot re-initialise after fork");
#else
	gp_lock = (pthread_rwlock_t)PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
#endif
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
	atomic_store_explicit(&settled, false, memory_order_relaxed);
	/* call_rcu() wants a registered thread; see defer_thread(). */
	if (d)
		(void)cpuhp__thread_get();
	for (struct cpuhp__deferred *i = d; i; i = i->next)
		cpuhp__defer_child_handovers++;
	/*
	 * liburcu's worker takes them (liburcu's fork handler restarts it,
	 * or the first call_rcu() starts it; if no thread can be created,
	 * liburcu aborts: a fork child starved of threads is not handled),
	 * whether or not a grace period of the parent's timer thread had
	 * passed for them.
	 */
	hand_over(d);
	pthread_mutex_unlock(&defer.lock);
	gp_lock_init_after_fork_child();
}
