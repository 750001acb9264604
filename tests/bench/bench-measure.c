/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The experiments: read-path cost at 1 and 2 threads, writer latency, and
 * reader throughput while writers run.  Every lock is used only from fresh
 * threads, so the main thread never registers with anything.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench-driver.h"

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * CPU time of the calling thread: on a shared machine, time spent
 * descheduled for someone else's process is not the lock's cost.
 */
static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void pin_self(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	BENCH_CHECK(-pthread_setaffinity_np(pthread_self(), sizeof(set), &set));
}

static void start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
	BENCH_CHECK(-pthread_create(t, NULL, fn, arg));
}

/* ------------------------------------------------------------ read path */

struct rp_arg {
	const struct bench_lock_ops *ops;
	void *lock;
	uint64_t n;
	int cpu;
	pthread_barrier_t *start;
	double t0, t1;     /* wall clock */
	double cpu0, cpu1; /* this thread's CPU time */
};

static void *rp_thread(void *p)
{
	struct rp_arg *a = p;

	pin_self(a->cpu);
	if (a->ops->thread_init)
		a->ops->thread_init(a->lock);
	/* Warm up: lazy registration, PLT binding, caches. */
	a->ops->read_loop(a->lock, a->n / 16 + 1);
	pthread_barrier_wait(a->start);
	a->t0 = now_s();
	a->cpu0 = thread_cpu_s();
	a->ops->read_loop(a->lock, a->n);
	a->cpu1 = thread_cpu_s();
	a->t1 = now_s();
	if (a->ops->thread_fini)
		a->ops->thread_fini(a->lock);
	return NULL;
}

/* Run @nthreads read loops of @n pairs together; fills a[i].t0/t1. */
static void run_readers(const struct bench_lock_ops *ops, void *lock, uint64_t n, unsigned nthreads,
                        const int *cpus, struct rp_arg *a)
{
	pthread_barrier_t start;
	pthread_t t[2];

	pthread_barrier_init(&start, NULL, nthreads);
	for (unsigned i = 0; i < nthreads; i++) {
		a[i] = (struct rp_arg){
		    .ops = ops, .lock = lock, .n = n, .cpu = cpus[i], .start = &start};
		start_thread(&t[i], rp_thread, &a[i]);
	}
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
}

uint64_t calibrate_read(const struct bench_lock_ops *ops, void *lock, const struct config *cfg)
{
	uint64_t n = 1024;
	struct rp_arg a;

	for (;;) {
		double t;

		run_readers(ops, lock, n, 1, &cfg->cpu_a, &a);
		t = a.cpu1 - a.cpu0;
		if (t >= cfg->read_sample_s / 4 || n >= (1ull << 40))
			return (uint64_t)((double)n * cfg->read_sample_s / (t > 0 ? t : 1e-9)) + 1;
		n *= 4;
	}
}

void measure_read_path(unsigned d, const struct bench_lock_ops *ops, void *lock, uint64_t n,
                       unsigned rep, const struct config *cfg)
{
	int one[1] = {cfg->cpu_a}, two[2] = {cfg->cpu_a, cfg->cpu_b},
	    same[2] = {cfg->cpu_a, cfg->cpu_a};
	struct rp_arg a[2];

	run_readers(ops, lock, n, 1, one, a);
	stats_add(d, M_READ_1T, rep, (a[0].cpu1 - a[0].cpu0) * 1e9 / (double)n);

	if (cfg->cpu_b >= 0) {
		run_readers(ops, lock, n, 2, two, a);
		stats_add(d, M_READ_2T, rep,
		          ((a[0].cpu1 - a[0].cpu0) + (a[1].cpu1 - a[1].cpu0)) / 2 * 1e9 /
		              (double)n);
	}

	/*
	 * Oversubscribed: wall time over all pairs, so that preemption inside
	 * a lock (the other thread then waits out a time slice) counts.
	 * Half the pairs each, so the sample takes as long as the others.
	 */
	run_readers(ops, lock, n / 2 + 1, 2, same, a);
	{
		double t0 = a[0].t0 < a[1].t0 ? a[0].t0 : a[1].t0;
		double t1 = a[0].t1 > a[1].t1 ? a[0].t1 : a[1].t1;

		stats_add(d, M_READ_2T1C, rep, (t1 - t0) * 1e9 / (double)(2 * (n / 2 + 1)));
	}
}

/* ------------------------------------------------- writers and their readers */

#define CREW       2
#define CREW_CHUNK 64

/*
 * Up to two reader threads, either looping or registered and idle (parked),
 * optionally pinned.
 */
struct crew {
	const struct bench_lock_ops *ops;
	void *lock;
	bool park;
	unsigned n;
	int cpu[CREW]; /* -1: not pinned */
	struct {
		_Atomic uint64_t pairs; /* written by its reader only */
	} __attribute__((aligned(BENCH_CACHELINE))) progress[CREW];
	_Atomic int stop;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* parked readers wait here for ->stop */
	pthread_barrier_t ready;
	pthread_t tid[CREW];
	unsigned next_index;
};

static void *crew_thread(void *p)
{
	struct crew *c = p;
	unsigned me;

	pthread_mutex_lock(&c->mu);
	me = c->next_index++;
	pthread_mutex_unlock(&c->mu);
	pin_self(c->cpu[me]);
	if (c->ops->thread_init)
		c->ops->thread_init(c->lock);
	c->ops->read_loop(c->lock, 256);
	pthread_barrier_wait(&c->ready);
	if (c->park) {
		pthread_mutex_lock(&c->mu);
		while (!atomic_load(&c->stop))
			pthread_cond_wait(&c->cv, &c->mu);
		pthread_mutex_unlock(&c->mu);
	} else {
		uint64_t done = 0;

		while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
			c->ops->read_loop(c->lock, CREW_CHUNK);
			done += CREW_CHUNK;
			atomic_store_explicit(&c->progress[me].pairs, done, memory_order_relaxed);
		}
	}
	if (c->ops->thread_fini)
		c->ops->thread_fini(c->lock);
	return NULL;
}

static void crew_start(struct crew *c, const struct bench_lock_ops *ops, void *lock, bool park,
                       unsigned n, const int *cpus)
{
	memset(c, 0, sizeof(*c));
	c->ops = ops;
	c->lock = lock;
	c->park = park;
	c->n = n;
	for (unsigned i = 0; i < CREW; i++)
		c->cpu[i] = cpus ? cpus[i] : -1;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	pthread_barrier_init(&c->ready, NULL, n + 1);
	for (unsigned i = 0; i < n; i++)
		start_thread(&c->tid[i], crew_thread, c);
	pthread_barrier_wait(&c->ready);
}

static void crew_stop(struct crew *c)
{
	pthread_mutex_lock(&c->mu);
	atomic_store(&c->stop, 1);
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

static void crew_join(struct crew *c)
{
	crew_stop(c);
	for (unsigned i = 0; i < c->n; i++)
		pthread_join(c->tid[i], NULL);
	pthread_barrier_destroy(&c->ready);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
}

static uint64_t crew_pairs(struct crew *c)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < c->n; i++)
		sum += atomic_load_explicit(&c->progress[i].pairs, memory_order_relaxed);
	return sum;
}

enum wjob_kind {
	WJOB_IDLE,       /* two readers parked */
	WJOB_ONE_READER, /* one reader looping on the other CPU */
	WJOB_RUNNING,    /* two readers looping, not pinned */
};

/* A writer thread's job; the main thread watches it with a deadline. */
struct wjob {
	enum wjob_kind kind;
	int cpu; /* the writer's CPU, or -1 */
	unsigned d, rep;
	const struct bench_lock_ops *ops;
	void *lock;
	const struct config *cfg;
	struct crew *crew;
	bool starved; /* set by the watchdog */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
};

static void write_once(const struct bench_lock_ops *ops, void *lock)
{
	ops->write_lock(lock);
	ops->write_unlock(lock);
}

static double burst(const struct bench_lock_ops *ops, void *lock)
{
	double t0 = now_s();

	for (int i = 0; i < 10; i++)
		write_once(ops, lock);
	return now_s() - t0;
}

/*
 * Single writers, then 10-writer bursts, each after a quiet gap.  Several
 * bursts: with a reader looping, whether its time slice falls inside one
 * decides its length (about 30 us or a slice), so one sample per
 * repetition made the median a coin flip.
 */
static void write_samples(struct wjob *j, enum metric_id single, enum metric_id burst10)
{
	for (unsigned k = 0; k < j->cfg->idle_samples; k++) {
		double t0;

		sleep_ms(j->cfg->idle_gap_ms);
		t0 = now_s();
		write_once(j->ops, j->lock);
		stats_add(j->d, single, j->rep, (now_s() - t0) * 1e6);
	}
	for (unsigned k = 0; k < j->cfg->idle_samples; k++) {
		sleep_ms(j->cfg->idle_gap_ms);
		stats_add(j->d, burst10, j->rep, burst(j->ops, j->lock) * 1e6);
	}
}

/* Readers parked: the writer alone, from idle. */
static void wjob_idle(struct wjob *j)
{
	write_samples(j, M_WRITE_IDLE, M_BURST10);
}

/*
 * One reader looping on the other CPU: what grace periods cost when a
 * reader is busy but the writer has a CPU of its own (no scheduling delay).
 */
static void wjob_one_reader(struct wjob *j)
{
	write_samples(j, M_WRITE_1R, M_BURST10_1R);
}

/* Readers running: quiet throughput, a burst, then periodic writers. */
static void wjob_running(struct wjob *j)
{
	static const enum metric_id per_metric[3] = {M_TPUT_1MS, M_TPUT_10MS, M_TPUT_100MS};
	static const unsigned period_ms[3] = {1, 10, 100};
	const struct config *cfg = j->cfg;
	uint64_t p0, p1;
	double t0, t;

	sleep_ms(cfg->idle_gap_ms);
	p0 = crew_pairs(j->crew);
	t0 = now_s();
	sleep_ms(cfg->tput_window_ms[0]);
	p1 = crew_pairs(j->crew);
	stats_add(j->d, M_TPUT_NONE, j->rep, (double)(p1 - p0) / (now_s() - t0) / 1e6);

	/* Still idle: no writer for tput_window_ms >= idle_gap_ms; later bursts as above. */
	for (unsigned k = 0; k < cfg->idle_samples; k++) {
		if (k)
			sleep_ms(cfg->idle_gap_ms);
		p0 = crew_pairs(j->crew);
		t = burst(j->ops, j->lock);
		p1 = crew_pairs(j->crew);
		stats_add(j->d, M_BURST10_R, j->rep, t * 1e6);
		stats_add(j->d, M_TPUT_BURST, j->rep, (double)(p1 - p0) / t / 1e6);
	}

	for (int i = 0; i < 3; i++) {
		struct timespec next;
		double end;

		sleep_ms(cfg->idle_gap_ms);
		p0 = crew_pairs(j->crew);
		t0 = now_s();
		end = t0 + cfg->tput_window_ms[i + 1] * 1e-3;
		clock_gettime(CLOCK_MONOTONIC, &next);
		for (;;) {
			next.tv_nsec += (long)period_ms[i] * 1000000;
			while (next.tv_nsec >= 1000000000) {
				next.tv_nsec -= 1000000000;
				next.tv_sec++;
			}
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) ==
			       EINTR)
				;
			if (now_s() >= end)
				break;
			write_once(j->ops, j->lock);
		}
		p1 = crew_pairs(j->crew);
		stats_add(j->d, per_metric[i], j->rep, (double)(p1 - p0) / (now_s() - t0) / 1e6);
	}
}

static void *wjob_thread(void *p)
{
	struct wjob *j = p;

	pin_self(j->cpu);
	if (j->ops->thread_init)
		j->ops->thread_init(j->lock);
	/* A hotplug writer is a long-lived thread: registration is not its cost. */
	write_once(j->ops, j->lock);
	if (j->kind == WJOB_IDLE)
		wjob_idle(j);
	else if (j->kind == WJOB_ONE_READER)
		wjob_one_reader(j);
	else
		wjob_running(j);
	if (j->ops->thread_fini)
		j->ops->thread_fini(j->lock);
	pthread_mutex_lock(&j->mu);
	j->done = true;
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

/* Run one writer job against a crew; stop the readers if it overruns. */
static bool run_wjob(struct wjob *j, double budget_s)
{
	struct timespec deadline;
	pthread_t t;
	bool starved = false;

	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += (time_t)budget_s + 1;
	start_thread(&t, wjob_thread, j);
	pthread_mutex_lock(&j->mu);
	while (!j->done) {
		if (pthread_cond_timedwait(&j->cv, &j->mu, &deadline) == ETIMEDOUT) {
			/* Readers starve the writer: let it finish without them. */
			starved = true;
			crew_stop(j->crew);
			while (!j->done)
				pthread_cond_wait(&j->cv, &j->mu);
		}
	}
	pthread_mutex_unlock(&j->mu);
	pthread_join(t, NULL);
	pthread_cond_destroy(&j->cv);
	pthread_mutex_destroy(&j->mu);
	return starved;
}

void measure_writers(unsigned d, const struct bench_lock_ops *ops, void *lock, unsigned rep,
                     const struct config *cfg)
{
	struct crew *c = aligned_alloc(BENCH_CACHELINE, sizeof(*c));
	struct wjob j = {.kind = WJOB_IDLE,
	                 .cpu = -1,
	                 .d = d,
	                 .rep = rep,
	                 .ops = ops,
	                 .lock = lock,
	                 .cfg = cfg,
	                 .crew = c};
	int other[CREW] = {cfg->cpu_b, -1};
	double budget = cfg->watchdog_s;

	if (!c)
		BENCH_CHECK(-ENOMEM);
	crew_start(c, ops, lock, true, CREW, NULL);
	run_wjob(&j, budget);
	crew_join(c);

	if (cfg->cpu_b >= 0) {
		crew_start(c, ops, lock, false, 1, other);
		j = (struct wjob){.kind = WJOB_ONE_READER,
		                  .cpu = cfg->cpu_a,
		                  .d = d,
		                  .rep = rep,
		                  .ops = ops,
		                  .lock = lock,
		                  .cfg = cfg,
		                  .crew = c};
		if (run_wjob(&j, budget)) {
			stats_mark_starved(d, M_WRITE_1R);
			stats_mark_starved(d, M_BURST10_1R);
		}
		crew_join(c);
	}

	for (int i = 0; i < 4; i++)
		budget += (cfg->idle_gap_ms + cfg->tput_window_ms[i]) * 1e-3;
	budget += cfg->idle_samples * cfg->idle_gap_ms * 1e-3;
	crew_start(c, ops, lock, false, CREW, NULL);
	j = (struct wjob){.kind = WJOB_RUNNING,
	                  .cpu = -1,
	                  .d = d,
	                  .rep = rep,
	                  .ops = ops,
	                  .lock = lock,
	                  .cfg = cfg,
	                  .crew = c};
	if (run_wjob(&j, budget)) {
		for (int m = M_BURST10_R; m <= M_TPUT_100MS; m++)
			stats_mark_starved(d, m);
	}
	crew_join(c);
	free(c);
}
