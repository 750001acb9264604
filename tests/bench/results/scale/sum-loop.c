/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The writer's sum loop alone (issue 16 §5), not built by meson: 20,000
 * threads each allocate a 512-byte counter block as pcount.c's slot_slow()
 * does (aligned_alloc(128, 512) on their own thread, so in their malloc
 * arena) and wait; the main thread then times, 301 times each and
 * interleaved, a sum of one slot per block: plain, with a prefetch 8, 16,
 * 32 or 64 blocks ahead, over the blocks sorted by address, and over one
 * contiguous array at a 512-byte stride.  Medians, p10 and p90 in us.
 *   gcc -O2 -pthread -o sum-loop sum-loop.c && ./sum-loop
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N    20000
#define REPS 301
#define SLOT 5

static long *blocks[N], *sorted[N], *pool;
static pthread_barrier_t ready, done;
static _Atomic unsigned next;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *block_owner(void *arg)
{
	long *b = aligned_alloc(128, 512);

	memset(b, 0, 512);
	blocks[atomic_fetch_add(&next, 1)] = b;
	pthread_barrier_wait(&ready);
	pthread_barrier_wait(&done);
	return arg;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* @ahead 0: no prefetch.  noinline: each variant is the same loop, apart. */
static __attribute__((noinline)) long sum(long **b, unsigned ahead)
{
	long s = 0;

	for (unsigned i = 0; i < N; i++) {
		if (ahead && i + ahead < N)
			__builtin_prefetch(&b[i + ahead][SLOT]);
		s += __atomic_load_n(&b[i][SLOT], __ATOMIC_ACQUIRE);
	}
	return s;
}

static __attribute__((noinline)) long sum_pool(void)
{
	long s = 0;

	for (unsigned i = 0; i < N; i++)
		s += __atomic_load_n(&pool[i * 64 + SLOT], __ATOMIC_ACQUIRE);
	return s;
}

int main(void)
{
	static const char *name[] = {"plain", "pf8", "pf16", "pf32", "pf64", "sorted", "pool"};
	enum { V = sizeof(name) / sizeof(name[0]) };
	static const unsigned ahead[] = {0, 8, 16, 32, 64};
	static uint64_t t[V][REPS];
	pthread_t *tids = calloc(N, sizeof(*tids));
	pthread_attr_t attr;
	long s = 0;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 65536);
	pthread_barrier_init(&ready, NULL, N + 1);
	pthread_barrier_init(&done, NULL, N + 1);
	for (int i = 0; i < N; i++)
		if (pthread_create(&tids[i], &attr, block_owner, NULL))
			return 1;
	pthread_barrier_wait(&ready);
	memcpy(sorted, blocks, sizeof(blocks));
	qsort(sorted, N, sizeof(*sorted), cmp_ptr);
	pool = aligned_alloc(4096, (size_t)N * 512);
	memset(pool, 0, (size_t)N * 512);
	for (int r = 0; r < REPS; r++) {
		for (int v = 0; v < V; v++) {
			uint64_t t0 = now_ns();

			if (v < 5)
				s += sum(blocks, ahead[v]);
			else if (v == 5)
				s += sum(sorted, 0);
			else
				s += sum_pool();
			t[v][r] = now_ns() - t0;
		}
	}
	for (int v = 0; v < V; v++) {
		qsort(t[v], REPS, sizeof(t[v][0]), cmp_u64);
		printf("%-7s median %7.1f us  p10 %7.1f  p90 %7.1f\n", name[v],
		       (double)t[v][REPS / 2] / 1e3, (double)t[v][REPS / 10] / 1e3,
		       (double)t[v][REPS * 9 / 10] / 1e3);
	}
	pthread_barrier_wait(&done);
	for (int i = 0; i < N; i++)
		pthread_join(tids[i], NULL);
	return s != 0;
}
