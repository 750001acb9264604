/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The consistency check every design passes before it is timed: two
 * readers and two writers hammer the lock; a pair of values written only
 * under the write lock must never be seen unequal or changing inside a read
 * section, no reader may be inside while a writer is, and writers exclude
 * each other.  It proves the benchmark times locks that work.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "bench-driver.h"

struct check {
	const struct bench_lock_ops *ops;
	void *lock;
	unsigned writes_each;
	_Atomic unsigned long a, b; /* a == b outside write sections */
	_Atomic int readers_inside;
	_Atomic int writers_inside;
	_Atomic unsigned long violations;
	_Atomic unsigned long reads;
	_Atomic int writers_left;
	pthread_barrier_t start;
};

static void spin(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		__builtin_ia32_pause();
}

static void *check_reader(void *p)
{
	struct check *c = p;
	unsigned long reads = 0;

	if (c->ops->thread_init)
		c->ops->thread_init(c->lock);
	pthread_barrier_wait(&c->start);
	/* Read at least a little even if the writers are already done. */
	while (atomic_load(&c->writers_left) || reads < 1000) {
		unsigned long a1, b1, a2;

		c->ops->read_lock(c->lock);
		atomic_fetch_add(&c->readers_inside, 1);
		if (atomic_load(&c->writers_inside))
			atomic_fetch_add(&c->violations, 1);
		a1 = atomic_load_explicit(&c->a, memory_order_relaxed);
		b1 = atomic_load_explicit(&c->b, memory_order_relaxed);
		spin(20);
		a2 = atomic_load_explicit(&c->a, memory_order_relaxed);
		if (a1 != b1 || a1 != a2)
			atomic_fetch_add(&c->violations, 1);
		atomic_fetch_sub(&c->readers_inside, 1);
		c->ops->read_unlock(c->lock);
		reads++;
		/*
		 * Gaps between read sections, as real readers have: without
		 * them design 1's writer can wait seconds for a zero count.
		 */
		spin(100);
	}
	atomic_fetch_add(&c->reads, reads);
	if (c->ops->thread_fini)
		c->ops->thread_fini(c->lock);
	return NULL;
}

static void *check_writer(void *p)
{
	struct check *c = p;

	if (c->ops->thread_init)
		c->ops->thread_init(c->lock);
	pthread_barrier_wait(&c->start);
	for (unsigned i = 0; i < c->writes_each; i++) {
		c->ops->write_lock(c->lock);
		if (atomic_fetch_add(&c->writers_inside, 1) || atomic_load(&c->readers_inside))
			atomic_fetch_add(&c->violations, 1);
		atomic_fetch_add_explicit(&c->a, 1, memory_order_relaxed);
		/* Widen the window in which a reader could see a != b. */
		spin(200);
		atomic_fetch_add_explicit(&c->b, 1, memory_order_relaxed);
		if (atomic_load(&c->readers_inside))
			atomic_fetch_add(&c->violations, 1);
		atomic_fetch_sub(&c->writers_inside, 1);
		c->ops->write_unlock(c->lock);
		/* Let readers in between writers, as real writers do. */
		spin(2000);
	}
	atomic_fetch_sub(&c->writers_left, 1);
	if (c->ops->thread_fini)
		c->ops->thread_fini(c->lock);
	return NULL;
}

int check_design(const struct bench_lock_ops *ops, bool quick)
{
	struct check c = {.ops = ops, .writes_each = quick ? 300 : 2000};
	pthread_t t[4];
	int err;

	if (!ops->write_lock) {
		printf("check %-14s skipped: no writer side\n", ops->name);
		return 0;
	}
	err = ops->init(&c.lock);
	if (err) {
		fprintf(stderr, "check %s: init failed: %d\n", ops->name, err);
		return -1;
	}
	atomic_store(&c.writers_left, 2);
	pthread_barrier_init(&c.start, NULL, 4);
	for (int i = 0; i < 4; i++)
		BENCH_CHECK(-pthread_create(&t[i], NULL, i < 2 ? check_reader : check_writer, &c));
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&c.start);
	ops->fini(c.lock);

	if (atomic_load(&c.violations) || atomic_load(&c.a) != 2ul * c.writes_each ||
	    atomic_load(&c.b) != atomic_load(&c.a)) {
		fprintf(stderr,
		        "check %s: FAILED: %lu violations, a=%lu b=%lu (expected %u each); the "
		        "lock let a reader and a writer (or two writers) in together\n",
		        ops->name, atomic_load(&c.violations), atomic_load(&c.a), atomic_load(&c.b),
		        2 * c.writes_each);
		return -1;
	}
	printf("check %-14s ok: %lu reads, %u writes, no overlap\n", ops->name,
	       atomic_load(&c.reads), 2 * c.writes_each);
	return 0;
}
