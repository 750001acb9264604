/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-create: the cost of making many locks.
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
 * Cold: the heap grows, and on a VM the page faults cost more than the
 * locks (a cpuhp_rwsem is 256 bytes, 128-byte aligned, in slabs of 64; a
 * pthread_rwlock_t 56, in a 64-byte heap block).  Each kind is made cold in
 * a fresh fork child of its own (three rounds, alternating; medians), so
 * that neither reuses heap the other left resident; the children also give
 * the resident memory each lock added (RSS from /proc/self/statm before
 * and after, divided by N).  In this process, repetition 0 grows the heap;
 * freed memory then stays in it (M_TRIM_THRESHOLD), so repetitions 1-4,
 * warm, time the creations themselves.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cpuhp/rwsem.h>

#define REPS        5
#define COLD_ROUNDS 3

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

/*
 * In a fresh child: make @n locks (cpuhp_rwsem if @cpuhp, else malloc +
 * pthread_rwlock_init) and report the ms it took and the resident bytes
 * each added.  0, or -1 if the child failed.
 */
static int cold_child(bool cpuhp, unsigned n, double *ms, double *rss_per_lock)
{
	double out[2];
	int fd[2], status;
	pid_t pid;

	if (pipe(fd))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		long rss0 = rss_bytes(), rss1;
		uint64_t t0 = now_ns(), t1;

		for (unsigned i = 0; i < n; i++) {
			struct cpuhp_rwsem *sem;
			pthread_rwlock_t *rw;

			if (cpuhp) {
				if (cpuhp_rwsem_new(&sem))
					_exit(1);
			} else {
				rw = malloc(sizeof(*rw));
				if (!rw || pthread_rwlock_init(rw, NULL))
					_exit(1);
			}
		}
		t1 = now_ns();
		rss1 = rss_bytes();
		out[0] = (double)(t1 - t0) / 1e6;
		out[1] = (double)(rss1 - rss0) / n;
		_exit(write(fd[1], out, sizeof(out)) == sizeof(out) ? 0 : 1);
	}
	close(fd[1]);
	if (read(fd[0], out, sizeof(out)) != sizeof(out))
		out[0] = -1;
	close(fd[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) ||
	    out[0] < 0)
		return -1;
	*ms = out[0];
	*rss_per_lock = out[1];
	return 0;
}

int main(int argc, char **argv)
{
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	unsigned n = quick ? 2000 : 100000, reps = quick ? 1 : REPS, tenth = n / 10;
	struct cpuhp_rwsem **sems = calloc(n, sizeof(*sems));
	pthread_rwlock_t **rws = calloc(n, sizeof(*rws));
	double t_cpuhp[REPS], t_pthread[REPS], ratio[REPS], first[REPS], last[REPS];
	double c_cpuhp[COLD_ROUNDS], c_pthread[COLD_ROUNDS], c_ratio[COLD_ROUNDS];
	double rss_cpuhp[COLD_ROUNDS], rss_pthread[COLD_ROUNDS];
	unsigned rounds = quick ? 1 : COLD_ROUNDS;

	if (!sems || !rws)
		return 1;
	if (argc > 1 && !quick) {
		fprintf(stderr, "usage: bench-create [--quick]\n");
		return 2;
	}
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	printf("creating %u locks cold, each kind in a fresh child, %u round(s)\n", n, rounds);
	printf("%4s %14s %14s %8s %14s %14s\n", "rnd", "cpuhp ms", "pthread ms", "ratio",
	       "cpuhp B/lock", "pthread B/lock");
	for (unsigned r = 0; r < rounds; r++) {
		if (cold_child(true, n, &c_cpuhp[r], &rss_cpuhp[r]) ||
		    cold_child(false, n, &c_pthread[r], &rss_pthread[r])) {
			fprintf(stderr, "bench-create: a cold child failed\n");
			return 1;
		}
		c_ratio[r] = c_cpuhp[r] / c_pthread[r];
		printf("%4u %14.2f %14.2f %8.2f %14.0f %14.0f\n", r, c_cpuhp[r], c_pthread[r],
		       c_ratio[r], rss_cpuhp[r], rss_pthread[r]);
	}
	printf("creating %u locks in this process, %u repetition(s)\n", n, reps);
	printf("%4s %14s %14s %8s %16s %16s\n", "rep", "cpuhp ms", "pthread ms", "ratio",
	       "first 10% ms", "last 10% ms");
	for (unsigned r = 0; r < reps; r++) {
		uint64_t t0 = now_ns(), t_first = 0, t_last0 = 0, t1, t2;

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
		for (unsigned i = 0; i < n; i++) {
			rws[i] = malloc(sizeof(*rws[i]));
			if (!rws[i] || pthread_rwlock_init(rws[i], NULL)) {
				fprintf(stderr, "bench-create: pthread_rwlock_init failed at %u\n",
				        i);
				return 1;
			}
		}
		t2 = now_ns();
		t_cpuhp[r] = (double)(t1 - t0) / 1e6;
		t_pthread[r] = (double)(t2 - t1) / 1e6;
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
	printf("ratio: cpuhp_rwsem_new / malloc+pthread_rwlock_init in the same round or "
	       "repetition\n");
	printf("cold   %7.2f %14.2f %8.2f   resident B/lock: cpuhp_rwsem %.0f, pthread_rwlock %.0f"
	       "   (medians of the children's rounds)\n",
	       median(c_cpuhp, rounds), median(c_pthread, rounds), median(c_ratio, rounds),
	       median(rss_cpuhp, rounds), median(rss_pthread, rounds));
	printf("heap   %7.2f %14.2f %8.2f %16.2f %16.2f   (repetition 0: the heap grows)\n",
	       t_cpuhp[0], t_pthread[0], ratio[0], first[0], last[0]);
	if (reps > 1)
		printf("warm   %7.2f %14.2f %8.2f %16.2f %16.2f   (medians of repetitions 1-%u)\n",
		       median(t_cpuhp + 1, reps - 1), median(t_pthread + 1, reps - 1),
		       median(ratio + 1, reps - 1), median(first + 1, reps - 1),
		       median(last + 1, reps - 1), reps - 1);
	free(sems);
	free(rws);
	return 0;
}
