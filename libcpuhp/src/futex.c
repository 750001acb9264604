/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Waiting: private futex waits with absolute CLOCK_MONOTONIC deadlines, and
 * the library's mutexes and condition variables (CLOCK_MONOTONIC too, so that
 * a timed wait is not moved by a change of the wall clock).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

int cpuhp__mutex_init(pthread_mutex_t *m)
{
	return -pthread_mutex_init(m, NULL);
}

int cpuhp__cond_init(pthread_cond_t *c)
{
	pthread_condattr_t ca;
	int err = pthread_condattr_init(&ca);

	if (err)
		return -err;
	err = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!err)
		err = pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
	return -err;
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
