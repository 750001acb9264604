/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rcu_sync: lets readers skip synchronisation while no updater is around.
 *
 * Readers call cpuhp_rcu_sync_is_idle() inside cpuhp_rcu_read_lock() and take a
 * fast path while it returns true.  An updater brackets its work with
 * cpuhp_rcu_sync_enter()/cpuhp_rcu_sync_exit().  After enter returns, every
 * reader that starts later sees "not idle" and every reader that saw "idle"
 * has left its read-side section.  exit does not wait: the return to idle is
 * a callback one grace period later (the library's timer thread waits it,
 * not liburcu's call_rcu() worker), so an enter that arrives while that
 * callback is pending costs no grace period at all.
 *
 * State machine (each transition is commented where it happens in
 * libcpuhp/src/rcu_sync.c; "count" is the number of enters not yet exited):
 *
 *   IDLE   --enter-->                 ENTER   first enter: waits a grace period
 *   ENTER  --that wait ends-->        PASSED  enters that came meanwhile waited too
 *   PASSED --enter-->                 PASSED  no wait
 *   PASSED --last exit-->             EXIT    queues the callback
 *   EXIT   --enter-->                 EXIT    no wait: readers are slow already
 *   EXIT   --last exit-->             REPLAY  the queued callback is too early
 *   REPLAY --enter, last exit-->      REPLAY
 *   EXIT   --callback, count > 0-->   PASSED
 *   REPLAY --callback, count > 0-->   PASSED
 *   EXIT   --callback, count == 0-->  IDLE
 *   REPLAY --callback, count == 0-->  EXIT    queues it again: one more period
 *
 * The callback is queued only by PASSED -> EXIT (and by itself), so exactly
 * one is pending while the state is EXIT or REPLAY and none otherwise.
 * A cpuhp_rwsem's own rcu_sync, where membarrier works, needs no callback
 * and no REPLAY: its last exit goes PASSED -> LINGER, which the next enter
 * moves back to PASSED and a reader on the slow path ends in IDLE (see
 * rcu_sync.c).
 *
 * fork(): the same rule as a cpuhp_rwsem's.  Call fork() while no other
 * thread is between enter and exit; the child then has a working object.
 * If one is, the child still never hangs: the object is not caught half-way
 * through a transition (its lock is held across the fork), an enter that
 * was waiting for its grace period counts as passed, and its count keeps
 * that thread's enter, which nothing can exit in the child: readers stay on
 * the slow path there, and cpuhp_rcu_sync_free() forgives the enters that
 * were counted at the fork.  A fork() waits for a grace period that
 * another thread's enter (or the library's timer thread) is waiting, so
 * that the child never inherits liburcu's grace-period or registry mutex
 * held: so do not call fork() inside cpuhp_rcu_read_lock(), which such a
 * grace period would wait for.
 *
 * Threads, cancellation and signals: rwsem.h's rules.  Only threads made by
 * pthread_create() (or the main thread); no call is a cancellation point
 * (a cancel sent while enter or free waits is acted on after it returns).
 */
#ifndef CPUHP_RCU_SYNC_H
#define CPUHP_RCU_SYNC_H

#include <stdbool.h>

#include <cpuhp/export.h>

#ifdef __cplusplus
extern "C" {
#endif

struct cpuhp_rcu_sync;

/**
 * cpuhp_rcu_sync_new() - allocate an idle rcu_sync.
 * @out: receives the new object on success; untouched on failure.
 *
 * The object is one allocation of 160 bytes (the 136 that each
 * cpuhp_rwsem embeds, and its place in the fork handlers' list); making
 * it takes no lock but that list's and cannot fail otherwise.
 *
 * Context: any thread; not async-signal-safe (allocates).
 * Return: 0, or -ENOMEM.
 */
CPUHP_EXPORT int cpuhp_rcu_sync_new(struct cpuhp_rcu_sync **out);

/**
 * cpuhp_rcu_sync_free() - destroy an rcu_sync.
 *
 * Waits for a pending exit callback (about 1 ms and a grace period), so
 * that the callback never touches freed memory; and, if an exit could not
 * wait its grace period (below), waits it here.  Every enter must have been
 * matched by an exit, except, in a fork child, the enters counted at the
 * fork (see fork() above).
 *
 * Context: may block; not inside cpuhp_rcu_read_lock().  Not a cancellation
 * point: a cancel is acted on after the call returns, with @rss freed.
 * Not async-signal-safe.
 */
CPUHP_EXPORT void cpuhp_rcu_sync_free(struct cpuhp_rcu_sync *rss);

/**
 * cpuhp_rcu_sync_enter() - switch readers to their slow path.
 *
 * Counted: nested or concurrent enters need as many exits.  Waits for one
 * grace period only when the object was idle; otherwise waits, if at all, for
 * the grace period another enter already started.  On return every reader
 * that saw "idle" has left its read-side section (full memory ordering).
 *
 * Context: may block; not inside cpuhp_rcu_read_lock().  Not a cancellation
 * point: a cancel is acted on after the call returns, entered (exit it in a
 * cleanup handler).  Not async-signal-safe.
 */
CPUHP_EXPORT void cpuhp_rcu_sync_enter(struct cpuhp_rcu_sync *rss);

/**
 * cpuhp_rcu_sync_exit() - drop one enter.
 *
 * Does not wait for a grace period.  After the last exit, readers go back to
 * the fast path 1 ms and a grace period later: the library's timer thread
 * (started by the first enter) waits it, so that the caller pays neither
 * the wait nor waking a thread.
 *
 * One rare case changes that: where the timer thread cannot be created (no
 * thread can be: RLIMIT_NPROC, address space exhausted), the last exit
 * waits the grace period itself (microseconds with idle readers; as long as
 * the longest read-side section running), and returns with the object
 * idle.  Inside cpuhp_rcu_read_lock() it cannot, so it returns at once and
 * readers stay on the slow path until the next last exit, or free, waits
 * it.  Never fails or aborts.
 *
 * Context: any thread, including one inside cpuhp_rcu_read_lock().  Not a
 * cancellation point; not async-signal-safe (takes a mutex).
 */
CPUHP_EXPORT void cpuhp_rcu_sync_exit(struct cpuhp_rcu_sync *rss);

/**
 * cpuhp_rcu_sync_is_idle() - may the caller take the reader fast path?
 *
 * Context: only between cpuhp_rcu_read_lock() and cpuhp_rcu_read_unlock();
 * the answer holds until the unlock.  Async-signal-safe (one load).
 */
CPUHP_EXPORT bool cpuhp_rcu_sync_is_idle(const struct cpuhp_rcu_sync *rss);

/**
 * cpuhp_rcu_read_lock() - enter an RCU read-side section (liburcu memb).
 *
 * Registers the calling thread with liburcu on first use and unregisters it
 * when the thread exits, so any thread may call it.  Registering allocates
 * nothing (it works out of memory); the one way it can fail is
 * pthread_setspecific() failing for the library's key, which glibc does
 * only out of memory in a process that made 32 keys before loading
 * libcpuhp (it stores the first 32 keys' values in the thread; libcpuhp's
 * is made by its constructor), and that would be reported and abort, as a
 * thread left registered would hang every later grace period.  Nests.
 * Must not block inside: grace periods wait for the section to end.
 * Context: never blocks.  Async-signal-safe once the thread has called it
 * outside a handler (the first call registers the thread, which takes
 * mutexes), except on an alternate signal stack (liburcu's rule).
 */
CPUHP_EXPORT void cpuhp_rcu_read_lock(void);

/**
 * cpuhp_rcu_read_unlock() - leave the section cpuhp_rcu_read_lock() began.
 * Context: async-signal-safe for a section begun in the same handler.
 */
CPUHP_EXPORT void cpuhp_rcu_read_unlock(void);

#ifdef __cplusplus
}
#endif

#endif /* CPUHP_RCU_SYNC_H */
