/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Waiting: private futex waits with absolute CLOCK_MONOTONIC deadlines (so
 * that a timed wait is not moved by a change of the wall clock), the locks'
 * one-word mutex, and the library's pthread mutexes.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/*
 * The library's own pthread mutexes (defer.c's, the lists of fork.c's
 * handlers) are set up rarely, but cheaply all the same.  A default mutex
 * needs no call:
 * POSIX makes PTHREAD_MUTEX_INITIALIZER the same as pthread_mutex_init(m,
 * NULL) without its checks, and it cannot fail.  ThreadSanitizer learns of
 * a mutex's new life only from the call (a fork child re-initialises
 * mutexes that a gone thread held), so its builds keep it.
 */
int cpuhp__mutex_init(pthread_mutex_t *m)
{
#ifdef CPUHP__TSAN
	return -pthread_mutex_init(m, NULL);
#else
	*m = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	return 0;
#endif
}

void cpuhp__deadline(struct timespec *ts, unsigned timeout_ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += timeout_ms / 1000;
	ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/*
 * Sleep while *@addr == @val.  0 on a wake-up, a changed value or a signal
 * (the caller re-checks its condition); -ETIMEDOUT once @deadline passed.
 * Not a cancellation point: glibc's syscall() is a bare system call, which
 * never acts on a cancel (internal.h's rule), as is membarrier.c's.
 */
int cpuhp__futex_wait(_Atomic unsigned *addr, unsigned val, const struct timespec *deadline)
{
	/* BITSET takes an absolute CLOCK_MONOTONIC time; plain WAIT a relative one. */
	long r = syscall(SYS_futex, addr, FUTEX_WAIT_BITSET_PRIVATE, val, deadline, NULL,
	                 FUTEX_BITSET_MATCH_ANY);

	return r == -1 && errno == ETIMEDOUT ? -ETIMEDOUT : 0;
}

void cpuhp__futex_wake(_Atomic unsigned *addr, int n)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

void cpuhp__futex_lock_slow(struct cpuhp__futex_lock *l, unsigned seen)
{
	/*
	 * Contended: say so (2), so that the unlock wakes one of us, and
	 * sleep while it stays 2.  Taking it as 2 is right even if nobody
	 * else waits: at worst one needless wake-up.
	 */
	if (seen != 2)
		seen = atomic_exchange_explicit(&l->word, 2, memory_order_acquire);
	while (seen != 0) {
		cpuhp__futex_wait(&l->word, 2, NULL);
		seen = atomic_exchange_explicit(&l->word, 2, memory_order_acquire);
	}
}

/*
 * After the unlock's store: a waiter that got in meanwhile may have freed
 * the lock (rcu_sync's destroy waits for its expiry, then frees).  A
 * private futex wake reads no memory at the address: at worst it wakes a
 * waiter of whatever lives there now, and every wait re-checks.
 */
void cpuhp__futex_unlock_wake(struct cpuhp__futex_lock *l)
{
	cpuhp__futex_wake(&l->word, 1);
}
