/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-writer-scale: a writer's cost against the number of threads that
 * have used the lock.
 *
 * A writer sums every registered thread's counter for the lock, so its
 * lock+unlock grows with the threads that exist, busy or not.  This starts
 * T threads (small stacks) that each take and drop a read lock once, to get
 * their counter, and then sleep on a barrier; meanwhile the main thread
 * times write lock+unlock pairs back to back (after the first, rcu_sync
 * stays out of idle, so no membarrier is timed: only the sum and the
 * bookkeeping) and, for scale, as many pthread_rwlock_t write pairs.
 * Prints the median and the 90th percentile over 201 pairs for T = 1,
 * 1,000 and 20,000.  Nothing is judged; `--quick` runs T = 1 and 100.
 */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpuhp/rwsem.h>

#define PAIRS 201

static struct cpuhp_rwsem *sem;
static pthread_barrier_t ready, done;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void *idle_reader(void *arg)
{
	(void)arg;
	cpuhp_rwsem_read_lock(sem);
	cpuhp_rwsem_read_unlock(sem);
	pthread_barrier_wait(&ready);
	pthread_barrier_wait(&done);
	return NULL;
}

static int run(unsigned nthreads)
{
	pthread_t *tids = calloc(nthreads, sizeof(*tids));
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	uint64_t t[PAIRS], p[PAIRS];
	pthread_attr_t attr;
	unsigned started = 0;

	if (!tids || cpuhp_rwsem_new(&sem))
		return 1;
	/* The main thread is one of the T. */
	cpuhp_rwsem_read_lock(sem);
	cpuhp_rwsem_read_unlock(sem);
	pthread_barrier_init(&ready, NULL, nthreads);
	pthread_barrier_init(&done, NULL, nthreads);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN > 65536 ? PTHREAD_STACK_MIN : 65536);
	for (; started + 1 < nthreads; started++) {
		if (pthread_create(&tids[started], &attr, idle_reader, NULL)) {
			fprintf(stderr, "bench-writer-scale: could only start %u threads\n",
			        started);
			return 1;
		}
	}
	pthread_attr_destroy(&attr);
	pthread_barrier_wait(&ready);
	for (unsigned i = 0; i < PAIRS; i++) {
		uint64_t t0 = now_ns();

		cpuhp_rwsem_write_lock(sem);
		cpuhp_rwsem_write_unlock(sem);
		t[i] = now_ns() - t0;
	}
	for (unsigned i = 0; i < PAIRS; i++) {
		uint64_t t0 = now_ns();

		pthread_rwlock_wrlock(&rw);
		pthread_rwlock_unlock(&rw);
		p[i] = now_ns() - t0;
	}
	pthread_barrier_wait(&done);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	qsort(t, PAIRS, sizeof(*t), cmp_u64);
	qsort(p, PAIRS, sizeof(*p), cmp_u64);
	printf("%8u %14.2f %14.2f %18.3f\n", nthreads, (double)t[PAIRS / 2] / 1e3,
	       (double)t[PAIRS * 9 / 10] / 1e3, (double)p[PAIRS / 2] / 1e3);
	pthread_barrier_destroy(&ready);
	pthread_barrier_destroy(&done);
	cpuhp_rwsem_free(sem);
	free(tids);
	return 0;
}

int main(int argc, char **argv)
{
	static const unsigned full[] = {1, 1000, 20000}, quick[] = {1, 100};
	bool q = argc > 1 && !strcmp(argv[1], "--quick");
	const unsigned *n = q ? quick : full;
	unsigned nn = q ? 2 : 3;

	if (argc > 1 && !q) {
		fprintf(stderr, "usage: bench-writer-scale [--quick]\n");
		return 2;
	}
	printf("write lock+unlock, us (%u back-to-back pairs; threads that used the lock, idle)\n",
	       PAIRS);
	printf("%8s %14s %14s %18s\n", "threads", "median", "p90", "pthread_rwlock");
	for (unsigned i = 0; i < nn; i++)
		if (run(n[i]))
			return 1;
	return 0;
}
