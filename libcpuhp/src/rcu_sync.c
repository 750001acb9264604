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
 * leaves the object EXIT and "parked" until the next last exit or free;
 * an exit window ends at once.
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
 * by the ~11 ms that the G exit took when it went through liburcu's
 * call_rcu() (1 ms timer + liburcu's 10 ms batching), which the README's
 * figures were measured with.  Where writes are rarer than that window
 * anyway, the exit lingers instead (LINGER, below): no timer, a window of
 * a share of one re-enter cost, ended by the first reader on the slow path
 * after it.
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
	rss->nr_windows = 0;
	rss->nr_destroy_waits = 0;
	rss->reenter_ns = 0;
	rss->idle_at_ns = 0;
	rss->window_holds = 0;
	rss->window_due = false;
	rss->gap_ns = 0;
	rss->credit_ns = 0;
	atomic_init(&rss->linger_until_ns, 0);
	/* The lock's life so far is the first gap, and earns the first credit. */
	rss->exit_at_ns = rss->credit_at_ns = cpuhp__now_ns();
	rss->fenced_readers = false;
	rss->parked = false;
	atomic_init(&rss->defer.queued, false);
	rss->defer.gp = rss->defer.gp_wanted = rss->defer.gp_passed = false;
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
/* The G exit's old length: 1 ms of timer and liburcu's 10 ms batching. */
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
 * The lingering exit (LINGER): when writers come rarely, the last exit
 * arms no timer at all.  The window is then short (an eighth of a
 * re-enter cost, below), and whoever needs IDLE ends it after that: the
 * first reader on the slow path (cpuhp__rcu_sync_linger_poll(), from
 * rwsem.c), or free.  A writer
 * that comes first finds LINGER, skips the membarrier and goes to PASSED
 * itself (nothing is queued that would).  So the writer's exit makes no
 * system call, and no timer thread wakes on a busy CPU; readers that are
 * not reading leave it lingering, and a writer then skips the membarrier.
 *
 * When: if the gap from a last exit to the next first enter (measured,
 * smoothed) is at least CPUHP__WINDOW_FACTOR re-enter costs, a writer
 * that finds IDLE pays at most 1/N of its period, so the long window
 * would buy writers little and cost readers most of each period.  Where
 * the gap is shorter, the long window keeps writers from paying at all.
 * The prediction can be wrong (gaps long, short, long...), so lingering
 * also needs credit: writers earn 1/CPUHP__CREDIT_RATE of the time that
 * passes, capped at CPUHP__LINGER_CREDIT re-enter costs, and every
 * re-enter spends its cost; an exit lingers only with a cost in hand.
 * Whatever the gaps, the writers' re-enters then cost at most 1/12 of any
 * time T plus the cap (payments after a long window are earned by that
 * window itself).  A twelfth, not BRAVO's ninth: the clock sees the
 * membarrier and the wake-ups, not all a re-enter costs the writer (the
 * lines its section then shares with readers on the slow path); with a
 * ninth, writers every 100 us did 0.89-0.91 of the pre-window library's
 * writes, with a twelfth 0.93-0.94, and readers every 440 us no less.
 *
 * How long: readers lose the whole linger on every exit, and it saves the
 * writers a re-enter only when the next one comes before its end.  With
 * gaps of N costs or more that is the next writer of a burst (write_lock
 * right after write_unlock, microseconds), not the next of the period.
 * A linger of one whole cost kept readers slow for a third of their
 * non-idle time (bench-mixed's 20,000-loop writer: 28 us of membarrier,
 * 28 us of linger, 10 of the writer's section, in a 440 us period), for
 * writers that came inside it only in bursts; CPUHP__LINGER_SHARE of a
 * cost still covers those (a write of a burst takes a tenth of a cost).
 * A writer that misses it pays a re-enter, which the credit bounds as
 * above.
 */
#define CPUHP__LINGER_CREDIT 3
#define CPUHP__CREDIT_RATE   12
#define CPUHP__LINGER_SHARE  8
/* Readers on the slow path read the clock once in this many polls. */
#define CPUHP__LINGER_POLL 16

/* Under ->lock: how long a lingering exit keeps readers slow. */
static uint64_t linger_ns_locked(const struct cpuhp_rcu_sync *rss)
{
	return rss->reenter_ns / CPUHP__LINGER_SHARE;
}

static void credit_accrue_locked(struct cpuhp_rcu_sync *rss, uint64_t now)
{
	int64_t cap = (int64_t)(rss->reenter_ns * CPUHP__LINGER_CREDIT);

	if (now > rss->credit_at_ns && rss->credit_ns < cap) {
		rss->credit_ns += (int64_t)((now - rss->credit_at_ns) / CPUHP__CREDIT_RATE);
		if (rss->credit_ns > cap)
			rss->credit_ns = cap;
	}
	rss->credit_at_ns = now;
}

/* The rule alone (and the credit's accrual up to @now). */
static bool linger_rule_locked(struct cpuhp_rcu_sync *rss, uint64_t now)
{
	uint64_t cost = rss->reenter_ns;

	credit_accrue_locked(rss, now);
	/* No cost measured yet: no guess. */
	if (!cost)
		return false;
	return rss->gap_ns >= cost * CPUHP__WINDOW_FACTOR && rss->credit_ns >= (int64_t)cost;
}

bool cpuhp__rcu_sync_lingers_locked(struct cpuhp_rcu_sync *rss, uint64_t now)
{
	/* A test's hold pins the timer's window: the exit must open one. */
	return linger_rule_locked(rss, now) && !rss->window_holds;
}

/*
 * Under ->lock, H: the first enter since the last exit; @now is its time,
 * @was the state it found.  Only an enter from IDLE measures the re-enter
 * cost; one inside a window or a lingering exit measures nothing.  So an
 * estimate made high by one slow sample (the process's first, cold
 * membarrier; an enter preempted mid-way) would keep the window longer
 * than the writers' period for good, and readers on the slow path with
 * it: it ages by 1/CPUHP__REENTER_AGING per enter that measured nothing,
 * until a window ends before the next writer, who measures again.  Where
 * the estimate was right, the re-enters that aging brings are its cost,
 * so it ages only while the writers have a re-enter's credit in hand
 * (earned at 1/12 of the time, spent by every re-enter, as for lingering):
 * whatever the writers' period, aging costs them at most 1/12 of their time.
 */
#define CPUHP__REENTER_AGING 64

/*
 * Under ->lock, H: what leaving IDLE cost an enter (the membarrier, ->lock
 * and waking the enters that waited), @cost ns.  The credit pays all of
 * it.  The estimate is smoothed (1/4 new) and a sample counts at most
 * CPUHP__REENTER_CLIP of it: the estimate decides between the window and
 * lingering near a period of N costs, and one enter preempted mid-way, or
 * a slow IPI, must not tip it (here costs were 26-32 us from p10 to p90,
 * 57-64 at p99 and up to 10 ms at most; with outliers counted twice, two
 * of them in a row moved it from 28 to 44 us, past a 400 us period's
 * ninth).  A real rise still comes through, by a quarter per sample.
 */
#define CPUHP__REENTER_CLIP(est) ((est) + (est) / 4)

void cpuhp__rcu_sync_reenter_cost_locked(struct cpuhp_rcu_sync *rss, uint64_t cost)
{
	uint64_t est = rss->reenter_ns;

	rss->credit_ns -= (int64_t)cost; /* spent, earned back at 1/12 */
	if (est && cost > CPUHP__REENTER_CLIP(est))
		cost = CPUHP__REENTER_CLIP(est);
	rss->reenter_ns = est ? (3 * est + cost) / 4 : cost;
}

static void first_enter_locked(struct cpuhp_rcu_sync *rss, uint64_t now, enum cpuhp__gp_state was)
{
	uint64_t gap = now > rss->exit_at_ns ? now - rss->exit_at_ns : 0;

	rss->gap_ns = rss->gap_ns ? (3 * rss->gap_ns + gap) / 4 : gap;
	credit_accrue_locked(rss, now);
	if (was != CPUHP__GP_IDLE && rss->credit_ns >= (int64_t)rss->reenter_ns)
		rss->reenter_ns -= rss->reenter_ns / CPUHP__REENTER_AGING;
}

/* Under ->lock: LINGER -> IDLE, I (as in window_end_locked()). */
static void linger_end_locked(struct cpuhp_rcu_sync *rss)
{
	/* An enter moves LINGER to PASSED with its count++, under ->lock. */
	CPUHP_BUG_ON(rss->count, "rcu_sync", "lingering with %d enter(s)", rss->count);
	rss->nr_windows++;
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
	if (get_state(rss) == CPUHP__GP_LINGER && !rss->window_holds && now >= rss->idle_at_ns)
		linger_end_locked(rss);
}

void cpuhp__rcu_sync_linger_end(struct cpuhp_rcu_sync *rss)
{
	uint64_t now = cpuhp__now_ns();

	cpuhp__futex_lock(&rss->lock);
	linger_end_if_due_locked(rss, now);
	cpuhp__futex_unlock(&rss->lock);
}

static __thread unsigned linger_polls CPUHP__TLS_IE;

void cpuhp__rcu_sync_linger_poll(struct cpuhp_rcu_sync *rss)
{
	uint64_t now;

	/* The first poll of a thread looks; then one in CPUHP__LINGER_POLL. */
	if (linger_polls++ % CPUHP__LINGER_POLL)
		return;
	now = cpuhp__now_ns();
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

/*
 * Under ->lock: the exit window ended.  Returns 0, or the ns left of the
 * window of an exit that came since it was queued.
 */
static uint64_t window_end_locked(struct cpuhp_rcu_sync *rss)
{
	enum cpuhp__gp_state s = get_state(rss);
	uint64_t now;

	/* Queued only by PASSED -> EXIT; until it runs only exits move EXIT -> REPLAY. */
	CPUHP_BUG_ON(s != CPUHP__GP_EXIT && s != CPUHP__GP_REPLAY, "rcu_sync",
	             "exit window expired in state %d", s);
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
	/*
	 * REPLAY asks G readers for one more grace period, because a reader
	 * section that began before the replayed enter may still be running
	 * when the first period ends.  H readers have no sections: their
	 * ordering comes from the release/acquire on ->state (I) and the
	 * first writer's membarrier (H), so for them REPLAY is only a delay,
	 * that of the last exit's window, kept in ->idle_at_ns.
	 */
	now = cpuhp__now_ns();
	if (now < rss->idle_at_ns) {
		/* REPLAY (or EXIT) -> EXIT: the last exit's window is still open. */
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
	broadcast_locked(rss);
	return 0;
}

/* defer.c's timer thread, at the window's end (its lock held: we must not queue). */
static uint64_t window_expire(struct cpuhp__deferred *d)
{
	struct cpuhp_rcu_sync *rss = cpuhp__container_of(d, struct cpuhp_rcu_sync, defer);
	uint64_t more = 0;

	cpuhp__futex_lock(&rss->lock);
	if (rss->window_holds)
		rss->window_due = true; /* a test holds it: the release requeues */
	else
		more = window_end_locked(rss);
	/* After this unlock, an IDLE rss may be freed: return without touching it. */
	cpuhp__futex_unlock(&rss->lock);
	return more;
}

static const struct cpuhp__defer_ops window_ops = {window_expire, rcu_sync_func};

/*
 * No timer thread to end the exit window: end it now (I with a window of
 * zero: the window's length is policy, not correctness).  Readers go
 * fast at once, and the next writer leaves IDLE again, paying the
 * membarrier (H) that the window would have saved it.
 */
static void window_end_now(struct cpuhp_rcu_sync *rss)
{
	cpuhp__futex_lock(&rss->lock);
	/* Until the end, the state stays EXIT or REPLAY: only the end leaves them. */
	rss->idle_at_ns = 0;
	if (rss->window_holds)
		rss->window_due = true; /* a test holds it: the release ends it */
	else
		(void)window_end_locked(rss); /* 0: no window left */
	cpuhp__futex_unlock(&rss->lock);
}

void cpuhp__rcu_sync_window_hold(struct cpuhp_rcu_sync *rss)
{
	cpuhp__futex_lock(&rss->lock);
	rss->window_holds++;
	cpuhp__futex_unlock(&rss->lock);
}

void cpuhp__rcu_sync_window_release(struct cpuhp_rcu_sync *rss)
{
	bool due;

	cpuhp__futex_lock(&rss->lock);
	CPUHP_BUG_ON(!rss->window_holds, "rcu_sync", "window release without hold");
	due = --rss->window_holds == 0 && rss->window_due;
	rss->window_due = false;
	cpuhp__futex_unlock(&rss->lock);
	/*
	 * Outside ->lock, as in exit: nothing else queues ->defer while the
	 * state stays EXIT or REPLAY, which only the expiry changes.
	 */
	if (due && !cpuhp__defer_window(&rss->defer, 0, &window_ops))
		window_end_now(rss);
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
	if (rss->count == 1 && exit_by_window(rss))
		first_enter_locked(rss, cpuhp__now_ns(), was);
	if (was == CPUHP__GP_LINGER) {
		/*
		 * LINGER -> PASSED: readers have been on the slow path since
		 * the membarrier of the first writer of the run, as in EXIT;
		 * no expiry is queued to do this for us.
		 */
		set_state(rss, CPUHP__GP_PASSED);
		cpuhp__futex_unlock(&rss->lock);
		return;
	}
	if (was == CPUHP__GP_IDLE) {
		/* IDLE -> ENTER: new readers go slow; old ones may still be fast. */
		set_state(rss, CPUHP__GP_ENTER);
		fence_only = exit_by_window(rss); /* H readers: also exit by window (I) */
		if (fence_only)
			rss->nr_fences++;
		else
			rss->nr_sync++;
		cpuhp__futex_unlock(&rss->lock);
		/*
		 * What the last exit will need, made here where we may block:
		 * the timer thread (once per process).  If none can be
		 * created, exits do without it (exit_without_thread()).
		 */
		cpuhp__defer_prepare();
		if (fence_only) {
			uint64_t t0 = cpuhp__now_ns(), cost;

			/*
			 * H: a cpuhp_rwsem's readers use no read-side section
			 * (rwsem.c); this fence on their CPUs orders them, and
			 * a grace period would add nothing.
			 */
			cpuhp__membarrier();
			cpuhp__futex_lock(&rss->lock);
			/* ENTER -> PASSED: let concurrent enters (waiting below) through. */
			set_state(rss, CPUHP__GP_PASSED);
			broadcast_locked(rss);
			cost = cpuhp__now_ns() - t0;
			cpuhp__rcu_sync_reenter_cost_locked(rss, cost);
			cpuhp__futex_unlock(&rss->lock);
			return;
		}
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
	 * and the state stays: the pending callback (or window expiry) of
	 * EXIT/REPLAY finds ->count > 0 and moves it to PASSED.
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
	bool queue = false, window = exit_by_window(rss);
	uint64_t window_ns = 0;

	cpuhp__thread_get();
	cpuhp__futex_lock(&rss->lock);
	CPUHP_BUG_ON(rss->count <= 0, "rcu_sync", "exit without enter (count %d)", rss->count);
	if (--rss->count == 0) {
		enum cpuhp__gp_state s = get_state(rss);
		uint64_t now = window ? cpuhp__now_ns() : 0;

		if (window)
			rss->exit_at_ns = now;
		if (window && s == CPUHP__GP_PASSED && cpuhp__rcu_sync_lingers_locked(rss, now)) {
			/*
			 * PASSED -> LINGER: writers come rarely; readers go
			 * fast a share of a re-enter cost from now, by the
			 * first slow reader after that (I), and nothing is
			 * queued.
			 */
			set_state(rss, CPUHP__GP_LINGER);
			rss->idle_at_ns = now + linger_ns_locked(rss);
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
		if (window) {
			/*
			 * I: readers go fast once this exit's window is over.
			 * An exit inside a window (its writer came within it)
			 * that the lingering rule would now let linger does
			 * not stretch the window: readers go fast when the
			 * queued expiry comes, which finds ->idle_at_ns past.
			 * Else a window about as long as the writers' period
			 * renews itself with each writer, and readers stay
			 * slow until aging has shortened it.
			 */
			window_ns = !queue && linger_rule_locked(rss, now)
			                ? linger_ns_locked(rss)
			                : cpuhp__rcu_sync_window_ns_locked(rss);
			rss->idle_at_ns = now + window_ns;
		}
	}
	cpuhp__futex_unlock(&rss->lock);
	/*
	 * The grace period (or the window) is defer.c's thread's: waiting it
	 * here would block us, and liburcu's call_rcu() would wake its worker
	 * on our time.  Queued outside ->lock (fork.c's lock order), which is
	 * safe: until it is done, the state stays EXIT or REPLAY, so no
	 * other exit queues ->defer and free waits for us.
	 */
	if (!queue)
		return;
	if (window) {
		if (!cpuhp__defer_window(&rss->defer, window_ns, &window_ops))
			window_end_now(rss);
	} else if (!cpuhp__defer_gp(&rss->defer, &gp_ops)) {
		exit_without_thread(rss);
	}
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
