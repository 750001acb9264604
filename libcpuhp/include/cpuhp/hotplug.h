/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The process-wide CPU hotplug lock, with the kernel's old API.
 *
 * Readers ("the set of online CPUs must not change under me") bracket their
 * work with cpuhp_get_online_cpus()/cpuhp_put_online_cpus(); the code that
 * changes the set brackets it with cpuhp_hotplug_begin()/cpuhp_hotplug_done().
 * It is one cpuhp_rwsem, so readers cost a per-thread increment while no
 * hotplug is in progress, and its rules are rwsem.h's: threads made by
 * pthread_create() (or the main thread) only, never a raw clone(); no call
 * is a cancellation point; none is async-signal-safe but the trylock and
 * unlock of cpuhp_hotplug_lock() itself, as rwsem.h says.
 */
#ifndef CPUHP_HOTPLUG_H
#define CPUHP_HOTPLUG_H

#include <cpuhp/export.h>

#ifdef __cplusplus
extern "C" {
#endif

struct cpuhp_rwsem;

/**
 * cpuhp_get_online_cpus() - hold off CPU hotplug.
 *
 * Recursive within a thread: a nested get never waits, even while a writer
 * waits.  Each get needs a put on the same thread, also when the thread is
 * cancelled (a thread that exits holding a get is a bug, reported by
 * aborting): put it in a cleanup handler.
 * Context: may block while a hotplug is in progress; not a cancellation
 * point: a cancel is acted on after the call returns, with the get held.
 * Not async-signal-safe (a thread's first get takes the registry mutex; a
 * get that waits takes the lock's).  Works out of memory: a thread's first
 * get registers it without allocating, and a thread that cannot allocate
 * its counter is counted in the lock's shared one (an atomic add on a
 * shared cache line per outermost get and put).
 */
CPUHP_EXPORT void cpuhp_get_online_cpus(void);

/**
 * cpuhp_put_online_cpus() - undo one cpuhp_get_online_cpus() of this thread.
 *
 * Context: never blocks; not a cancellation point; not async-signal-safe.
 */
CPUHP_EXPORT void cpuhp_put_online_cpus(void);

/**
 * cpuhp_hotplug_begin() - start changing the set of online CPUs.
 *
 * Waits until no thread holds cpuhp_get_online_cpus(); one writer at a time.
 * Without membarrier, the process's first begin also starts the library's
 * timer thread (cpuhp_rwsem_write_unlock()).
 * Context: may block; not while this thread holds cpuhp_get_online_cpus().
 * Not a cancellation point: a cancel is acted on after the call returns,
 * with the hotplug begun (end it in a cleanup handler).  Not
 * async-signal-safe.
 */
CPUHP_EXPORT void cpuhp_hotplug_begin(void);

/**
 * cpuhp_hotplug_begin_timeout() - cpuhp_hotplug_begin() with a bound.
 *
 * Context: as cpuhp_hotplug_begin(), for up to about @timeout_ms; a cancel
 * is acted on after the call returns, with the hotplug begun or after the
 * timeout.
 * Return: 0, or -ETIMEDOUT with nothing changed.
 */
CPUHP_EXPORT int cpuhp_hotplug_begin_timeout(unsigned timeout_ms);

/**
 * cpuhp_hotplug_done() - end the change begun by cpuhp_hotplug_begin().
 *
 * cpuhp_rwsem_write_unlock() of the hotplug lock: never blocks, except
 * where no thread can be created and membarrier is unavailable, when it
 * waits a grace period itself (see there).  Never fails or aborts.
 * Context: the thread that began it.  Not a cancellation point; not
 * async-signal-safe.
 */
CPUHP_EXPORT void cpuhp_hotplug_done(void);

/**
 * cpuhp_hotplug_lock() - the process-wide lock itself, for code that wants
 * the plain cpuhp_rwsem calls (for instance the read trylock, which is
 * async-signal-safe on the terms of rwsem.h).  Never freed.
 */
CPUHP_EXPORT struct cpuhp_rwsem *cpuhp_hotplug_lock(void);

#ifdef __cplusplus
}
#endif

#endif /* CPUHP_HOTPLUG_H */
