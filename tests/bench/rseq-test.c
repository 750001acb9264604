/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The rseq per-CPU counter loses no update while threads migrate and are
 * preempted in the middle of their restartable sequences.
 *
 * Two adder threads each add +3 then -1 then +3 ... (net +2 per pair of
 * iterations) while moving themselves between CPUs and while a third thread
 * keeps moving both of them asynchronously, so that migrations and
 * preemptions land inside the sequence.  The sum of all slots must be exact.
 * With --expect-fallback (run with GLIBC_TUNABLES=glibc.pthread.rseq=0) it
 * checks that glibc did not register rseq and that the atomic fallback is
 * exact.  --mutant runs the same load/add/store without rseq protection, to
 * show that this test can see lost updates (expect it to fail, not always).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rseq-percpu.h"

#define ADDS_PER_THREAD 4000000
#define FLIP_EVERY      4096

static struct pcpu_counter counter;
static bool mutant;
static int cpus[CPU_SETSIZE];
static int ncpus;
static _Atomic int adders_left = 2;
static _Atomic pid_t tids[2];
static _Atomic unsigned long total_aborts;
static pthread_barrier_t start;

void bench_check(int err, const char *what, const char *file, int line)
{
	if (!err)
		return;
	fprintf(stderr, "rseq-test: %s:%d: %s: %s\n", file, line, what, strerror(-err));
	abort();
}

static void move_to(pid_t tid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	/* Fails only if the CPU went offline meanwhile: then just stay. */
	(void)sched_setaffinity(tid, sizeof(set), &set);
}

static void *adder(void *arg)
{
	int me = (int)(long)arg;

	atomic_store(&tids[me], (pid_t)syscall(SYS_gettid));
	pthread_barrier_wait(&start);
	for (long i = 0; i < ADDS_PER_THREAD; i++) {
		/* +3 then -1: decrements on other CPUs than the increments. */
		long v = i % 2 ? -1 : 3;

		if (mutant)
			pcpu_counter_add_unprotected(&counter, v);
		else
			pcpu_counter_add(&counter, v);
		if (i % FLIP_EVERY == 0)
			move_to(0, cpus[(i / FLIP_EVERY + (unsigned)me) % (unsigned)ncpus]);
	}
#ifdef PCPU_COUNT_ABORTS
	atomic_fetch_add(&total_aborts, pcpu_aborts);
#endif
	atomic_fetch_sub(&adders_left, 1);
	return NULL;
}

static void *migrator(void *arg)
{
	unsigned k = 0;

	(void)arg;
	pthread_barrier_wait(&start);
	while (atomic_load(&adders_left)) {
		for (int i = 0; i < 2; i++)
			move_to(atomic_load(&tids[i]), cpus[(k + (unsigned)i) % (unsigned)ncpus]);
		k++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	bool expect_fallback = false;
	long want = 0, got;
	cpu_set_t allowed;
	pthread_t t[3];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--expect-fallback")) {
			expect_fallback = true;
		} else if (!strcmp(argv[i], "--mutant")) {
			mutant = true;
		} else if (!strcmp(argv[i], "--help")) {
			printf("Usage: rseq-test [--expect-fallback] [--mutant]\n"
			       "Check that the rseq per-CPU counter counts exactly while its\n"
			       "threads migrate.  --expect-fallback: require that rseq is not\n"
			       "registered (run with GLIBC_TUNABLES=glibc.pthread.rseq=0).\n"
			       "--mutant: unprotected adds, to see the test catch lost updates.\n");
			return 0;
		} else {
			fprintf(stderr, "rseq-test: unknown argument '%s' (see --help)\n", argv[i]);
			return 2;
		}
	}
	BENCH_CHECK(pcpu_counter_init(&counter));
	if (expect_fallback && pcpu_rseq_enabled()) {
		fprintf(stderr, "rseq-test: glibc registered rseq although the fallback was "
		                "expected; run with GLIBC_TUNABLES=glibc.pthread.rseq=0\n");
		return 1;
	}
	BENCH_CHECK(-sched_getaffinity(0, sizeof(allowed), &allowed) ? -1 : 0);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[ncpus++] = c;
	printf("rseq-test: %s path, %u slots, %d allowed CPU(s)%s\n",
	       mutant                ? "UNPROTECTED (mutant)"
	       : pcpu_rseq_enabled() ? "rseq"
	                             : "atomic fallback",
	       counter.nslots, ncpus, ncpus < 2 ? ": no migrations, preemption only" : "");

	pthread_barrier_init(&start, NULL, 3);
	for (long i = 0; i < 2; i++)
		BENCH_CHECK(-pthread_create(&t[i], NULL, adder, (void *)i));
	BENCH_CHECK(-pthread_create(&t[2], NULL, migrator, NULL));
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);

	/* Each adder nets +2 per two adds. */
	want = 2L * ADDS_PER_THREAD;
	got = pcpu_counter_sum(&counter);
	printf("rseq-test: sum %ld, expected %ld; %lu restarts seen\n", got, want,
	       atomic_load(&total_aborts));
	pcpu_counter_fini(&counter);
	if (got != want) {
		fprintf(stderr, "rseq-test: FAILED: %ld updates lost\n", want - got);
		return 1;
	}
	return 0;
}
