/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-peers: cpuhp_rwsem against the fastest reader/writer locks there
 * are, in one process: Concurrency Kit's big-reader lock (ck_brlock), its
 * reader/writer spinlock (ck_rwlock) and its phase-fair lock (ck_pflock),
 * from Debian's libck-dev, glibc's pthread_rwlock, and liburcu's read side
 * (urcu-memb, inline; its "writer" waits a grace period).  Written here for
 * this project: CK's own benchmark programs are not used, only the shape
 * of an outside run with them.
 *
 * Scenarios, each lock in turn within every repetition (the order rotates
 * from one repetition to the next, so that drifts of the host hit every
 * lock alike); ratios are taken within a repetition, then the median:
 *  - reads: reader threads, each pinned to a CPU, take and release the
 *    read lock in batches of READ_BATCH pairs, each batch timed between two
 *    rdtscp; one pair per batch reads the protected pair of words, which a
 *    writer changes only inside its write lock (they must be equal).  A
 *    writer thread, pinned to the last CPU, busy-waits its period between
 *    writes: none, 100 us, 1 ms, 10 ms.  Reads/s, writes/s, the median
 *    cost of a pair, and both ratios to ck_brlock.
 *  - idle writer, in a fresh child process per repetition (nothing of the
 *    library used before it): 100 writes back to back, then writes 20 ms
 *    apart with no reader, each write lock+unlock timed; p50 and p90; and
 *    for cpuhp_rwsem the system calls per idle write (see below).
 *  - write latency with 2 busy readers: two threads read without pause
 *    (one per CPU) while a third, pinned beside the second, writes every
 *    millisecond; p50 and p90 of write lock+unlock.
 *
 * System calls are counted without ptrace or strace (which slow every call
 * they watch): this program defines syscall() and timerfd_settime(), so the
 * libraries' calls come here first (ELF interposition) and are counted on
 * the way to glibc's; that counts membarrier and futex (libcpuhp and
 * liburcu make both through syscall()) and the timer's arming.  Wake-ups
 * of threads that are not the benchmark's own (libcpuhp's timer thread)
 * are their voluntary context switches, from /proc/self/task/.
 *
 * Nothing is asserted about speed.  A reader that sees the protected words
 * differ fails the run (exit 1).  Built without libck-dev, the program says
 * so and runs the other locks, with ratios against pthread_rwlock.
 */
#define _LGPL_SOURCE /* liburcu's inline read side, the fastest it has */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <urcu/urcu-memb.h>

#include <cpuhp/rwsem-inline.h>

#include "bench-util.h"

#ifdef BENCH_HAVE_CK
#include <ck_brlock.h>
#include <ck_pflock.h>
#include <ck_rwlock.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

/* ------------------------------------------------------------ counting */

enum counted { C_MEMBARRIER, C_FUTEX, C_TIMERFD_SETTIME, C_NR };
static _Atomic unsigned long counts[C_NR];

/*
 * glibc's syscall() takes six words whatever the call: so do we.  A call
 * with fewer leaves the last ones to the caller's stack frame, read and
 * ignored; AddressSanitizer would call that an underflow.
 */
__attribute__((no_sanitize("address"))) long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long (*fn)(long, ...) = __atomic_load_n(&real, __ATOMIC_RELAXED);
	long a[6];
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!fn) {
		fn = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
		if (!fn)
			abort();
		__atomic_store_n(&real, fn, __ATOMIC_RELAXED);
	}
	if (nr == SYS_membarrier)
		atomic_fetch_add_explicit(&counts[C_MEMBARRIER], 1, memory_order_relaxed);
	else if (nr == SYS_futex)
		atomic_fetch_add_explicit(&counts[C_FUTEX], 1, memory_order_relaxed);
	return fn(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

int timerfd_settime(int fd, int flags, const struct itimerspec *new, struct itimerspec *old)
{
	atomic_fetch_add_explicit(&counts[C_TIMERFD_SETTIME], 1, memory_order_relaxed);
	return (int)syscall(SYS_timerfd_settime, fd, flags, new, old);
}

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* Voluntary context switches of every thread but @self: the others' wake-ups. */
static unsigned long others_wakeups(pid_t self)
{
	DIR *d = opendir("/proc/self/task");
	unsigned long sum = 0;
	struct dirent *e;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[300], line[128];
		FILE *f;

		if (e->d_name[0] == '.' || atoi(e->d_name) == self)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "voluntary_ctxt_switches:", 24))
				sum += strtoul(line + 24, NULL, 10);
		fclose(f);
	}
	closedir(d);
	return sum;
}

/* --------------------------------------------------------------- time */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A cycle counter read after every earlier instruction finished. */
static inline uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned aux;

	return __rdtscp(&aux);
#else
	return now_ns();
#endif
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The @q quantile (0..1) of @n values, which it sorts. */
static double quantile(double *v, unsigned n, double q)
{
	unsigned i;

	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	i = (unsigned)(q * (n - 1) + 0.5);
	return v[i];
}

/* --------------------------------------------------------------- locks */

enum lock_id { L_SO, L_INLINE, L_HANDLE, L_BR, L_CKRW, L_PF, L_PTHREAD, L_URCU, L_NR };

static const char *const lock_label[L_NR] = {
    "cpuhp_rwsem via libcpuhp.so",
    "cpuhp_rwsem, rwsem-inline.h",
    "cpuhp_rwsem, reader handle",
    "ck_brlock",
    "ck_rwlock",
    "ck_pflock",
    "pthread_rwlock",
    "liburcu read side (memb)",
};

#ifdef BENCH_HAVE_CK
static const bool have_ck = true;
#define REF L_BR
#else
static const bool have_ck = false;
#define REF L_PTHREAD
#endif

static bool is_ck(enum lock_id l)
{
	return l == L_BR || l == L_CKRW || l == L_PF;
}

static bool lock_on(enum lock_id l)
{
	return have_ck || !is_ck(l);
}

/* The writer's side is the same for the three ways of reading cpuhp_rwsem. */
static bool same_writer_as_so(enum lock_id l)
{
	return l == L_INLINE || l == L_HANDLE;
}

struct peer {
	struct cpuhp_rwsem *sem;
	pthread_rwlock_t prw;
#ifdef BENCH_HAVE_CK
	ck_brlock_t br;
	ck_rwlock_t ckrw;
	ck_pflock_t pf;
#endif
	/* The protected words: equal outside a write. */
	_Alignas(64) _Atomic unsigned long a;
	_Atomic unsigned long b;
};

static void peer_init(struct peer *p)
{
	memset(p, 0, sizeof(*p));
	if (cpuhp_rwsem_new(&p->sem) || pthread_rwlock_init(&p->prw, NULL)) {
		fprintf(stderr, "bench-peers: cannot create the locks\n");
		exit(2);
	}
#ifdef BENCH_HAVE_CK
	ck_brlock_init(&p->br);
	ck_rwlock_init(&p->ckrw);
	ck_pflock_init(&p->pf);
#endif
}

static void peer_fini(struct peer *p)
{
	cpuhp_rwsem_free(p->sem);
	pthread_rwlock_destroy(&p->prw);
}

static void write_lock(struct peer *p, enum lock_id l)
{
	switch (l) {
	case L_SO:
	case L_INLINE:
	case L_HANDLE:
		cpuhp_rwsem_write_lock(p->sem);
		break;
#ifdef BENCH_HAVE_CK
	case L_BR:
		ck_brlock_write_lock(&p->br);
		break;
	case L_CKRW:
		ck_rwlock_write_lock(&p->ckrw);
		break;
	case L_PF:
		ck_pflock_write_lock(&p->pf);
		break;
#endif
	case L_PTHREAD:
		pthread_rwlock_wrlock(&p->prw);
		break;
	default:
		break;
	}
}

static void write_unlock(struct peer *p, enum lock_id l)
{
	switch (l) {
	case L_SO:
	case L_INLINE:
	case L_HANDLE:
		cpuhp_rwsem_write_unlock(p->sem);
		break;
#ifdef BENCH_HAVE_CK
	case L_BR:
		ck_brlock_write_unlock(&p->br);
		break;
	case L_CKRW:
		ck_rwlock_write_unlock(&p->ckrw);
		break;
	case L_PF:
		ck_pflock_write_unlock(&p->pf);
		break;
#endif
	case L_PTHREAD:
		pthread_rwlock_unlock(&p->prw);
		break;
	case L_URCU:
		/* RCU's writer: publish, then wait for the readers that may have seen the old. */
		urcu_memb_synchronize_rcu();
		break;
	default:
		break;
	}
}

/* One write: lock, change both words, unlock. */
static void write_once(struct peer *p, enum lock_id l)
{
	write_lock(p, l);
	atomic_store_explicit(&p->a, atomic_load_explicit(&p->a, memory_order_relaxed) + 1,
	                      memory_order_relaxed);
	atomic_store_explicit(&p->b, atomic_load_explicit(&p->b, memory_order_relaxed) + 1,
	                      memory_order_relaxed);
	write_unlock(p, l);
}

/* ----------------------------------------------------------- a sample */

#define READ_BATCH  256
#define MAX_READERS 4
/* Batches timed per reader and sample: one in BATCH_EVERY, at most this many. */
#define BATCH_SAMPLES 4096
#define BATCH_EVERY   16

struct reader {
	pthread_t tid;
	int cpu;
	uint64_t pairs, bad;
	double waited_ns;            /* runnable, not running, during the sample */
	double batch[BATCH_SAMPLES]; /* ticks per timed batch */
	unsigned nbatch;
	struct sample *sm;
};

struct sample {
	enum lock_id lock;
	struct peer *p;
	uint64_t period_ns; /* the writer's: 0 = no writer */
	unsigned nreaders;
	int writer_cpu;
	_Atomic unsigned ready;
	_Atomic bool go, stop;
	struct reader r[MAX_READERS];
	uint64_t writes;
	double writer_waited_ns;
};

static void start_line(struct sample *sm)
{
	atomic_fetch_add(&sm->ready, 1);
	while (!atomic_load_explicit(&sm->go, memory_order_acquire))
		cpu_relax();
}

static inline bool stopped(struct sample *sm)
{
	return atomic_load_explicit(&sm->stop, memory_order_relaxed);
}

/*
 * The loop of one lock, its calls written as a user writes them.  Every
 * BATCH_EVERY-th batch is timed; one pair per batch checks the words.
 */
#define READ_LOOP(lockstmt, unlockstmt, checked)                                                   \
	do {                                                                                       \
		uint64_t pairs = 0, bad = 0, n = 0;                                                \
		while (!stopped(sm)) {                                                             \
			bool timed = n++ % BATCH_EVERY == 0 && rd->nbatch < BATCH_SAMPLES;         \
			uint64_t b0 = timed ? ticks() : 0;                                         \
			for (unsigned i = 0; i < READ_BATCH; i++) {                                \
				lockstmt;                                                          \
				unlockstmt;                                                        \
			}                                                                          \
			if (timed)                                                                 \
				rd->batch[rd->nbatch++] = (double)(ticks() - b0);                  \
			lockstmt;                                                                  \
			if (checked)                                                               \
				bad += atomic_load_explicit(&p->a, memory_order_relaxed) !=        \
				       atomic_load_explicit(&p->b, memory_order_relaxed);          \
			unlockstmt;                                                                \
			pairs += READ_BATCH + 1;                                                   \
		}                                                                                  \
		rd->pairs = pairs;                                                                 \
		rd->bad = bad;                                                                     \
	} while (0)

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	struct sample *sm = rd->sm;
	struct peer *p = sm->p;
	struct cpuhp_rwsem_reader h = {0};
#ifdef BENCH_HAVE_CK
	ck_brlock_reader_t brr = CK_BRLOCK_READER_INITIALIZER;
#endif

	pin(rd->cpu);
	rd->nbatch = 0;
	switch (sm->lock) {
	case L_SO:
	case L_INLINE:
	case L_HANDLE:
		/* The thread's counter and the lazy bindings, before the clock starts. */
		cpuhp_rwsem_read_lock(p->sem);
		cpuhp_rwsem_read_unlock(p->sem);
		h = cpuhp_rwsem_reader_get(p->sem);
		break;
#ifdef BENCH_HAVE_CK
	case L_BR:
		ck_brlock_read_register(&p->br, &brr);
		break;
#endif
	case L_URCU:
		urcu_memb_register_thread();
		break;
	default:
		break;
	}
	start_line(sm);
	rd->waited_ns = -bench_runqueue_wait_ns();
	switch (sm->lock) {
	case L_SO:
		READ_LOOP(cpuhp_rwsem_read_lock(p->sem), cpuhp_rwsem_read_unlock(p->sem), true);
		break;
	case L_INLINE:
		READ_LOOP(cpuhp_rwsem_read_lock_inline(p->sem),
		          cpuhp_rwsem_read_unlock_inline(p->sem), true);
		break;
	case L_HANDLE:
		READ_LOOP(cpuhp_rwsem_reader_lock(h), cpuhp_rwsem_reader_unlock(h), true);
		break;
#ifdef BENCH_HAVE_CK
	case L_BR:
		READ_LOOP(ck_brlock_read_lock(&p->br, &brr), ck_brlock_read_unlock(&brr), true);
		ck_brlock_read_unregister(&p->br, &brr);
		break;
	case L_CKRW:
		READ_LOOP(ck_rwlock_read_lock(&p->ckrw), ck_rwlock_read_unlock(&p->ckrw), true);
		break;
	case L_PF:
		READ_LOOP(ck_pflock_read_lock(&p->pf), ck_pflock_read_unlock(&p->pf), true);
		break;
#endif
	case L_PTHREAD:
		READ_LOOP(pthread_rwlock_rdlock(&p->prw), pthread_rwlock_unlock(&p->prw), true);
		break;
	case L_URCU:
		/* No exclusion: an RCU reader may see a write half done, by design. */
		READ_LOOP(urcu_memb_read_lock(), urcu_memb_read_unlock(), false);
		urcu_memb_unregister_thread();
		break;
	default:
		break;
	}
	rd->waited_ns += bench_runqueue_wait_ns();
	return NULL;
}

static void *writer_main(void *arg)
{
	struct sample *sm = arg;
	uint64_t writes = 0;

	pin(sm->writer_cpu);
	write_once(sm->p, sm->lock); /* a long-lived writer: its first write is not timed */
	start_line(sm);
	sm->writer_waited_ns = -bench_runqueue_wait_ns();
	while (!stopped(sm)) {
		uint64_t t1;

		write_once(sm->p, sm->lock);
		writes++;
		t1 = now_ns();
		while (now_ns() - t1 < sm->period_ns && !stopped(sm))
			cpu_relax();
	}
	sm->writes = writes;
	sm->writer_waited_ns += bench_runqueue_wait_ns();
	return NULL;
}

/* Ticks per nanosecond, and the sample's length, measured across the sample itself. */
static double tick_rate, sample_s;

static void run_sample(struct sample *sm, uint64_t ns)
{
	pthread_t wt;
	uint64_t c0, n0;
	bool writer = sm->period_ns != 0;

	atomic_store(&sm->ready, 0);
	atomic_store(&sm->go, false);
	atomic_store(&sm->stop, false);
	sm->writes = 0;
	for (unsigned i = 0; i < sm->nreaders; i++) {
		sm->r[i].sm = sm;
		if (pthread_create(&sm->r[i].tid, NULL, reader_main, &sm->r[i])) {
			fprintf(stderr, "bench-peers: cannot start a reader thread\n");
			exit(2);
		}
	}
	if (writer && pthread_create(&wt, NULL, writer_main, sm)) {
		fprintf(stderr, "bench-peers: cannot start the writer thread\n");
		exit(2);
	}
	while (atomic_load(&sm->ready) < sm->nreaders + writer)
		sched_yield();
	c0 = ticks();
	n0 = now_ns();
	atomic_store_explicit(&sm->go, true, memory_order_release);
	sleep_ns(ns);
	atomic_store(&sm->stop, true);
	for (unsigned i = 0; i < sm->nreaders; i++)
		pthread_join(sm->r[i].tid, NULL);
	if (writer)
		pthread_join(wt, NULL);
	{
		uint64_t c1 = ticks(), n1 = now_ns();

		tick_rate = (double)(c1 - c0) / (double)(n1 - n0);
		sample_s = (double)(n1 - n0) * 1e-9;
	}
}

/* ---------------------------------------------------------- scenarios */

struct scenario {
	const char *name, *label;
	uint64_t period_ns; /* 0: no writer */
	unsigned readers;   /* 0: as many as CPUs */
};

static const struct scenario scenarios[] = {
    {"none-2", "no writer, 2 readers", 0, 2},
    {"none", "no writer, 1 reader", 0, 1},
    {"100us", "writer every 100 us, 1 reader", 100000, 1},
    {"1ms", "writer every 1 ms, 1 reader", 1000000, 1},
    {"10ms", "writer every 10 ms, 1 reader", 10000000, 1},
};
#define NR_SCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))
#define MAX_REPS     32
/* The scenarios run (--scenarios): all by default. */
static bool scenario_on[NR_SCENARIOS] = {true, true, true, true, true};

static double reads_s[NR_SCENARIOS][L_NR][MAX_REPS];  /* all readers' pairs per second */
static double writes_s[NR_SCENARIOS][L_NR][MAX_REPS]; /* the writer's writes per second */
static double pair_ns[NR_SCENARIOS][L_NR][MAX_REPS];  /* median timed batch, per pair */
/* The largest share of the sample that one of its threads waited for a CPU. */
static double waited[NR_SCENARIOS][L_NR][MAX_REPS];
/* --max-wait: samples whose threads waited longer do not count. */
static double max_wait = 1.0;
static bool failed;

static int cpus[CPU_SETSIZE], ncpus;

static void run_reads(unsigned s, enum lock_id l, unsigned rep, uint64_t ns)
{
	const struct scenario *sc = &scenarios[s];
	struct sample *sm = calloc(1, sizeof(*sm));
	struct peer *p = aligned_alloc(64, sizeof(*p));
	double pairs = 0, med[MAX_READERS], w;

	if (!sm || !p) {
		fprintf(stderr, "bench-peers: out of memory\n");
		exit(2);
	}
	peer_init(p);
	sm->lock = l;
	sm->p = p;
	sm->period_ns = sc->period_ns;
	sm->nreaders = sc->readers ? sc->readers : (unsigned)ncpus;
	if (sm->nreaders > MAX_READERS)
		sm->nreaders = MAX_READERS;
	sm->writer_cpu = cpus[ncpus - 1];
	for (unsigned i = 0; i < sm->nreaders; i++)
		sm->r[i].cpu = cpus[i % (unsigned)ncpus];
	run_sample(sm, ns);
	for (unsigned i = 0; i < sm->nreaders; i++) {
		struct reader *rd = &sm->r[i];

		if (rd->bad) {
			fprintf(stderr,
			        "\nbench-peers: %s: a reader saw a write half done %llu time(s)\n",
			        lock_label[l], (unsigned long long)rd->bad);
			failed = true;
		}
		pairs += (double)rd->pairs;
		med[i] = quantile(rd->batch, rd->nbatch, 0.5) / READ_BATCH / tick_rate;
	}
	reads_s[s][l][rep] = pairs / sample_s;
	writes_s[s][l][rep] = sm->period_ns ? (double)sm->writes / sample_s : NAN;
	pair_ns[s][l][rep] = quantile(med, sm->nreaders, 0.5);
	w = sm->period_ns ? sm->writer_waited_ns : 0;
	for (unsigned i = 0; i < sm->nreaders; i++)
		w = sm->r[i].waited_ns > w ? sm->r[i].waited_ns : w;
	waited[s][l][rep] = w / (sample_s * 1e9);
	if (waited[s][l][rep] > max_wait) /* NAN where /proc has no schedstat: kept */
		reads_s[s][l][rep] = writes_s[s][l][rep] = pair_ns[s][l][rep] = NAN;
	peer_fini(p);
	free(p);
	free(sm);
}

/* ------------------------------------------------- the idle writer (A) */

/* Locks with a writer of their own (cpuhp_rwsem's three read paths share one). */
static bool own_writer(enum lock_id l)
{
	return lock_on(l) && !same_writer_as_so(l);
}

struct idle_result {
	double burst_p50[L_NR], burst_p90[L_NR], idle_p50[L_NR], idle_p90[L_NR];
	/* cpuhp_rwsem only: per idle write */
	double membarriers, futexes, timer_arms, timer_wakeups;
};

static uint64_t timed_write(struct peer *p, enum lock_id l)
{
	uint64_t t0 = now_ns();

	write_once(p, l);
	return now_ns() - t0;
}

/*
 * In a fresh child, each lock in turn: @burst writes back to back, then
 * @idle writes @gap_ns apart; for cpuhp_rwsem, the system calls of the
 * idle writes (and of what they leave for later: one more gap after).
 */
static void idle_child(int fd, unsigned rep, unsigned burst, unsigned idle, uint64_t gap_ns)
{
	struct idle_result res;
	struct peer *p = aligned_alloc(64, sizeof(*p));
	double *b = calloc(burst, sizeof(double)), *w = calloc(idle, sizeof(double));
	pid_t self = gettid_();

	if (!p || !b || !w)
		_exit(2);
	memset(&res, 0, sizeof(res));
	pin(cpus[0]);
	peer_init(p);
	for (unsigned k = 0; k < L_NR; k++) {
		enum lock_id l = (enum lock_id)((k + rep) % L_NR);
		unsigned long c0[C_NR], wake0 = 0;

		if (!own_writer(l))
			continue;
		for (unsigned i = 0; i < burst; i++)
			b[i] = (double)timed_write(p, l) / 1e3;
		res.burst_p50[l] = quantile(b, burst, 0.5);
		res.burst_p90[l] = quantile(b, burst, 0.9);
		sleep_ns(gap_ns);
		for (int c = 0; c < C_NR; c++)
			c0[c] = atomic_load(&counts[c]);
		if (l == L_SO)
			wake0 = others_wakeups(self);
		for (unsigned i = 0; i < idle; i++) {
			w[i] = (double)timed_write(p, l) / 1e3;
			sleep_ns(gap_ns);
		}
		if (l == L_SO) {
			res.membarriers =
			    (double)(atomic_load(&counts[C_MEMBARRIER]) - c0[C_MEMBARRIER]) / idle;
			res.futexes = (double)(atomic_load(&counts[C_FUTEX]) - c0[C_FUTEX]) / idle;
			res.timer_arms = (double)(atomic_load(&counts[C_TIMERFD_SETTIME]) -
			                          c0[C_TIMERFD_SETTIME]) /
			                 idle;
			res.timer_wakeups = (double)(others_wakeups(self) - wake0) / idle;
		}
		res.idle_p50[l] = quantile(w, idle, 0.5);
		res.idle_p90[l] = quantile(w, idle, 0.9);
	}
	if (write(fd, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(2);
	_exit(0);
}

static struct idle_result idle_res[MAX_REPS];

static void run_idle(unsigned rep, unsigned burst, unsigned idle, uint64_t gap_ns)
{
	int fds[2], status;
	pid_t pid;

	if (pipe(fds)) {
		perror("bench-peers: pipe");
		exit(2);
	}
	pid = fork();
	if (pid < 0) {
		perror("bench-peers: fork");
		exit(2);
	}
	if (pid == 0) {
		close(fds[0]);
		idle_child(fds[1], rep, burst, idle, gap_ns);
	}
	close(fds[1]);
	if (read(fds[0], &idle_res[rep], sizeof(idle_res[rep])) != (ssize_t)sizeof(idle_res[rep]) ||
	    waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "bench-peers: the idle-writer child failed\n");
		exit(2);
	}
	close(fds[0]);
}

/* --------------------------------------- write latency, 2 busy readers */

static double lat_p50[L_NR][MAX_REPS], lat_p90[L_NR][MAX_REPS];

static void run_latency(enum lock_id l, unsigned rep, unsigned writes)
{
	struct sample *sm = calloc(1, sizeof(*sm));
	struct peer *p = aligned_alloc(64, sizeof(*p));
	double *w = calloc(writes, sizeof(double));

	if (!sm || !p || !w) {
		fprintf(stderr, "bench-peers: out of memory\n");
		exit(2);
	}
	peer_init(p);
	sm->lock = l;
	sm->p = p;
	sm->nreaders = 2;
	for (unsigned i = 0; i < 2; i++) {
		sm->r[i].cpu = cpus[i % (unsigned)ncpus];
		sm->r[i].sm = sm;
		if (pthread_create(&sm->r[i].tid, NULL, reader_main, &sm->r[i])) {
			fprintf(stderr, "bench-peers: cannot start a reader thread\n");
			exit(2);
		}
	}
	/* We are the writer, beside the second reader. */
	pin(cpus[ncpus - 1]);
	while (atomic_load(&sm->ready) < 2)
		sched_yield();
	atomic_store_explicit(&sm->go, true, memory_order_release);
	write_once(p, l);
	for (unsigned i = 0; i < writes; i++) {
		sleep_ns(1000000);
		w[i] = (double)timed_write(p, l) / 1e3;
	}
	atomic_store(&sm->stop, true);
	for (unsigned i = 0; i < 2; i++) {
		pthread_join(sm->r[i].tid, NULL);
		if (sm->r[i].bad) {
			fprintf(stderr, "\nbench-peers: %s: a reader saw a write half done\n",
			        lock_label[l]);
			failed = true;
		}
	}
	lat_p50[l][rep] = quantile(w, writes, 0.5);
	lat_p90[l][rep] = quantile(w, writes, 0.9);
	peer_fini(p);
	free(p);
	free(sm);
	free(w);
}

/* ------------------------------------------------------------- output */

static double med_of(double *v, unsigned n)
{
	double tmp[MAX_REPS];
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++)
		if (!isnan(v[i]))
			tmp[k++] = v[i];
	return quantile(tmp, k, 0.5);
}

/* Median over repetitions of a[l]/a[ref], each ratio within one repetition. */
static double ratio_med(double (*a)[MAX_REPS], enum lock_id l, enum lock_id ref, unsigned reps)
{
	double tmp[MAX_REPS];

	for (unsigned i = 0; i < reps; i++)
		tmp[i] = a[l][i] / a[ref][i];
	return med_of(tmp, reps);
}

/* How many of @n repetitions counted (a sample dropped by --max-wait is NAN). */
static unsigned kept(const double *v, unsigned n)
{
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++)
		k += !isnan(v[i]);
	return k;
}

/* The reads and writes tables' cell: value (ratio), and how many counted if not all. */
static void cell(double v, int decimals, double r, unsigned k, unsigned reps)
{
	if (!k) {
		printf(" none counted (0/%u: --max-wait) |", reps);
		return;
	}
	printf(" %.*f (%.2fx", decimals, v, r);
	if (k < reps)
		printf(", %u/%u", k, reps);
	printf(") |");
}

/* A median, or a dash where --max-wait left no repetition to take it of. */
static void med_cell(double v)
{
	if (isnan(v))
		printf(" - |");
	else
		printf(" %.2f |", v);
}

static double max_of(double *v, unsigned n)
{
	double m = -INFINITY;

	for (unsigned i = 0; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

static void print_load(const char *when)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double l1, l5, l15;

	if (f && fscanf(f, "%lf %lf %lf", &l1, &l5, &l15) == 3)
		printf("load average %s: %.2f %.2f %.2f\n", when, l1, l5, l15);
	if (f)
		fclose(f);
}

/* Names for --callgrind-loop and --list: the locks with a writer of their own. */
static const char *const write_name[L_NR] = {
    [L_SO] = "write-cpuhp",     [L_BR] = "write-ck_brlock",           [L_CKRW] = "write-ck_rwlock",
    [L_PF] = "write-ck_pflock", [L_PTHREAD] = "write-pthread_rwlock",
};

static void list_writes(void)
{
	for (unsigned l = 0; l < L_NR; l++)
		if (write_name[l] && lock_on((enum lock_id)l))
			printf("%s %s, write lock+unlock, no reader\n", write_name[l],
			       lock_label[l]);
}

/*
 * What callgrind.sh runs: one write to warm up, then N more, with no
 * reader at all, on the main thread.  For cpuhp_rwsem every one of them is
 * the idle writer's path (no reader ends the lingering exit), warm.
 */
static int callgrind_loop(const char *name, const char *count)
{
	char *end;
	unsigned long long n = strtoull(count, &end, 10);
	struct peer *p = aligned_alloc(64, sizeof(*p));
	int l = 0;

	while (l < L_NR &&
	       !(write_name[l] && lock_on((enum lock_id)l) && !strcmp(write_name[l], name)))
		l++;
	if (l == L_NR || *end || !*count) {
		fprintf(stderr,
		        "bench-peers: --callgrind-loop wants a write loop (see --list) and a "
		        "count, got '%s' '%s'\n",
		        name, count);
		return 2;
	}
	if (!p)
		return 2;
	peer_init(p);
	write_once(p, (enum lock_id)l);
	for (unsigned long long i = 0; i < n; i++)
		write_once(p, (enum lock_id)l);
	/* Exit without fini: its cost would not depend on N anyway. */
	fflush(stdout);
	_exit(0);
}

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: bench-peers [OPTION]...\n"
	        "cpuhp_rwsem against ck_brlock, ck_rwlock, ck_pflock (libck-dev), pthread_rwlock\n"
	        "and liburcu's read side, in one process: reads with a writer every 100 us, 1 ms,\n"
	        "10 ms or none; a writer from idle (100 back to back, then 20 ms apart) with its\n"
	        "system calls; write latency with 2 busy readers.  Medians over repetitions,\n"
	        "ratios within each repetition.\n"
	        "\n"
	        "  --quick       a short run for CI smoke tests (figures are meaningless)\n"
	        "  --reps N      repetitions (default 5, max %d)\n"
	        "  --seconds S   length of one read sample (default 0.2)\n"
	        "  --idle N      idle writes per repetition, 20 ms apart (default 30)\n"
	        "  --only WHAT   one part: reads, idle or latency (default: all three)\n"
	        "  --scenarios LIST  the read scenarios, comma-separated, of: none-2, none,\n"
	        "                100us, 1ms, 10ms (default: all)\n"
	        "  --max-wait F  a read sample in which a thread waited for a CPU longer than\n"
	        "                this share of it (0..1) does not count (default 1: all count)\n"
	        "  --list        the write loops of --callgrind-loop\n"
	        "  --callgrind-loop WRITE N\n"
	        "                N writes with no reader, nothing else (what\n"
	        "                tests/bench/callgrind.sh runs under valgrind)\n"
	        "  --help        this text\n"
	        "\n"
	        "Exit status: 0; 1 if a reader saw a write half done; 2 on bad usage or error.\n",
	        MAX_REPS);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"quick", no_argument, NULL, 'q'},
	    {"reps", required_argument, NULL, 'r'},
	    {"seconds", required_argument, NULL, 's'},
	    {"idle", required_argument, NULL, 'i'},
	    {"only", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {"scenarios", required_argument, NULL, 'S'},
	    {"max-wait", required_argument, NULL, 'w'},
	    {"list", no_argument, NULL, 'l'},
	    {"callgrind-loop", required_argument, NULL, 'c'},
	    {0},
	};
	unsigned reps = 5, idle = 30, burst = 100, lat_writes = 50;
	double seconds = 0.2;
	bool quick = false, do_reads = true, do_idle = true, do_lat = true;
	uint64_t gap_ns = 20000000;
	cpu_set_t set;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'q':
			quick = true;
			break;
		case 'r':
			if (bench_opt_count("bench-peers", "reps", optarg, 1, MAX_REPS, &reps))
				return 2;
			break;
		case 's':
			if (bench_opt_seconds("bench-peers", optarg, &seconds))
				return 2;
			break;
		case 'i':
			if (bench_opt_count("bench-peers", "idle", optarg, 1, 10000, &idle))
				return 2;
			break;
		case 'o':
			do_reads = !strcmp(optarg, "reads");
			do_idle = !strcmp(optarg, "idle");
			do_lat = !strcmp(optarg, "latency");
			if (!do_reads && !do_idle && !do_lat) {
				fprintf(
				    stderr,
				    "bench-peers: --only wants reads, idle or latency, not '%s'\n",
				    optarg);
				return 2;
			}
			break;
		case 'S':
			if (bench_opt_names("bench-peers", "scenario", optarg, &scenarios[0].name,
			                    sizeof(scenarios[0]), NR_SCENARIOS, scenario_on))
				return 2;
			break;
		case 'w': {
			char *end;

			max_wait = strtod(optarg, &end);
			if (end == optarg || *end || !(max_wait >= 0 && max_wait <= 1)) {
				fprintf(
				    stderr,
				    "bench-peers: --max-wait wants a share from 0 to 1, not '%s'\n",
				    optarg);
				return 2;
			}
			break;
		}
		case 'l':
			list_writes();
			return 0;
		case 'c':
			if (optind >= argc) {
				fprintf(stderr,
				        "bench-peers: --callgrind-loop WRITE N: N is missing\n");
				return 2;
			}
			return callgrind_loop(optarg, argv[optind]);
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bench-peers: unexpected argument '%s' (see --help)\n",
		        argv[optind]);
		return 2;
	}
	if (quick) {
		reps = 1;
		seconds = 0.01;
		idle = 3;
		burst = 10;
		lat_writes = 3;
		gap_ns = 2000000;
	}
	if (!sched_getaffinity(0, sizeof(set), &set))
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpus[ncpus++] = c;
	if (!ncpus)
		cpus[ncpus++] = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("bench-peers: %u repetitions%s; %d CPU(s) (readers from CPU %d, the writer on CPU "
	       "%d)\n",
	       reps, quick ? " (quick: the figures mean nothing)" : "", ncpus, cpus[0],
	       cpus[ncpus - 1]);
	if (!have_ck)
		printf(
		    "\n*** ck_brlock, ck_rwlock, ck_pflock: NOT MEASURED: this program was built "
		    "without Concurrency Kit (libck-dev; `apt-get install libck-dev`, then "
		    "reconfigure the build).  Ratios below are against pthread_rwlock. ***\n\n");
	print_load("at start");

	/* The idle writer first, in fresh children: nothing of this process is in them. */
	if (do_idle)
		for (unsigned rep = 0; rep < reps; rep++)
			run_idle(rep, burst, idle, gap_ns);
	if (do_reads)
		for (unsigned rep = 0; rep < reps; rep++)
			for (unsigned s = 0; s < NR_SCENARIOS; s++)
				for (unsigned k = 0; k < L_NR; k++) {
					enum lock_id l = (enum lock_id)((k + rep) % L_NR);

					if (lock_on(l) && scenario_on[s])
						run_reads(s, l, rep, (uint64_t)(seconds * 1e9));
				}
	if (do_lat)
		for (unsigned rep = 0; rep < reps; rep++)
			for (unsigned k = 0; k < L_NR; k++) {
				enum lock_id l = (enum lock_id)((k + rep) % L_NR);

				if (own_writer(l))
					run_latency(l, rep, lat_writes);
			}
	print_load("at end");

	if (do_reads) {
		printf("\nReads, Mpairs/s (all readers), median of %u; in brackets the median "
		       "within-repetition ratio to %s\n\n| lock |",
		       reps, lock_label[REF]);
		for (unsigned s = 0; s < NR_SCENARIOS; s++)
			printf(" %s |", scenarios[s].label);
		printf("\n|---|");
		for (unsigned s = 0; s < NR_SCENARIOS; s++)
			printf("---:|");
		printf("\n");
		for (unsigned l = 0; l < L_NR; l++) {
			if (!lock_on(l))
				continue;
			printf("| %s |", lock_label[l]);
			for (unsigned s = 0; s < NR_SCENARIOS; s++)
				if (scenario_on[s])
					cell(med_of(reads_s[s][l], reps) / 1e6, 1,
					     ratio_med(reads_s[s], l, REF, reps),
					     kept(reads_s[s][l], reps), reps);
				else
					printf(" not run |");
			printf("\n");
		}
		printf("\nReads kept with a writer (reads with it / reads with none, 1 reader, "
		       "within a repetition), and the median cost of a read pair, ns (timed "
		       "batches of %d)\n\n| lock | 100 us | 1 ms | 10 ms | ns/pair, 1 reader | "
		       "ns/pair, 2 readers |\n|---|---:|---:|---:|---:|---:|\n",
		       READ_BATCH);
		for (unsigned l = 0; l < L_NR; l++) {
			if (!lock_on(l))
				continue;
			printf("| %s |", lock_label[l]);
			for (unsigned s = 2; s < 5; s++) {
				double tmp[MAX_REPS];

				for (unsigned i = 0; i < reps; i++)
					tmp[i] = reads_s[s][l][i] / reads_s[1][l][i];
				if (scenario_on[s] && scenario_on[1])
					med_cell(med_of(tmp, reps));
				else
					printf(" not run |");
			}
			for (unsigned s = 1; s != (unsigned)-1; s--)
				if (scenario_on[s])
					med_cell(med_of(pair_ns[s][l], reps));
				else
					printf(" not run |");
			printf("\n");
		}
		printf("\nWrites/s of the writer (it busy-waits its period between writes), "
		       "median; in brackets the ratio to %s's within a repetition\n\n| lock | "
		       "100 us | 1 ms | 10 ms |\n|---|---:|---:|---:|\n",
		       lock_label[REF]);
		for (unsigned l = 0; l < L_NR; l++) {
			if (!lock_on(l))
				continue;
			printf("| %s |", lock_label[l]);
			for (unsigned s = 2; s < 5; s++)
				if (scenario_on[s])
					cell(med_of(writes_s[s][l], reps), 0,
					     ratio_med(writes_s[s], l, REF, reps),
					     kept(writes_s[s][l], reps), reps);
				else
					printf(" not run |");
			printf("\n");
		}
		printf("\nHow long the busiest thread of a sample waited for a CPU (runnable, not "
		       "running; /proc/self/task/*/schedstat), share of the sample, median over "
		       "locks and repetitions%s\n\n|",
		       max_wait < 1 ? "; samples above --max-wait did not count" : "");
		for (unsigned s = 0; s < NR_SCENARIOS; s++)
			if (scenario_on[s])
				printf(" %s |", scenarios[s].label);
		printf("\n|");
		for (unsigned s = 0; s < NR_SCENARIOS; s++)
			if (scenario_on[s])
				printf("---:|");
		printf("\n|");
		for (unsigned s = 0; s < NR_SCENARIOS; s++) {
			double all[L_NR * MAX_REPS];
			unsigned n = 0;

			if (!scenario_on[s])
				continue;
			for (unsigned l = 0; l < L_NR; l++)
				for (unsigned i = 0; lock_on(l) && i < reps; i++)
					all[n++] = waited[s][l][i];
			printf(" %.1f%% |", 100 * quantile(all, n, 0.5));
		}
		printf("\n");
	}
	if (do_idle) {
		printf(
		    "\nA writer from idle, us per write lock+unlock (no reader): %u back to back, "
		    "then %u writes %.0f ms apart; median over repetitions, and the worst "
		    "repetition's\n\n| lock | back to back p50 | p90 | idle p50 | p90 | worst "
		    "idle p50 | worst p90 |\n|---|---:|---:|---:|---:|---:|---:|\n",
		    burst, idle, (double)gap_ns / 1e6);
		for (unsigned l = 0; l < L_NR; l++) {
			double v[6][MAX_REPS];

			if (!own_writer(l))
				continue;
			for (unsigned i = 0; i < reps; i++) {
				v[0][i] = idle_res[i].burst_p50[l];
				v[1][i] = idle_res[i].burst_p90[l];
				v[2][i] = idle_res[i].idle_p50[l];
				v[3][i] = idle_res[i].idle_p90[l];
			}
			printf("| %s |", l == L_SO ? "cpuhp_rwsem" : lock_label[l]);
			for (unsigned k = 0; k < 4; k++)
				med_cell(med_of(v[k], reps));
			printf(" %.2f | %.2f |\n", max_of(v[2], reps), max_of(v[3], reps));
		}
		printf("\ncpuhp_rwsem, system calls per idle write, by repetition (counted by "
		       "interposing syscall() and timerfd_settime(); timer-thread wake-ups from "
		       "/proc/self/task/*/status):\n\n| repetition | idle p50 us | p90 us | "
		       "membarrier | futex | timerfd_settime | timer-thread wake-ups |\n"
		       "|---:|---:|---:|---:|---:|---:|---:|\n");
		for (unsigned i = 0; i < reps; i++)
			printf("| %u | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", i + 1,
			       idle_res[i].idle_p50[L_SO], idle_res[i].idle_p90[L_SO],
			       idle_res[i].membarriers, idle_res[i].futexes, idle_res[i].timer_arms,
			       idle_res[i].timer_wakeups);
	}
	if (do_lat) {
		printf("\nWrite latency with 2 busy readers (one per CPU, the writer beside the "
		       "second), us per write lock+unlock, a write every 1 ms, %u per repetition; "
		       "medians\n\n| lock | p50 | p90 |\n|---|---:|---:|\n",
		       lat_writes);
		for (unsigned l = 0; l < L_NR; l++) {
			if (!own_writer(l))
				continue;
			printf("| %s | %.1f | %.1f |\n", l == L_SO ? "cpuhp_rwsem" : lock_label[l],
			       med_of(lat_p50[l], reps), med_of(lat_p90[l], reps));
		}
	}
	return failed ? 1 : 0;
}
