/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhp_rwsem: a reader/writer semaphore with per-thread reader counts and an
 * rcu_sync-switched fast path, after the kernel's percpu-rwsem (semantics
 * only).
 *
 * Reader fast path (rcu_sync idle): bump this thread's slot and check that
 * rcu_sync is still idle.  No barrier: where membarrier works, the writer's
 * membarrier in rcu_sync enter orders us (H); elsewhere the check and the
 * increment sit in an RCU read-side section and the writer's grace period
 * orders us (G, the kernel's scheme).  Slow path (rcu_sync not idle): bump
 * the slot, full barrier, look at ->block; if a writer holds it, undo and
 * queue under ->lock.
 *
 * Writer: rcu_sync enter (readers go slow), take ->block (FIFO among
 * writers), full barrier, wait until the summed counts are zero.  Unlock:
 * let in every reader queued at this moment, then hand ->block to the next
 * queued writer or clear it, then rcu_sync exit.  A writer that gets ->block
 * first waits until the readers let in before it have counted themselves.
 *
 * Barriers (letters as tabled in internal.h):
 *   A (read_trylock_slow) pairs with D (write_lock): a reader bumps its slot
 *     then reads ->block; the writer sets ->block then sums the slots.  Either
 *     the reader sees ->block and backs out, or the writer counts it.
 *   B (read_unlock_slow) pairs with C (wait_for_readers): the reader's
 *     section happens before its decrement; a writer that summed zero
 *     orders its own section after.
 *   E (read_unlock_slow) pairs with F (wait_for_readers): the reader drops
 *     its count then reads ->wwait; the writer sets ->wwait then sums.
 *     Either the writer sees the drop or the reader sees it must wake it:
 *     no lost wake-up.
 *   K (wait_for_readers) replaces E for the fenced unlock
 *     (read_unlock_fenced_slow): the writer about to sleep issues a
 *     membarrier, so that reader needs no barrier of its own.
 *
 * ->block changes only under ->lock, and a reader queues only after failing
 * A-D under ->lock, so a queued reader is always seen by the unlock that
 * will let it in.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpuhp/rwsem-inline.h>

#include "internal.h"

/* The layout <cpuhp/rwsem-inline.h> relies on (it names cpuhp__inline_abi_2). */
_Static_assert(offsetof(struct cpuhp_rwsem, readers.id) == offsetof(struct cpuhp__rwsem_head, id),
               "inline head: id");
_Static_assert(CPUHP__CHUNK_SLOTS == 64, "inline head: ids below 64 are chunk 0, slot = id");
_Static_assert(offsetof(struct cpuhp_rwsem, rss.state) == CPUHP__RWSEM_STATE_OFFSET,
               "inline head: rcu_sync state");
_Static_assert(CPUHP__GP_IDLE == 0, "inline head: idle is 0");
_Static_assert(CPUHP_DEBUG || sizeof(struct cpuhp__slot) == sizeof(long),
               "inline head: a slot is a long");
_Static_assert(sizeof(_Atomic long) == sizeof(long) && offsetof(struct cpuhp__slot, count) == 0,
               "reader handle: a counter is a long");
const int cpuhp__inline_abi_2 = 2;

/* internal.h's sizes: what creating a lock writes (and the cold cost, its pages). */
_Static_assert(sizeof(struct cpuhp_rcu_sync) == 136, "rcu_sync: 136 bytes");
_Static_assert(sizeof(struct cpuhp_rwsem) == 256, "rwsem: 256 bytes, debug checks included");

/*
 * Everything but the counter, which the caller publishes last: from then on
 * the registry (fork.c) may reach this lock.  Plain stores: cannot fail.
 */
static void rwsem_init_fields(struct cpuhp_rwsem *sem)
{
	cpuhp__rcu_sync_init_fenced(&sem->rss);
	atomic_init(&sem->lock.word, 0);
	atomic_init(&sem->block, 0);
	atomic_init(&sem->wwait, 0);
	atomic_init(&sem->wseq, 0);
	atomic_init(&sem->rgen, 0);
	atomic_init(&sem->gseq, 0);
	sem->nr_rwait = 0;
	sem->nr_granted = 0;
	sem->gwait = false;
	sem->owned_name = false;
	sem->whead = NULL;
#if CPUHP_DEBUG
	atomic_init(&sem->dbg_readers, 0);
	atomic_init(&sem->dbg_owned, 0);
#endif
}

int cpuhp__rwsem_init(struct cpuhp_rwsem *sem, const char *name)
{
	rwsem_init_fields(sem);
	return cpuhp__pcount_init(&sem->readers, name);
}

int cpuhp_rwsem_new_named(struct cpuhp_rwsem **out, const char *name)
{
	char *copy = name ? strdup(name) : NULL;
	struct cpuhp_rwsem *sem;
	unsigned id;
	int err = -ENOMEM;

	if (name && !copy)
		return -ENOMEM;
	/*
	 * One critical section: the slab object and its id, set up (plain
	 * stores), then published.
	 */
	cpuhp__registry_lock();
	sem = cpuhp__rwsem_slab_get_locked(&id);
	if (sem) {
		rwsem_init_fields(sem);
		err = 0;
	}
	if (!err) {
		cpuhp__pcount_publish_locked(&sem->readers, id, copy ? copy : "cpuhp_rwsem");
		sem->owned_name = copy != NULL;
	}
	cpuhp__registry_unlock();
	if (err) {
		free(copy);
		return err;
	}
	*out = sem;
	return 0;
}

int cpuhp_rwsem_new(struct cpuhp_rwsem **out)
{
	return cpuhp_rwsem_new_named(out, NULL);
}

void cpuhp_rwsem_free(struct cpuhp_rwsem *sem)
{
	char *owned;
	long readers;

	if (!sem)
		return;
	CPUHP_BUG_ON(atomic_load(&sem->block) || sem->whead, sem->readers.name,
	             "freed while a writer holds or waits for it");
	/* May wait for the exit's grace period (G): not under the registry lock. */
	cpuhp__rcu_sync_destroy(&sem->rss);
	owned = sem->owned_name ? (char *)sem->readers.name : NULL;
	cpuhp__registry_lock();
	readers = cpuhp__pcount_sum_locked(&sem->readers);
	CPUHP_BUG_ON(readers, sem->readers.name, "freed while %ld read lock(s) are held", readers);
	cpuhp__rwsem_slab_put_locked(sem);
	cpuhp__registry_unlock();
	free(owned);
}

/* ------------------------------------------------------------------ readers */

/* The calling thread's slot for @sem; NULL if it cannot have one (ENOMEM). */
static struct cpuhp__slot *reader_slot(struct cpuhp_rwsem *sem)
{
	struct cpuhp__thread *t = cpuhp__thread_get();

	return t ? cpuhp__slot_slow(t, &sem->readers) : NULL;
}

/* Count +/-1 in @s, or in ->shared for a thread without a slot. */
static void count_add(struct cpuhp_rwsem *sem, struct cpuhp__slot *s, long v)
{
	if (s)
		cpuhp__slot_add(s, v, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&sem->readers.shared, v, memory_order_relaxed);
}

static void wake_writer(struct cpuhp_rwsem *sem)
{
	/* Release: our decrement before the bump (K: a writer that sees it sums after). */
	atomic_fetch_add_explicit(&sem->wseq, 1, memory_order_release);
	cpuhp__futex_wake(&sem->wseq, 1);
}

__attribute__((noinline, cold)) static void read_unlock_slow(struct cpuhp_rwsem *sem,
                                                             struct cpuhp__slot *s)
{
	/*
	 * B: our critical section (or failed attempt) before the decrement;
	 * pairs with C in wait_for_readers().  Release on the store is not
	 * enough for E below, and the barrier serves both sides of it.
	 */
	cpuhp__smp_mb();
	if (s)
		cpuhp__slot_add(s, -1, memory_order_release);
	else
		atomic_fetch_sub_explicit(&sem->readers.shared, 1, memory_order_release);
	/*
	 * E: the decrement before reading ->wwait; pairs with F.  If the writer
	 * summed before our decrement, it set ->wwait first and we see it.
	 */
	cpuhp__smp_mb();
	if (atomic_load_explicit(&sem->wwait, memory_order_relaxed))
		wake_writer(sem);
}

/* One attempt of the slow path; on failure the count is as before. */
static bool read_trylock_slow(struct cpuhp_rwsem *sem, struct cpuhp__slot *s)
{
	count_add(sem, s, 1);
	/*
	 * A: the increment before reading ->block; pairs with D in
	 * write_lock_common().  If we miss the writer's ->block, it sees our
	 * increment and waits for us.
	 */
	cpuhp__smp_mb();
	if (cpuhp__likely(!atomic_load_explicit(&sem->block, memory_order_acquire)))
		return true;
	/* Like an unlock: a writer may have counted us and be waiting. */
	read_unlock_slow(sem, s);
	return false;
}

/*
 * Under ->lock: a reader let in counted itself; the last one wakes the
 * writer that waits for them (take_block()).  True if the caller must
 * wake it, after unlocking (the reader's own count keeps @sem alive).
 */
static bool granted_reader_counted(struct cpuhp_rwsem *sem)
{
	if (--sem->nr_granted || !sem->gwait)
		return false;
	sem->gwait = false;
	atomic_fetch_add_explicit(&sem->gseq, 1, memory_order_relaxed);
	return true;
}

/*
 * Out of line and cold: the fast paths then need no stack frame.  False if
 * @try found a writer in the way, or @deadline (NULL: none) passed with this
 * reader still queued; the lock is then as before.
 */
__attribute__((noinline, cold)) static bool read_lock_slow(struct cpuhp_rwsem *sem, bool try,
                                                           const struct timespec *deadline)
{
	struct cpuhp__slot *s = reader_slot(sem);
	unsigned gen;
	bool wake;

	if (read_trylock_slow(sem, s))
		goto locked;
	if (try)
		return false;
	/*
	 * A writer holds ->block, mostly for microseconds: spin a while
	 * (internal.h) before queueing, which would also make its unlock
	 * wake us by a system call inside its section.  The load is a hint;
	 * read_trylock_slow() decides, with A.
	 */
	for (struct cpuhp__spin spin = {0, 0}; cpuhp__spin(&spin);)
		if (!atomic_load_explicit(&sem->block, memory_order_relaxed) &&
		    read_trylock_slow(sem, s))
			goto locked;

	/*
	 * Not a cancellation point (internal.h): we sleep on a futex, by a
	 * bare system call, which never acts on a cancel.
	 */
	cpuhp__futex_lock(&sem->lock);
	/* ->block changes only under ->lock: this answer holds until we sleep. */
	if (read_trylock_slow(sem, s)) {
		cpuhp__futex_unlock(&sem->lock);
		goto locked;
	}
	cpuhp__debug_recursive_wait(sem, s);
	gen = atomic_load_explicit(&sem->rgen, memory_order_relaxed);
	sem->nr_rwait++;
	do {
		int err;

		cpuhp__futex_unlock(&sem->lock);
		/*
		 * release_block() bumps ->rgen under ->lock before it wakes
		 * us: a bump after our unlock makes this return at once.
		 */
		err = cpuhp__futex_wait(&sem->rgen, gen, deadline);
		cpuhp__futex_lock(&sem->lock);
		if (err == -ETIMEDOUT &&
		    atomic_load_explicit(&sem->rgen, memory_order_relaxed) == gen) {
			/*
			 * Not let in: ->rgen moves only with ->nr_rwait
			 * folded into ->nr_granted, under ->lock, so we are
			 * still one of ->nr_rwait.  Leave it, or the unlock
			 * would grant a reader that never counts itself and
			 * the next writer would wait for it forever.
			 */
			sem->nr_rwait--;
			cpuhp__futex_unlock(&sem->lock);
			return false;
		}
	} while (atomic_load_explicit(&sem->rgen, memory_order_relaxed) == gen);
	/*
	 * Let in by the unlock that bumped ->rgen.  The next writer waits
	 * under ->lock for ->nr_granted to reach zero before it sums the
	 * counts, so counting ourselves here needs no barrier: the mutex
	 * orders our increment before its sum.
	 */
	count_add(sem, s, 1);
	wake = granted_reader_counted(sem);
	cpuhp__futex_unlock(&sem->lock);
	if (wake)
		cpuhp__futex_wake(&sem->gseq, 1);
locked:
	cpuhp__debug_read_locked(sem, s);
	return true;
}

/*
 * The fenced fast path's increment found rcu_sync not idle.  The increment
 * stands and becomes the slow path's: A, then ->block, exactly as in
 * read_trylock_slow().  Only if a writer holds ->block do we back out (it
 * may have counted us) and queue.  Not cold: while writers come and go,
 * every read lock in the process passes here for ~10 ms after each.
 */
__attribute__((noinline)) static bool fast_inc_writer_coming(struct cpuhp_rwsem *sem,
                                                             struct cpuhp__slot *s)
{
	/* A: pairs with D, as in read_trylock_slow(). */
	cpuhp__smp_mb();
	if (cpuhp__likely(!atomic_load_explicit(&sem->block, memory_order_acquire))) {
		/* The last writer's exit lingers: we may end it (rcu_sync.c). */
		if (atomic_load_explicit(&sem->rss.state, memory_order_relaxed) == CPUHP__GP_LINGER)
			cpuhp__rcu_sync_linger_check(&sem->rss);
		return true;
	}
	read_unlock_slow(sem, s);
	return false;
}

/*
 * Fast path, with membarrier (H): bump our slot, a compiler barrier, load the
 * state.  The CPU may let the load pass the store; the writer's membarrier
 * in rcu_sync enter closes that race: a reader that still sees IDLE has its
 * increment visible to the writer's sum.  False (the increment stands): a
 * writer is coming, and fast_inc_writer_coming() continues as the slow path
 * would after its own increment.
 */
static inline bool fast_inc_fenced(struct cpuhp_rwsem *sem, struct cpuhp__slot *s)
{
	/* H (lock half); rwsem-inline.h's cpuhp__inline_lock() is a copy of this. */
	cpuhp__slot_add(s, 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	return cpuhp__likely(cpuhp__rcu_sync_is_idle(&sem->rss));
}

/*
 * Fast path, without membarrier (G): the kernel's scheme, an RCU section.
 * Out of line, so that the fenced path above needs no stack frame.
 */
__attribute__((noinline)) static bool fast_inc_rcu(struct cpuhp_rwsem *sem, struct cpuhp__slot *s)
{
	bool idle;

	urcu_memb_read_lock();
	idle = cpuhp__rcu_sync_is_idle(&sem->rss);
	if (cpuhp__likely(idle))
		cpuhp__slot_add(s, 1, memory_order_relaxed);
	urcu_memb_read_unlock();
	return idle;
}

/*
 * Everything but the fenced fast path's success, out of line: the common
 * case then needs no stack frame and reaches this by a tail call.
 */
__attribute__((noinline)) static bool read_lock_rest(struct cpuhp_rwsem *sem, struct cpuhp__slot *s,
                                                     bool incremented, bool try)
{
	if (incremented ? fast_inc_writer_coming(sem, s) : s && fast_inc_rcu(sem, s)) {
		cpuhp__debug_read_locked(sem, s);
		return true;
	}
	return read_lock_slow(sem, try, NULL);
}

static inline bool read_lock_common(struct cpuhp_rwsem *sem, bool try)
{
	struct cpuhp__slot *s = cpuhp__slot_lookup(&sem->readers);

	if (cpuhp__likely(s) && cpuhp__likely(cpuhp__asym_fence)) {
		if (cpuhp__likely(fast_inc_fenced(sem, s))) {
			cpuhp__debug_read_locked(sem, s);
			return true;
		}
		return read_lock_rest(sem, s, true, try);
	}
	return read_lock_rest(sem, s, false, try);
}

void cpuhp_rwsem_read_lock(struct cpuhp_rwsem *sem)
{
	read_lock_common(sem, false);
}

bool cpuhp_rwsem_read_trylock(struct cpuhp_rwsem *sem)
{
	return read_lock_common(sem, true);
}

int cpuhp_rwsem_read_lock_timeout(struct cpuhp_rwsem *sem, unsigned timeout_ms)
{
	struct timespec deadline;

	/* The fast paths first: the clock is read only when a writer is in the way. */
	if (read_lock_common(sem, true))
		return 0;
	cpuhp__deadline(&deadline, timeout_ms);
	return read_lock_slow(sem, false, &deadline) ? 0 : -ETIMEDOUT;
}

/* A thread that never took this lock releases it (or has no slot yet). */
__attribute__((noinline, cold)) static void read_unlock_without_slot(struct cpuhp_rwsem *sem)
{
	struct cpuhp__slot *s = reader_slot(sem);

	cpuhp__debug_read_unlocked(sem, s);
	read_unlock_slow(sem, s);
}

/*
 * After a fenced fast decrement that found a writer coming: wake it if it
 * sleeps.  No barrier (E) between our decrement and the load of ->wwait:
 * a writer about to sleep issues a membarrier instead (K), which orders
 * us.  So a pair on the slow path pays one fence, A's.  Not cold, like
 * fast_inc_writer_coming().
 */
__attribute__((noinline)) static void read_unlock_fenced_slow(struct cpuhp_rwsem *sem)
{
	/* K: the decrement, a compiler barrier (the caller's), then this load. */
	if (atomic_load_explicit(&sem->wwait, memory_order_relaxed))
		wake_writer(sem);
}

/* Unlock without membarrier (G); out of line like fast_inc_rcu(). */
__attribute__((noinline)) static void fast_dec_rcu(struct cpuhp_rwsem *sem, struct cpuhp__slot *s)
{
	urcu_memb_read_lock();
	if (cpuhp__likely(cpuhp__rcu_sync_is_idle(&sem->rss))) {
		/*
		 * No barrier: a writer's grace period (G) orders our section
		 * before anything it does after entering.  Release only tells
		 * ThreadSanitizer the same thing.
		 */
		cpuhp__slot_add(s, -1, memory_order_release);
		urcu_memb_read_unlock();
		return;
	}
	urcu_memb_read_unlock();
	read_unlock_slow(sem, s);
}

void cpuhp_rwsem_read_unlock(struct cpuhp_rwsem *sem)
{
	struct cpuhp__slot *s = cpuhp__slot_lookup(&sem->readers);

	if (cpuhp__unlikely(!s)) {
		read_unlock_without_slot(sem);
		return;
	}
	cpuhp__debug_read_unlocked(sem, s);
	if (cpuhp__likely(cpuhp__asym_fence)) {
		/*
		 * H (unlock half), as for the increment: seeing IDLE after our
		 * decrement means a writer that is coming will see the
		 * decrement.  B is the release: a writer whose (acquire) sum
		 * reads it (C) is ordered after our critical section.
		 * rwsem-inline.h's cpuhp__inline_unlock() is a copy of this.
		 */
		cpuhp__slot_add(s, -1, memory_order_release);
		atomic_signal_fence(memory_order_seq_cst);
		if (cpuhp__unlikely(!cpuhp__rcu_sync_is_idle(&sem->rss)))
			read_unlock_fenced_slow(sem);
		return;
	}
	fast_dec_rcu(sem, s);
}

/* A handle's counter is the thread's slot; the inline path does nothing else. */
struct cpuhp_rwsem_reader cpuhp_rwsem_reader_get(struct cpuhp_rwsem *sem)
{
	struct cpuhp_rwsem_reader r = {.sem = sem, .count = NULL};
	struct cpuhp__slot *s;

	if (!cpuhp__inline_ok)
		return r;
	s = reader_slot(sem);
	if (s)
		r.count = (long *)(void *)&s->count;
	return r;
}

/*
 * The inline lock found a writer coming after its increment: continue as
 * read_lock_common() does.  The inline path ran only with this thread's slot
 * (from chunk 0, or any chunk through a handle), which the lookup returns.
 */
void cpuhp__rwsem_read_lock_writer_coming(struct cpuhp_rwsem *sem)
{
	struct cpuhp__slot *s = cpuhp__slot_lookup(&sem->readers);

	if (!fast_inc_writer_coming(sem, s))
		read_lock_slow(sem, false, NULL);
}

/* The inline unlock found a writer coming after its decrement. */
void cpuhp__rwsem_read_unlock_writer_coming(struct cpuhp_rwsem *sem)
{
	read_unlock_fenced_slow(sem);
}

void cpuhp_rwsem_read_disown(struct cpuhp_rwsem *sem)
{
#if CPUHP_DEBUG
	struct cpuhp__slot *s = reader_slot(sem);

	if (s)
		s->held--;
#endif
}

/* ------------------------------------------------------------------ writers */

/* Sleep until every reader is out, or @deadline (NULL: forever) passes. */
static int wait_for_readers(struct cpuhp_rwsem *sem, const struct timespec *deadline)
{
	int err = 0;

	/*
	 * Readers' sections are mostly short: sum again for a while
	 * (internal.h) before asking them to wake us through ->wwait, which
	 * costs each leaving reader a system call.  A zero sum here is as
	 * final as below: D ordered ->block before every sum, and C follows.
	 */
	for (struct cpuhp__spin spin = {0, 0}; cpuhp__pcount_sum(&sem->readers);)
		if (!cpuhp__spin(&spin))
			goto sleep;
	goto done;
sleep:
	for (bool fenced = false;;) {
		/*
		 * ->wseq before ->wwait = 1, and futex_wait() below compares
		 * against this value: a reader that saw ->wwait (E, K) bumps
		 * ->wseq after our store, so after this load, and the futex
		 * call then returns at once instead of sleeping through the
		 * wake-up that reader already sent.  Acquire: K's later rounds.
		 */
		unsigned seq = atomic_load_explicit(&sem->wseq, memory_order_acquire);

		atomic_store_explicit(&sem->wwait, 1, memory_order_relaxed);
		/* F: ->wwait before the sum; pairs with E (read_unlock_slow()). */
		cpuhp__smp_mb();
		/*
		 * Readers arriving now see ->block and back out at once, so a
		 * zero sum is stable (kernel: readers_active_check()).
		 */
		if (cpuhp__pcount_sum(&sem->readers) == 0)
			break;
		if (err == -ETIMEDOUT)
			break;
		if (cpuhp__asym_fence && !fenced) {
			/*
			 * K: fenced readers leave with no barrier between their
			 * decrement and their load of ->wwait
			 * (read_unlock_fenced_slow()).  This puts one into each
			 * running reader: its load comes after it and sees
			 * ->wwait, or its decrement is visible to the sum
			 * below.  Once per wait: ->wwait stays set, so every
			 * reader counted now wakes us (internal.h).
			 */
			cpuhp__membarrier();
			fenced = true;
			if (cpuhp__pcount_sum(&sem->readers) == 0)
				break;
		}
		err = cpuhp__futex_wait(&sem->wseq, seq, deadline);
	}
	atomic_store_explicit(&sem->wwait, 0, memory_order_relaxed);
done:
	/* C: the readers' sections before ours; pairs with B. */
	cpuhp__smp_mb();
	return err == -ETIMEDOUT && cpuhp__pcount_sum(&sem->readers) ? -ETIMEDOUT : 0;
}

/*
 * Under ->lock: let queued readers in, then pass ->block on or clear it.
 * True if readers wait on ->rgen: the caller wakes them after unlocking
 * (as a broadcast would, but they do not then pile up on ->lock), still
 * inside its lock call, before which nobody may free @sem.
 */
static bool release_block(struct cpuhp_rwsem *sem)
{
	struct cpuhp__wwaiter *w;
	bool wake = false;

	if (sem->nr_rwait) {
		/*
		 * Readers queued behind us enter before any later writer: that
		 * writer first waits for ->nr_granted to drain (take_block()).
		 */
		sem->nr_granted += sem->nr_rwait;
		sem->nr_rwait = 0;
		atomic_fetch_add_explicit(&sem->rgen, 1, memory_order_relaxed);
		wake = true;
	}
	w = sem->whead;
	if (w) {
		/* ->block stays set: new readers keep waiting (writer preference). */
		sem->whead = w->next;
		/* Under ->lock, which @w's owner takes before it looks: @w is still there. */
		atomic_store_explicit(&w->granted, 1, memory_order_relaxed);
		cpuhp__futex_wake(&w->granted, 1);
	} else {
		/* Release: our section before readers that see ->block clear. */
		atomic_store_explicit(&sem->block, 0, memory_order_release);
	}
	return wake;
}

/* release_block() with ->lock taken and dropped, and the wake-up. */
static void release_block_unlocked(struct cpuhp_rwsem *sem)
{
	bool wake;

	cpuhp__futex_lock(&sem->lock);
	CPUHP_BUG_ON(!atomic_load_explicit(&sem->block, memory_order_relaxed), sem->readers.name,
	             "write unlock of a lock that is not write-locked");
	wake = release_block(sem);
	cpuhp__futex_unlock(&sem->lock);
	if (wake)
		cpuhp__futex_wake(&sem->rgen, INT_MAX);
}

static void unqueue_writer(struct cpuhp_rwsem *sem, struct cpuhp__wwaiter *w)
{
	struct cpuhp__wwaiter **pp = &sem->whead;

	while (*pp != w)
		pp = &(*pp)->next;
	*pp = w->next;
}

/*
 * Take ->block in arrival order.  0, or -ETIMEDOUT still queued = not taken.
 * Not a cancellation point (internal.h): every wait is a futex wait.
 */
static int take_block(struct cpuhp_rwsem *sem, const struct timespec *deadline)
{
	struct cpuhp__wwaiter w = {.next = NULL}, **tail;

	atomic_init(&w.granted, 0);
	cpuhp__futex_lock(&sem->lock);
	if (!atomic_load_explicit(&sem->block, memory_order_relaxed)) {
		atomic_store_explicit(&sem->block, 1, memory_order_relaxed);
		goto granted;
	}
	/* Writers queue rarely and few: the walk to the tail is short. */
	for (tail = &sem->whead; *tail; tail = &(*tail)->next)
		;
	*tail = &w;
	while (!atomic_load_explicit(&w.granted, memory_order_relaxed)) {
		int err;

		cpuhp__futex_unlock(&sem->lock);
		/* release_block() sets ->granted before it wakes us: none is lost. */
		err = cpuhp__futex_wait(&w.granted, 0, deadline);
		cpuhp__futex_lock(&sem->lock);
		if (err == -ETIMEDOUT && !atomic_load_explicit(&w.granted, memory_order_relaxed)) {
			unqueue_writer(sem, &w);
			cpuhp__futex_unlock(&sem->lock);
			return -ETIMEDOUT;
		}
	}
granted:
	/*
	 * Readers let in by the previous writer count themselves as they
	 * wake; wait until all have, so that our sum includes them.  They
	 * need only the CPU to get there, so no deadline applies.
	 */
	while (sem->nr_granted) {
		unsigned seq = atomic_load_explicit(&sem->gseq, memory_order_relaxed);

		sem->gwait = true;
		cpuhp__futex_unlock(&sem->lock);
		/* The last reader bumps ->gseq under ->lock: no lost wake-up. */
		cpuhp__futex_wait(&sem->gseq, seq, NULL);
		cpuhp__futex_lock(&sem->lock);
	}
	cpuhp__futex_unlock(&sem->lock);
	return 0;
}

static int write_lock_common(struct cpuhp_rwsem *sem, const struct timespec *deadline)
{
	int err;

	/* Readers to the slow path; only if idle, a membarrier (H) or grace period (G). */
	cpuhp__rcu_sync_enter(&sem->rss);
	err = take_block(sem, deadline);
	if (err) {
		/* We never held ->block and blocked nobody: just leave. */
		cpuhp__rcu_sync_exit(&sem->rss);
		return err;
	}
	/*
	 * D: ->block (set by us or handed to us) before summing the counts;
	 * pairs with A.  The mutex unlock in take_block() is only a release.
	 */
	cpuhp__smp_mb();
	err = wait_for_readers(sem, deadline);
	if (err) {
		/* Timed out: let in the readers we blocked, serve the next writer. */
		release_block_unlocked(sem);
		cpuhp__rcu_sync_exit(&sem->rss);
		return err;
	}
	cpuhp__debug_write_locked(sem);
	return 0;
}

void cpuhp_rwsem_write_lock(struct cpuhp_rwsem *sem)
{
	write_lock_common(sem, NULL);
}

int cpuhp_rwsem_write_lock_timeout(struct cpuhp_rwsem *sem, unsigned timeout_ms)
{
	struct timespec deadline;

	cpuhp__deadline(&deadline, timeout_ms);
	return write_lock_common(sem, &deadline);
}

void cpuhp_rwsem_write_unlock(struct cpuhp_rwsem *sem)
{
	cpuhp__debug_write_unlocked(sem);
	release_block_unlocked(sem);
	/* Readers may take the fast path again a grace period from now. */
	cpuhp__rcu_sync_exit(&sem->rss);
}

void cpuhp__rwsem_after_fork_child(struct cpuhp_rwsem *sem)
{
	/* Only the forking thread exists, and it is in none of these. */
	atomic_store_explicit(&sem->lock.word, 0, memory_order_relaxed);
	/* No writer active at the fork (rwsem.h): no exit left unqueued. */
	(void)cpuhp__rcu_sync_reset_after_fork(&sem->rss);
	sem->nr_rwait = 0;
	sem->nr_granted = 0;
	sem->gwait = false;
	/* A writer active at the fork (unsupported) would leave ->block set. */
	sem->whead = NULL;
	atomic_store_explicit(&sem->wwait, 0, memory_order_relaxed);
#if CPUHP_DEBUG
	/* Read locks of the threads that are gone went with them. */
	atomic_store(&sem->dbg_readers, cpuhp__pcount_sum_locked(&sem->readers));
#endif
}
