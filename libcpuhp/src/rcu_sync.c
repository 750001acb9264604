/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rcu_sync: the reader fast path switch, after the kernel's kernel/rcu/sync.c
 * (semantics only).
 *
 * Readers test cpuhp__rcu_sync_is_idle() inside an RCU read-side section.
 * An updater's enter moves the state off IDLE and, if it was IDLE, waits for
 * a grace period (G): afterwards no reader is still inside a section in
 * which it saw IDLE, and every later section sees "not idle".  The last exit
 * does not wait: a call_rcu() callback returns the state to IDLE a grace
 * period later, and an enter that arrives before the callback runs finds
 * readers still on the slow path and skips the grace period.
 *
 * liburcu's call_rcu worker batches callbacks (~10 ms here), so readers stay
 * slow for about 10 ms after the last exit: a burst of updaters pays one
 * grace period in all.  The exit's call_rcu() itself is made a millisecond
 * later by defer.c's timer thread, so that no updater pays for waking
 * liburcu's worker.
 *
 * A cpuhp_rwsem's rcu_sync (cpuhp__rcu_sync_init_fenced()) has readers
 * that use no read-side section where membarrier works (H in internal.h):
 * its enter issues the membarrier instead of waiting for a grace period.
 *
 * Such readers need no grace period on the way back either (I in
 * internal.h), so their last exit does not go through call_rcu(): it opens
 * a window at whose end defer.c's timer thread calls window_expire(), which
 * goes IDLE (or PASSED, if an enter came meanwhile).  Its length is policy,
 * after BRAVO (Dice and Kogan, ATC'19): a multiple of what leaving IDLE
 * again costs the writers, measured (the membarrier and the wake-ups of
 * concurrent enters, plus queueing the next window's timer), so that a
 * writer pays that cost at most once per CPUHP__WINDOW_FACTOR times its
 * length: with writes more frequent than the window, they find rcu_sync
 * still out of IDLE and skip the membarrier, as in a burst; with writes
 * rarer, readers are back on the fast path soon after each.  Bounded above
 * by the ~11 ms that the call_rcu() exit takes (1 ms timer + liburcu's
 * 10 ms batching).
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

static void set_state(struct cpuhp_rcu_sync *rss, enum cpuhp__gp_state s)
{
	/* Release: pairs with the readers' acquire in cpuhp__rcu_sync_is_idle(). */
	atomic_store_explicit(&rss->state, s, memory_order_release);
}

static void rcu_sync_func(struct rcu_head *head);

static enum cpuhp__gp_state get_state(struct cpuhp_rcu_sync *rss)
{
	return atomic_load_explicit(&rss->state, memory_order_relaxed);
}

void cpuhp__rcu_sync_init(struct cpuhp_rcu_sync *rss)
{
	pthread_condattr_t ca;

	atomic_init(&rss->state, CPUHP__GP_IDLE);
	rss->count = 0;
	rss->nr_sync = 0;
	rss->nr_fences = 0;
	rss->nr_callbacks = 0;
	rss->nr_windows = 0;
	rss->reenter_ns = 0;
	rss->idle_at_ns = 0;
	rss->window_holds = 0;
	rss->window_due = false;
	pthread_mutex_init(&rss->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rss->cond, &ca);
	pthread_condattr_destroy(&ca);
	rss->fenced_readers = false;
}

void cpuhp__rcu_sync_init_fenced(struct cpuhp_rcu_sync *rss)
{
	cpuhp__rcu_sync_init(rss);
	rss->fenced_readers = true;
}

/*
 * BRAVO's N: a writer that finds IDLE pays the re-enter cost, and only
 * after a window N times that cost with no writer at all, so the writers'
 * overhead stays below 1/(N+1) of their time: 10% at most.
 */
#define CPUHP__WINDOW_FACTOR 9
/* Today's window for G readers: 1 ms of timer and liburcu's 10 ms batching. */
#define CPUHP__WINDOW_MAX_NS 11000000u

/* The last exit opens a window (I) rather than waiting for a grace period (G). */
static bool exit_by_window(const struct cpuhp_rcu_sync *rss)
{
	return rss->fenced_readers && cpuhp__asym_fence;
}

uint64_t cpuhp__rcu_sync_window_ns_locked(const struct cpuhp_rcu_sync *rss)
{
	uint64_t cost = rss->reenter_ns + cpuhp__defer_queue_cost_ns();
	uint64_t w = cost * CPUHP__WINDOW_FACTOR;

	if (w < cost)
		w = cost;
	return w < CPUHP__WINDOW_MAX_NS ? w : CPUHP__WINDOW_MAX_NS;
}

/*
 * Under ->lock: the exit window ended.  Returns 0, or the ns left of the
 * window of an exit that came since it was queued.
 */
static uint64_t window_end_locked(struct cpuhp_rcu_sync *rss)
{
	uint64_t now;

	rss->nr_windows++;
	if (rss->count) {
		/*
		 * EXIT/REPLAY -> PASSED: an enter came inside the window and
		 * skipped the membarrier; readers have been on the slow path
		 * all along, and stay there until it exits.
		 */
		set_state(rss, CPUHP__GP_PASSED);
		return 0;
	}
	now = cpuhp__now_ns();
	if (now < rss->idle_at_ns) {
		/* REPLAY -> EXIT: a later exit's window is still open. */
		set_state(rss, CPUHP__GP_EXIT);
		return rss->idle_at_ns - now;
	}
	/*
	 * EXIT/REPLAY -> IDLE, I: the release (under ->lock, which every
	 * exit took) orders every writer's section before the readers'
	 * acquire load that sees IDLE; the next enter finds IDLE under
	 * ->lock and issues the membarrier (H).
	 */
	set_state(rss, CPUHP__GP_IDLE);
	pthread_cond_broadcast(&rss->cond);
	return 0;
}

/* defer.c's timer thread, at the window's end (its lock held: we must not queue). */
static uint64_t window_expire(struct cpuhp__deferred *d)
{
	struct cpuhp_rcu_sync *rss = cpuhp__container_of(d, struct cpuhp_rcu_sync, defer);
	uint64_t more = 0;

	pthread_mutex_lock(&rss->lock);
	if (rss->window_holds)
		rss->window_due = true; /* a test holds it: the release requeues */
	else
		more = window_end_locked(rss);
	/* After this unlock, an IDLE rss may be freed: return without touching it. */
	pthread_mutex_unlock(&rss->lock);
	return more;
}

void cpuhp__rcu_sync_window_hold(struct cpuhp_rcu_sync *rss)
{
	pthread_mutex_lock(&rss->lock);
	rss->window_holds++;
	pthread_mutex_unlock(&rss->lock);
}

void cpuhp__rcu_sync_window_release(struct cpuhp_rcu_sync *rss)
{
	bool due;

	pthread_mutex_lock(&rss->lock);
	CPUHP_BUG_ON(!rss->window_holds, "rcu_sync", "window release without hold");
	due = --rss->window_holds == 0 && rss->window_due;
	rss->window_due = false;
	pthread_mutex_unlock(&rss->lock);
	/*
	 * Outside ->lock, as in exit: nothing else queues ->defer while the
	 * state stays EXIT or REPLAY, which only the expiry changes.
	 */
	if (due)
		cpuhp__defer_window(&rss->defer, 0, window_expire, &rss->cb, rcu_sync_func);
}

/* The call_rcu() callback: a grace period has passed since the last exit. */
static void rcu_sync_func(struct rcu_head *head)
{
	struct cpuhp_rcu_sync *rss = cpuhp__container_of(head, struct cpuhp_rcu_sync, cb);

	cpuhp__tsan_acquire(head); /* pairs with defer.c's release */
	pthread_mutex_lock(&rss->lock);
	rss->nr_callbacks++;
	if (rss->count) {
		/*
		 * EXIT/REPLAY -> PASSED: an enter came after the exit that queued
		 * us.  Readers have been on the slow path all along, so the
		 * updater needs no period of its own.
		 */
		set_state(rss, CPUHP__GP_PASSED);
	} else if (get_state(rss) == CPUHP__GP_REPLAY) {
		/*
		 * REPLAY -> EXIT: an enter and its exit came and went while we
		 * were pending.  Readers that start now must still see that
		 * updater's work, so wait one more period before going idle.
		 */
		set_state(rss, CPUHP__GP_EXIT);
		urcu_memb_call_rcu(&rss->cb, rcu_sync_func);
	} else {
		/*
		 * EXIT -> IDLE: a full grace period after the last exit, every
		 * reader that starts now sees everything the updaters did.
		 */
		set_state(rss, CPUHP__GP_IDLE);
		pthread_cond_broadcast(&rss->cond);
	}
	pthread_mutex_unlock(&rss->lock);
}

void cpuhp__rcu_sync_enter(struct cpuhp_rcu_sync *rss)
{
	enum cpuhp__gp_state was;
	bool fence_only;

	/* call_rcu() and synchronize_rcu() want a registered thread. */
	cpuhp__thread_get();
	pthread_mutex_lock(&rss->lock);
	was = get_state(rss);
	CPUHP_BUG_ON(rss->count < 0 || rss->count == INT32_MAX, "rcu_sync", "enter with count %d",
	             rss->count);
	rss->count++;
	if (was == CPUHP__GP_IDLE) {
		/* IDLE -> ENTER: new readers go slow; old ones may still be fast. */
		set_state(rss, CPUHP__GP_ENTER);
		fence_only = exit_by_window(rss); /* H readers: also exit by window (I) */
		if (fence_only)
			rss->nr_fences++;
		else
			rss->nr_sync++;
		pthread_mutex_unlock(&rss->lock);
		if (fence_only) {
			uint64_t t0 = cpuhp__now_ns(), cost;

			/*
			 * H: a cpuhp_rwsem's readers use no read-side section
			 * (rwsem.c); this fence on their CPUs orders them, and
			 * a grace period would add nothing.
			 */
			cpuhp__membarrier();
			pthread_mutex_lock(&rss->lock);
			/* ENTER -> PASSED: let concurrent enters (waiting below) through. */
			set_state(rss, CPUHP__GP_PASSED);
			pthread_cond_broadcast(&rss->cond);
			/*
			 * What leaving IDLE cost us: the membarrier, ->lock and
			 * waking the enters that waited; smoothed (1/4 new).
			 */
			cost = cpuhp__now_ns() - t0;
			rss->reenter_ns = rss->reenter_ns ? (3 * rss->reenter_ns + cost) / 4 : cost;
			pthread_mutex_unlock(&rss->lock);
			return;
		}
		/*
		 * G: the grace period orders our state change before the end
		 * of every reader section that saw IDLE, including the
		 * fast-path increments and the critical sections before
		 * fast-path decrements in rwsem.c.
		 */
		urcu_memb_synchronize_rcu();
		pthread_mutex_lock(&rss->lock);
		/* ENTER -> PASSED: let concurrent enters (waiting below) through. */
		set_state(rss, CPUHP__GP_PASSED);
		pthread_cond_broadcast(&rss->cond);
		pthread_mutex_unlock(&rss->lock);
		return;
	}
	/*
	 * ENTER: another enter waits for the grace period; wait for it too.
	 * PASSED, EXIT, REPLAY: readers are on the slow path already, no wait.
	 */
	while (get_state(rss) == CPUHP__GP_ENTER)
		pthread_cond_wait(&rss->cond, &rss->lock);
	pthread_mutex_unlock(&rss->lock);
}

void cpuhp__rcu_sync_exit(struct cpuhp_rcu_sync *rss)
{
	bool queue = false, window = exit_by_window(rss);
	uint64_t window_ns = 0;

	cpuhp__thread_get();
	pthread_mutex_lock(&rss->lock);
	CPUHP_BUG_ON(rss->count <= 0, "rcu_sync", "exit without enter (count %d)", rss->count);
	if (--rss->count == 0) {
		enum cpuhp__gp_state s = get_state(rss);

		if (s == CPUHP__GP_PASSED) {
			/* PASSED -> EXIT: go idle one grace period from now. */
			set_state(rss, CPUHP__GP_EXIT);
			queue = true;
		} else if (s == CPUHP__GP_EXIT) {
			/* EXIT -> REPLAY: the pending callback is too early for us. */
			set_state(rss, CPUHP__GP_REPLAY);
		}
		/* REPLAY stays REPLAY; ENTER cannot be: enter returned. */
		if (window) {
			/* I: readers go fast once this exit's window is over. */
			window_ns = cpuhp__rcu_sync_window_ns_locked(rss);
			rss->idle_at_ns = cpuhp__now_ns() + window_ns;
		}
	}
	pthread_mutex_unlock(&rss->lock);
	/*
	 * The call_rcu() is made by defer.c's thread: making it here would wake
	 * liburcu's worker on our time.  Queued outside ->lock (fork.c's lock
	 * order), which is safe: until the callback runs, the state stays EXIT
	 * or REPLAY, so no other exit queues ->defer and free waits for us.
	 */
	if (queue && window)
		cpuhp__defer_window(&rss->defer, window_ns, window_expire, &rss->cb, rcu_sync_func);
	else if (queue)
		cpuhp__call_rcu_deferred(&rss->defer, &rss->cb, rcu_sync_func);
}

void cpuhp__rcu_sync_destroy(struct cpuhp_rcu_sync *rss)
{
	pthread_mutex_lock(&rss->lock);
	CPUHP_BUG_ON(rss->count, "rcu_sync", "freed with %d enter(s) not exited", rss->count);
	/* No reader is left to need the extra period REPLAY asked for. */
	if (get_state(rss) == CPUHP__GP_REPLAY)
		set_state(rss, CPUHP__GP_EXIT);
	while (get_state(rss) != CPUHP__GP_IDLE)
		pthread_cond_wait(&rss->cond, &rss->lock);
	pthread_mutex_unlock(&rss->lock);
	pthread_cond_destroy(&rss->cond);
	pthread_mutex_destroy(&rss->lock);
}

int cpuhp_rcu_sync_new(struct cpuhp_rcu_sync **out)
{
	struct cpuhp_rcu_sync *rss = malloc(sizeof(*rss));

	if (!rss)
		return -ENOMEM;
	cpuhp__rcu_sync_init(rss);
	*out = rss;
	return 0;
}

void cpuhp_rcu_sync_free(struct cpuhp_rcu_sync *rss)
{
	if (!rss)
		return;
	cpuhp__rcu_sync_destroy(rss);
	free(rss);
}

void cpuhp_rcu_sync_enter(struct cpuhp_rcu_sync *rss)
{
	cpuhp__rcu_sync_enter(rss);
}

void cpuhp_rcu_sync_exit(struct cpuhp_rcu_sync *rss)
{
	cpuhp__rcu_sync_exit(rss);
}

bool cpuhp_rcu_sync_is_idle(const struct cpuhp_rcu_sync *rss)
{
	return cpuhp__rcu_sync_is_idle(rss);
}

void cpuhp_rcu_read_lock(void)
{
	struct cpuhp__thread *t = cpuhp__thread_get();

	CPUHP_BUG_ON(!t, "rcu_sync", "out of memory registering the thread with liburcu");
	urcu_memb_read_lock();
}

void cpuhp_rcu_read_unlock(void)
{
	urcu_memb_read_unlock();
}
