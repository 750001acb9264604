/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-mixed: one reader and one writer, the writer busy-waiting between
 * its writes, the shape of liburcu's rwlock benchmark (tests/benchmark/
 * test_rwlock.c: 1 reader, 1 writer, a writer delay in loops).  Written
 * here from that description, not copied.
 *
 * The reader loops lock, read the protected word (it must read 8), unlock,
 * count; the writer loops lock, store 0 then 8, unlock, count, then waits
 * its delay: 20,000 pause loops (the harness's setting, about 0.4 ms here)
 * or a fixed time (100 us, 1 ms, 10 ms), spinning, as the harness's
 * writer does.  Reader on one CPU, writer on the other.
 *
 * pthread_rwlock and cpuhp_rwsem (called through libcpuhp.so, through
 * <cpuhp/rwsem-inline.h>, and through a reader handle) run in the same
 * process, interleaved within each repetition, each sample on a fresh
 * lock.  Printed: medians over repetitions of reads/s and writes/s, and
 * the median over repetitions of each cpuhp variant's ratio to
 * pthread_rwlock in the same repetition.  Nothing is asserted about speed;
 * a reader that reads anything but 8 fails the run (exit 1).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cpuhp/rwsem-inline.h>

#include "bench-util.h"

enum variant { V_RWLOCK, V_SO, V_INLINE, V_HANDLE, V_NR };

static const char *const variant_label[V_NR] = {
    "pthread_rwlock",
    "cpuhp_rwsem via libcpuhp.so",
    "cpuhp_rwsem, rwsem-inline.h",
    "cpuhp_rwsem, reader handle",
};

/* The writer's delay after each write: pause loops, or nanoseconds spun. */
struct scenario {
	const char *label;
	const char *name; /* for --scenarios */
	unsigned long loops;
	uint64_t ns;
	bool no_writer;
};

static const struct scenario scenarios[] = {
    {"no writer", "none", 0, 0, true},     {"20,000 loops", "20000", 20000, 0, false},
    {"100 us", "100us", 0, 100000, false}, {"1 ms", "1ms", 0, 1000000, false},
    {"10 ms", "10ms", 0, 10000000, false},
};
#define NR_SCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))
/* The scenarios run (--scenarios): all by default. */
static bool scenario_on[NR_SCENARIOS] = {true, true, true, true, true};
#define MAX_REPS 64

struct lock {
	pthread_rwlock_t rw;
	struct cpuhp_rwsem *sem;
};

/* The run of one sample; reader and writer each own their counters. */
struct run {
	enum variant v;
	const struct scenario *sc;
	struct lock *lk;
	int cpu_reader, cpu_writer;
	_Atomic int go, stop;
	_Atomic int ready;
	_Atomic int data; /* the protected word: 8 outside the writer's section */
	uint64_t reads, bad_reads;
	uint64_t writes;
	double write_ns;        /* time inside write lock+unlock, summed */
	double writer_wait;     /* fraction of its run the writer was runnable, not running */
	double writes_off_wait; /* writes per second of its run outside that wait */
	double t0, t1;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void start_line(struct run *r)
{
	atomic_fetch_add(&r->ready, 1);
	while (!atomic_load_explicit(&r->go, memory_order_acquire))
		cpu_relax();
}

/*
 * One reader loop per variant, the lock calls written as a user writes
 * them (a direct call, the inline functions, a handle).
 */
#define READER_LOOP(lockstmt, unlockstmt)                                                          \
	do {                                                                                       \
		uint64_t reads = 0, bad = 0;                                                       \
		while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {                    \
			lockstmt;                                                                  \
			bad += atomic_load_explicit(&r->data, memory_order_relaxed) != 8;          \
			unlockstmt;                                                                \
			reads++;                                                                   \
		}                                                                                  \
		r->reads = reads;                                                                  \
		r->bad_reads = bad;                                                                \
	} while (0)

static void *reader_main(void *p)
{
	struct run *r = p;
	struct lock *lk = r->lk;
	struct cpuhp_rwsem_reader h;

	pin(r->cpu_reader);
	/* Warm up: the thread's slot, lazy binding. */
	for (int i = 0; i < 1000; i++) {
		if (r->v == V_RWLOCK) {
			pthread_rwlock_rdlock(&lk->rw);
			pthread_rwlock_unlock(&lk->rw);
		} else {
			cpuhp_rwsem_read_lock(lk->sem);
			cpuhp_rwsem_read_unlock(lk->sem);
		}
	}
	h = r->v == V_RWLOCK ? (struct cpuhp_rwsem_reader){0} : cpuhp_rwsem_reader_get(lk->sem);
	start_line(r);
	switch (r->v) {
	case V_RWLOCK:
		READER_LOOP(pthread_rwlock_rdlock(&lk->rw), pthread_rwlock_unlock(&lk->rw));
		break;
	case V_SO:
		READER_LOOP(cpuhp_rwsem_read_lock(lk->sem), cpuhp_rwsem_read_unlock(lk->sem));
		break;
	case V_INLINE:
		READER_LOOP(cpuhp_rwsem_read_lock_inline(lk->sem),
		            cpuhp_rwsem_read_unlock_inline(lk->sem));
		break;
	case V_HANDLE:
		READER_LOOP(cpuhp_rwsem_reader_lock(h), cpuhp_rwsem_reader_unlock(h));
		break;
	default:
		break;
	}
	return NULL;
}

static void write_once(struct run *r)
{
	if (r->v == V_RWLOCK)
		pthread_rwlock_wrlock(&r->lk->rw);
	else
		cpuhp_rwsem_write_lock(r->lk->sem);
	atomic_store_explicit(&r->data, 0, memory_order_relaxed);
	atomic_store_explicit(&r->data, 8, memory_order_relaxed);
	if (r->v == V_RWLOCK)
		pthread_rwlock_unlock(&r->lk->rw);
	else
		cpuhp_rwsem_write_unlock(r->lk->sem);
}

static void *writer_main(void *p)
{
	struct run *r = p;
	uint64_t writes = 0;
	double inside = 0, wait0;
	uint64_t start;

	pin(r->cpu_writer);
	/* A long-lived writer thread: its registration is not the cost measured. */
	write_once(r);
	start_line(r);
	wait0 = bench_runqueue_wait_ns();
	start = now_ns();
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		uint64_t t0 = now_ns(), t1;

		write_once(r);
		t1 = now_ns();
		inside += (double)(t1 - t0);
		writes++;
		if (r->sc->loops) {
			for (unsigned long i = 0; i < r->sc->loops; i++)
				cpu_relax();
		} else {
			while (now_ns() - t1 < r->sc->ns &&
			       !atomic_load_explicit(&r->stop, memory_order_relaxed))
				cpu_relax();
		}
	}
	r->writes = writes;
	r->write_ns = inside;
	{
		double run = (double)(now_ns() - start), wait = bench_runqueue_wait_ns() - wait0;

		r->writer_wait = wait / run;
		r->writes_off_wait = run > wait ? (double)writes / ((run - wait) * 1e-9) : NAN;
	}
	return NULL;
}

static void sleep_s(double s)
{
	struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (time_t)s) * 1e9)};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* One sample on a fresh lock; false if a reader saw a write in progress. */
static bool run_sample(struct run *r, double seconds)
{
	struct lock lk;
	pthread_t rt, wt;
	unsigned want = r->sc->no_writer ? 1 : 2;
	int err;

	memset(&lk, 0, sizeof(lk));
	if (r->v == V_RWLOCK)
		err = pthread_rwlock_init(&lk.rw, NULL);
	else
		err = -cpuhp_rwsem_new(&lk.sem);
	if (err) {
		fprintf(stderr, "bench-mixed: creating the lock: %s\n", strerror(err));
		exit(2);
	}
	r->lk = &lk;
	atomic_store(&r->data, 8);
	atomic_store(&r->go, 0);
	atomic_store(&r->stop, 0);
	atomic_store(&r->ready, 0);
	r->reads = r->bad_reads = r->writes = 0;
	r->write_ns = 0;
	if (pthread_create(&rt, NULL, reader_main, r) ||
	    (!r->sc->no_writer && pthread_create(&wt, NULL, writer_main, r))) {
		fprintf(stderr, "bench-mixed: cannot start threads\n");
		exit(2);
	}
	while ((unsigned)atomic_load(&r->ready) < want)
		sched_yield();
	r->t0 = now_s();
	atomic_store_explicit(&r->go, 1, memory_order_release);
	sleep_s(seconds);
	atomic_store(&r->stop, 1);
	r->t1 = now_s();
	pthread_join(rt, NULL);
	if (!r->sc->no_writer)
		pthread_join(wt, NULL);
	if (r->v == V_RWLOCK)
		pthread_rwlock_destroy(&lk.rw);
	else
		cpuhp_rwsem_free(lk.sem);
	return r->bad_reads == 0;
}

static double median(double *v, unsigned n)
{
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Per scenario, variant and repetition. */
static double reads_per_s[NR_SCENARIOS][V_NR][MAX_REPS];
static double writes_per_s[NR_SCENARIOS][V_NR][MAX_REPS];
static double us_per_write[NR_SCENARIOS][V_NR][MAX_REPS];
static double writer_waited[NR_SCENARIOS][V_NR][MAX_REPS]; /* fraction of the sample */
static double writes_off_wait[NR_SCENARIOS][V_NR][MAX_REPS];

static double med(double (*a)[V_NR][MAX_REPS], unsigned s, unsigned v, unsigned reps)
{
	double tmp[MAX_REPS];

	memcpy(tmp, a[s][v], sizeof(double) * reps);
	return median(tmp, reps);
}

/* Median over repetitions of a[s][v] / a[s][ref], each ratio within one repetition. */
static double ratio(double (*a)[V_NR][MAX_REPS], unsigned s, unsigned v, unsigned ref,
                    unsigned reps)
{
	double tmp[MAX_REPS];

	for (unsigned i = 0; i < reps; i++)
		tmp[i] = a[s][v][i] / a[s][ref][i];
	return median(tmp, reps);
}

/* Median over repetitions of @v's reads with writer delay @s over its reads with none. */
static double kept(unsigned s, unsigned v, unsigned reps)
{
	double tmp[MAX_REPS];

	for (unsigned i = 0; i < reps; i++)
		tmp[i] = reads_per_s[s][v][i] / reads_per_s[0][v][i];
	return median(tmp, reps);
}

/* A results table's title and header: one column per variant. */
static void table_head(const char *title)
{
	printf("\n%s\n\n| writer delay |", title);
	for (unsigned v = 0; v < V_NR; v++)
		printf(" %s |", variant_label[v]);
	printf("\n|---|");
	for (unsigned v = 0; v < V_NR; v++)
		printf("---:|");
	printf("\n");
}

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: bench-mixed [OPTION]...\n"
	    "One reader and one writer (the writer spinning between writes, as in liburcu's\n"
	    "rwlock benchmark): cpuhp_rwsem's reads and writes against pthread_rwlock's in\n"
	    "one run.\n"
	    "\n"
	    "  --quick          a short run for CI smoke tests (figures are rough)\n"
	    "  --reps N         repetitions, medians are printed (default 5, max %d)\n"
	    "  --seconds S      length of one sample (default 0.3)\n"
	    "  --scenarios LIST the writer delays to run, comma-separated, of: none, 20000,\n"
	    "                   100us, 1ms, 10ms (default: all)\n"
	    "  --help           this text\n"
	    "\n"
	    "Exit status: 0; 1 if a reader saw the writer's section half done; 2 on bad usage.\n",
	    MAX_REPS);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"quick", no_argument, NULL, 'q'},         {"reps", required_argument, NULL, 'r'},
	    {"seconds", required_argument, NULL, 's'}, {"scenarios", required_argument, NULL, 'S'},
	    {"help", no_argument, NULL, 'h'},          {0},
	};
	unsigned reps = 5;
	double seconds = 0.3;
	bool quick = false, ok = true, progress = isatty(2);
	cpu_set_t set;
	int cpus[2] = {-1, -1}, found = 0, opt;
	struct run *r = calloc(1, sizeof(*r));

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'q':
			quick = true;
			break;
		case 'r':
			if (bench_opt_count("bench-mixed", "reps", optarg, 1, MAX_REPS, &reps))
				return 2;
			break;
		case 's':
			if (bench_opt_seconds("bench-mixed", optarg, &seconds))
				return 2;
			break;
		case 'S':
			if (bench_opt_names("bench-mixed", "scenario", optarg, &scenarios[0].name,
			                    sizeof(scenarios[0]), NR_SCENARIOS, scenario_on))
				return 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bench-mixed: unexpected argument '%s' (see --help)\n",
		        argv[optind]);
		return 2;
	}
	if (!r)
		return 2;
	if (quick) {
		reps = 1;
		seconds = 0.03;
	}
	if (!sched_getaffinity(0, sizeof(set), &set))
		for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
			if (CPU_ISSET(c, &set))
				cpus[found++] = c;
	r->cpu_reader = cpus[0];
	r->cpu_writer = cpus[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("bench-mixed: %u repetitions of %.2f s per sample%s; reader on CPU %d, writer on "
	       "CPU %d\n",
	       reps, seconds, quick ? " (quick: rough figures)" : "", cpus[0], cpus[1]);

	for (unsigned rep = 0; rep < reps; rep++) {
		for (unsigned s = 0; s < NR_SCENARIOS; s++) {
			if (!scenario_on[s])
				continue;
			for (unsigned k = 0; k < V_NR; k++) {
				/* Rotate the order, so drifts hit every variant alike. */
				enum variant v = (enum variant)((k + rep) % V_NR);

				if (progress)
					fprintf(stderr, "\rrepetition %u/%u: %-14s %-30s", rep + 1,
					        reps, scenarios[s].label, variant_label[v]);
				r->v = v;
				r->sc = &scenarios[s];
				if (!run_sample(r, seconds)) {
					fprintf(stderr,
					        "\nbench-mixed: %s: a reader read %llu value(s) "
					        "other than 8: the lock let it in during a write\n",
					        variant_label[v], (unsigned long long)r->bad_reads);
					ok = false;
				}
				reads_per_s[s][v][rep] = (double)r->reads / (r->t1 - r->t0);
				writes_per_s[s][v][rep] = (double)r->writes / (r->t1 - r->t0);
				us_per_write[s][v][rep] =
				    r->writes ? r->write_ns / (double)r->writes / 1e3 : NAN;
				writer_waited[s][v][rep] = r->writer_wait;
				writes_off_wait[s][v][rep] = r->writes_off_wait;
			}
		}
	}
	if (progress)
		fprintf(stderr, "\r%70s\r", "");

	table_head("Reads, Mreads/s of the one reader (median; in parentheses the median ratio "
	           "to pthread_rwlock in the same repetition)");
	for (unsigned s = 0; s < NR_SCENARIOS; s++) {
		if (!scenario_on[s])
			continue;
		printf("| %s |", scenarios[s].label);
		for (unsigned v = 0; v < V_NR; v++) {
			printf(" %.1f", med(reads_per_s, s, v, reps) / 1e6);
			if (v != V_RWLOCK)
				printf(" (%.2f×)", ratio(reads_per_s, s, v, V_RWLOCK, reps));
			printf(" |");
		}
		printf("\n");
	}

	table_head("Writes, k/s of the one writer and µs per write lock+unlock (median; ratio "
	           "of writes to pthread_rwlock's)");
	for (unsigned s = 0; s < NR_SCENARIOS; s++) {
		if (scenarios[s].no_writer || !scenario_on[s])
			continue;
		printf("| %s |", scenarios[s].label);
		for (unsigned v = 0; v < V_NR; v++) {
			printf(" %.2f", med(writes_per_s, s, v, reps) / 1e3);
			if (v != V_RWLOCK)
				printf(" (%.2f×)", ratio(writes_per_s, s, v, V_RWLOCK, reps));
			printf(", %.1f µs |", med(us_per_write, s, v, reps));
		}
		printf("\n");
	}

	/*
	 * A writer that spins between writes competes for its CPU with the
	 * rest of the machine: where it waits for one, writes/s measure the
	 * scheduler (a writer that sleeps more gets woken sooner), not the lock.
	 */
	table_head("The writer's wait for a CPU (runnable, not running), % of the sample "
	           "(median; above a few %, the machine is busy and the write figures measure "
	           "its scheduler)");
	for (unsigned s = 0; s < NR_SCENARIOS; s++) {
		if (scenarios[s].no_writer || !scenario_on[s])
			continue;
		printf("| %s |", scenarios[s].label);
		for (unsigned v = 0; v < V_NR; v++)
			printf(" %.1f |", 100 * med(writer_waited, s, v, reps));
		printf("\n");
	}

	/*
	 * The writes/s the writer would have made never waiting for a CPU:
	 * writes over its time minus that wait.  An estimate (a writer kept
	 * waiting also finds the reader elsewhere), for busy machines only.
	 */
	table_head("Writes per second of the writer's time not spent waiting for a CPU, k/s "
	           "(median; ratio to pthread_rwlock's in the same repetition)");
	for (unsigned s = 0; s < NR_SCENARIOS; s++) {
		if (scenarios[s].no_writer || !scenario_on[s])
			continue;
		printf("| %s |", scenarios[s].label);
		for (unsigned v = 0; v < V_NR; v++) {
			printf(" %.2f", med(writes_off_wait, s, v, reps) / 1e3);
			if (v != V_RWLOCK)
				printf(" (%.2f×)", ratio(writes_off_wait, s, v, V_RWLOCK, reps));
			printf(" |");
		}
		printf("\n");
	}

	if (!scenario_on[1])
		goto out;
	printf("\nTarget: with the 20,000-loop writer, cpuhp_rwsem reads >= 3x "
	       "pthread_rwlock's:\n");
	for (unsigned v = V_SO; v < V_NR; v++) {
		double x = ratio(reads_per_s, 1, v, V_RWLOCK, reps);

		printf("- %s: %s (%.2f)", variant_label[v], x >= 3 ? "MET" : "MISSED", x);
		/*
		 * No writer is the ceiling, and it moves with the machine
		 * (the fast path's instructions against pthread's atomics):
		 * what the lock keeps of it is its own doing.
		 */
		if (scenario_on[0])
			printf("; %.0f%% of its reads with no writer, where it did %.2fx",
			       100 * kept(1, v, reps), ratio(reads_per_s, 0, v, V_RWLOCK, reps));
		printf("\n");
	}
	printf("  (the writer's period there: %.0f µs)\n", 1e6 / med(writes_per_s, 1, V_SO, reps));
out:
	free(r);
	return ok ? 0 : 1;
}
