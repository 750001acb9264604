/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhp_rwsem: a reader/writer semaphore whose readers are almost free.
 *
 * While no writer is around, a reader increments a counter of its own thread
 * (no atomic read-modify-write on shared memory, no syscall, no lock).  A
 * writer switches readers to a slow path with rcu_sync, blocks new readers,
 * and waits for the summed counters to reach zero.
 *
 * Guarantees:
 *  - Writer preference: once a writer holds the block (it waits only for
 *    readers already inside), new readers wait, so overlapping readers cannot
 *    starve it.
 *  - Fairness: every reader that waited on writer W enters before the next
 *    writer W2 gets the lock; writers are served in arrival order.
 *  - A read lock may be released by another thread than the one that took
 *    it (only the sum of the counters matters); debug builds want that
 *    announced with cpuhp_rwsem_read_disown().
 *  - Any thread may use the lock; liburcu registration is automatic, is
 *    undone when the thread exits, and allocates nothing.  "Thread" means
 *    one made by pthread_create() (or the main thread): a thread made with
 *    a raw clone() shares its creator's thread-local storage, so both
 *    would write one counter as if each were alone and corrupt the counts.
 *    Such threads are not supported, here or in cpuhp_get_online_cpus().
 *  - Out of memory or threads, no call aborts and none fails: a thread that
 *    cannot allocate its counter counts in a shared one (read lock and
 *    unlock then cost an atomic add on a shared cache line); where the
 *    library's timer thread cannot be created (RLIMIT_NPROC, no address
 *    space), unlock does its work itself (see cpuhp_rwsem_write_unlock()).
 *    The library never needs liburcu's call_rcu worker thread, whose
 *    creation liburcu cannot fail gracefully.
 *  - Cancellation: no call is a cancellation point, as with
 *    pthread_rwlock_rdlock()/wrlock().  A thread cancelled while it waits
 *    in a call goes on waiting; the call returns as usual, with the lock
 *    held (or -ETIMEDOUT), and the cancel is acted on at the thread's next
 *    cancellation point.  So release the lock in a cleanup handler
 *    (pthread_cleanup_push()) if the section holds a cancellation point.
 *    Asynchronous cancellation (PTHREAD_CANCEL_ASYNCHRONOUS) is not
 *    supported around any call.  The library's fork handlers do not act
 *    on a cancel pending at fork() either.
 *  - Signal handlers: cpuhp_rwsem_read_trylock(), and the
 *    cpuhp_rwsem_read_unlock() of a lock it took in the same handler, are
 *    async-signal-safe on a thread that already has its counter for the
 *    lock: one that took or tried a read lock of it before, outside the
 *    handler.  A thread's first read lock of a lock allocates its counter
 *    and takes the library's registry mutex, which is not safe there: let
 *    every thread that may take the signal do one
 *    cpuhp_rwsem_read_trylock()/unlock() first.  Without membarrier (RCU
 *    readers, see doc/design.md), liburcu's rule also applies: not on an
 *    alternate signal stack (sigaltstack()).  Nothing else is
 *    async-signal-safe: cpuhp_rwsem_read_lock() deadlocks if the handler
 *    interrupted that thread's own wait for the lock, as
 *    pthread_rwlock_rdlock() does, and the writer calls take mutexes.
 *  - fork(): parent and child keep working locks if no writer is active at
 *    the fork.  In the child, read locks held by threads other than the
 *    forking one do not exist.
 *
 * Cost of a writer: it sums one counter per thread that has ever used a
 * lock whose id shares a 64-lock group with @sem and is still alive, so
 * write lock is O(threads): about 0.15 us with one such thread, 1-2 us with
 * 1,000, 40-130 us with 20,000 (tests/bench/bench-writer-scale; a cache
 * miss per thread), whether those threads read or sleep.  Readers never
 * pay for other threads.
 *
 * Cost of a lock: creating and freeing one is O(1) amortised, about 315
 * and 210 instructions (malloc and pthread_rwlock_init: 230; destroy and
 * free: 150).  A lock takes 256 bytes (debug checks included),
 * 128-byte aligned, in slabs of 64 made as needed and freed with their
 * last lock; it is set up by plain stores (no mutex or condition variable
 * to initialise), and a fresh lock writes four cache lines.
 *
 * Read locks do not nest while a writer may be waiting (the inner lock would
 * wait behind the writer, which waits for the outer one): use
 * cpuhp_get_online_cpus() for a recursive read side.
 */
#ifndef CPUHP_RWSEM_H
#define CPUHP_RWSEM_H

#include <stdbool.h>

#include <cpuhp/export.h>

#ifdef __cplusplus
extern "C" {
#endif

struct cpuhp_rwsem;

/**
 * cpuhp_rwsem_new() - allocate an unlocked semaphore.
 * @out: receives the new object on success; untouched on failure.
 *
 * Context: never blocks; not async-signal-safe (allocates).
 * Return: 0, or -ENOMEM (only when a new slab of 64 locks or a larger id
 * table is needed: a freed lock's place is reused without allocating).
 */
CPUHP_EXPORT int cpuhp_rwsem_new(struct cpuhp_rwsem **out);

/**
 * cpuhp_rwsem_new_named() - cpuhp_rwsem_new(), with a name for reports.
 * @name: copied; debug builds name the lock with it when they report
 *        misuse ("cpuhp_rwsem" if NULL).
 *
 * Return: 0, or -ENOMEM.
 */
CPUHP_EXPORT int cpuhp_rwsem_new_named(struct cpuhp_rwsem **out, const char *name);

/**
 * cpuhp_rwsem_free() - destroy an unlocked semaphore.
 *
 * Context: may block (at most about 11 ms) until rcu_sync is idle again
 * after the last writer; not a cancellation point: a cancel is acted on
 * after the call returns, with the lock freed.  Not async-signal-safe.
 */
CPUHP_EXPORT void cpuhp_rwsem_free(struct cpuhp_rwsem *sem);

/**
 * cpuhp_rwsem_read_lock() - take the lock shared.
 *
 * Acquire ordering: the reader sees everything the last writer did.
 * Context: may block while a writer holds or waits for the lock; not a
 * cancellation point: a cancel is acted on after the call returns, with
 * the lock held.  Not async-signal-safe (see above: use the trylock).
 * Works out of memory (the thread is then counted in the lock's shared
 * counter).
 */
CPUHP_EXPORT void cpuhp_rwsem_read_lock(struct cpuhp_rwsem *sem);

/**
 * cpuhp_rwsem_read_trylock() - take the lock shared unless a writer holds it
 * or waits for readers to drain.
 *
 * Context: never blocks; not a cancellation point.  Async-signal-safe on
 * a thread that has its counter for @sem (see above).
 * Return: true if the read lock is now held.
 */
CPUHP_EXPORT bool cpuhp_rwsem_read_trylock(struct cpuhp_rwsem *sem);

/**
 * cpuhp_rwsem_read_lock_timeout() - cpuhp_rwsem_read_lock() with a bound.
 * @timeout_ms: how long to wait while a writer holds or waits for the lock.
 *
 * A reader that a writer's unlock let in before the deadline gets the lock,
 * however late it wakes.  On timeout the lock is left exactly as before:
 * the waiting writer and the readers queued with this one are not delayed.
 *
 * Acquire ordering, as cpuhp_rwsem_read_lock().
 * Context: may block, up to about @timeout_ms (0: never waits, as the
 * trylock, apart from a spin of a few microseconds); not a cancellation
 * point: a cancel is acted on after the call returns, with the lock held or
 * after the timeout.  Not async-signal-safe.
 * Return: 0 with the read lock held, or -ETIMEDOUT.
 */
CPUHP_EXPORT int cpuhp_rwsem_read_lock_timeout(struct cpuhp_rwsem *sem, unsigned timeout_ms);

/**
 * cpuhp_rwsem_read_unlock() - drop a read lock, possibly taken by another
 * thread.  Release ordering.
 *
 * Context: never blocks; not a cancellation point.  Async-signal-safe for
 * a lock that cpuhp_rwsem_read_trylock() took in the same handler (the
 * first release on a thread that never took @sem allocates its counter).
 */
CPUHP_EXPORT void cpuhp_rwsem_read_unlock(struct cpuhp_rwsem *sem);

/**
 * cpuhp_rwsem_read_disown() - say that a read lock this thread took will be
 * released by another thread.
 *
 * Releasing on another thread is always allowed; this only tells the debug
 * build (-Ddebug_checks=true) that the lock no longer belongs to this
 * thread, so that a later read lock here is not reported as recursion and
 * this thread may exit.  No effect in other builds.  (The kernel's
 * percpu_rwsem_release() annotation plays the same role for lockdep.)
 */
CPUHP_EXPORT void cpuhp_rwsem_read_disown(struct cpuhp_rwsem *sem);

/**
 * cpuhp_rwsem_write_lock() - take the lock exclusive.
 *
 * Context: may block; the calling thread must not hold a read lock on @sem.
 * Not a cancellation point: a cancel is acted on after the call returns,
 * with the lock held.  Not async-signal-safe.
 * O(threads that have used @sem or a lock of its 64-lock group): see above.
 * Without membarrier (see cpuhp_rwsem_write_unlock()), the process's first
 * writer also starts the library's timer thread, which every unlock uses
 * (once: tens of microseconds).
 */
CPUHP_EXPORT void cpuhp_rwsem_write_lock(struct cpuhp_rwsem *sem);

/**
 * cpuhp_rwsem_write_lock_timeout() - cpuhp_rwsem_write_lock() with a bound.
 * @timeout_ms: how long to wait for earlier writers and for readers to leave.
 *
 * Leaving the idle state (a membarrier, or without membarrier a grace
 * period: at most tens of microseconds) is not cut short.
 * On timeout the lock is left exactly as before: readers that this writer
 * blocked are let in and the next waiting writer, if any, is served.
 *
 * Context: may block, up to about @timeout_ms; not a cancellation point: a
 * cancel is acted on after the call returns, with the lock held or after
 * the timeout.  Not async-signal-safe.
 * Return: 0 with the lock held, or -ETIMEDOUT.
 */
CPUHP_EXPORT int cpuhp_rwsem_write_lock_timeout(struct cpuhp_rwsem *sem, unsigned timeout_ms);

/**
 * cpuhp_rwsem_write_unlock() - drop the write lock.
 *
 * Every reader waiting at this moment is let in before the next writer.
 * Readers stay on the slow path a while longer, which lets back-to-back
 * writers skip leaving the idle state again.  Where membarrier works, the
 * unlock makes no system call and arms nothing: the first reader on the
 * slow path after an eighth of what leaving the idle state costs a writer
 * (microseconds) takes readers back to the fast path, or, where writers
 * come so often that this would cost them more than a sixteenth of their
 * time, once they have earned that back (tens to hundreds of
 * microseconds); a writer that comes first, or while nobody reads, skips
 * the membarrier.  Otherwise readers stay slow for about 1 ms and a grace
 * period, which the library's timer thread waits.
 * Context: the thread that took the write lock.  Never blocks, except in one
 * rare case: without membarrier, where that timer thread cannot be created
 * (no thread can be: RLIMIT_NPROC, address space exhausted), the unlock
 * waits the grace period itself (microseconds with idle readers; as long as
 * the longest cpuhp_rcu_read_lock() section running).  It never fails or
 * aborts.  Not a cancellation point (not even in that rare wait); not
 * async-signal-safe.
 */
CPUHP_EXPORT void cpuhp_rwsem_write_unlock(struct cpuhp_rwsem *sem);

#ifdef __cplusplus
}
#endif

#endif /* CPUHP_RWSEM_H */
