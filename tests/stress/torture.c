/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * locktorture for cpuhp_rwsem, in the spirit of the kernel's: readers and
 * writers with random hold times hammer one lock for a bounded time.
 *
 * Checked on every operation:
 *  - A value written only under the write lock (two plain, non-atomic
 *    words, so ThreadSanitizer reports any unprotected access) never
 *    changes inside a read section and is never seen half-written.
 *  - A writer never sees a reader or another writer inside.
 * Readers mix read_lock, read_trylock, the recursive hotplug API and
 * releases on another thread; writers mix write_lock and timed attempts
 * whose timeouts must leave the lock usable.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpuhp/hotplug.h>
#include <cpuhp/rwsem.h>

/*
 * Built twice: torture-inline takes and releases read locks through
 * <cpuhp/rwsem-inline.h> (against a library without debug checks).
 */
#ifdef TORTURE_INLINE
#include <cpuhp/rwsem-inline.h>
/* Both inline paths, alternating: the lock's own, and this thread's handle. */
static __thread struct cpuhp_rwsem_reader torture_handle;
static __thread unsigned torture_ops;

static struct cpuhp_rwsem_reader *torture_handle_for(struct cpuhp_rwsem *sem)
{
	if (torture_handle.sem != sem)
		torture_handle = cpuhp_rwsem_reader_get(sem);
	return &torture_handle;
}

static void read_lock(struct cpuhp_rwsem *sem)
{
	if (torture_ops++ & 1)
		cpuhp_rwsem_reader_lock(*torture_handle_for(sem));
	else
		cpuhp_rwsem_read_lock_inline(sem);
}

static void read_unlock(struct cpuhp_rwsem *sem)
{
	if (torture_ops++ % 3 == 0)
		cpuhp_rwsem_reader_unlock(*torture_handle_for(sem));
	else
		cpuhp_rwsem_read_unlock_inline(sem);
}
#else
#define read_lock   cpuhp_rwsem_read_lock
#define read_unlock cpuhp_rwsem_read_unlock
#endif

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "torture: FAILED: " __VA_ARGS__);                                  \
		fputc('\n', stderr);                                                               \
		abort();                                                                           \
	} while (0)

struct shared {
	struct cpuhp_rwsem *sem;
	long a, b; /* protected: written only under the write lock */
	_Atomic int readers_inside, writers_inside;
	_Atomic int stop;
	/*
	 * Read locks handed to the releaser thread.  It never takes the lock
	 * itself, so it can always release: a released lock must not depend
	 * on a thread that may be waiting for a writer.
	 */
	pthread_mutex_t hand_lock;
	pthread_cond_t hand_cond;
	int handed;
	bool releaser_stop; /* set once no reader can hand over any more */
};

struct stats {
	long reads, trylock_fails, handoffs, hotplug_reads;
	long writes, timeouts;
};

static struct shared S;

static unsigned rnd(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 16;
}

/* A hold time of a few hundred cycles up to a few microseconds. */
static void hold(unsigned *seed)
{
	unsigned n = rnd(seed) % 2000;

	for (volatile unsigned i = 0; i < n; i++)
		;
}

static void check_stable_read(unsigned *seed)
{
	long a1 = S.a, b1 = S.b;

	if (a1 != b1)
		FAIL("reader saw a half-written value (%ld, %ld)", a1, b1);
	hold(seed);
	if (S.a != a1 || S.b != b1)
		FAIL("value changed inside a read section (%ld -> %ld)", a1, S.a);
	if (atomic_load(&S.writers_inside))
		FAIL("reader inside together with a writer");
}

static void read_section(unsigned *seed)
{
	atomic_fetch_add(&S.readers_inside, 1);
	check_stable_read(seed);
	atomic_fetch_sub(&S.readers_inside, 1);
}

static void *reader(void *arg)
{
	struct stats *st = arg;
	unsigned seed = (unsigned)(uintptr_t)arg;

	while (!atomic_load(&S.stop)) {
		switch (rnd(&seed) % 8) {
		case 0: /* try */
			if (!cpuhp_rwsem_read_trylock(S.sem)) {
				st->trylock_fails++;
				continue;
			}
			read_section(&seed);
			read_unlock(S.sem);
			break;
		case 1: /* hand the lock to the releaser thread */
			read_lock(S.sem);
			read_section(&seed);
			cpuhp_rwsem_read_disown(S.sem);
			pthread_mutex_lock(&S.hand_lock);
			S.handed++;
			pthread_cond_signal(&S.hand_cond);
			pthread_mutex_unlock(&S.hand_lock);
			st->handoffs++;
			break;
		default:
			read_lock(S.sem);
			read_section(&seed);
			read_unlock(S.sem);
			break;
		}
		st->reads++;
	}
	return NULL;
}

static void *releaser(void *arg)
{
	pthread_mutex_lock(&S.hand_lock);
	for (;;) {
		while (!S.handed && !S.releaser_stop)
			pthread_cond_wait(&S.hand_cond, &S.hand_lock);
		if (!S.handed)
			break;
		S.handed--;
		pthread_mutex_unlock(&S.hand_lock);
		read_unlock(S.sem); /* taken on another thread */
		pthread_mutex_lock(&S.hand_lock);
	}
	pthread_mutex_unlock(&S.hand_lock);
	return NULL;
}

/* The process-wide hotplug lock, nested, against hotplug writers. */
static long hp_a, hp_b;
static _Atomic int hp_writers_inside;

static void *hotplug_reader(void *arg)
{
	struct stats *st = arg;
	unsigned seed = 7;

	while (!atomic_load(&S.stop)) {
		bool nested = rnd(&seed) % 2;

		cpuhp_get_online_cpus();
		if (nested)
			cpuhp_get_online_cpus(); /* recursion, maybe while a writer waits */
		if (hp_a != hp_b || atomic_load(&hp_writers_inside))
			FAIL("hotplug reader saw a hotplug in progress");
		hold(&seed);
		if (hp_a != hp_b)
			FAIL("hotplug state changed under cpuhp_get_online_cpus()");
		if (nested)
			cpuhp_put_online_cpus();
		cpuhp_put_online_cpus();
		st->hotplug_reads++;
	}
	return NULL;
}

static void *writer(void *arg)
{
	struct stats *st = arg;
	unsigned seed = (unsigned)(uintptr_t)arg ^ 0x5a5a;

	while (!atomic_load(&S.stop)) {
		unsigned r = rnd(&seed);

		if (r % 4 == 0) {
			if (cpuhp_rwsem_write_lock_timeout(S.sem, r % 3)) {
				st->timeouts++;
				continue;
			}
		} else {
			cpuhp_rwsem_write_lock(S.sem);
		}
		if (atomic_fetch_add(&S.writers_inside, 1))
			FAIL("two writers inside");
		if (atomic_load(&S.readers_inside))
			FAIL("writer inside while %d reader(s) are",
			     atomic_load(&S.readers_inside));
		S.a++;
		hold(&seed);
		S.b = S.a;
		atomic_fetch_sub(&S.writers_inside, 1);
		cpuhp_rwsem_write_unlock(S.sem);
		st->writes++;
		if (r % 16 == 0) { /* now and then, a hotplug */
			cpuhp_hotplug_begin();
			atomic_fetch_add(&hp_writers_inside, 1);
			hp_a++;
			hold(&seed);
			hp_b = hp_a;
			atomic_fetch_sub(&hp_writers_inside, 1);
			cpuhp_hotplug_done();
		}
		/* Writers are rare in real life: give readers room. */
		for (unsigned i = rnd(&seed) % 4; i; i--)
			hold(&seed);
	}
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: torture [--readers N] [--writers M] [--seconds S]\n"
	           "Hammer one cpuhp_rwsem and the hotplug lock with N readers (default 4),\n"
	           "M writers (default 2) for S seconds (default 3); abort on any violation.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"readers", 1, NULL, 'r'},
	                                     {"writers", 1, NULL, 'w'},
	                                     {"seconds", 1, NULL, 's'},
	                                     {"help", 0, NULL, 'h'},
	                                     {NULL, 0, NULL, 0}};
	int nr = 4, nw = 2, secs = 3, c;
	struct timespec end;

	while ((c = getopt_long(argc, argv, "r:w:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			nr = atoi(optarg);
			break;
		case 'w':
			nw = atoi(optarg);
			break;
		case 's':
			secs = atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (nr < 1 || nw < 1 || secs < 1 || nr > 64 || nw > 64) {
		usage(stderr);
		return 2;
	}

	pthread_t tr[65], tw[64], trel;
	struct stats sr[65] = {0}, sw[64] = {0}, total = {0};

	if (cpuhp_rwsem_new(&S.sem))
		FAIL("cpuhp_rwsem_new");
#ifdef TORTURE_INLINE
	{
		/* The library sets this thread's inline pointer with its first read lock. */
		cpuhp_rwsem_read_lock(S.sem);
		cpuhp_rwsem_read_unlock(S.sem);
		printf("torture: inline read path %s\n",
		       cpuhp__inline_slots ? "active"
		                           : "not active here (no membarrier): library calls");
	}
#endif
	pthread_mutex_init(&S.hand_lock, NULL);
	pthread_cond_init(&S.hand_cond, NULL);
	pthread_create(&trel, NULL, releaser, NULL);
	for (int i = 0; i < nr; i++)
		pthread_create(&tr[i], NULL, reader, &sr[i]);
	pthread_create(&tr[nr], NULL, hotplug_reader, &sr[nr]);
	for (int i = 0; i < nw; i++)
		pthread_create(&tw[i], NULL, writer, &sw[i]);

	/* The run's length is the test's parameter, not a synchronisation. */
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += secs;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &end, NULL) == EINTR)
		;
	atomic_store(&S.stop, 1);
	for (int i = 0; i <= nr; i++) {
		pthread_join(tr[i], NULL);
		total.reads += sr[i].reads;
		total.trylock_fails += sr[i].trylock_fails;
		total.handoffs += sr[i].handoffs;
		total.hotplug_reads += sr[i].hotplug_reads;
	}
	for (int i = 0; i < nw; i++) {
		pthread_join(tw[i], NULL);
		total.writes += sw[i].writes;
		total.timeouts += sw[i].timeouts;
	}
	/* The releaser drains what is left once the others have stopped. */
	pthread_mutex_lock(&S.hand_lock);
	S.releaser_stop = true;
	pthread_cond_signal(&S.hand_cond);
	pthread_mutex_unlock(&S.hand_lock);
	pthread_join(trel, NULL);
	if (cpuhp_rwsem_write_lock_timeout(S.sem, 10000))
		FAIL("lock not free after the run");
	if (S.a != total.writes)
		FAIL("writes lost: value %ld, writes %ld", S.a, total.writes);
	cpuhp_rwsem_write_unlock(S.sem);
	cpuhp_rwsem_free(S.sem);
	printf("torture: %d readers, %d writers, %d s: %ld reads (%ld trylock failures, %ld "
	       "released on another thread), %ld hotplug reads, %ld writes, %ld write timeouts\n",
	       nr, nw, secs, total.reads, total.trylock_fails, total.handoffs, total.hotplug_reads,
	       total.writes, total.timeouts);
	if (total.reads == 0 || total.writes == 0)
		FAIL("no progress: readers or writers never got in");
	return 0;
}
