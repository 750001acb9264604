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
 * The last exit's "callback" is run by defer.c's timer thread: a
 * millisecond later it waits a grace period itself (not liburcu's
 * call_rcu(), whose worker thread liburcu starts on first use and aborts
 * the process for if it cannot) and then calls gp_expire().  Readers stay
 * slow for about 1 ms and a grace period after the last exit, and a burst
 * of updaters inside that pays one grace period in all; no updater pays
 * for waking a thread.
 *
 * Out of threads (the timer thread cannot be created; defer.c), the last
 * exit does the thread's work: a G exit waits its grace period itself
 * (exit_without_thread()), or, inside a read-side section where it cannot,
 * leaves the object EXIT and "parked" until the next last exit or free.
 *
 * A cpuhp_rwsem's rcu_sync (cpuhp__rcu_sync_init_fenced()) has readers
 * that use no read-side section where membarrier works (H in internal.h):
 * its enter issues the membarrier instead of waiting for a grace period.
 *
 * Such readers need no grace period on the way back either (I in
 * internal.h), so their last exit queues nothing: it lingers (LINGER).  The
 * first reader on the slow path after the linger's end goes IDLE; a writer
 * that comes first finds LINGER, skips the membarrier and goes to PASSED
 * itself.  So no such exit makes a system call or wakes a thread, and where
 * nobody reads, writers keep finding LINGER: a writer from idle pays no
 * system call at all.  How long a linger lasts is the writers' budget,
 * after BRAVO (below).
 */
#include <errno.h>
#include <limits.h>
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

/*
 * The condition variable's broadcast (internal.h: ->cond), under ->lock:
 * the sequence moves on and bit 0 clears, so a waiter that set it finds
 * the word changed whether it sleeps already or not; the system call
 * only if one did.
 */
static void broadcast_locked(struct cpuhp_rcu_sync *rss)
{
	unsigned c = atomic_load_explicit(&rss->cond, memory_order_relaxed);

	atomic_store_explicit(&rss->cond, (c | 1) + 1, memory_order_relaxed);
	if (c & 1)
		cpuhp__futex_wake(&rss->cond, INT_MAX);
}

void cpuhp__rcu_sync_init(struct cpuhp_rcu_sync *rss)
{
	atomic_init(&rss->state, CPUHP__GP_IDLE);
	rss->count = 0;
	rss->inherited = 0;
	atomic_init(&rss->lock.word, 0);
	atomic_init(&rss->cond, 0);
	rss->nr_sync = 0;
	rss->nr_fences = 0;
	rss->nr_callbacks = 0;
	rss->nr_linger_ends = 0;
	rss->nr_destroy_waits = 0;
	rss->reenter_ns = 0;
	rss->idle_at_ns = 0;
	rss->linger_holds = 0;
	rss->credit_ns = 0;
	atomic_init(&rss->linger_until_ns, 0);
	/* The lock's life so far earns the first credit. */
	rss->credit_at_ns = cpuhp__now_ns();
	rss->fenced_readers = false;
	rss->parked = false;
	atomic_init(&rss->defer.queued, false);
	rss->defer.gp_wanted = rss->defer.gp_passed = false;
}

void cpuhp__rcu_sync_init_fenced(struct cpuhp_rcu_sync *rss)
{
	cpuhp__rcu_sync_init(rss);
	rss->fenced_readers = true;
}

/* The last exit lingers (I) rather than waiting for a grace period (G). */
static bool exit_lingers(const struct cpuhp_rcu_sync *rss)
{
	return rss->fenced_readers && cpuhp__asym_fence;
}

/*
 * The writers' budget (H only), after BRAVO (Dice and Kogan, ATC'19), whose
 * writer revokes the readers' bias and keeps it off for a multiple of what
 * revoking cost, so that writers spend at most a fixed share of their time
 * on it.  Here revoking is re-entering: a writer that finds IDLE pays the
 * membarrier and the wake-ups of the enters that waited for it, measured.
 * The writers earn credit at 1/CPUHP__CREDIT_RATE of the time passing (up
 * to CPUHP__CREDIT_CAP re-enter costs), and every re-enter spends what it
 * cost.  A lingering exit ends, letting readers go fast (and the next
 * writer pay), only once the credit is back at zero.  So, whatever the
 * writers do, re-entering costs them at most 1/CPUHP__CREDIT_RATE of any
 * stretch of time, plus the cap: a share BRAVO's N of 9 would make 1/10;
 * here 1/16, because the clock sees the membarrier but not all that a
 * re-enter costs the writer (the lines its section then shares with
 * readers on the slow path).
 *
 * With rare writers the credit stays at its cap, and a linger lasts only
 * CPUHP__LINGER_SHARE of a re-enter cost: the next writer of a burst
 * (write_lock() right after write_unlock()) still finds it, readers are
 * fast for nearly all of each gap, and every writer from IDLE pays.  With
 * frequent writers (a re-enter costs more than 1/CPUHP__CREDIT_RATE of
 * their period) the credit runs out: readers then stay slow across
 * writers, which skip the membarrier, until the credit is back, and get the
 * rest of the time on the fast path; a writer every 100 us with 10 us
 * re-enters pays one every 1.6 periods.  No prediction of the writers'
 * period is made, so none can be wrong for long, and nothing is armed:
 * the readers end the linger.
 */
#define CPUHP__CREDIT_RATE  16
#define CPUHP__CREDIT_CAP   3
#define CPUHP__LINGER_SHARE 8

/* Up to @now; the remainder of a ns of credit is kept, not rounded away. */
static void credit_accrue_locked(struct cpuhp_rcu_sync *rss, uint64_t now)
{
	int64_t cap = (int64_t)(rss->reenter_ns * CPUHP__CREDIT_CAP);
	uint64_t earned;

	if (now <= rss->credit_at_ns)
		return;
	earned = (now - rss->credit_at_ns) / CPUHP__CREDIT_RATE;
	if (rss->credit_ns >= cap || rss->credit_ns + (int64_t)earned >= cap) {
		if (rss->credit_ns < cap)
			rss->credit_ns = cap;
		rss->credit_at_ns = now;
		return;
	}
	rss->credit_ns += (int64_t)earned;
	rss->credit_at_ns += earned * CPUHP__CREDIT_RATE;
}

uint64_t cpuhp__rcu_sync_linger_end_at_locked(struct cpuhp_rcu_sync *rss, uint64_t now)
{
	uint64_t end = now + rss->reenter_ns / CPUHP__LINGER_SHARE;

	credit_accrue_locked(rss, now);
	if (rss->credit_ns < 0) {
		/* Until the credit is earned back. */
		uint64_t owed = (uint64_t)-rss->credit_ns * CPUHP__CREDIT_RATE;

		if (now + owed > end)
			end = now + owed;
	}
	return end;
}

/*
 * Under ->lock, H: what leaving IDLE cost an enter (the membarrier, ->lock
 * and waking the enters that waited), @cost ns.  The estimate (the cap and
 * the linger's share) is smoothed (1/4 new), and a sample counts at most
 * CPUHP__REENTER_CLIP of it, in the estimate and in the credit alike: one
 * enter preempted mid-way, or a slow IPI (here costs were 26-32 us from
 * p10 to p90 under load, 57-64 at p99 and up to 10 ms at most), is the
 * scheduler's cost, not the lock's, and must not keep readers slow for
 * CPUHP__CREDIT_RATE times as long.  A real rise still comes through, by
 * a quarter per sample.
 */
#define CPUHP__REENTER_CLIP(est) ((est) + (est) / 4)

void cpuhp__rcu_sync_reenter_cost_locked(struct cpuhp_rcu_sync *rss, uint64_t cost, uint64_t now)
{
	uint64_t est = rss->reenter_ns;

	if (est && cost > CPUHP__REENTER_CLIP(est))
		cost = CPUHP__REENTER_CLIP(est);
	credit_accrue_locked(rss, now);
	rss->credit_ns -= (int64_t)cost; /* spent, earned back at 1/CPUHP__CREDIT_RATE */
	rss->reenter_ns = est ? (3 * est + cost) / 4 : cost;
}

/* Under ->lock: LINGER -> IDLE, I. */
static void linger_end_locked(struct cpuhp_rcu_sync *rss)
{
	/* An enter moves LINGER to PASSED with its count++, under ->lock. */
	CPUHP_BUG_ON(rss->count, "rcu_sync", "lingering with %d enter(s)", rss->count);
	rss->nr_linger_ends++;
	/*
	 * LINGER -> IDLE, I: the release (under ->lock, which every exit
	 * took) orders every writer's section before the readers' acquire
	 * load that sees IDLE; the next enter finds IDLE under ->lock and
	 * issues the membarrier (H).
	 */
	set_state(rss, CPUHP__GP_IDLE);
	broadcast_locked(rss);
}

/* Under ->lock: end a lingering exit whose time (read at @now) has come. */
static void linger_end_if_due_locked(struct cpuhp_rcu_sync *rss, uint64_t now)
{
	if (get_state(rss) == CPUHP__GP_LINGER && !rss->linger_holds && now >= rss->idle_at_ns)
		linger_end_locked(rss);
}

void cpuhp__rcu_sync_linger_end(struct cpuhp_rcu_sync *rss)
{
	uint64_t now = cpuhp__now_ns();

	cpuhp__futex_lock(&rss->lock);
	linger_end_if_due_locked(rss, now);
	cpuhp__futex_unlock(&rss->lock);
}

__thread unsigned cpuhp__linger_polls CPUHP__TLS_IE;

void cpuhp__rcu_sync_linger_poll(struct cpuhp_rcu_sync *rss)
{
	uint64_t now = cpuhp__now_ns();

	/*
	 * ->lock only when the time has come: a writer that finds it taken
	 * sleeps in the kernel (a futex lock does not spin), and a reader
	 * preempted while holding it would keep that writer asleep.
	 */
	if (now < atomic_load_explicit(&rss->linger_until_ns, memory_order_relaxed))
		return;
	/* Never wait behind a writer's enter or exit: it ends LINGER itself. */
	if (!cpuhp__futex_trylock(&rss->lock))
		return;
	linger_end_if_due_locked(rss, now);
	cpuhp__futex_unlock(&rss->lock);
}

void cpuhp__rcu_sync_linger_hold(struct cpuhp_rcu_sync *rss)
{
	cpuhp__futex_lock(&rss->lock);
	rss->linger_holds++;
	cpuhp__futex_unlock(&rss->lock);
}

void cpuhp__rcu_sync_linger_release(struct cpuhp_rcu_sync *rss)
{
	cpuhp__futex_lock(&rss->lock);
	CPUHP_BUG_ON(!rss->linger_holds, "rcu_sync", "linger release without hold");
	rss->linger_holds--; /* the next slow reader ends a linger that is due */
	cpuhp__futex_unlock(&rss->lock);
}

/*
 * Under ->lock: a grace period has passed since the last exit (G).  True
 * if another is wanted: REPLAY -> EXIT.
 */
static bool gp_passed_locked(struct cpuhp_rcu_sync *rss)
{
	enum cpuhp__gp_state s = get_state(rss);

	/*
	 * Queued only by PASSED -> EXIT (or by ourselves, REPLAY -> EXIT), and
	 * while we are pending nothing else leaves EXIT/REPLAY: enter leaves
	 * them as they are and exit only moves EXIT -> REPLAY.  So IDLE,
	 * ENTER or PASSED here would mean a second callback in flight.
	 */
	CPUHP_BUG_ON(s != CPUHP__GP_EXIT && s != CPUHP__GP_REPLAY, "rcu_sync",
	             "callback in state %d", s);
	rss->nr_callbacks++;
	if (rss->count) {
		/*
		 * EXIT/REPLAY -> PASSED: an enter came after the exit that queued
		 * us.  Readers have been on the slow path all along, so the
		 * updater needs no period of its own.
		 */
		set_state(rss, CPUHP__GP_PASSED);
		return false;
	}
	if (s == CPUHP__GP_REPLAY) {
		/*
		 * REPLAY -> EXIT: an enter and its exit came and went while we
		 * were pending.  Readers that start now must still see that
		 * updater's work, so wait one more period before going idle.
		 */
		set_state(rss, CPUHP__GP_EXIT);
		return true;
	}
	/*
	 * EXIT -> IDLE, J: a full grace period after the last exit, every
	 * reader that starts now sees everything the updaters did.
	 */
	set_state(rss, CPUHP__GP_IDLE);
	broadcast_locked(rss);
	return false;
}

/* The call_rcu() callback, where defer.c's thread is gone (fork child, lost timerfd). */
static void rcu_sync_func(struct rcu_head *head)
{
	struct cpuhp_rcu_sync *rss = cpuhp__container_of(head, struct cpuhp_rcu_sync, defer.rcu);

	cpuhp__tsan_acquire(head); /* pairs with defer.c's release */
	cpuhp__futex_lock(&rss->lock);
	/* Again: on liburcu's worker, which exists, as we run on it. */
	if (gp_passed_locked(rss))
		urcu_memb_call_rcu(&rss->defer.rcu, rcu_sync_func);
	cpuhp__futex_unlock(&rss->lock);
}

/* defer.c's timer thread, after its grace period (its lock held: we must not queue). */
static uint64_t gp_expire(struct cpuhp__deferred *d)
{
	struct cpuhp_rcu_sync *rss = cpuhp__container_of(d, struct cpuhp_rcu_sync, defer);
	bool again;

	cpuhp__futex_lock(&rss->lock);
	again = gp_passed_locked(rss);
	/* After this unlock, an IDLE rss may be freed: return without touching it. */
	cpuhp__futex_unlock(&rss->lock);
	return again ? 1 : 0; /* again: at once, after one more grace period */
}

static const struct cpuhp__defer_ops gp_ops = {gp_expire, rcu_sync_func};

/*
 * A G exit without a timer thread makes its grace period itself: this
 * exit then waits one (microseconds with idle readers, more behind a long
 * read-side section).  Inside a read-side section it cannot (it would
 * wait for itself): the object stays EXIT, readers on the slow path,
 * "parked" until the next last exit or free waits the period.
 */
static void exit_without_thread(struct cpuhp_rcu_sync *rss)
{
	if (urcu_memb_read_ongoing()) {
		cpuhp__futex_lock(&rss->lock);
		rss->parked = true;
		cpuhp__futex_unlock(&rss->lock);
		return;
	}
	for (bool again = true; again;) {
		/*
		 * Outside ->lock: until the state leaves EXIT/REPLAY, which
		 * only we do now, nobody else queues or parks ->defer.
		 * J (internal.h): the grace period after the last exit.
		 */
		cpuhp__synchronize_rcu();
		cpuhp__futex_lock(&rss->lock);
		again = gp_passed_locked(rss);
		cpuhp__futex_unlock(&rss->lock);
	}
}

void cpuhp__rcu_sync_enter(struct cpuhp_rcu_sync *rss)
{
	enum cpuhp__gp_state was;
	bool fence_only;

	/* call_rcu() and synchronize_rcu() want a registered thread. */
	cpuhp__thread_get();
	cpuhp__futex_lock(&rss->lock);
	was = get_state(rss);
	CPUHP_BUG_ON(rss->count < 0 || rss->count == INT32_MAX, "rcu_sync", "enter with count %d",
	             rss->count);
	rss->count++;
	if (was == CPUHP__GP_LINGER) {
		/*
		 * LINGER -> PASSED: readers have been on the slow path since
		 * the membarrier of the first writer of the run; nothing is
		 * queued that would move it, and no reader may end the linger
		 * while we are inside (I).
		 */
		set_state(rss, CPUHP__GP_PASSED);
		cpuhp__futex_unlock(&rss->lock);
		return;
	}
	if (was == CPUHP__GP_IDLE) {
		/* IDLE -> ENTER: new readers go slow; old ones may still be fast. */
		set_state(rss, CPUHP__GP_ENTER);
		fence_only = exit_lingers(rss); /* H readers: they also need no period back (I) */
		if (fence_only)
			rss->nr_fences++;
		else
			rss->nr_sync++;
		cpuhp__futex_unlock(&rss->lock);
		if (fence_only) {
			uint64_t t0 = cpuhp__now_ns(), t1;

			/*
			 * H: a cpuhp_rwsem's readers use no read-side section
			 * (rwsem.c); this fence on their CPUs orders them, and
			 * a grace period would add nothing.  Pairs with the
			 * fenced fast path's count store then state load
			 * (rwsem.c: fast_inc_fenced(), cpuhp_rwsem_read_unlock();
			 * rwsem-inline.h), after our state store above.
			 */
			cpuhp__membarrier();
			cpuhp__futex_lock(&rss->lock);
			/* ENTER -> PASSED: let concurrent enters (waiting below) through. */
			set_state(rss, CPUHP__GP_PASSED);
			broadcast_locked(rss);
			t1 = cpuhp__now_ns();
			cpuhp__rcu_sync_reenter_cost_locked(rss, t1 - t0, t1);
			cpuhp__futex_unlock(&rss->lock);
			return;
		}
		/*
		 * What the last exit will need, made here where we may block:
		 * the timer thread (once per process).  If none can be
		 * created, exits do without it (exit_without_thread()).
		 */
		cpuhp__defer_prepare();
		/*
		 * G: the grace period orders our state change before the end
		 * of every reader section that saw IDLE, including the
		 * fast-path increments and the critical sections before
		 * fast-path decrements in rwsem.c.  Not a cancellation point
		 * (internal.h): liburcu's may poll() with its own wait node
		 * queued and its grace-period mutex held.
		 */
		cpuhp__synchronize_rcu();
		cpuhp__futex_lock(&rss->lock);
		/* ENTER -> PASSED: let concurrent enters (waiting below) through. */
		set_state(rss, CPUHP__GP_PASSED);
		broadcast_locked(rss);
		cpuhp__futex_unlock(&rss->lock);
		return;
	}
	/*
	 * ENTER: another enter waits for the grace period; wait for it too.
	 * PASSED, EXIT, REPLAY: readers are on the slow path already, no wait,
	 * and the state stays: the pending callback of EXIT/REPLAY (G) finds
	 * ->count > 0 and moves it to PASSED.
	 */
	if (get_state(rss) != CPUHP__GP_ENTER) {
		cpuhp__futex_unlock(&rss->lock);
		return;
	}
	/* Not a cancellation point (a futex wait): ->count has our enter. */
	while (get_state(rss) == CPUHP__GP_ENTER)
		cpuhp__rcu_sync_wait_locked(rss);
	cpuhp__futex_unlock(&rss->lock);
}

void cpuhp__rcu_sync_exit(struct cpuhp_rcu_sync *rss)
{
	bool queue = false;

	cpuhp__thread_get();
	cpuhp__futex_lock(&rss->lock);
	CPUHP_BUG_ON(rss->count <= 0, "rcu_sync", "exit without enter (count %d)", rss->count);
	if (--rss->count == 0) {
		enum cpuhp__gp_state s = get_state(rss);

		if (exit_lingers(rss)) {
			/* Enter leaves no other state behind it (EXIT/REPLAY are G's). */
			CPUHP_BUG_ON(s != CPUHP__GP_PASSED, "rcu_sync", "last exit in state %d", s);
			/*
			 * PASSED -> LINGER: nothing is queued; the first slow
			 * reader after ->idle_at_ns goes IDLE (I), or the next
			 * writer finds LINGER and skips the membarrier.
			 */
			set_state(rss, CPUHP__GP_LINGER);
			rss->idle_at_ns =
			    cpuhp__rcu_sync_linger_end_at_locked(rss, cpuhp__now_ns());
			atomic_store_explicit(&rss->linger_until_ns, rss->idle_at_ns,
			                      memory_order_relaxed);
			broadcast_locked(rss); /* lockwatch.h waits */
			cpuhp__futex_unlock(&rss->lock);
			return;
		}
		if (s == CPUHP__GP_PASSED || rss->parked) {
			/*
			 * PASSED -> EXIT: go idle one grace period from now.
			 * Parked (EXIT, or REPLAY after enters since): nothing
			 * is pending, so this exit queues as PASSED's would.
			 */
			set_state(rss, CPUHP__GP_EXIT);
			rss->parked = false;
			atomic_store_explicit(&rss->defer.queued, false, memory_order_relaxed);
			queue = true;
		} else if (s == CPUHP__GP_EXIT) {
			/* EXIT -> REPLAY: the pending callback is too early for us. */
			set_state(rss, CPUHP__GP_REPLAY);
		}
		/* REPLAY stays REPLAY; ENTER cannot be: enter returned. */
	}
	cpuhp__futex_unlock(&rss->lock);
	/*
	 * The grace period is defer.c's thread's: waiting it here would block
	 * us, and liburcu's call_rcu() would wake its worker on our time.
	 * Queued outside ->lock (fork.c's lock order), which is safe: until
	 * it is done, the state stays EXIT or REPLAY, so no other exit queues
	 * ->defer and free waits for us.
	 */
	if (queue && !cpuhp__defer_gp(&rss->defer, &gp_ops))
		exit_without_thread(rss);
}

void cpuhp__rcu_sync_destroy(struct cpuhp_rcu_sync *rss)
{
	cpuhp__futex_lock(&rss->lock);
	CPUHP_BUG_ON(rss->count > rss->inherited, "rcu_sync", "freed with %d enter(s) not exited",
	             rss->count);
	/*
	 * A fork child may free an object with enters of threads that did not
	 * survive the fork (->inherited): nothing can exit them now.
	 */
	if (rss->count) {
		rss->count = 0;
		/* PASSED (ENTER became PASSED in the child): no callback pending. */
		if (get_state(rss) == CPUHP__GP_PASSED)
			set_state(rss, CPUHP__GP_IDLE);
	}
	/* Nothing is queued to end LINGER, and no reader will need it (I). */
	if (get_state(rss) == CPUHP__GP_LINGER)
		linger_end_locked(rss);
	/* No reader is left to need the extra period REPLAY asked for. */
	if (get_state(rss) == CPUHP__GP_REPLAY)
		set_state(rss, CPUHP__GP_EXIT);
	if (rss->parked) {
		/* Nothing pending will end EXIT: wait its grace period here. */
		rss->parked = false;
		cpuhp__futex_unlock(&rss->lock);
		exit_without_thread(rss);
		cpuhp__futex_lock(&rss->lock);
	}
	/*
	 * EXIT: the pending callback (count 0 now) goes IDLE and wakes us.
	 * Not a cancellation point (a futex wait): the caller's free must not
	 * stop half-way, with the object neither usable nor freed.
	 */
	if (get_state(rss) != CPUHP__GP_IDLE) {
		rss->nr_destroy_waits++;
		while (get_state(rss) != CPUHP__GP_IDLE)
			cpuhp__rcu_sync_wait_locked(rss);
	}
	cpuhp__futex_unlock(&rss->lock);
}

/*
 * Standalone objects (cpuhp_rcu_sync_new()), for fork(): a cpuhp_rwsem's
 * rcu_sync is reached through the counter registry instead.  What only
 * they need lives around the object, not in every rwsem's.  Lock order:
 * standalone_lock, then each object's ->lock (fork.c's prepare only).
 */
struct standalone {
	struct cpuhp_rcu_sync rss;
	struct standalone *prev, *next; /* under standalone_lock */
	bool requeue;                   /* fork child: the last exit's callback was never queued */
};

static pthread_mutex_t standalone_lock = PTHREAD_MUTEX_INITIALIZER;
static struct standalone *standalone;

int cpuhp_rcu_sync_new(struct cpuhp_rcu_sync **out)
{
	struct standalone *so = malloc(sizeof(*so));

	if (!so)
		return -ENOMEM;
	cpuhp__rcu_sync_init(&so->rss);
	so->prev = NULL;
	so->requeue = false;
	pthread_mutex_lock(&standalone_lock);
	so->next = standalone;
	if (standalone)
		standalone->prev = so;
	standalone = so;
	pthread_mutex_unlock(&standalone_lock);
	*out = &so->rss;
	return 0;
}

void cpuhp_rcu_sync_free(struct cpuhp_rcu_sync *rss)
{
	struct standalone *so;

	if (!rss)
		return;
	so = cpuhp__container_of(rss, struct standalone, rss);
	/*
	 * Unlinked only after destroy's wait: a fork during the wait must
	 * reset this object too, for the callback that the child carries
	 * over takes its ->lock.  After the wait nothing can touch it.
	 */
	cpuhp__rcu_sync_destroy(rss);
	pthread_mutex_lock(&standalone_lock);
	if (so->prev)
		so->prev->next = so->next;
	else
		standalone = so->next;
	if (so->next)
		so->next->prev = so->prev;
	pthread_mutex_unlock(&standalone_lock);
	free(so);
}

/*
 * fork(): the rule is the rwsem's (fork.c).  Each standalone object's
 * ->lock is held across the fork, so that the child's copy is not caught
 * half-way through a transition; fork.c calls this after pausing liburcu's
 * call_rcu workers, since our callback takes ->lock.
 */
void cpuhp__rcu_sync_before_fork(void)
{
	pthread_mutex_lock(&standalone_lock);
	for (struct standalone *so = standalone; so; so = so->next)
		cpuhp__futex_lock(&so->rss.lock);
}

void cpuhp__rcu_sync_after_fork_parent(void)
{
	for (struct standalone *so = standalone; so; so = so->next)
		cpuhp__futex_unlock(&so->rss.lock);
	pthread_mutex_unlock(&standalone_lock);
}

bool cpuhp__rcu_sync_reset_after_fork(struct cpuhp_rcu_sync *rss)
{
	bool requeue;

	/*
	 * Only the forking thread runs, and it is inside none of these: a
	 * gone thread may have held ->lock or waited on ->cond.
	 */
	atomic_store_explicit(&rss->lock.word, 0, memory_order_relaxed);
	atomic_store_explicit(&rss->cond, 0, memory_order_relaxed);
	/*
	 * The enters still counted may be other threads', gone with them:
	 * free forgives those.  An enter that was waiting for its grace
	 * period is one of them: nobody will end ENTER, and with one thread
	 * no reader can be on the fast path, so PASSED is true at once.
	 * EXIT/REPLAY keep their callback, which liburcu (or defer.c) runs
	 * in the child too.
	 */
	rss->inherited = rss->count;
	if (get_state(rss) == CPUHP__GP_ENTER)
		set_state(rss, CPUHP__GP_PASSED);
	/*
	 * EXIT/REPLAY with the entry not taken by defer.c: the last exit was
	 * a gone thread's, between its PASSED -> EXIT and its queueing
	 * (which rcu_sync_exit() does outside ->lock).  Nobody else will.
	 */
	requeue = (get_state(rss) == CPUHP__GP_EXIT || get_state(rss) == CPUHP__GP_REPLAY) &&
	          (rss->parked || !atomic_load_explicit(&rss->defer.queued, memory_order_relaxed));
	rss->parked = false;
	return requeue;
}

void cpuhp__rcu_sync_after_fork_child(void)
{
	for (struct standalone *so = standalone; so; so = so->next)
		so->requeue = cpuhp__rcu_sync_reset_after_fork(&so->rss);
	CPUHP_BUG_ON(cpuhp__mutex_init(&standalone_lock), "rcu_sync",
	             "cannot re-initialise after fork");
}

void cpuhp__rcu_sync_requeue_after_fork_child(void)
{
	for (struct standalone *so = standalone; so; so = so->next) {
		struct cpuhp_rcu_sync *rss = &so->rss;

		if (!so->requeue)
			continue;
		so->requeue = false;
		/*
		 * Standalone objects have G readers: the grace-period exit, by
		 * a timer thread of the child's, or else by liburcu's worker
		 * (not waited for here: a fork handler must not block).
		 */
		if (!cpuhp__defer_gp(&rss->defer, &gp_ops))
			urcu_memb_call_rcu(&rss->defer.rcu, rcu_sync_func);
	}
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
	/*
	 * Registering allocates nothing (pcount.c).  It fails only where
	 * pthread_setspecific() does, and then a liburcu reader would exit
	 * registered and hang every later grace period: that is a bug.
	 */
	CPUHP_BUG_ON(!cpuhp__thread_get(), "rcu_sync",
	             "cannot register the thread with liburcu: pthread_setspecific failed");
	urcu_memb_read_lock();
}

void cpuhp_rcu_read_unlock(void)
{
	urcu_memb_read_unlock();
}
