/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libcpuhp internals shared by the core's source files (and by white-box
 * tests).  Not installed.
 *
 * Memory-ordering labels.  Each half is named by file and function; a
 * comment with the label sits at each one.  "sum" is cpuhp__pcount_sum()
 * (pcount.c), which reads ->shared and every thread's slot with acquire
 * loads and takes the registry lock.
 *
 *   A  reader: count++, full barrier, load ->block.
 *        rwsem.c: read_trylock_slow(), fast_inc_writer_coming() (also the
 *        inline path's continuation, cpuhp__rwsem_read_lock_writer_coming()).
 *      pairs with D.  Either the reader sees ->block and backs out, or the
 *      writer's sum counts it and the writer waits.
 *   B  reader leaving: its critical section, then count-- (release).
 *        rwsem.c: read_unlock_slow() (full barrier), cpuhp_rwsem_read_unlock()
 *        (fenced: the release store); rwsem-inline.h: cpuhp__inline_unlock()
 *        (the same release store, inline); pcount.c: thread_exit() (the
 *        registry's key destructor) moving an exiting thread's counts to ->shared (release).
 *      pairs with C.
 *   C  writer: the sum reads zero (acquire loads), full barrier, its section.
 *        rwsem.c: wait_for_readers(); pcount.c: cpuhp__pcount_sum_locked().
 *      pairs with B: a reader's section happens before the writer's.
 *   D  writer: ->block = 1 (under ->lock), full barrier, sum.
 *        rwsem.c: write_lock_common() after take_block().
 *      pairs with A.
 *   E  reader leaving: count--, full barrier, load ->wwait; wake if set.
 *        rwsem.c: read_unlock_slow() (G readers, back-outs, threads
 *        without a slot).  The fenced unlock has none: K instead.
 *      pairs with F.
 *   F  writer: load ->wseq, ->wwait = 1, full barrier, sum; futex_wait on
 *      ->wseq with the value loaded first.
 *        rwsem.c: wait_for_readers().
 *      pairs with E: either the sum sees the reader's decrement, or the
 *      reader sees ->wwait and bumps ->wseq.  No lost wake-up, because ->wseq
 *      was loaded before ->wwait = 1: a bump between the two (or any time
 *      before the futex call) makes futex_wait(wseq, seq) return at once.
 *   G  rcu_sync enter: state != IDLE, then synchronize_rcu().
 *        rcu_sync.c: cpuhp__rcu_sync_enter() when readers are not fenced.
 *      pairs with the reader fast path's read-side section without
 *      membarrier: rwsem.c: fast_inc_rcu(), fast_dec_rcu().  A section
 *      that saw IDLE ends before enter returns; a later one sees not-IDLE.
 *   H  rcu_sync enter: state != IDLE, then membarrier().
 *        rcu_sync.c: cpuhp__rcu_sync_enter() when readers are fenced.
 *      pairs with the fenced fast path's two halves, each a plain store,
 *      a compiler barrier and a load of the state:
 *        lock   (count++, load state)  rwsem.c: fast_inc_fenced();
 *               rwsem-inline.h: cpuhp__inline_lock();
 *        unlock (count--, load state)  rwsem.c: cpuhp_rwsem_read_unlock();
 *               rwsem-inline.h: cpuhp__inline_unlock().
 *      The membarrier puts a full barrier into every running reader, so
 *      either the reader's store is visible to the writer's later sum, or
 *      the reader's load comes after the barrier and sees the state the
 *      writer stored before it (and goes on as A, or as K).  A reader that
 *      was not running passed a context switch, a full barrier, in between.
 *      For such readers H replaces G: enter needs no grace period.
 *   I  rcu_sync, H readers only: the writers' sections, then ->state = IDLE
 *      by the end of a lingering exit (LINGER: nothing queued; a release
 *      store, under ->lock, which every exit also took), which a reader on
 *      the slow path or free makes.
 *        rcu_sync.c: linger_end_locked(), from
 *        cpuhp__rcu_sync_linger_poll() (called by rwsem.c:
 *        fast_inc_writer_coming()) and from cpuhp__rcu_sync_destroy().
 *      pairs with the fast path's acquire load of ->state: internal.h:
 *      cpuhp__rcu_sync_is_idle(); rwsem-inline.h: cpuhp__inline_idle().
 *      If the reader's load sees IDLE, it sees every write of every writer
 *      that exited before it (release/acquire through ->lock, futex.c's
 *      one-word mutex: acquire on lock, release on unlock).  If it does
 *      not, it takes the slow path, where A-D order it against any writer.
 *      And the other way round: a writer that enters after the IDLE store
 *      finds IDLE under ->lock and issues the membarrier (H) before it
 *      counts readers; one that enters before it finds LINGER under ->lock
 *      and moves it to PASSED itself, so no end finds LINGER while it is
 *      inside, and no reader took the fast path since the membarrier of
 *      the first writer of the run.  For G readers the return to IDLE must
 *      wait a grace period (a reader section that saw "not idle" may still
 *      run); H readers have no sections, so I replaces that grace period
 *      and the linger's length is policy, not correctness.
 *   J  rcu_sync, G readers only: the writers' sections and their exits
 *      (under ->lock), then a grace period that starts after the last exit,
 *      then ->state = IDLE (release, under ->lock).
 *        defer.c: wait_gp_unlocked(), then rcu_sync.c: gp_expire();
 *        rcu_sync.c: exit_without_thread() (no timer thread); and
 *        rcu_sync_func() after call_rcu() where the timer thread is gone.
 *      pairs with the G readers' sections: rwsem.c: fast_inc_rcu(),
 *      fast_dec_rcu(), and cpuhp_rcu_read_lock() users of
 *      cpuhp_rcu_sync_is_idle().  A section that saw "not idle" (and took
 *      the slow path) has ended before IDLE is stored; one that sees IDLE
 *      began after the grace period did, so after the last exit, and sees
 *      every writer's stores.  REPLAY asks for one more period, because a
 *      section that began before a replayed enter may outlive the first.
 *   K  writer about to sleep for readers, H readers only: after F's sum
 *      was not zero, membarrier(), the sum again, then futex_wait as in F;
 *      once per wait (->wwait stays 1 until the wait ends).
 *        rwsem.c: wait_for_readers().
 *      pairs with the fenced unlock's slow half, which has no barrier:
 *      count-- (release, B), compiler barrier, load ->state (H), load
 *      ->wwait, and if set bump ->wseq (release) and wake: rwsem.c:
 *      cpuhp_rwsem_read_unlock() -> read_unlock_fenced_slow(); the inline
 *      path's cpuhp__rwsem_read_unlock_writer_coming().
 *      The membarrier puts a full barrier into every running reader at
 *      some moment inside it.  A reader whose ->wwait load comes after
 *      that moment sees ->wwait = 1 (stored before the membarrier) and
 *      wakes us, its bump after our ->wseq load; one whose load came
 *      before it had its decrement made visible by that barrier, and the
 *      second sum sees it; a reader not running passed a context switch.
 *      Later rounds need no membarrier: every reader still counted after
 *      the first will see ->wwait = 1, and its bump of ->wseq (release,
 *      after its decrement) read by our next ->wseq load (acquire) makes
 *      its decrement visible to the sum after that load.  So the fenced
 *      slow path pays one fence a pair (A), and the writer pays a
 *      membarrier only when it is about to sleep anyway.
 */
#ifndef CPUHP_INTERNAL_H
#define CPUHP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <urcu/urcu-memb.h>

#include <cpuhp/rcu_sync.h>
#include <cpuhp/rwsem.h>

/* Internal symbols shared between the library's files, never exported. */
#define CPUHP__HIDDEN __attribute__((visibility("hidden")))
/*
 * Our thread-locals use initial-exec TLS: one %fs-relative load instead of
 * a __tls_get_addr() call.  Only ours (84 bytes, most of it the thread's
 * record, which is TLS so that registering allocates nothing): liburcu's
 * reader record (384 bytes) stays general-dynamic, or a dlopen()ed
 * libcpuhp (a Python extension) would not fit in glibc's static TLS
 * surplus.  The fast path
 * touches liburcu's TLS only without membarrier (G).
 */
#define CPUHP__TLS_IE __attribute__((tls_model("initial-exec")))

#define cpuhp__likely(x)   __builtin_expect(!!(x), 1)
#define cpuhp__unlikely(x) __builtin_expect(!!(x), 0)

#define CPUHP__CACHELINE 64
/* Adjacent-line prefetch pairs lines on x86: keep hot writers 128 bytes apart. */
#define CPUHP__FALSE_SHARING 128

#define cpuhp__container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/*
 * A full memory barrier.  For atomic_thread_fence(seq_cst) gcc 12 emits
 * "lock orq $0,(%rsp)" (3 ns) in functions optimized for speed but an
 * mfence (17 ns) in cold or -Os ones, and clang 14 always an mfence; the
 * slow paths that use this run back to back while a writer is around.  So
 * on x86-64 it is a locked no-op on the red zone below the stack pointer,
 * as the kernel's smp_mb().  ThreadSanitizer understands only the C11
 * fence, so sanitizer builds keep it.
 */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CPUHP__TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define CPUHP__TSAN 1
#endif
/*
 * liburcu is not built with ThreadSanitizer, so TSan cannot see that a
 * call_rcu() happens before its callback; these annotate that edge.
 */
#ifdef CPUHP__TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define cpuhp__tsan_acquire(addr) __tsan_acquire(addr)
#define cpuhp__tsan_release(addr) __tsan_release(addr)
#else
#define cpuhp__tsan_acquire(addr) ((void)(addr))
#define cpuhp__tsan_release(addr) ((void)(addr))
#endif
#if defined(__x86_64__) && !defined(CPUHP__TSAN)
#define cpuhp__smp_mb() __asm__ __volatile__("lock orl $0,-4(%%rsp)" ::: "memory", "cc")
#else
#define cpuhp__smp_mb() atomic_thread_fence(memory_order_seq_cst)
#endif

/* bug.c: report misuse or an impossible state, naming the lock, and abort. */
__attribute__((noreturn, format(printf, 5, 6))) void
cpuhp__bug(const char *file, int line, const char *func, const char *lock, const char *fmt, ...);
#define CPUHP_BUG(lock, ...) cpuhp__bug(__FILE__, __LINE__, __func__, (lock), __VA_ARGS__)
#define CPUHP_BUG_ON(cond, lock, ...)                                                              \
	do {                                                                                       \
		if (cpuhp__unlikely(cond))                                                         \
			CPUHP_BUG((lock), __VA_ARGS__);                                            \
	} while (0)

#ifdef CPUHP_DEBUG_CHECKS
#define CPUHP_DEBUG 1
#else
#define CPUHP_DEBUG 0
#endif

/* ------------------------------------------------------------------ futex */

/*
 * futex.c: a mutex in one futex word (0 free, 1 held, 2 held and maybe
 * waited for), for the rwsem's and rcu_sync's ->lock: 4 bytes where a
 * pthread_mutex_t takes 40, set up by a store of 0, and never failing.  No owner, no
 * fairness (as a default pthread mutex), no cancellation point (a bare
 * futex system call).  Acquire on lock, release on unlock: ThreadSanitizer
 * sees the ordering through the atomics.
 */
struct cpuhp__futex_lock {
	_Atomic unsigned word;
};
void cpuhp__futex_lock_slow(struct cpuhp__futex_lock *l, unsigned seen);
void cpuhp__futex_unlock_wake(struct cpuhp__futex_lock *l);

static inline void cpuhp__futex_lock(struct cpuhp__futex_lock *l)
{
	unsigned c = 0;

	if (cpuhp__unlikely(!atomic_compare_exchange_strong_explicit(
	        &l->word, &c, 1, memory_order_acquire, memory_order_relaxed)))
		cpuhp__futex_lock_slow(l, c);
}

static inline void cpuhp__futex_unlock(struct cpuhp__futex_lock *l)
{
	if (cpuhp__unlikely(atomic_exchange_explicit(&l->word, 0, memory_order_release) == 2))
		cpuhp__futex_unlock_wake(l);
}

static inline bool cpuhp__futex_trylock(struct cpuhp__futex_lock *l)
{
	unsigned c = 0;

	return atomic_compare_exchange_strong_explicit(&l->word, &c, 1, memory_order_acquire,
	                                               memory_order_relaxed);
}

/* futex.c's waits, declared with the waiting rules at the end of this file. */
int cpuhp__futex_wait(_Atomic unsigned *addr, unsigned val, const struct timespec *deadline);
void cpuhp__futex_wake(_Atomic unsigned *addr, int n);

/* CLOCK_MONOTONIC in ns (defer.c). */
uint64_t cpuhp__now_ns(void);

/*
 * A short spin before a futex wait, where the other side's section is
 * usually short (the rwsem's: a writer's hold of ->block, a reader's
 * section).  A sleep costs more than such a section on both sides: the
 * sleeper's wait and wake-up, and the waker's futex_wake() system call,
 * made inside its own section.  So: re-check while this returns true
 * (a pause each call, the clock every CPUHP__SPIN_CLOCK calls, for at most
 * CPUHP__SPIN_NS), then queue and sleep as before.  Only a delay: every
 * check in such a loop is one the sleeping path makes too.
 */
#define CPUHP__SPIN_NS    5000u
#define CPUHP__SPIN_CLOCK 8u
struct cpuhp__spin {
	uint64_t until; /* 0 until the clock was first read */
	unsigned n;
};

static inline void cpuhp__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

static inline bool cpuhp__spin(struct cpuhp__spin *sp)
{
	uint64_t now;

	cpuhp__cpu_relax();
	if (sp->n++ % CPUHP__SPIN_CLOCK)
		return true;
	now = cpuhp__now_ns();
	if (!sp->until)
		sp->until = now + CPUHP__SPIN_NS;
	return now < sp->until;
}

/* ------------------------------------------------------------------ rcu_sync */

enum cpuhp__gp_state {
	CPUHP__GP_IDLE = 0, /* readers take the fast path */
	CPUHP__GP_ENTER,    /* first enter waits for its grace period */
	CPUHP__GP_PASSED,   /* readers all on the slow path; updaters inside */
	CPUHP__GP_EXIT,     /* last exit done; callback queued to go IDLE */
	CPUHP__GP_REPLAY,   /* enter+exit again while EXIT: one more period */
	CPUHP__GP_LINGER,   /* H: last exit done, nothing queued; a slow reader goes IDLE */
};

/*
 * defer.c: a function that its timer thread calls at a deadline, after a
 * grace period of its own: a G exit's call_rcu(), without liburcu's worker
 * thread.
 */
struct cpuhp__deferred;
/* What an entry does, the same for every entry of a kind: static, shared. */
struct cpuhp__defer_ops {
	/*
	 * Called when due and a grace period after that, on the timer thread
	 * with defer.c's lock held (so it must not queue): 0 when done (the
	 * entry may be freed as soon as it returns), or how many ns more to
	 * wait, and another grace period.
	 */
	uint64_t (*expire)(struct cpuhp__deferred *d);
	/* The call_rcu() callback on ->rcu, where the timer thread is gone (fork, lost timerfd). */
	void (*func)(struct rcu_head *head);
};

struct cpuhp__deferred {
	struct cpuhp__deferred *next;
	const struct cpuhp__defer_ops *ops;
	/*
	 * The owner's call_rcu() head, for ->ops->func: used only while the
	 * entry is not queued here (handed over to liburcu, or never taken).
	 */
	struct rcu_head rcu;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC; under defer.c's lock */
	bool gp_wanted;       /* due, in the timer thread's grace period; under defer.c's lock */
	bool gp_passed;       /* that grace period is over; under defer.c's lock */
	/*
	 * Set by defer.c under its lock when it takes the entry into its
	 * queue; cleared by the owner before it hands the entry over.  A
	 * fork child that finds it clear while the owner's callback is due
	 * knows the queueing thread did not get that far (or had no timer
	 * thread and was doing without), and queues it itself (rcu_sync.c).
	 */
	_Atomic bool queued;
};
/*
 * Queue @d; false if there is no timer thread (none can be created): then
 * @d is not taken and the caller does without (rcu_sync.c).  Never blocks
 * for long: ->lock, and the thread's creation if nobody prepared it.
 */
bool cpuhp__defer_gp(struct cpuhp__deferred *d, const struct cpuhp__defer_ops *ops);
/*
 * synchronize_rcu(), for every grace period the library waits: not a
 * cancellation point, and excluded from fork() (defer.c), which waits for
 * it to end.  Not inside a read-side section (it would wait for itself),
 * and so neither may fork() be called inside one while another thread
 * waits here.
 */
void cpuhp__synchronize_rcu(void);
/* Start the timer thread if it is not running yet: the first enter calls this. */
void cpuhp__defer_prepare(void);
void cpuhp__defer_before_fork(void);
void cpuhp__defer_after_fork_parent(void);
void cpuhp__defer_after_fork_child(void);
extern unsigned long cpuhp__defer_child_handovers CPUHP__HIDDEN;

/*
 * 136 bytes, every one of them in each cpuhp_rwsem (internal.h's
 * struct cpuhp_rwsem): the lock and the condition variable are futex
 * words, set up by plain stores, and what only a cpuhp_rcu_sync_new()
 * object needs (its place in fork.c's list) lives around it, in
 * rcu_sync.c's struct standalone.
 */
struct cpuhp_rcu_sync {
	/*
	 * Written under ->lock (release), read locklessly by readers (acquire).
	 * G readers read it inside an RCU read-side section, and the ordering
	 * proof is the grace period (G; the acquire is for ThreadSanitizer);
	 * for H readers the release/acquire pair is the proof (I).
	 */
	_Atomic int state;
	int count; /* enters not yet exited; under ->lock */
	/*
	 * In a fork child: enters counted at the fork, which may be other
	 * threads' (gone); destroy forgives up to this many.  Under ->lock.
	 */
	int inherited;
	struct cpuhp__futex_lock lock; /* futex.c's one-word mutex */
	/*
	 * The condition variable, a futex word, broadcast on ENTER->PASSED,
	 * on ->IDLE and on ->LINGER: a sequence that each broadcast moves on
	 * by 2, and bit 0, set by a waiter, so that a broadcast nobody waits
	 * for makes no system call.  Written under ->lock; the waiter's futex
	 * call reads it without (cpuhp__rcu_sync_wait_locked()).
	 */
	_Atomic unsigned cond;
	unsigned linger_holds; /* the tests' hold on a lingering exit (below) */
	/*
	 * EXIT with nothing pending to end it: a G exit without a timer
	 * thread, inside a read-side section, could not wait its grace
	 * period.  The next last exit, or destroy, does.  Under ->lock.
	 */
	bool parked;
	/*
	 * The readers order themselves with membarrier (H) rather than RCU
	 * read-side sections: a cpuhp_rwsem's, where membarrier works.
	 * Enter then needs the membarrier alone, no grace period.
	 */
	bool fenced_readers;
	/*
	 * Statistics for tests, under ->lock: grace periods waited by enter,
	 * membarriers issued by enter instead (H), callbacks run, lingering
	 * exits ended, frees that had to wait for the return to IDLE.  32
	 * bits: they may wrap, no test counts that far.
	 */
	unsigned nr_sync;
	unsigned nr_fences;
	unsigned nr_callbacks;
	unsigned nr_linger_ends;
	unsigned nr_destroy_waits;
	/* The last exit's grace period (G), by defer.c; its call_rcu() head. */
	struct cpuhp__deferred defer;
	/*
	 * The writers' budget (H; rcu_sync.c), all under ->lock: what
	 * leaving IDLE costs the writers (ns, smoothed), when the lingering
	 * exit may end, and the writers' credit (ns of re-enter cost; below
	 * zero, what they owe), accrued up to ->credit_at_ns.
	 */
	uint64_t reenter_ns;
	uint64_t idle_at_ns;
	int64_t credit_ns;
	uint64_t credit_at_ns;
	/*
	 * ->idle_at_ns of a lingering exit, for the readers' polls to look
	 * at without ->lock (a hint, relaxed: ->lock decides): a reader takes
	 * ->lock only once the time has come, not while a writer may need it.
	 */
	_Atomic uint64_t linger_until_ns;
};

/*
 * The condition variable's wait, with ->lock held: sleep until the next
 * broadcast (or less: every caller loops on its condition), ->lock held
 * again on return.  Not a cancellation point: a bare futex call
 * (futex.c), so the waits need no cpuhp__cancel_off().
 */
static inline void cpuhp__rcu_sync_wait_locked(struct cpuhp_rcu_sync *rss)
{
	/* Only under ->lock is ->cond written: a broadcast after this changes it. */
	unsigned seq = atomic_fetch_or_explicit(&rss->cond, 1, memory_order_relaxed) | 1;

	cpuhp__futex_unlock(&rss->lock);
	cpuhp__futex_wait(&rss->cond, seq, NULL);
	cpuhp__futex_lock(&rss->lock);
}

/* Plain stores: cannot fail. */
void cpuhp__rcu_sync_init(struct cpuhp_rcu_sync *rss);
/* For a cpuhp_rwsem: readers use H when cpuhp__asym_fence is set, else G. */
void cpuhp__rcu_sync_init_fenced(struct cpuhp_rcu_sync *rss);
/*
 * fork.c: standalone objects' ->lock held across fork(); in the child every
 * object, standalone or a rwsem's, is reset by cpuhp__rcu_sync_reset_after_fork().
 */
void cpuhp__rcu_sync_before_fork(void);
void cpuhp__rcu_sync_after_fork_parent(void);
void cpuhp__rcu_sync_after_fork_child(void);
/* In the child, after defer.c's handover: queue the callbacks a gone thread did not. */
void cpuhp__rcu_sync_requeue_after_fork_child(void);
/*
 * True if the last exit's callback was never queued (a gone thread's exit
 * between its PASSED -> EXIT and its queueing): the caller queues it.
 */
bool cpuhp__rcu_sync_reset_after_fork(struct cpuhp_rcu_sync *rss);
void cpuhp__rcu_sync_destroy(struct cpuhp_rcu_sync *rss);
void cpuhp__rcu_sync_enter(struct cpuhp_rcu_sync *rss);
void cpuhp__rcu_sync_exit(struct cpuhp_rcu_sync *rss);
/* For tests: while held, a lingering exit does not end.  Nests.  Release before freeing. */
void cpuhp__rcu_sync_linger_hold(struct cpuhp_rcu_sync *rss);
void cpuhp__rcu_sync_linger_release(struct cpuhp_rcu_sync *rss);
/*
 * A reader on the slow path found LINGER: end it if its time has come
 * (a clock read, then a trylock; never blocks), once in CPUHP__LINGER_POLL
 * of a thread's slow locks (the first of them included): the slow path
 * pays an increment and a test, and the linger ends at most that many
 * slow locks late.  cpuhp__rcu_sync_linger_end() does it at once (tests).
 */
#define CPUHP__LINGER_POLL 32 /* a power of two */
extern __thread unsigned cpuhp__linger_polls CPUHP__HIDDEN CPUHP__TLS_IE;
void cpuhp__rcu_sync_linger_poll(struct cpuhp_rcu_sync *rss);
void cpuhp__rcu_sync_linger_end(struct cpuhp_rcu_sync *rss);

static inline void cpuhp__rcu_sync_linger_check(struct cpuhp_rcu_sync *rss)
{
	if (cpuhp__unlikely(!(cpuhp__linger_polls++ & (CPUHP__LINGER_POLL - 1))))
		cpuhp__rcu_sync_linger_poll(rss);
}
/*
 * Under ->lock, H: when a last exit at @now may end its linger (accrues the
 * credit up to @now): a share of a re-enter cost, or once the credit is back.
 */
uint64_t cpuhp__rcu_sync_linger_end_at_locked(struct cpuhp_rcu_sync *rss, uint64_t now);
/* Under ->lock, H: an enter from IDLE paid @cost ns by @now (spends credit, updates the estimate).
 */
void cpuhp__rcu_sync_reenter_cost_locked(struct cpuhp_rcu_sync *rss, uint64_t cost, uint64_t now);

static inline bool cpuhp__rcu_sync_is_idle(const struct cpuhp_rcu_sync *rss)
{
	return atomic_load_explicit(&rss->state, memory_order_acquire) == CPUHP__GP_IDLE;
}

/* ------------------------------------------------ per-thread counters (pcount.c) */

/*
 * A per-thread counter: every thread that uses it has a slot of its own,
 * written only by that thread.  Its value is the sum of all slots plus
 * ->shared, which takes the slots of exited threads and the counts of
 * threads that could not get a slot (out of memory).
 */
#define CPUHP__CHUNK_SLOTS 64

struct cpuhp__slot {
	_Atomic long count;
#if CPUHP_DEBUG
	long held; /* this thread's read locks minus its read unlocks */
#endif
};

struct cpuhp__pcount {
	unsigned id; /* index in the counter table: chunk id/64, slot id%64 */
	unsigned chunk;
	unsigned slot;
	_Atomic long shared;
	const char *name; /* for bug reports */
};

struct cpuhp__thread {
	/* Only the owner writes these; others read them under the registry lock. */
	struct cpuhp__slot **chunks;
	unsigned *chunk_pos; /* chunks[c]'s index in pcount.c's users of chunk c */
	unsigned nchunks;
	bool urcu_registered_by_us;
	struct urcu_reader *urcu;          /* this thread's liburcu reader record */
	struct cpuhp__thread *prev, *next; /* registry, under the registry lock */
	unsigned hotplug_depth;            /* cpuhp_get_online_cpus() nesting */
#if CPUHP_DEBUG
	unsigned write_held; /* write locks this thread holds */
#endif
};

/* Set on first use by cpuhp__thread_get(); NULL until then and after exit. */
extern __thread struct cpuhp__thread *cpuhp__self CPUHP__HIDDEN CPUHP__TLS_IE;
/*
 * The calling thread's record, registered or not (pcount.c): usable as
 * plain thread-local state (->hotplug_depth) even by a thread that could
 * not register.  cpuhp__self points here once it is registered.
 */
extern __thread struct cpuhp__thread cpuhp__self_record CPUHP__HIDDEN CPUHP__TLS_IE;

/*
 * Register the calling thread (liburcu included); allocates nothing.  NULL
 * only if pthread_setspecific() fails (pcount.c: never, in practice).
 */
struct cpuhp__thread *cpuhp__thread_slow(void);
static inline struct cpuhp__thread *cpuhp__thread_get(void)
{
	struct cpuhp__thread *t = cpuhp__self;

	return cpuhp__likely(t) ? t : cpuhp__thread_slow();
}

/* The calling thread's slot, or NULL if it has none yet (no allocation). */
static inline struct cpuhp__slot *cpuhp__slot_fast(struct cpuhp__thread *t,
                                                   const struct cpuhp__pcount *pc)
{
	struct cpuhp__slot *chunk;

	if (cpuhp__unlikely(pc->chunk >= t->nchunks))
		return NULL;
	chunk = t->chunks[pc->chunk];
	return cpuhp__likely(chunk) ? &chunk[pc->slot] : NULL;
}

/*
 * The calling thread's first chunk (counters with ids 0-63: nearly every
 * program's locks), cached so that the fast path reaches its slot in one
 * TLS load instead of four dependent loads.  Non-NULL implies registered.
 */
extern __thread struct cpuhp__slot *cpuhp__chunk0 CPUHP__HIDDEN CPUHP__TLS_IE;

/* The fast path's lookup: the slot, or NULL if it needs the slow path. */
static inline struct cpuhp__slot *cpuhp__slot_lookup(const struct cpuhp__pcount *pc)
{
	struct cpuhp__thread *t;

	/* id < 64 is chunk 0, slot id: one load fewer than ->chunk and ->slot. */
	if (cpuhp__likely(pc->id < CPUHP__CHUNK_SLOTS)) {
		struct cpuhp__slot *c0 = cpuhp__chunk0;

		return cpuhp__likely(c0) ? &c0[pc->id] : NULL;
	}
	t = cpuhp__self;
	return t ? cpuhp__slot_fast(t, pc) : NULL;
}

/* The slot, allocating its chunk; NULL only on ENOMEM. */
struct cpuhp__slot *cpuhp__slot_slow(struct cpuhp__thread *t, const struct cpuhp__pcount *pc);

int cpuhp__pcount_init(struct cpuhp__pcount *pc, const char *name);
void cpuhp__pcount_destroy(struct cpuhp__pcount *pc);
/* Sum of every slot plus ->shared (acquire loads).  Takes the registry lock. */
long cpuhp__pcount_sum(struct cpuhp__pcount *pc);

/* The owner's plain increment: no other thread writes the slot. */
static inline void cpuhp__slot_add(struct cpuhp__slot *s, long v, memory_order mo)
{
	atomic_store_explicit(&s->count, atomic_load_explicit(&s->count, memory_order_relaxed) + v,
	                      mo);
}

#if CPUHP_DEBUG
/* Call @check for each counter in which @t holds read locks. */
void cpuhp__pcount_debug_exit(struct cpuhp__thread *t,
                              void (*check)(struct cpuhp__pcount *pc, long held));
#endif

/* Registry walks for fork.c and debug checks. */
void cpuhp__registry_lock(void);
void cpuhp__registry_unlock(void);
/* fork child: drop every thread but the caller (registry lock held). */
void cpuhp__registry_forget_others(void);
/* With the registry lock held: registered threads; each live counter; a sum. */
unsigned cpuhp__registry_count_locked(void);
void cpuhp__registry_for_each_counter(void (*fn)(struct cpuhp__pcount *pc));
long cpuhp__pcount_sum_locked(struct cpuhp__pcount *pc);

/* ---------------------------------------------------------------- rwsem */

/* A writer waiting for ->block; lives on its stack. */
struct cpuhp__wwaiter {
	struct cpuhp__wwaiter *next;
	/*
	 * Futex word: 1 once ->block was handed to us.  Set, and woken, under
	 * sem->lock, which the waiter takes before it looks: so its stack is
	 * still there when the wake-up comes.
	 */
	_Atomic unsigned granted;
};

/*
 * 256 bytes, debug checks included, 128-byte aligned, so that no two locks
 * share a line or an adjacent-line pair.  The first line holds what every
 * reader's fast path reads (->readers.id, ->rss.state), written only at writer transitions; the
 * rest is written by writers and by readers on the slow path, which a writer has sent there anyway.
 * cpuhp_rwsem_new()'s locks live in slabs (pcount.c), and nothing here needs more than plain stores
 * to set up: ->lock and rcu_sync's lock are futex words, and whoever waits under them (readers for
 * a writer, a writer for ->block or for the readers it let in, enters for the first one's fence)
 * sleeps on a futex word, not on a condition variable.  The rwsem's own part is 80 bytes (its
 * counter, 32, and the slow path's 48), rcu_sync's 136, the debug checks' 24: a lock has 16 of its
 * 256 bytes to spare with debug checks, and 40 without (rwsem.c checks).
 */
struct cpuhp_rwsem {
	/* Read by every reader's fast path; written only at writer transitions. */
	struct cpuhp__pcount readers; /* ->readers.name names the lock in reports */
	struct cpuhp_rcu_sync rss;

	/* Slow path. */
	_Atomic int block;
	_Atomic int wwait;     /* a writer sums the counts and may sleep on ->wseq */
	_Atomic unsigned wseq; /* futex word for that writer; readers bump it */
	/*
	 * Readers waiting for a writer sleep on this futex word, bumped (under
	 * ->lock) when they are let in.  Written under ->lock, read without it
	 * by the futex call only.
	 */
	_Atomic unsigned rgen;
	/* The writer waiting for ->nr_granted to drain sleeps on this one. */
	_Atomic unsigned gseq;
	struct cpuhp__futex_lock lock; /* orders ->block changes against waiting readers */
	unsigned nr_rwait;             /* readers waiting; under ->lock */
	unsigned nr_granted;           /* let in, not yet counted in their slot; under ->lock */
	bool gwait;                    /* a writer sleeps on ->gseq; under ->lock */
	bool owned_name;               /* ->readers.name is cpuhp_rwsem_new_named()'s copy */
	struct cpuhp__wwaiter *whead;  /* writers waiting for ->block, FIFO; under ->lock */
#if CPUHP_DEBUG
	_Atomic long dbg_readers; /* read locks minus read unlocks, all threads */
	_Atomic(pthread_t) dbg_owner;
	_Atomic int dbg_owned;
#endif
} __attribute__((aligned(CPUHP__FALSE_SHARING)));

/* A lock in static storage (hotplug.c); cpuhp_rwsem_new() makes the others. */
int cpuhp__rwsem_init(struct cpuhp_rwsem *sem, const char *name);

/*
 * pcount.c: cpuhp_rwsem_new()'s locks live in slabs of 64, one per group of
 * 64 counter ids: a lock with id i is object i % 64 of group i / 64's slab.
 * The lowest-free id allocator is then also the object allocator, O(1)
 * like it, and a slab is freed when its group has no object left (one
 * empty slab is kept, against a lock made and freed over and over at a
 * group's edge).  All under the registry lock:
 *  - get: the memory for a lock, with its counter's id taken but not yet
 *    published (NULL: out of memory);
 *  - publish: its counter, initialised, becomes visible (fork.c, sums);
 *  - put: its counter's slots cleared, the id and the memory given back.
 */
struct cpuhp_rwsem *cpuhp__rwsem_slab_get_locked(unsigned *id);
void cpuhp__pcount_publish_locked(struct cpuhp__pcount *pc, unsigned id, const char *name);
void cpuhp__rwsem_slab_put_locked(struct cpuhp_rwsem *sem);

/* debug.c: the debug checks; empty without CPUHP_DEBUG. */
#if CPUHP_DEBUG
void cpuhp__debug_read_locked(struct cpuhp_rwsem *sem, struct cpuhp__slot *s);
void cpuhp__debug_read_unlocked(struct cpuhp_rwsem *sem, struct cpuhp__slot *s);
void cpuhp__debug_recursive_wait(struct cpuhp_rwsem *sem, struct cpuhp__slot *s);
void cpuhp__debug_write_locked(struct cpuhp_rwsem *sem);
void cpuhp__debug_write_unlocked(struct cpuhp_rwsem *sem);
void cpuhp__debug_thread_exit(struct cpuhp__thread *t);
#else
static inline void cpuhp__debug_read_locked(struct cpuhp_rwsem *sem, struct cpuhp__slot *s)
{
}
static inline void cpuhp__debug_read_unlocked(struct cpuhp_rwsem *sem, struct cpuhp__slot *s)
{
}
static inline void cpuhp__debug_recursive_wait(struct cpuhp_rwsem *sem, struct cpuhp__slot *s)
{
}
static inline void cpuhp__debug_write_locked(struct cpuhp_rwsem *sem)
{
}
static inline void cpuhp__debug_write_unlocked(struct cpuhp_rwsem *sem)
{
}
static inline void cpuhp__debug_thread_exit(struct cpuhp__thread *t)
{
}
#endif

/* membarrier.c: true if readers may rely on H instead of RCU sections (G). */
extern bool cpuhp__asym_fence CPUHP__HIDDEN;
/* The inline read path may run: membarrier works and no debug checks. */
extern bool cpuhp__inline_ok CPUHP__HIDDEN;
void cpuhp__membarrier_init(void);
void cpuhp__membarrier_after_fork_child(void);
void cpuhp__membarrier(void);

/* fork.c */
void cpuhp__fork_init(void);
/* rwsem.c: in a fork child, forget waiters that were other threads. */
void cpuhp__rwsem_after_fork_child(struct cpuhp_rwsem *sem);

/* hotplug.c */
void cpuhp__hotplug_init(void);

/*
 * futex.c: waiting.
 *
 * The rule for pthread_mutex_init() and pthread_cond_init() results, in
 * libcpuhp and libcpuhp-client alike: never ignored.  glibc's cannot fail
 * for the attributes we use (default mutexes; CLOCK_MONOTONIC conds: they
 * only fill in the object), but POSIX allows EAGAIN/ENOMEM, so:
 *  - where the caller can be told (a function that returns an errno, such
 *    as cpuhp_rwsem_new() or cpuhp_client_connect()), unwind what was
 *    initialised and return the negative errno;
 *  - where it cannot (void paths: the fork child's re-initialisation),
 *    it is an impossible state: CPUHP_BUG_ON.
 * The locks themselves (the rwsem's and rcu_sync's) have none: their
 * mutexes and condition variables are futex words, and every timed wait
 * is a futex wait with an absolute CLOCK_MONOTONIC deadline.  Returns 0
 * or a negative errno.
 */
int cpuhp__mutex_init(pthread_mutex_t *m);
/*
 * Cancellation: no call of the library is a cancellation point, as with
 * pthread_rwlock_*() and pthread_mutex_lock().  Every wait that could act
 * on a cancel (pthread_cond_wait() in the client, liburcu's
 * synchronize_rcu(), which may poll(), read() and write()) runs between
 * these two (a futex wait, a bare system call, never acts on one), so a cancel arriving
 * meanwhile stays pending and is acted on at the caller's next cancellation
 * point, after the call returned with its lock held.  Acted on inside, it
 * would unwind with our mutex owned by a dead thread and its waiter node,
 * on its stack, still queued.  Only waits pay for this, never a fast path.
 */
static inline int cpuhp__cancel_off(void)
{
	int old;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static inline void cpuhp__cancel_restore(int old)
{
	int off;

	pthread_setcancelstate(old, &off);
}

void cpuhp__deadline(struct timespec *ts, unsigned timeout_ms);

#endif /* CPUHP_INTERNAL_H */
