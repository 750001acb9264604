/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <cpuhp/rwsem-inline.h>: the inline reader path counts like the library's,
 * is seen by writers, falls back to the library while a writer is around,
 * and mixes with the library's calls.  Linked against the library built
 * without debug checks, where the inline path is live.
 */
#include <pthread.h>
#include <stdio.h>

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

static void writer_waits_for_inline_reader_and_its_unlock_wakes_it(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	pthread_t w;

	sem_init(&writer_in, 0, 0);
	cpuhp_rwsem_read_lock_inline(sem);
	pthread_create(&w, NULL, writer, sem);
	WAIT_FOR(lw_writer_draining(sem));
	CHECK_EQ_INT(sem_trywait(&writer_in), -1);
	cpuhp_rwsem_read_unlock_inline(sem); /* sees a writer coming: wakes it */
	sem_wait(&writer_in);
	pthread_join(w, NULL);
	cpuhp_rwsem_free(sem);
}

static sem_t reader_in;

static void *inline_reader(void *p)
{
	cpuhp_rwsem_read_lock(p); /* slot for this thread */
	cpuhp_rwsem_read_unlock(p);
	cpuhp_rwsem_read_lock_inline(p);
	sem_post(&reader_in);
	cpuhp_rwsem_read_unlock_inline(p);
	return NULL;
}

static void inline_reader_waits_while_writer_holds(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	pthread_t r;

	sem_init(&reader_in, 0, 0);
	cpuhp_rwsem_write_lock(sem);
	pthread_create(&r, NULL, inline_reader, sem);
	WAIT_FOR(lw_readers_waiting(sem) == 1); /* backed out and queued */
	CHECK_EQ_INT(sem_trywait(&reader_in), -1);
	cpuhp_rwsem_write_unlock(sem);
	sem_wait(&reader_in);
	pthread_join(r, NULL);
	CHECK_EQ_INT(lw_readers(sem), 0);
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
	RUN_TEST(writer_waits_for_inline_reader_and_its_unlock_wakes_it);
	RUN_TEST(inline_reader_waits_while_writer_holds);
	return 0;
}
