/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fork() support.  Precondition (documented in rwsem.h): no writer is active.
 * The same rule holds for a standalone rcu_sync (rcu_sync.h): the child
 * inherits its count, and enters of threads that are gone stay counted
 * (free forgives them), but it is never caught mid-transition: its ->lock
 * is held across the fork.
 *
 * Before the fork, wait for the grace periods the library's threads are
 * waiting and keep new ones from starting (defer.c's gp_lock: liburcu
 * holds its grace-period and registry mutexes through one, and has no fork
 * handlers for them), pause liburcu's call_rcu workers (so none is
 * half-way through a callback) and take the registry lock (so no thread is
 * half-way through registering with liburcu or with us).  In the child only the
 * forking thread exists: forget the others (marking their liburcu reader
 * records quiescent, or the child's first grace period would wait for dead
 * threads forever), reset every lock's waiter bookkeeping, mutexes and
 * condition variables (another thread may have been queued, let in but not
 * yet counted, or inside a mutex), and restart the call_rcu workers, which
 * carry over any rcu_sync callback pending at the fork; callbacks still
 * queued for defer.c's timer thread (which the child lacks) go to them.
 */
#include <pthread.h>
#include <string.h>

#include "internal.h"

/*
 * The forking thread's cancel state, kept from prepare to parent or child.
 * liburcu's pausing and resuming of its workers wait in poll(), a
 * cancellation point: a cancel pending at fork() and acted on there would
 * unwind out of glibc's fork with defer.c's lock and the workers' pause
 * held, and every later fork, exit or call_rcu() would hang (internal.h's
 * rule).  Written and read only with defer.c's lock held, which serialises
 * forks.
 */
static int fork_cancel;

/*
 * defer.c's locks come first: gp_lock, which waits out the grace periods
 * in progress (they wait only for read-side sections, and a fork that
 * waits for gp_lock holds nothing yet), then its queue's lock, so that an
 * exit queued for its timer thread stays queued through the fork (pausing liburcu's workers can
 * take 10 ms, longer than the timer) and the child hands it over.  Nobody waits for anything while
 * holding that lock: rcu_sync queues outside its ->lock, and the timer thread's call_rcu() does not
 * wait for the workers.
 */
static void prepare(void)
{
	int cancel = cpuhp__cancel_off();

	cpuhp__defer_before_fork();
	fork_cancel = cancel;
	urcu_memb_call_rcu_before_fork();
	/* After the workers paused: a callback in progress takes ->lock. */
	cpuhp__rcu_sync_before_fork();
	cpuhp__registry_lock();
}

static void parent(void)
{
	int cancel = fork_cancel;

	cpuhp__registry_unlock();
	cpuhp__rcu_sync_after_fork_parent();
	urcu_memb_call_rcu_after_fork_parent();
	cpuhp__defer_after_fork_parent();
	cpuhp__cancel_restore(cancel);
}

static void counter_after_fork_child(struct cpuhp__pcount *pc)
{
	cpuhp__rwsem_after_fork_child(cpuhp__container_of(pc, struct cpuhp_rwsem, readers));
}

static void child(void)
{
	int cancel = fork_cancel;

	/* membarrier registration may not carry over; only we run now. */
	cpuhp__membarrier_after_fork_child();
	cpuhp__registry_forget_others();
	cpuhp__registry_for_each_counter(counter_after_fork_child);
	cpuhp__registry_unlock();
	cpuhp__rcu_sync_after_fork_child();
	urcu_memb_call_rcu_after_fork_child();
	/* Exits queued for the parent's timer thread: call_rcu() them here. */
	cpuhp__defer_after_fork_child();
	/* And those a gone thread was about to queue. */
	cpuhp__rcu_sync_requeue_after_fork_child();
	cpuhp__cancel_restore(cancel);
}

void cpuhp__fork_init(void)
{
	int err = pthread_atfork(prepare, parent, child);

	CPUHP_BUG_ON(err, "libcpuhp", "pthread_atfork failed: %s", strerror(err));
}
