/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pthread_cancel() of a thread blocked in a library call.
 *
 * No call of the library is a cancellation point, as with pthread_rwlock:
 * a cancel sent while the thread waits stays pending until the call has
 * returned with its lock held, and is acted on at the thread's next
 * cancellation point (here pthread_testcancel()).  Each case blocks a
 * victim thread in one call, waits until the lock shows it waiting (its
 * queue, its waiter counts: lockwatch.h), cancels it, and only then lets
 * the call go on.  The victim's cleanup handler must find the call
 * returned and its lock held, and releases it; the lock must then work for
 * every other thread.  Before the fix the cancel unwound the wait itself,
 * leaving the lock's mutex owned by the dead thread (every later call
 * hung) or, for cpuhp_get_online_cpus(), aborting the process at the
 * thread's exit.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cpuhp/cpuset.h>
#include <cpuhp/hotplug.h>
#include <cpuhp/rcu_sync.h>
#include <cpuhp/rwsem.h>

#include "check.h"
#include "lockwatch.h"

enum call {
	CALL_READ_LOCK,
	CALL_WRITE_LOCK,
	CALL_WRITE_LOCK_TIMEOUT,
	CALL_GET_ONLINE_CPUS,
	CALL_HOTPLUG_BEGIN,
	CALL_HOTPLUG_BEGIN_TIMEOUT,
	CALL_RCU_SYNC_ENTER,
	CALL_RCU_SYNC_FREE,
	CALL_RWSEM_FREE,
	CALL_FORK,
	CALL_SYSFS_READ_ONLINE,
};

struct victim {
	pthread_t tid;
	enum call call;
	struct cpuhp_rwsem *sem;
	struct cpuhp_rcu_sync *rss;
	const char *root; /* a sysfs tree, for CALL_SYSFS_READ_ONLINE */
	_Atomic pid_t tid_nr;
	bool online;
	unsigned timeout_ms;
	int result;           /* of a timed call; fork()'s pid */
	_Atomic int returned; /* 1: the call returned (before the next cancellation point); -1:
	                         CALL_FORK ready */
	_Atomic int cleaned;  /* the cleanup handler ran, and found what it should */
	_Atomic int cancel_sent;
};

/* What holding the lock looks like from the victim, right after the call. */
static void check_held_and_release(struct victim *v)
{
	struct cpuhp_rwsem *hp = cpuhp_hotplug_lock();

	switch (v->call) {
	case CALL_READ_LOCK:
		CHECK_EQ_INT(lw_readers(v->sem), 1);
		cpuhp_rwsem_read_unlock(v->sem);
		break;
	case CALL_WRITE_LOCK:
	case CALL_WRITE_LOCK_TIMEOUT:
		if (v->result == -ETIMEDOUT) {
			/* Gave up: still queued behind the test's writer, not ours to drop. */
			CHECK_EQ_INT(lw_writers_queued(v->sem), 0);
			break;
		}
		CHECK_EQ_INT(v->result, 0);
		CHECK(lw_blocked(v->sem));
		CHECK_EQ_INT(lw_readers(v->sem), 0);
		cpuhp_rwsem_write_unlock(v->sem);
		break;
	case CALL_GET_ONLINE_CPUS:
		CHECK_EQ_INT(lw_readers(hp), 1);
		CHECK_EQ_INT(cpuhp__self->hotplug_depth, 1);
		cpuhp_put_online_cpus();
		break;
	case CALL_HOTPLUG_BEGIN:
	case CALL_HOTPLUG_BEGIN_TIMEOUT:
		CHECK_EQ_INT(v->result, 0);
		CHECK(lw_blocked(hp));
		CHECK_EQ_INT(lw_readers(hp), 0);
		cpuhp_hotplug_done();
		break;
	case CALL_RCU_SYNC_ENTER: {
		int s = lw_gp_state(v->rss);

		/* Entered: counted, and past the grace period (not IDLE, not ENTER). */
		CHECK(lw_gp_count(v->rss) >= 1);
		CHECK(s != CPUHP__GP_IDLE && s != CPUHP__GP_ENTER);
		cpuhp_rcu_sync_exit(v->rss);
		break;
	}
	case CALL_RCU_SYNC_FREE:
	case CALL_RWSEM_FREE:
		/* Freed: nothing left to look at or release. */
		break;
	case CALL_FORK:
		/* The parent's side returned with a child to reap (the test does). */
		CHECK(v->result > 0);
		break;
	case CALL_SYSFS_READ_ONLINE:
		/* Read what the test wrote, and no descriptor left open. */
		CHECK_EQ_INT(v->result, 0);
		CHECK(v->online);
		break;
	}
}

static void victim_cleanup(void *p)
{
	struct victim *v = p;

	/* The cancel must not be acted on inside the call. */
	if (!atomic_load(&v->returned))
		CHECK_FAIL_("call %d acted on the cancel before returning", v->call);
	check_held_and_release(v);
	atomic_store(&v->cleaned, 1);
}

static void *victim_main(void *p)
{
	struct victim *v = p;

	atomic_store(&v->tid_nr, gettid());
	pthread_cleanup_push(victim_cleanup, v);
	switch (v->call) {
	case CALL_READ_LOCK:
		cpuhp_rwsem_read_lock(v->sem);
		break;
	case CALL_WRITE_LOCK:
		cpuhp_rwsem_write_lock(v->sem);
		break;
	case CALL_WRITE_LOCK_TIMEOUT:
		v->result = cpuhp_rwsem_write_lock_timeout(v->sem, v->timeout_ms);
		break;
	case CALL_GET_ONLINE_CPUS:
		cpuhp_get_online_cpus();
		break;
	case CALL_HOTPLUG_BEGIN:
		cpuhp_hotplug_begin();
		break;
	case CALL_HOTPLUG_BEGIN_TIMEOUT:
		v->result = cpuhp_hotplug_begin_timeout(v->timeout_ms);
		break;
	case CALL_RCU_SYNC_ENTER:
		cpuhp_rcu_sync_enter(v->rss);
		break;
	case CALL_RCU_SYNC_FREE:
		cpuhp_rcu_sync_free(v->rss);
		break;
	case CALL_RWSEM_FREE:
		cpuhp_rwsem_free(v->sem);
		break;
	case CALL_FORK:
		/* Make the cancel pending first: fork() itself never acts on it. */
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		atomic_store(&v->returned, -1);
		WAIT_FOR(atomic_load(&v->cancel_sent));
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		atomic_store(&v->returned, 0);
		v->result = fork();
		if (v->result == 0) {
#ifndef CHECK_UNDER_TSAN
			/*
			 * The child's lock works: a writer and a reader.  Not
			 * under TSan, which does not support threads started
			 * after a multi-threaded fork (the writer starts one).
			 */
			cpuhp_rwsem_write_lock(v->sem);
			cpuhp_rwsem_write_unlock(v->sem);
			cpuhp_rwsem_read_lock(v->sem);
			cpuhp_rwsem_read_unlock(v->sem);
#endif
			_exit(0);
		}
		CHECK(v->result > 0);
		break;
	case CALL_SYSFS_READ_ONLINE:
		v->result = cpuhp_sysfs_read_online(v->root, 1, &v->online);
		break;
	}
	atomic_store(&v->returned, 1);
	/*
	 * A timed call may return before the test sent the cancel; once it
	 * has, the next cancellation point acts on it.  (Not pause(), which
	 * would wait for the cancel itself: ThreadSanitizer loses track of the
	 * thread's mutexes when a cancel unwinds one of its interceptors.)
	 */
	WAIT_FOR(atomic_load(&v->cancel_sent));
	pthread_testcancel();
	CHECK_FAIL_("call %d: the pending cancel was not acted on", v->call);
	pthread_cleanup_pop(0);
	return NULL;
}

static void victim_start_timed(struct victim *v, enum call call, struct cpuhp_rwsem *sem,
                               struct cpuhp_rcu_sync *rss, unsigned timeout_ms)
{
	*v = (struct victim){.call = call, .sem = sem, .rss = rss, .timeout_ms = timeout_ms};
	CHECK_EQ_INT(pthread_create(&v->tid, NULL, victim_main, v), 0);
}

static void victim_cancel(struct victim *v)
{
	CHECK_EQ_INT(pthread_cancel(v->tid), 0);
	atomic_store(&v->cancel_sent, 1);
}

/* Timed calls get a minute: they must return because the test let them, not time out. */
static void victim_start(struct victim *v, enum call call, struct cpuhp_rwsem *sem,
                         struct cpuhp_rcu_sync *rss)
{
	victim_start_timed(v, call, sem, rss, 60000);
}

/* After the test let the call go on: the victim ends through its cleanup handler. */
static void victim_join(struct victim *v)
{
	void *ret = NULL;

	CHECK_EQ_INT(pthread_join(v->tid, &ret), 0);
	CHECK(ret == PTHREAD_CANCELED);
	CHECK(atomic_load(&v->cleaned));
}

/* ---- the lock works afterwards, for threads that were not involved */

static void *use_rwsem(void *p)
{
	struct cpuhp_rwsem *sem = p;

	cpuhp_rwsem_read_lock(sem);
	cpuhp_rwsem_read_unlock(sem);
	CHECK(cpuhp_rwsem_read_trylock(sem));
	cpuhp_rwsem_read_unlock(sem);
	cpuhp_rwsem_write_lock(sem);
	cpuhp_rwsem_write_unlock(sem);
	CHECK_EQ_INT(cpuhp_rwsem_write_lock_timeout(sem, 10000), 0);
	cpuhp_rwsem_write_unlock(sem);
	return NULL;
}

static void check_usable(struct cpuhp_rwsem *sem)
{
	pthread_t tid;

	CHECK_EQ_INT(pthread_create(&tid, NULL, use_rwsem, sem), 0);
	CHECK_EQ_INT(pthread_join(tid, NULL), 0);
	use_rwsem(sem);
	CHECK_EQ_INT(lw_readers(sem), 0);
	CHECK(!lw_blocked(sem));
	CHECK_EQ_INT(lw_readers_waiting(sem), 0);
	CHECK_EQ_INT(lw_writers_queued(sem), 0);
}

static void *use_hotplug(void *p)
{
	(void)p;
	cpuhp_get_online_cpus();
	cpuhp_get_online_cpus();
	cpuhp_put_online_cpus();
	cpuhp_put_online_cpus();
	cpuhp_hotplug_begin();
	cpuhp_hotplug_done();
	CHECK_EQ_INT(cpuhp_hotplug_begin_timeout(10000), 0);
	cpuhp_hotplug_done();
	return NULL;
}

static void check_hotplug_usable(void)
{
	pthread_t tid;

	CHECK_EQ_INT(pthread_create(&tid, NULL, use_hotplug, NULL), 0);
	CHECK_EQ_INT(pthread_join(tid, NULL), 0);
	check_usable(cpuhp_hotplug_lock());
}

static struct cpuhp_rwsem *new_sem(void)
{
	struct cpuhp_rwsem *sem = NULL;

	CHECK_EQ_INT(cpuhp_rwsem_new(&sem), 0);
	return sem;
}

/* ---- cases */

/* @call blocks behind the test's write lock until the test, after the cancel, unlocks. */
static void cancel_behind_writer(enum call call)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct victim v;

	cpuhp_rwsem_write_lock(sem);
	victim_start(&v, call, sem, NULL);
	if (call == CALL_READ_LOCK)
		WAIT_FOR(lw_readers_waiting(sem) == 1);
	else
		WAIT_FOR(lw_writers_queued(sem) == 1);
	victim_cancel(&v);
	cpuhp_rwsem_write_unlock(sem);
	victim_join(&v);
	check_usable(sem);
	cpuhp_rwsem_free(sem);
}

static void cancel_read_lock_behind_writer_acts_after_it_returns(void)
{
	cancel_behind_writer(CALL_READ_LOCK);
}

static void cancel_write_lock_queued_behind_writer_acts_after_it_returns(void)
{
	cancel_behind_writer(CALL_WRITE_LOCK);
}

static void cancel_write_lock_timeout_queued_behind_writer_acts_after_it_returns(void)
{
	cancel_behind_writer(CALL_WRITE_LOCK_TIMEOUT);
}

/* The cancel waits for the timeout too: the call returns -ETIMEDOUT, then it acts. */
static void cancel_write_lock_timeout_that_times_out_acts_after_it_returns(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct victim v;

	cpuhp_rwsem_write_lock(sem);
	victim_start_timed(&v, CALL_WRITE_LOCK_TIMEOUT, sem, NULL, 50);
	WAIT_FOR(lw_writers_queued(sem) == 1 || atomic_load(&v.returned));
	victim_cancel(&v);
	victim_join(&v); /* the test's write lock is held all along */
	CHECK_EQ_INT(v.result, -ETIMEDOUT);
	cpuhp_rwsem_write_unlock(sem);
	check_usable(sem);
	cpuhp_rwsem_free(sem);
}

/* Waiting for a reader to leave: a futex wait, never a cancellation point either. */
static void cancel_write_lock_draining_readers_acts_after_it_returns(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct victim v;

	cpuhp_rwsem_read_lock(sem);
	victim_start(&v, CALL_WRITE_LOCK, sem, NULL);
	WAIT_FOR(lw_writer_draining(sem));
	victim_cancel(&v);
	cpuhp_rwsem_read_unlock(sem);
	victim_join(&v);
	check_usable(sem);
	cpuhp_rwsem_free(sem);
}

/* Before: the thread exited holding it, and the key destructor aborted the process. */
static void cancel_get_online_cpus_behind_hotplug_acts_after_it_returns(void)
{
	struct cpuhp_rwsem *hp = cpuhp_hotplug_lock();
	struct victim v;

	cpuhp_hotplug_begin();
	victim_start(&v, CALL_GET_ONLINE_CPUS, NULL, NULL);
	WAIT_FOR(lw_readers_waiting(hp) == 1);
	victim_cancel(&v);
	cpuhp_hotplug_done();
	victim_join(&v);
	check_hotplug_usable();
}

static void cancel_hotplug_begin_queued_behind_hotplug_acts_after_it_returns(void)
{
	struct cpuhp_rwsem *hp = cpuhp_hotplug_lock();
	struct victim v;

	cpuhp_hotplug_begin();
	victim_start(&v, CALL_HOTPLUG_BEGIN, NULL, NULL);
	WAIT_FOR(lw_writers_queued(hp) == 1);
	victim_cancel(&v);
	cpuhp_hotplug_done();
	victim_join(&v);
	check_hotplug_usable();
}

static void cancel_hotplug_begin_timeout_draining_readers_acts_after_it_returns(void)
{
	struct cpuhp_rwsem *hp = cpuhp_hotplug_lock();
	struct victim v;

	cpuhp_get_online_cpus();
	victim_start(&v, CALL_HOTPLUG_BEGIN_TIMEOUT, NULL, NULL);
	WAIT_FOR(lw_writer_draining(hp));
	victim_cancel(&v);
	cpuhp_put_online_cpus();
	victim_join(&v);
	check_hotplug_usable();
}

/*
 * Two enters of a standalone rcu_sync while a reader section holds off the
 * grace period: the first waits in synchronize_rcu() (liburcu may poll()
 * there), the second on the object's condition variable for the first.
 * Both are cancelled; both must come out entered.
 */
static void cancel_rcu_sync_enter_behind_another_enter_acts_after_it_returns(void)
{
	struct cpuhp_rcu_sync *rss = NULL;
	struct lw_rcu_holder holder;
	struct victim first, second;

	CHECK_EQ_INT(cpuhp_rcu_sync_new(&rss), 0);
	lw_rcu_hold(&holder);
	victim_start(&first, CALL_RCU_SYNC_ENTER, NULL, rss);
	WAIT_FOR(lw_gp_state(rss) == CPUHP__GP_ENTER);
	victim_start(&second, CALL_RCU_SYNC_ENTER, NULL, rss);
	WAIT_FOR(lw_gp_count(rss) == 2);
	victim_cancel(&first);
	victim_cancel(&second);
	lw_rcu_release(&holder);
	victim_join(&first);
	victim_join(&second);
	CHECK_EQ_INT(lw_gp_count(rss), 0);
	cpuhp_rcu_sync_enter(rss);
	CHECK(!cpuhp_rcu_sync_is_idle(rss));
	cpuhp_rcu_sync_exit(rss);
	lw_wait_idle(rss);
	cpuhp_rcu_sync_free(rss);
}

static unsigned long destroy_waits(struct cpuhp_rcu_sync *rss)
{
	unsigned long n;

	cpuhp__futex_lock(&rss->lock);
	n = rss->nr_destroy_waits;
	cpuhp__futex_unlock(&rss->lock);
	return n;
}

/* Free waits for the return to IDLE, which a parked reader section holds off. */
static void cancel_rcu_sync_free_waiting_for_idle_acts_after_it_returns(void)
{
	struct cpuhp_rcu_sync *rss = NULL, *other = NULL;
	struct lw_rcu_holder holder;
	struct victim v;

	CHECK_EQ_INT(cpuhp_rcu_sync_new(&rss), 0);
	cpuhp_rcu_sync_enter(rss);
	lw_rcu_hold(&holder);
	cpuhp_rcu_sync_exit(rss); /* EXIT: its callback waits for the holder */
	victim_start(&v, CALL_RCU_SYNC_FREE, NULL, rss);
	WAIT_FOR(destroy_waits(rss) == 1);
	victim_cancel(&v);
	lw_rcu_release(&holder);
	victim_join(&v);
	/* The library's rcu_sync machinery still works. */
	CHECK_EQ_INT(cpuhp_rcu_sync_new(&other), 0);
	cpuhp_rcu_sync_enter(other);
	cpuhp_rcu_sync_exit(other);
	cpuhp_rcu_sync_free(other);
}

/*
 * The same wait inside cpuhp_rwsem_free(), with the callback (RCU readers)
 * held off.  With membarrier readers free never waits: it ends the
 * lingering exit itself.
 */
static void cancel_rwsem_free_waiting_for_idle_acts_after_it_returns(void)
{
	struct cpuhp_rwsem *sem = new_sem(), *other;
	struct lw_rcu_holder holder;
	struct victim v;

	if (cpuhp__asym_fence) {
		printf("# SKIP: with membarrier readers cpuhp_rwsem_free() never waits (it ends "
		       "the lingering exit), so there is no wait to cancel; cancel-rcu-readers "
		       "runs this case\n");
		cpuhp_rwsem_write_lock(sem);
		cpuhp_rwsem_write_unlock(sem);
		CHECK_EQ_INT(lw_gp_state(&sem->rss), CPUHP__GP_LINGER);
		cpuhp_rwsem_free(sem);
		return;
	}
	cpuhp_rwsem_write_lock(sem);
	lw_rcu_hold(&holder);
	cpuhp_rwsem_write_unlock(sem);
	victim_start(&v, CALL_RWSEM_FREE, sem, NULL);
	WAIT_FOR(destroy_waits(&sem->rss) == 1);
	victim_cancel(&v);
	lw_rcu_release(&holder);
	victim_join(&v);
	other = new_sem();
	check_usable(other);
	cpuhp_rwsem_free(other);
}

/*
 * fork() with a cancel pending: our fork handlers wait in liburcu's
 * pausing of its call_rcu workers (poll(), a cancellation point).  Acted
 * on there, the cancel unwound out of fork() with the handlers' locks
 * held.  Once a standalone rcu_sync's exit has gone through call_rcu(),
 * liburcu has a worker to pause.
 */
static void cancel_pending_at_fork_acts_after_fork_returns(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct cpuhp_rcu_sync *rss = NULL;
	struct victim v;
	int status = -1;

	CHECK_EQ_INT(cpuhp_rcu_sync_new(&rss), 0);
	cpuhp_rcu_sync_enter(rss);
	cpuhp_rcu_sync_exit(rss);
	lw_wait_idle(rss);
	cpuhp_rcu_sync_free(rss);
	victim_start(&v, CALL_FORK, sem, NULL);
	WAIT_FOR(atomic_load(&v.returned) == -1);
	victim_cancel(&v);
	victim_join(&v);
	CHECK_EQ_INT(waitpid(v.result, &status, 0), v.result);
	CHECK(WIFEXITED(status));
	CHECK_EQ_INT(WEXITSTATUS(status), 0);
	/* And the parent's: its fork handlers let go of everything. */
	check_usable(sem);
	CHECK_EQ_INT(cpuhp_rcu_sync_new(&rss), 0);
	cpuhp_rcu_sync_enter(rss);
	cpuhp_rcu_sync_exit(rss);
	cpuhp_rcu_sync_free(rss);
	cpuhp_rwsem_free(sem);
}

/* The system call thread @tid is blocked in (from /proc), or -1. */
static long blocked_in_syscall(pid_t tid)
{
	char path[64], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return buf[0] >= '0' && buf[0] <= '9' ? strtol(buf, NULL, 10) : -1;
}

/*
 * open() and read() are cancellation points, and a cancel acted on inside
 * the sysfs readers would leak the descriptor.  cpu1/online is a FIFO here,
 * so the reader's open() blocks until the test opens the other end.
 */
static void cancel_sysfs_read_online_blocked_in_open_acts_after_it_returns(void)
{
	char root[] = "/tmp/test-cancel-sysfs-XXXXXX", path[256];
	struct victim v;
	int fd;

	CHECK(mkdtemp(root) != NULL);
	snprintf(path, sizeof(path), "%s/devices", root);
	CHECK_EQ_INT(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/devices/system", root);
	CHECK_EQ_INT(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/devices/system/cpu", root);
	CHECK_EQ_INT(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu1", root);
	CHECK_EQ_INT(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu1/online", root);
	CHECK_EQ_INT(mkfifo(path, 0600), 0);
	v = (struct victim){.call = CALL_SYSFS_READ_ONLINE, .root = root};
	CHECK_EQ_INT(pthread_create(&v.tid, NULL, victim_main, &v), 0);
	/* Asleep in openat(): the FIFO waits for a writer, us. */
	WAIT_FOR(atomic_load(&v.tid_nr) &&
	         blocked_in_syscall(atomic_load(&v.tid_nr)) == SYS_openat);
	victim_cancel(&v);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_EQ_INT(write(fd, "1\n", 2), 2);
	close(fd);
	victim_join(&v);
	CHECK_EQ_INT(unlink(path), 0);
	for (int i = 0; i < 4; i++) {
		*strrchr(path, '/') = 0;
		CHECK_EQ_INT(rmdir(path), 0);
	}
	CHECK_EQ_INT(rmdir(root), 0);
}

/* One case by name (argv[1]), or all. */
#define RUN_CASE(fn)                                                                               \
	do {                                                                                       \
		if (!only || !strcmp(only, #fn))                                                   \
			RUN_TEST(fn);                                                              \
	} while (0)

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;

	RUN_CASE(cancel_read_lock_behind_writer_acts_after_it_returns);
	RUN_CASE(cancel_write_lock_queued_behind_writer_acts_after_it_returns);
	RUN_CASE(cancel_write_lock_timeout_queued_behind_writer_acts_after_it_returns);
	RUN_CASE(cancel_write_lock_timeout_that_times_out_acts_after_it_returns);
	RUN_CASE(cancel_write_lock_draining_readers_acts_after_it_returns);
	RUN_CASE(cancel_get_online_cpus_behind_hotplug_acts_after_it_returns);
	RUN_CASE(cancel_hotplug_begin_queued_behind_hotplug_acts_after_it_returns);
	RUN_CASE(cancel_hotplug_begin_timeout_draining_readers_acts_after_it_returns);
	RUN_CASE(cancel_rcu_sync_enter_behind_another_enter_acts_after_it_returns);
	RUN_CASE(cancel_rcu_sync_free_waiting_for_idle_acts_after_it_returns);
	RUN_CASE(cancel_rwsem_free_waiting_for_idle_acts_after_it_returns);
	RUN_CASE(cancel_pending_at_fork_acts_after_fork_returns);
	RUN_CASE(cancel_sysfs_read_online_blocked_in_open_acts_after_it_returns);
	return 0;
}
