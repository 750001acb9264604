/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Out of threads, out of memory: the calls whose headers say
 * they return (unlock never blocks, a first read lock registers the thread)
 * must return, and the lock must work afterwards.
 *
 * Each case runs in a forked child, which limits itself and then uses the
 * lock as a fresh process would: the parent's library state is untouched,
 * and a child that aborts (SIGABRT, the old behaviour) or hangs (SIGALRM
 * from its alarm()) is reported by the parent.
 *
 * No threads: RLIMIT_NPROC 0.  The kernel ignores it for root, so a child
 * running as root first becomes nobody (65534), as a daemon dropping
 * privileges would.  The child checks that pthread_create() really fails
 * before it trusts the case.
 *
 * No memory: every allocation libcpuhp makes fails (this program is linked
 * with --wrap for malloc, calloc, realloc and aligned_alloc, which catches
 * the static library's calls); outside the sanitizers the child also
 * lowers RLIMIT_AS to what it maps and eats the heap, so that libc and
 * liburcu cannot allocate either (ASan and TSan reserve terabytes of shadow
 * and allocate from it, so an address-space limit means nothing to them).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cpuhp/hotplug.h>
#include <cpuhp/rcu_sync.h>
#include <cpuhp/rwsem.h>

#include "check.h"
#include "lockwatch.h"

#if defined(__SANITIZE_ADDRESS__) || defined(CHECK_UNDER_TSAN)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

/* ------------------------------------------------ allocations that fail */

static _Atomic bool alloc_fails;
static _Atomic unsigned long allocs_refused;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);

static bool refuse(void)
{
	if (!atomic_load(&alloc_fails))
		return false;
	atomic_fetch_add(&allocs_refused, 1);
	errno = ENOMEM;
	return true;
}

void *__wrap_malloc(size_t n)
{
	return refuse() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return refuse() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	return refuse() ? NULL : __real_realloc(p, n);
}

void *__wrap_aligned_alloc(size_t align, size_t n)
{
	return refuse() ? NULL : __real_aligned_alloc(align, n);
}

#ifndef UNDER_SANITIZER
/* Our mapped size, read before anything is limited (no allocation). */
static rlim_t mapped_bytes(void)
{
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	CHECK(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	CHECK(n > 0);
	buf[n] = 0;
	return (rlim_t)strtoul(buf, NULL, 10) * (rlim_t)sysconf(_SC_PAGESIZE);
}
#endif

/*
 * From now on nothing can be allocated: libcpuhp's calls by the wrappers,
 * and (outside sanitizers) everyone's, by the address-space limit and a
 * heap eaten down to its last 16 bytes.  What we eat is never freed: the
 * child _exit()s.
 */
static void no_more_memory(void)
{
#ifndef UNDER_SANITIZER
	rlim_t now = mapped_bytes();
	struct rlimit as = {now, RLIM_INFINITY};

	CHECK_EQ_INT(setrlimit(RLIMIT_AS, &as), 0);
	for (size_t size = 1 << 20; size >= 16; size /= 2)
		while (__real_malloc(size))
			;
	CHECK(__real_malloc(16) == NULL);
	CHECK(__real_calloc(1, 64) == NULL);
#endif
	/* Through a volatile pointer: compilers fold an unused malloc() to non-NULL. */
	void *(*volatile alloc)(size_t) = malloc;

	atomic_store(&alloc_fails, true);
	CHECK(alloc(16) == NULL);
}

/* ------------------------------------------------------- no more threads */

static void *idle_thread(void *arg)
{
	return arg;
}

/* From now on pthread_create() fails with EAGAIN; checked, not assumed. */
static void no_more_threads(void)
{
	struct rlimit none = {0, 0};
	pthread_t t;
	int err;

	if (geteuid() == 0) {
		/* Root is exempt from RLIMIT_NPROC: become nobody. */
		CHECK_EQ_INT(setgroups(0, NULL), 0);
		CHECK_EQ_INT(setgid(65534), 0);
		CHECK_EQ_INT(setuid(65534), 0);
	}
	CHECK_EQ_INT(setrlimit(RLIMIT_NPROC, &none), 0);
	err = pthread_create(&t, NULL, idle_thread, NULL);
	if (!err)
		pthread_join(t, NULL);
	CHECK_EQ_INT(err, EAGAIN);
}

/* ---------------------------------------------------------- the harness */

/* Cases whose child failed; each case runs, so one report shows them all. */
static int failed;

/* Run @fn in a child; it must exit 0, neither abort nor hang. */
static void in_child(void (*fn)(void), const char *what)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		alarm(60);
		fn();
		_exit(0);
	}
	CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	failed++;
	if (WIFSIGNALED(status))
		printf("# %s: the child died of signal %d (%s)%s\n", what, WTERMSIG(status),
		       strsignal(WTERMSIG(status)), WTERMSIG(status) == SIGALRM ? ": it hung" : "");
	else
		printf("# %s: the child exited with %d\n", what, WEXITSTATUS(status));
}

/* The lock works: a reader, a try-reader, a writer, and the reader again. */
static void lock_still_works(struct cpuhp_rwsem *sem)
{
	cpuhp_rwsem_read_lock(sem);
	CHECK_EQ_INT(lw_readers(sem), 1);
	cpuhp_rwsem_read_unlock(sem);
	CHECK(cpuhp_rwsem_read_trylock(sem));
	cpuhp_rwsem_read_unlock(sem);
	cpuhp_rwsem_write_lock(sem);
	CHECK(!cpuhp_rwsem_read_trylock(sem));
	cpuhp_rwsem_write_unlock(sem);
	CHECK_EQ_INT(cpuhp_rwsem_write_lock_timeout(sem, 1000), 0);
	cpuhp_rwsem_write_unlock(sem);
	cpuhp_rwsem_read_lock(sem);
	cpuhp_rwsem_read_unlock(sem);
	CHECK_EQ_INT(lw_readers(sem), 0);
}

/* ------------------------------------------------------------- writers */

static void first_writer_without_threads(void)
{
	struct cpuhp_rwsem *sem;

	CHECK_EQ_INT(cpuhp_rwsem_new(&sem), 0);
	no_more_threads();
	cpuhp_rwsem_write_lock(sem);
	cpuhp_rwsem_write_unlock(sem); /* aborted in liburcu before */
	/*
	 * No thread will run a callback: a G exit waited its grace period
	 * here; an H exit lingers, which needs none (a reader ends it).
	 */
	CHECK(lw_idle_or_lingering(&sem->rss));
	lock_still_works(sem);
	CHECK(lw_idle_or_lingering(&sem->rss));
	cpuhp_rwsem_free(sem);
}

static void rwsem_first_writer_unlock_returns_when_no_thread_can_be_created(void)
{
	in_child(first_writer_without_threads, "first write unlock without threads");
}

static void first_hotplug_without_threads(void)
{
	struct cpuhp_rwsem *sem = cpuhp_hotplug_lock();

	no_more_threads();
	cpuhp_hotplug_begin();
	cpuhp_hotplug_done(); /* aborted in liburcu before */
	CHECK(lw_idle_or_lingering(&sem->rss));
	cpuhp_get_online_cpus();
	cpuhp_get_online_cpus();
	CHECK_EQ_INT(lw_readers(sem), 1);
	cpuhp_put_online_cpus();
	cpuhp_put_online_cpus();
	CHECK_EQ_INT(cpuhp_hotplug_begin_timeout(1000), 0);
	CHECK(!cpuhp_rwsem_read_trylock(sem));
	cpuhp_hotplug_done();
	lock_still_works(sem);
}

static void hotplug_done_returns_when_no_thread_can_be_created(void)
{
	in_child(first_hotplug_without_threads, "first hotplug done without threads");
}

static void rcu_sync_exits_without_threads(void)
{
	struct cpuhp_rcu_sync *rss;

	CHECK_EQ_INT(cpuhp_rcu_sync_new(&rss), 0);
	no_more_threads();
	cpuhp_rcu_sync_enter(rss);
	cpuhp_rcu_sync_exit(rss); /* waits its grace period itself */
	CHECK(cpuhp_rcu_sync_is_idle(rss));
	/*
	 * Inside a read-side section the exit cannot wait: readers stay on
	 * the slow path until the next exit, or free, does it.
	 */
	cpuhp_rcu_sync_enter(rss);
	cpuhp_rcu_read_lock();
	cpuhp_rcu_sync_exit(rss);
	CHECK(!cpuhp_rcu_sync_is_idle(rss));
	cpuhp_rcu_read_unlock();
	cpuhp_rcu_sync_enter(rss); /* readers are slow already: no grace period */
	cpuhp_rcu_sync_exit(rss);
	CHECK(cpuhp_rcu_sync_is_idle(rss));
	cpuhp_rcu_sync_enter(rss);
	cpuhp_rcu_read_lock();
	cpuhp_rcu_sync_exit(rss);
	cpuhp_rcu_read_unlock();
	cpuhp_rcu_sync_free(rss); /* waits the grace period the exit could not */
}

static void rcu_sync_exit_returns_when_no_thread_can_be_created(void)
{
	in_child(rcu_sync_exits_without_threads, "rcu_sync exit without threads");
}

/* ------------------------------------------------------------- readers */

/*
 * A thread made while memory lasted, told to go once none is left: its
 * first call into the library is the case.
 */
struct late_thread {
	sem_t go, done;
	void (*fn)(void);
	pthread_t tid;
};

static void *late_thread_main(void *p)
{
	struct late_thread *lt = p;

	while (sem_wait(&lt->go))
		;
	lt->fn();
	sem_post(&lt->done);
	return NULL;
}

static void on_a_new_thread_without_memory(void (*fn)(void))
{
	struct late_thread lt = {.fn = fn};

	CHECK_EQ_INT(sem_init(&lt.go, 0, 0), 0);
	CHECK_EQ_INT(sem_init(&lt.done, 0, 0), 0);
	CHECK_EQ_INT(pthread_create(&lt.tid, NULL, late_thread_main, &lt), 0);
	no_more_memory();
	sem_post(&lt.go);
	while (sem_wait(&lt.done))
		;
	CHECK_EQ_INT(pthread_join(lt.tid, NULL), 0);
}

static void get_online_cpus_first_call(void)
{
	struct cpuhp_rwsem *sem = cpuhp_hotplug_lock();
	unsigned long refused = atomic_load(&allocs_refused);

	cpuhp_get_online_cpus(); /* "out of memory registering the thread" before */
	cpuhp_get_online_cpus(); /* nests */
	CHECK_EQ_INT(lw_readers(sem), 1);
	cpuhp_put_online_cpus();
	CHECK_EQ_INT(lw_readers(sem), 1);
	cpuhp_put_online_cpus();
	CHECK_EQ_INT(lw_readers(sem), 0);
	/* It asked for memory (its slot's chunk), and did without. */
	CHECK(atomic_load(&allocs_refused) > refused);
	/* A writer on the same starved thread, then readers again. */
	cpuhp_hotplug_begin();
	CHECK(!cpuhp_rwsem_read_trylock(sem));
	cpuhp_hotplug_done();
	cpuhp_get_online_cpus();
	cpuhp_put_online_cpus();
	lock_still_works(sem);
}

static void first_get_online_cpus_without_memory(void)
{
	on_a_new_thread_without_memory(get_online_cpus_first_call);
	/* The thread exited with its counts moved; a writer here sees none. */
	CHECK_EQ_INT(cpuhp_hotplug_begin_timeout(1000), 0);
	cpuhp_hotplug_done();
}

static void get_online_cpus_returns_when_no_memory_is_left(void)
{
	in_child(first_get_online_cpus_without_memory, "first get_online_cpus without memory");
}

static struct cpuhp_rcu_sync *reader_rss;

static void rcu_read_lock_first_call(void)
{
	cpuhp_rcu_read_lock(); /* "out of memory registering the thread" before */
	/* Registered with liburcu: a grace period would wait for us. */
	CHECK(URCU_TLS(urcu_memb_reader).registered);
	CHECK(urcu_memb_read_ongoing());
	CHECK(cpuhp_rcu_sync_is_idle(reader_rss));
	cpuhp_rcu_read_unlock();
	CHECK(!urcu_memb_read_ongoing());
	cpuhp_rcu_sync_enter(reader_rss);
	cpuhp_rcu_read_lock();
	CHECK(!cpuhp_rcu_sync_is_idle(reader_rss));
	cpuhp_rcu_read_unlock();
	cpuhp_rcu_sync_exit(reader_rss);
}

static void first_rcu_read_lock_without_memory(void)
{
	CHECK_EQ_INT(cpuhp_rcu_sync_new(&reader_rss), 0);
	on_a_new_thread_without_memory(rcu_read_lock_first_call);
	/*
	 * The thread unregistered as it exited: a thread that exits
	 * registered would hang (alarm) or crash this grace period.
	 */
	urcu_memb_synchronize_rcu();
	cpuhp_rcu_sync_enter(reader_rss);
	cpuhp_rcu_sync_exit(reader_rss);
	cpuhp_rcu_sync_free(reader_rss);
}

static void rcu_read_lock_returns_when_no_memory_is_left(void)
{
	in_child(first_rcu_read_lock_without_memory, "first cpuhp_rcu_read_lock without memory");
}

/* ------------------------------------------------------- making locks */

/*
 * Out of memory, cpuhp_rwsem_new() fails with -ENOMEM and leaves *out
 * alone, once the slab of the lowest free ids is full (locks in it need no
 * allocation); the locks it made work, and a freed lock's slot is made
 * again without memory.
 */
static void new_locks_without_memory(void)
{
	struct cpuhp_rwsem *made[64], *sentinel = (struct cpuhp_rwsem *)(void *)made, *sem;
	struct cpuhp_rwsem *first;
	unsigned n = 0;
	int err;

	/* The first lock's slab is the group's: the next locks have room. */
	CHECK_EQ_INT(cpuhp_rwsem_new(&first), 0);
	no_more_memory();
	for (;;) {
		sem = sentinel;
		err = cpuhp_rwsem_new(&sem);
		if (err)
			break;
		CHECK(n < 64);
		made[n++] = sem;
	}
	CHECK_EQ_INT(err, -ENOMEM);
	CHECK(sem == sentinel);
	CHECK(n > 0);
	CHECK(made[0] == first + 1);
	lock_still_works(made[0]);
	cpuhp_rwsem_free(made[0]);
	CHECK_EQ_INT(cpuhp_rwsem_new(&sem), 0);
	CHECK(sem == made[0]);
	lock_still_works(sem);
	for (unsigned i = 0; i < n; i++)
		cpuhp_rwsem_free(made[i]);
	cpuhp_rwsem_free(first);
}

static void rwsem_new_returns_enomem_when_no_memory_is_left(void)
{
	in_child(new_locks_without_memory, "cpuhp_rwsem_new without memory");
}

#define CASE(fn)                                                                                   \
	{                                                                                          \
#fn, fn                                                                            \
	}

int main(void)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} cases[] = {
	    CASE(rwsem_first_writer_unlock_returns_when_no_thread_can_be_created),
	    CASE(hotplug_done_returns_when_no_thread_can_be_created),
	    CASE(rcu_sync_exit_returns_when_no_thread_can_be_created),
	    CASE(get_online_cpus_returns_when_no_memory_is_left),
	    CASE(rcu_read_lock_returns_when_no_memory_is_left),
	    CASE(rwsem_new_returns_enomem_when_no_memory_is_left),
	};

	printf("# reader fast path: %s; memory limited %s\n",
	       cpuhp__asym_fence ? "fenced by membarrier (H)" : "liburcu sections (G)",
#ifdef UNDER_SANITIZER
	       "for libcpuhp's own allocations only (a sanitizer build)"
#else
	       "for everyone (RLIMIT_AS) and for libcpuhp's allocations"
#endif
	);
	/* The -rcu-readers variant must really run the G readers. */
	if (getenv("CPUHP_NO_MEMBARRIER") && strcmp(getenv("CPUHP_NO_MEMBARRIER"), "0"))
		CHECK(!cpuhp__asym_fence);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int before = failed;

		printf("# %s\n", cases[i].name);
		cases[i].fn();
		printf("%s %s\n", failed == before ? "ok" : "not ok", cases[i].name);
	}
	CHECK_EQ_INT(failed, 0);
	return 0;
}
