/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <cpuhp/rwsem-inline.h>: the inline reader path counts like the library's,
 * is seen by writers, falls back to the library while a writer is around,
 * and mixes with the library's calls.  Linked against the library built
 * without debug checks, where the inline path is live.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cpuhp/rcu_sync.h>
#include <cpuhp/rwsem-inline.h>

#include "check.h"
#include "lockwatch.h"

static struct cpuhp_rwsem *new_sem(void)
{
	struct cpuhp_rwsem *sem = NULL;

	CHECK_EQ_INT(cpuhp_rwsem_new(&sem), 0);
	/* First use on this thread goes through the library: slot allocated. */
	cpuhp_rwsem_read_lock(sem);
	cpuhp_rwsem_read_unlock(sem);
	return sem;
}

static void inline_readers_count_in_their_slot_without_leaving_idle(void)
{
	struct cpuhp_rwsem *sem = new_sem();

	CHECK(cpuhp__inline_slot(sem) != NULL);
	cpuhp_rwsem_read_lock_inline(sem);
	cpuhp_rwsem_read_lock_inline(sem);
	CHECK_EQ_INT(lw_readers(sem), 2);
	cpuhp_rwsem_read_unlock(sem); /* mixed: inline lock, library unlock */
	cpuhp_rwsem_read_unlock_inline(sem);
	CHECK_EQ_INT(lw_readers(sem), 0);
	CHECK_EQ_INT(lw_gp_syncs(&sem->rss), 0);
	cpuhp_rwsem_free(sem);
}

static sem_t writer_in;

static void *writer(void *p)
{
	cpuhp_rwsem_write_lock(p);
	sem_post(&writer_in);
	cpuhp_rwsem_write_unlock(p);
	return NULL;
}

/* The two inline paths: the lock's own, and a reader handle (got afresh: same slot). */
enum path { BY_LOCK, BY_HANDLE };

static void path_lock(enum path p, struct cpuhp_rwsem *sem)
{
	if (p == BY_HANDLE)
		cpuhp_rwsem_reader_lock(cpuhp_rwsem_reader_get(sem));
	else
		cpuhp_rwsem_read_lock_inline(sem);
}

static void path_unlock(enum path p, struct cpuhp_rwsem *sem)
{
	if (p == BY_HANDLE)
		cpuhp_rwsem_reader_unlock(cpuhp_rwsem_reader_get(sem));
	else
		cpuhp_rwsem_read_unlock_inline(sem);
}

static void writer_waits_for_inline_reader_and_its_unlock_wakes_it(enum path p)
{
	struct cpuhp_rwsem *sem = new_sem();
	pthread_t w;

	sem_init(&writer_in, 0, 0);
	path_lock(p, sem);
	pthread_create(&w, NULL, writer, sem);
	WAIT_FOR(lw_writer_draining(sem));
	CHECK_EQ_INT(sem_trywait(&writer_in), -1);
	path_unlock(p, sem); /* sees a writer coming: wakes it */
	sem_wait(&writer_in);
	pthread_join(w, NULL);
	cpuhp_rwsem_free(sem);
}

static sem_t reader_in;

struct reader_arg {
	struct cpuhp_rwsem *sem;
	enum path path;
};

static void *inline_reader(void *p)
{
	struct reader_arg *a = p;

	cpuhp_rwsem_read_lock(a->sem); /* slot for this thread */
	cpuhp_rwsem_read_unlock(a->sem);
	path_lock(a->path, a->sem);
	sem_post(&reader_in);
	path_unlock(a->path, a->sem);
	return NULL;
}

static void inline_reader_waits_while_writer_holds(enum path p)
{
	struct reader_arg a = {.sem = new_sem(), .path = p};
	pthread_t r;

	sem_init(&reader_in, 0, 0);
	cpuhp_rwsem_write_lock(a.sem);
	pthread_create(&r, NULL, inline_reader, &a);
	WAIT_FOR(lw_readers_waiting(a.sem) == 1); /* backed out and queued */
	CHECK_EQ_INT(sem_trywait(&reader_in), -1);
	cpuhp_rwsem_write_unlock(a.sem);
	sem_wait(&reader_in);
	pthread_join(r, NULL);
	CHECK_EQ_INT(lw_readers(a.sem), 0);
	cpuhp_rwsem_free(a.sem);
}

static void writer_waits_for_each_inline_reader_and_its_unlock_wakes_it(void)
{
	writer_waits_for_inline_reader_and_its_unlock_wakes_it(BY_LOCK);
	writer_waits_for_inline_reader_and_its_unlock_wakes_it(BY_HANDLE);
}

static void each_inline_reader_waits_while_writer_holds(void)
{
	inline_reader_waits_while_writer_holds(BY_LOCK);
	inline_reader_waits_while_writer_holds(BY_HANDLE);
}

/*
 * After a writer, rcu_sync stays out of IDLE until its lingering exit ends
 * (held here): inline locks then continue into the
 * library (A, ->block) with their increment standing, and inline unlocks
 * the K path.  The counts stay exact.
 */
static void inline_paths_while_a_writer_just_left_go_through_the_library(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct lw_rcu_holder h;

	lw_rcu_hold(&h);
	cpuhp__rcu_sync_linger_hold(&sem->rss); /* the inline path runs with H: it lingers */
	cpuhp_rwsem_write_lock(sem);
	cpuhp_rwsem_write_unlock(sem);
	CHECK(lw_gp_state(&sem->rss) != CPUHP__GP_IDLE); /* LINGER until released */
	for (int i = 0; i < 1000; i++) {
		struct cpuhp_rwsem_reader r = cpuhp_rwsem_reader_get(sem);

		cpuhp_rwsem_read_lock_inline(sem);
		cpuhp_rwsem_reader_lock(r);
		CHECK_EQ_INT(lw_readers(sem), 2);
		cpuhp_rwsem_read_unlock_inline(sem);
		cpuhp_rwsem_reader_unlock(r);
		CHECK_EQ_INT(lw_readers(sem), 0);
	}
	CHECK(lw_gp_state(&sem->rss) != CPUHP__GP_IDLE);
	cpuhp__rcu_sync_linger_release(&sem->rss);
	lw_rcu_release(&h);
	lw_wait_idle(&sem->rss);
	cpuhp_rwsem_free(sem);
}

/* Locks past the first 64 live in a chunk the inline path does not cache. */
static void inline_path_falls_back_to_the_library_past_the_first_64_locks(void)
{
	struct cpuhp_rwsem *sems[70];

	for (int i = 0; i < 70; i++)
		sems[i] = new_sem();
	CHECK(cpuhp__inline_slot(sems[0]) != NULL);
	CHECK(cpuhp__inline_slot(sems[69]) == NULL);
	for (int i = 0; i < 70; i++) {
		cpuhp_rwsem_read_lock_inline(sems[i]);
		CHECK_EQ_INT(lw_readers(sems[i]), 1);
	}
	for (int i = 0; i < 70; i++) {
		cpuhp_rwsem_read_unlock_inline(sems[i]);
		CHECK_EQ_INT(lw_readers(sems[i]), 0);
		cpuhp_rwsem_free(sems[i]);
	}
}

/* A handle counts in this thread's slot, for the first 64 locks and past them. */
static void reader_handle_counts_in_this_threads_slot_for_any_lock(void)
{
	struct cpuhp_rwsem *sems[70];

	for (int i = 0; i < 70; i++)
		sems[i] = new_sem();
	for (int i = 0; i < 70; i += 69) {
		struct cpuhp_rwsem_reader r = cpuhp_rwsem_reader_get(sems[i]);

		CHECK(r.count != NULL);
		CHECK(r.count == (long *)(void *)cpuhp__slot_lookup(&sems[i]->readers));
		for (int k = 0; k < 3; k++)
			cpuhp_rwsem_reader_lock(r);
		CHECK_EQ_INT(lw_readers(sems[i]), 3);
		cpuhp_rwsem_read_unlock(sems[i]); /* mixed: handle lock, library unlock */
		cpuhp_rwsem_reader_unlock(r);
		cpuhp_rwsem_read_unlock_inline(sems[i]);
		CHECK_EQ_INT(lw_readers(sems[i]), 0);
		CHECK_EQ_INT(lw_gp_state(&sems[i]->rss), CPUHP__GP_IDLE);
	}
	for (int i = 0; i < 70; i++)
		cpuhp_rwsem_free(sems[i]);
}

/*
 * The forking thread's handle still works in the child (the child keeps the
 * parent's membarrier mode): a reader through it holds off a writer there.
 */
CHECK_TSAN_SKIPS static void reader_handle_keeps_working_in_a_fork_child(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct cpuhp_rwsem_reader r = cpuhp_rwsem_reader_get(sem);
	int status;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		int held, free_again;

		cpuhp_rwsem_reader_lock(r);
		held = cpuhp_rwsem_write_lock_timeout(sem, 50);
		cpuhp_rwsem_reader_unlock(r);
		free_again = cpuhp_rwsem_write_lock_timeout(sem, 5000);
		if (!free_again)
			cpuhp_rwsem_write_unlock(sem);
		_exit(held == -ETIMEDOUT && free_again == 0 ? 0 : 1);
	}
	CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ_INT(WEXITSTATUS(status), 0);
	lw_wait_idle(&sem->rss);
	cpuhp_rwsem_free(sem);
}

int main(void)
{
	if (!cpuhp__inline_ok) {
		/* Only without membarrier (or CPUHP_NO_MEMBARRIER set): say so. */
		printf("SKIP: the inline path is off here (no membarrier); nothing to test\n");
		return 77;
	}
	RUN_TEST(inline_readers_count_in_their_slot_without_leaving_idle);
	RUN_TEST(writer_waits_for_each_inline_reader_and_its_unlock_wakes_it);
	RUN_TEST(each_inline_reader_waits_while_writer_holds);
	RUN_TEST(inline_paths_while_a_writer_just_left_go_through_the_library);
	RUN_TEST(inline_path_falls_back_to_the_library_past_the_first_64_locks);
	RUN_TEST(reader_handle_counts_in_this_threads_slot_for_any_lock);
#ifdef CHECK_UNDER_TSAN
	printf("# SKIP reader_handle_keeps_working_in_a_fork_child: ThreadSanitizer does not "
	       "support threads started after a multi-threaded fork\n");
#else
	RUN_TEST(reader_handle_keeps_working_in_a_fork_child);
#endif
	return 0;
}
