/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Read sections in a signal handler: cpuhp_rwsem_read_trylock()
 * and the cpuhp_rwsem_read_unlock() of a lock it took are async-signal-safe
 * on a thread that already has its counter for the lock (rwsem.h).
 *
 * A reader thread loops in read_lock/read_unlock and a writer thread in
 * write_lock/write_unlock on one lock, while a timer of each thread's own
 * (timer_create(), SIGEV_THREAD_ID) sends it a signal every 20 us.  The
 * handler tries a read section; inside it no writer may be inside, and
 * inside a write section no handler section may be.  The handler runs
 * wherever the signal lands: in the fast path, between a slot's load and
 * store, in the slow path with the lock's mutex held, asleep on a condition
 * variable or a futex, in the writer's sum with the registry lock held.  A
 * handler path that took a mutex, allocated or waited would deadlock there
 * (ThreadSanitizer also reports any signal-unsafe call it makes).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <semaphore.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <cpuhp/rwsem.h>

#include "check.h"

#define WAIT_FOR(cond)                                                                             \
	do {                                                                                       \
		while (!(cond))                                                                    \
			sched_yield();                                                             \
	} while (0)

#ifdef CHECK_UNDER_TSAN
#define SIGNALS 5000 /* about, per thread; TSan delivers each one slowly */
#else
#define SIGNALS 20000 /* about, per thread */
#endif

static struct cpuhp_rwsem *sem;
static _Atomic int stop;
static _Atomic int writer_inside, reader_inside, handler_inside;
static _Atomic long violations, handled, handler_sections, handler_refused, writes, reads;
static sem_t enough;
static _Atomic pid_t reader_tid, writer_tid;

static void on_signal(int sig)
{
	int saved_errno = errno;

	(void)sig;
	if (cpuhp_rwsem_read_trylock(sem)) {
		atomic_fetch_add(&handler_inside, 1);
		if (atomic_load(&writer_inside))
			atomic_fetch_add(&violations, 1);
		atomic_fetch_add(&handler_sections, 1);
		if (atomic_load(&writer_inside))
			atomic_fetch_add(&violations, 1);
		atomic_fetch_sub(&handler_inside, 1);
		cpuhp_rwsem_read_unlock(sem);
	} else {
		atomic_fetch_add(&handler_refused, 1);
	}
	/* sem_post() is async-signal-safe: the main thread sleeps till then. */
	if (atomic_fetch_add(&handled, 1) + 1 == 2L * SIGNALS)
		sem_post(&enough);
	errno = saved_errno;
}

/* The rule of rwsem.h: the thread has its counter before a handler may use the lock. */
static void get_counter(void)
{
	cpuhp_rwsem_read_lock(sem);
	cpuhp_rwsem_read_unlock(sem);
}

static void *reader_main(void *arg)
{
	(void)arg;
	get_counter();
	atomic_store(&reader_tid, gettid());
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		cpuhp_rwsem_read_lock(sem);
		atomic_fetch_add(&reader_inside, 1);
		if (atomic_load(&writer_inside))
			atomic_fetch_add(&violations, 1);
		atomic_fetch_sub(&reader_inside, 1);
		cpuhp_rwsem_read_unlock(sem);
		atomic_fetch_add_explicit(&reads, 1, memory_order_relaxed);
	}
	return NULL;
}

static void *writer_main(void *arg)
{
	(void)arg;
	get_counter();
	atomic_store(&writer_tid, gettid());
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		cpuhp_rwsem_write_lock(sem);
		atomic_store(&writer_inside, 1);
		if (atomic_load(&handler_inside) || atomic_load(&reader_inside))
			atomic_fetch_add(&violations, 1);
		atomic_store(&writer_inside, 0);
		cpuhp_rwsem_write_unlock(sem);
		atomic_fetch_add_explicit(&writes, 1, memory_order_relaxed);
		/*
		 * Some time without a writer, so that handlers also find the
		 * lock free, and now and then rcu_sync idle (the fast path).
		 */
		for (unsigned spin = 0; spin < 20000; spin++)
			if (atomic_load_explicit(&stop, memory_order_relaxed))
				break;
	}
	return NULL;
}

/* A timer that sends SIGUSR1 to thread @tid every 20 us. */
static timer_t start_timer(pid_t tid)
{
	struct sigevent ev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR1};
	struct itimerspec every = {.it_interval = {0, 20000}, .it_value = {0, 20000}};
	timer_t t;

	ev._sigev_un._tid = tid;
	CHECK_EQ_INT(timer_create(CLOCK_MONOTONIC, &ev, &t), 0);
	CHECK_EQ_INT(timer_settime(t, 0, &every, NULL), 0);
	return t;
}

static void rwsem_read_trylock_in_signal_handlers_excludes_writers(void)
{
	struct sigaction sa = {.sa_handler = on_signal};
	pthread_t reader, writer;

	CHECK_EQ_INT(cpuhp_rwsem_new(&sem), 0);
	CHECK_EQ_INT(sem_init(&enough, 0, 0), 0);
	sigemptyset(&sa.sa_mask);
	CHECK_EQ_INT(sigaction(SIGUSR1, &sa, NULL), 0);
	CHECK_EQ_INT(pthread_create(&reader, NULL, reader_main, NULL), 0);
	CHECK_EQ_INT(pthread_create(&writer, NULL, writer_main, NULL), 0);
	/* Both have their counter, and both are in their loops. */
	WAIT_FOR(atomic_load(&reads) > 0 && atomic_load(&writes) > 0);
	timer_t reader_timer = start_timer(atomic_load(&reader_tid));
	timer_t writer_timer = start_timer(atomic_load(&writer_tid));
	while (sem_wait(&enough))
		CHECK_EQ_INT(errno, EINTR);
	CHECK_EQ_INT(timer_delete(reader_timer), 0);
	CHECK_EQ_INT(timer_delete(writer_timer), 0);
	atomic_store(&stop, 1);
	CHECK_EQ_INT(pthread_join(reader, NULL), 0);
	CHECK_EQ_INT(pthread_join(writer, NULL), 0);
	printf("# %ld handler sections, %ld trylocks refused (a writer held or waited); "
	       "%ld reads, %ld writes meanwhile\n",
	       atomic_load(&handler_sections), atomic_load(&handler_refused), atomic_load(&reads),
	       atomic_load(&writes));
	CHECK_EQ_INT(atomic_load(&violations), 0);
	CHECK(atomic_load(&handled) >= 2L * SIGNALS);
	CHECK(atomic_load(&handler_sections) > 0);
	/* The lock is whole: no count left over from the handlers. */
	CHECK_EQ_INT(cpuhp_rwsem_write_lock_timeout(sem, 10000), 0);
	cpuhp_rwsem_write_unlock(sem);
	signal(SIGUSR1, SIG_DFL);
	cpuhp_rwsem_free(sem);
}

int main(void)
{
	RUN_TEST(rwsem_read_trylock_in_signal_handlers_excludes_writers);
	return 0;
}
