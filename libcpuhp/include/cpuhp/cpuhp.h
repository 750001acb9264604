/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libcpuhp: the whole in-process API.
 *
 * For every call: only threads made by pthread_create() (or the main
 * thread) may make it, never one made by a raw clone(), which shares its
 * creator's thread-local storage (the per-thread counters); no call is a
 * cancellation point (a cancel that comes while a call waits is acted on
 * after it returns); and each header says which calls are
 * async-signal-safe (rwsem.h: the read trylock and its unlock, on terms).
 */
#ifndef CPUHP_CPUHP_H
#define CPUHP_CPUHP_H

#include <cpuhp/rcu_sync.h>
#include <cpuhp/rwsem.h>
#include <cpuhp/hotplug.h>
#include <cpuhp/cpuset.h>
#include <cpuhp/version.h>

#endif /* CPUHP_CPUHP_H */
