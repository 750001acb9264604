/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-create: the cost of making many locks (issue 16 §5).
 *
 * Creates N locks (default 100,000) with cpuhp_rwsem_new() and, in the same
 * repetition, N pthread_rwlock_t with malloc() + pthread_rwlock_init() (a
 * lock on the heap, as cpuhp_rwsem_new() makes one), then frees them all.
 * Prints per repetition and as medians: the time for all N, the ratio
 * cpuhp/pthread, and the first and the last tenth of the cpuhp creations
 * (equal when each creation costs the same however many locks exist: the
 * lock id search used to make the last tenth ~8x slower).  Nothing is
 * judged; `--quick` makes 2,000 locks once (the smoke test).
 *
 * The first repetition is cold: the heap grows, and on a VM the page
 * faults cost more than the locks (a cpuhp_rwsem is 384 bytes, 128-byte
 * aligned, in slabs of 64; a pthread_rwlock_t 56, in a 64-byte heap
 * block).  It also gives the resident memory each lock added (RSS from
 * /proc/self/statm before and after, divided by N).  Freed memory then
 * stays in the heap (M_TRIM_THRESHOLD), so the later, warm repetitions
 * time the creations themselves; their medians are printed apart from the
 * cold figures.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cpuhp/rwsem.h>

#define REPS 5

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Resident bytes of this process. */
static long rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size = 0, resident = 0;

	if (f) {
		if (fscanf(f, "%ld %ld", &size, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * sysconf(_SC_PAGESIZE);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	unsigned n = quick ? 2000 : 100000, reps = quick ? 1 : REPS, tenth = n / 10;
	struct cpuhp_rwsem **sems = calloc(n, sizeof(*sems));
	pthread_rwlock_t **rws = calloc(n, sizeof(*rws));
	double t_cpuhp[REPS], t_pthread[REPS], ratio[REPS], first[REPS], last[REPS];
	long rss0 = 0, rss1 = 0, rss2 = 0;

	if (!sems || !rws)
		return 1;
	if (argc > 1 && !quick) {
		fprintf(stderr, "usage: bench-create [--quick]\n");
		return 2;
	}
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	printf("creating %u locks, %u repetition(s)\n", n, reps);
	printf("%4s %14s %14s %8s %16s %16s\n", "rep", "cpuhp ms", "pthread ms", "ratio",
	       "first 10% ms", "last 10% ms");
	for (unsigned r = 0; r < reps; r++) {
		uint64_t t0, t_first = 0, t_last0 = 0, t1, t1p, t2;

		if (r == 0)
			rss0 = rss_bytes();
		t0 = now_ns();

		for (unsigned i = 0; i < n; i++) {
			if (i == tenth)
				t_first = now_ns();
			if (i == n - tenth)
				t_last0 = now_ns();
			if (cpuhp_rwsem_new(&sems[i])) {
				fprintf(stderr, "bench-create: cpuhp_rwsem_new failed at %u\n", i);
				return 1;
			}
		}
		t1 = now_ns();
		if (r == 0)
			rss1 = rss_bytes();
		t1p = now_ns(); /* the RSS read is in neither figure */
		for (unsigned i = 0; i < n; i++) {
			rws[i] = malloc(sizeof(*rws[i]));
			if (!rws[i] || pthread_rwlock_init(rws[i], NULL)) {
				fprintf(stderr, "bench-create: pthread_rwlock_init failed at %u\n",
				        i);
				return 1;
			}
		}
		t2 = now_ns();
		if (r == 0)
			rss2 = rss_bytes();
		t_cpuhp[r] = (double)(t1 - t0) / 1e6;
		t_pthread[r] = (double)(t2 - t1p) / 1e6;
		ratio[r] = t_cpuhp[r] / t_pthread[r];
		first[r] = (double)(t_first - t0) / 1e6;
		last[r] = (double)(t1 - t_last0) / 1e6;
		printf("%4u %14.2f %14.2f %8.2f %16.2f %16.2f\n", r, t_cpuhp[r], t_pthread[r],
		       ratio[r], first[r], last[r]);
		/* Free in creation order: the next repetition reuses the ids from 0. */
		for (unsigned i = 0; i < n; i++) {
			cpuhp_rwsem_free(sems[i]);
			pthread_rwlock_destroy(rws[i]);
			free(rws[i]);
		}
	}
	printf("ratio: cpuhp_rwsem_new / malloc+pthread_rwlock_init in the same repetition\n");
	printf("cold   %7.2f %14.2f %8.2f %16.2f %16.2f\n", t_cpuhp[0], t_pthread[0], ratio[0],
	       first[0], last[0]);
	if (reps > 1)
		printf("warm   %7.2f %14.2f %8.2f %16.2f %16.2f   (medians of repetitions 1-%u)\n",
		       median(t_cpuhp + 1, reps - 1), median(t_pthread + 1, reps - 1),
		       median(ratio + 1, reps - 1), median(first + 1, reps - 1),
		       median(last + 1, reps - 1), reps - 1);
	printf(
	    "resident memory per lock (cold repetition): cpuhp_rwsem %ld B, pthread_rwlock %ld B\n",
	    (rss1 - rss0) / (long)n, (rss2 - rss1) / (long)n);
	free(sems);
	free(rws);
	return 0;
}
