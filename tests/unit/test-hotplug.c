/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The process-wide hotplug lock: recursion of cpuhp_get_online_cpus() while
 * a writer waits, begin/done pairs, and the timed begin.
 */
#include <errno.h>
#include <pthread.h>

#include <cpuhp/hotplug.h>
#include <cpuhp/rwsem.h>

#include "check.h"
#include "lockwatch.h"

static sem_t step, writer_in;
static _Atomic int writer_done;

static void *writer(void *p)
{
	cpuhp_hotplug_begin();
	sem_post(&writer_in);
	cpuhp_hotplug_done();
	atomic_store(&writer_done, 1);
	return NULL;
}

static void hotplug_nested_get_does_not_wait_behind_waiting_writer(void)
{
	struct cpuhp_rwsem *sem = cpuhp_hotplug_lock();
	pthread_t w;

	sem_init(&writer_in, 0, 0);
	cpuhp_get_online_cpus();
	pthread_create(&w, NULL, writer, NULL);
	WAIT_FOR(lw_writer_draining(sem)); /* it waits for our outer get */
	cpuhp_get_online_cpus();           /* nested: must not queue behind it */
	cpuhp_get_online_cpus();
	CHECK_EQ_INT(lw_readers(sem), 1); /* only the outermost get counts */
	cpuhp_put_online_cpus();
	cpuhp_put_online_cpus();
	CHECK_EQ_INT(sem_trywait(&writer_in), -1); /* still held by the outer get */
	cpuhp_put_online_cpus();
	sem_wait(&writer_in);
	pthread_join(w, NULL);
	CHECK(writer_done);
}

static void hotplug_begin_done_pairs_exclude_each_other(void)
{
	for (int i = 0; i < 100; i++) {
		cpuhp_hotplug_begin();
		CHECK(!cpuhp_rwsem_read_trylock(cpuhp_hotplug_lock()));
		cpuhp_hotplug_done();
	}
	cpuhp_get_online_cpus();
	cpuhp_put_online_cpus();
}

static void *reader_holding(void *p)
{
	cpuhp_get_online_cpus();
	sem_post(&step);
	sem_wait(p);
	cpuhp_put_online_cpus();
	return NULL;
}

static void hotplug_begin_timeout_gives_up_and_leaves_readers_alone(void)
{
	sem_t release;
	pthread_t r;

	sem_init(&step, 0, 0);
	sem_init(&release, 0, 0);
	pthread_create(&r, NULL, reader_holding, &release);
	sem_wait(&step);
	CHECK_EQ_INT(cpuhp_hotplug_begin_timeout(20), -ETIMEDOUT);
	CHECK(!lw_blocked(cpuhp_hotplug_lock()));
	/* New readers get in at once after the failed begin. */
	CHECK(cpuhp_rwsem_read_trylock(cpuhp_hotplug_lock()));
	cpuhp_rwsem_read_unlock(cpuhp_hotplug_lock());
	sem_post(&release);
	pthread_join(r, NULL);
	CHECK_EQ_INT(cpuhp_hotplug_begin_timeout(5000), 0);
	cpuhp_hotplug_done();
}

int main(void)
{
	RUN_TEST(hotplug_nested_get_does_not_wait_behind_waiting_writer);
	RUN_TEST(hotplug_begin_done_pairs_exclude_each_other);
	RUN_TEST(hotplug_begin_timeout_gives_up_and_leaves_readers_alone);
	return 0;
}
