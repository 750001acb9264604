/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhp_rwsem: exclusion, writer preference, fairness between writers and
 * the readers they blocked, trylock, the timeout paths, release on another
 * thread, short-lived threads, and fork.
 *
 * Threads are driven step by step with semaphores, and a test moves on when
 * the lock reaches the state it is about (lockwatch.h), never after a sleep.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
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
	return sem;
}

/* ---- actors: a thread that takes a lock, reports, and holds it until told */

enum op { OP_READ, OP_READ_TIMEOUT, OP_WRITE, OP_WRITE_TIMEOUT };

struct actor {
	pthread_t tid;
	struct cpuhp_rwsem *sem;
	enum op op;
	unsigned timeout_ms;
	int result;         /* of a timed lock */
	_Atomic int locked; /* set once the lock is held */
	_Atomic long order; /* position at which it got the lock */
	sem_t go_unlock, done;
};

static _Atomic long acquisitions;

static void *actor_main(void *p)
{
	struct actor *a = p;

	switch (a->op) {
	case OP_READ:
		cpuhp_rwsem_read_lock(a->sem);
		break;
	case OP_READ_TIMEOUT:
		a->result = cpuhp_rwsem_read_lock_timeout(a->sem, a->timeout_ms);
		break;
	case OP_WRITE:
		cpuhp_rwsem_write_lock(a->sem);
		break;
	case OP_WRITE_TIMEOUT:
		a->result = cpuhp_rwsem_write_lock_timeout(a->sem, a->timeout_ms);
		break;
	}
	a->order = atomic_fetch_add(&acquisitions, 1);
	if (a->result) {
		sem_post(&a->done);
		return NULL;
	}
	atomic_store(&a->locked, 1);
	sem_post(&a->done);
	sem_wait(&a->go_unlock);
	if (a->op == OP_READ || a->op == OP_READ_TIMEOUT)
		cpuhp_rwsem_read_unlock(a->sem);
	else
		cpuhp_rwsem_write_unlock(a->sem);
	return NULL;
}

static void actor_start(struct actor *a, struct cpuhp_rwsem *sem, enum op op)
{
	a->sem = sem;
	a->op = op;
	a->result = 0;
	a->locked = 0;
	sem_init(&a->go_unlock, 0, 0);
	sem_init(&a->done, 0, 0);
	pthread_create(&a->tid, NULL, actor_main, a);
}

static void actor_wait_locked(struct actor *a)
{
	sem_wait(&a->done);
}

static void actor_unlock(struct actor *a)
{
	sem_post(&a->go_unlock);
	pthread_join(a->tid, NULL);
}

/* ------------------------------------------------------------------- tests */

static void rwsem_readers_take_fast_path_while_no_writer(void)
{
	struct cpuhp_rwsem *sem = new_sem();

	for (int i = 0; i < 1000; i++) {
		cpuhp_rwsem_read_lock(sem);
		cpuhp_rwsem_read_lock(sem); /* no writer: nesting is fine */
		CHECK_EQ_INT(lw_readers(sem), 2);
		cpuhp_rwsem_read_unlock(sem);
		cpuhp_rwsem_read_unlock(sem);
	}
	CHECK_EQ_INT(lw_readers(sem), 0);
	CHECK_EQ_INT(lw_gp_syncs(&sem->rss), 0); /* never left IDLE */
	CHECK(lw_gp_state(&sem->rss) == CPUHP__GP_IDLE);
	cpuhp_rwsem_free(sem);
}

/*
 * Leaving IDLE: with membarrier the readers use no RCU section (H), so the
 * first writer issues a membarrier and does not wait for a grace period,
 * which a thread parked in a read-side section would hold up for ever.
 * Without membarrier (G) it must wait for that section to end.
 */
static void rwsem_first_writer_fences_with_membarrier_else_waits_a_grace_period(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct lw_rcu_holder h;
	struct actor w;

	lw_rcu_hold(&h);
	actor_start(&w, sem, OP_WRITE);
	if (cpuhp__asym_fence) {
		actor_wait_locked(&w); /* hangs here if enter waited for a period */
		CHECK_EQ_INT(lw_gp_fences(&sem->rss), 1);
		CHECK_EQ_INT(lw_gp_syncs(&sem->rss), 0);
		lw_rcu_release(&h);
	} else {
		WAIT_FOR(lw_gp_syncs(&sem->rss) == 1); /* in synchronize_rcu() */
		CHECK(!w.locked);                      /* the period cannot end while h is inside */
		lw_rcu_release(&h);
		actor_wait_locked(&w);
		CHECK_EQ_INT(lw_gp_fences(&sem->rss), 0);
	}
	actor_unlock(&w);
	lw_wait_idle(&sem->rss);
	cpuhp_rwsem_free(sem);
}

/* The name is copied (the caller's buffer may go) and freed with the lock. */
static void rwsem_new_named_keeps_a_copy_of_its_name(void)
{
	char name[] = "route_lock";
	struct cpuhp_rwsem *sem = NULL, *plain = NULL;

	CHECK_EQ_INT(cpuhp_rwsem_new_named(&sem, name), 0);
	CHECK_EQ_INT(cpuhp_rwsem_new_named(&plain, NULL), 0);
	name[0] = 'X';
	CHECK_EQ_STR(sem->readers.name, "route_lock");
	CHECK_EQ_STR(plain->readers.name, "cpuhp_rwsem");
	cpuhp_rwsem_read_lock(sem);
	cpuhp_rwsem_read_unlock(sem);
	cpuhp_rwsem_free(sem); /* ASan: the copy is freed */
	cpuhp_rwsem_free(plain);
}

/* Where the inline path cannot run, a reader handle makes library calls. */
static void rwsem_reader_handle_goes_through_the_library_where_inline_cannot_run(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct cpuhp_rwsem_reader r = cpuhp_rwsem_reader_get(sem);

	CHECK_EQ_INT(r.count != NULL, cpuhp__inline_ok);
	CHECK(CPUHP_DEBUG || cpuhp__asym_fence || r.count == NULL);
	cpuhp_rwsem_reader_lock(r);
	CHECK_EQ_INT(lw_readers(sem), 1);
	cpuhp_rwsem_reader_unlock(r);
	CHECK_EQ_INT(lw_readers(sem), 0);
	cpuhp_rwsem_free(sem);
}

static void rwsem_writer_excludes_readers_and_writers(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct actor r, w2;

	cpuhp_rwsem_write_lock(sem);
	CHECK(!cpuhp_rwsem_read_trylock(sem));
	actor_start(&r, sem, OP_READ);
	actor_start(&w2, sem, OP_WRITE);
	WAIT_FOR(lw_readers_waiting(sem) == 1 && lw_writers_queued(sem) == 1);
	CHECK(!r.locked && !w2.locked);
	cpuhp_rwsem_write_unlock(sem);
	actor_wait_locked(&r); /* the reader it blocked goes first */
	CHECK(!w2.locked);     /* ...and the next writer waits for it */
	WAIT_FOR(lw_writer_draining(sem));
	actor_unlock(&r);
	actor_wait_locked(&w2);
	CHECK(!cpuhp_rwsem_read_trylock(sem));
	actor_unlock(&w2);
	cpuhp_rwsem_free(sem);
}

static void rwsem_writer_waits_for_readers_inside(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct actor w;

	cpuhp_rwsem_read_lock(sem);
	actor_start(&w, sem, OP_WRITE);
	WAIT_FOR(lw_writer_draining(sem)); /* it holds ->block, sleeps for us */
	CHECK(!w.locked);
	cpuhp_rwsem_read_unlock(sem); /* slow unlock: wakes the writer */
	actor_wait_locked(&w);
	actor_unlock(&w);
	cpuhp_rwsem_free(sem);
}

static void rwsem_writer_preference_blocks_new_readers_while_old_ones_hold(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct actor old_reader, w, new_reader;

	actor_start(&old_reader, sem, OP_READ);
	actor_wait_locked(&old_reader);
	actor_start(&w, sem, OP_WRITE);
	WAIT_FOR(lw_writer_draining(sem));
	/* A stream of readers cannot starve the writer: new ones wait. */
	CHECK(!cpuhp_rwsem_read_trylock(sem));
	actor_start(&new_reader, sem, OP_READ);
	WAIT_FOR(lw_readers_waiting(sem) == 1);
	CHECK(!w.locked && !new_reader.locked);
	actor_unlock(&old_reader);
	actor_wait_locked(&w);
	CHECK(!new_reader.locked);
	actor_unlock(&w);
	actor_wait_locked(&new_reader);
	CHECK(new_reader.order > w.order);
	actor_unlock(&new_reader);
	cpuhp_rwsem_free(sem);
}

static void rwsem_readers_blocked_by_writer_enter_before_next_writer(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct actor w1, w2, r[3], late;

	actor_start(&w1, sem, OP_WRITE);
	actor_wait_locked(&w1);
	actor_start(&r[0], sem, OP_READ);
	actor_start(&r[1], sem, OP_READ);
	WAIT_FOR(lw_readers_waiting(sem) == 2);
	actor_start(&w2, sem, OP_WRITE);
	WAIT_FOR(lw_writers_queued(sem) == 1);
	/* A reader that arrives after W2 queued, still blocked by W1. */
	actor_start(&r[2], sem, OP_READ);
	WAIT_FOR(lw_readers_waiting(sem) == 3);
	actor_unlock(&w1);
	for (int i = 0; i < 3; i++)
		actor_wait_locked(&r[i]); /* all three in, while W2 waits */
	WAIT_FOR(lw_writer_draining(sem));
	CHECK(!w2.locked);
	/* A reader arriving now waits for W2 (writer preference). */
	actor_start(&late, sem, OP_READ);
	WAIT_FOR(lw_readers_waiting(sem) == 1);
	for (int i = 0; i < 3; i++) {
		CHECK(!w2.locked);
		actor_unlock(&r[i]);
	}
	actor_wait_locked(&w2);
	for (int i = 0; i < 3; i++)
		CHECK(r[i].order < w2.order);
	CHECK(!late.locked);
	actor_unlock(&w2);
	actor_wait_locked(&late);
	actor_unlock(&late);
	cpuhp_rwsem_free(sem);
}

static void rwsem_writers_are_served_in_arrival_order(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct actor w[4];

	cpuhp_rwsem_write_lock(sem);
	for (int i = 0; i < 4; i++) {
		actor_start(&w[i], sem, OP_WRITE);
		WAIT_FOR(lw_writers_queued(sem) == (unsigned)i + 1);
	}
	cpuhp_rwsem_write_unlock(sem);
	for (int i = 0; i < 4; i++) {
		actor_wait_locked(&w[i]);
		for (int j = i + 1; j < 4; j++)
			CHECK(!w[j].locked);
		actor_unlock(&w[i]);
	}
	cpuhp_rwsem_free(sem);
}

static void rwsem_read_trylock_fails_only_while_writer_blocks(void)
{
	struct cpuhp_rwsem *sem = new_sem();

	struct lw_rcu_holder h;

	CHECK(cpuhp_rwsem_read_trylock(sem)); /* idle: fast path */
	cpuhp_rwsem_read_unlock(sem);
	cpuhp_rwsem_write_lock(sem);
	CHECK(!cpuhp_rwsem_read_trylock(sem));
	CHECK_EQ_INT(lw_readers(sem), 0); /* the failed attempt left no count */
	/* Hold rcu_sync out of IDLE: G's callback and H's lingering exit. */
	lw_rcu_hold(&h);
	cpuhp__rcu_sync_linger_hold(&sem->rss);
	cpuhp_rwsem_write_unlock(sem);
	/* Writer gone, rcu_sync not idle yet: the slow path succeeds. */
	CHECK(lw_gp_state(&sem->rss) != CPUHP__GP_IDLE);
	CHECK(cpuhp_rwsem_read_trylock(sem));
	cpuhp_rwsem_read_unlock(sem);
	cpuhp__rcu_sync_linger_release(&sem->rss);
	lw_rcu_release(&h);
	lw_wait_idle(&sem->rss);
	CHECK(cpuhp_rwsem_read_trylock(sem));
	cpuhp_rwsem_read_unlock(sem);
	cpuhp_rwsem_free(sem);
}

static void rwsem_write_timeout_while_draining_restores_lock_and_lets_readers_in(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct actor w = {.timeout_ms = 50}, r, w2;

	cpuhp_rwsem_read_lock(sem); /* the reader the writer will wait for */
	actor_start(&w, sem, OP_WRITE_TIMEOUT);
	WAIT_FOR(lw_writer_draining(sem));
	actor_start(&r, sem, OP_READ); /* blocked by the timing-out writer */
	actor_start(&w2, sem, OP_WRITE);
	WAIT_FOR(lw_readers_waiting(sem) == 1 && lw_writers_queued(sem) == 1);
	actor_wait_locked(&w); /* returns: timed out */
	CHECK_EQ_INT(w.result, -ETIMEDOUT);
	pthread_join(w.tid, NULL);
	actor_wait_locked(&r); /* the reader it blocked got in */
	/* W2 got ->block handed over and now waits for both readers. */
	WAIT_FOR(lw_writer_draining(sem));
	CHECK_EQ_INT(lw_readers(sem), 2);
	cpuhp_rwsem_read_unlock(sem);
	actor_unlock(&r);
	actor_wait_locked(&w2);
	actor_unlock(&w2);
	/* Exactly as before: unlocked, nobody queued, readers and writers work. */
	CHECK(!lw_blocked(sem));
	CHECK_EQ_INT(lw_writers_queued(sem), 0);
	CHECK_EQ_INT(lw_readers_waiting(sem), 0);
	CHECK_EQ_INT(cpuhp_rwsem_write_lock_timeout(sem, 1000), 0);
	cpuhp_rwsem_write_unlock(sem);
	cpuhp_rwsem_free(sem);
}

static void rwsem_write_timeout_while_queued_leaves_queue_unchanged(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct actor w = {.timeout_ms = 30};

	cpuhp_rwsem_write_lock(sem);
	actor_start(&w, sem, OP_WRITE_TIMEOUT);
	actor_wait_locked(&w);
	CHECK_EQ_INT(w.result, -ETIMEDOUT);
	pthread_join(w.tid, NULL);
	CHECK_EQ_INT(lw_writers_queued(sem), 0);
	CHECK(lw_blocked(sem)); /* still ours */
	CHECK_EQ_INT(lw_gp_count(&sem->rss), 1);
	cpuhp_rwsem_write_unlock(sem);
	CHECK(!lw_blocked(sem));
	cpuhp_rwsem_free(sem);
}

static void rwsem_read_timeout_behind_a_writer_leaves_the_lock_unchanged(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct actor r = {.timeout_ms = 30};

	CHECK_EQ_INT(cpuhp_rwsem_read_lock_timeout(sem, 0), 0); /* no writer: at once */
	CHECK_EQ_INT(lw_readers(sem), 1);
	cpuhp_rwsem_read_unlock(sem);
	cpuhp_rwsem_write_lock(sem);
	CHECK_EQ_INT(cpuhp_rwsem_read_lock_timeout(sem, 0), -ETIMEDOUT);
	actor_start(&r, sem, OP_READ_TIMEOUT);
	actor_wait_locked(&r);
	CHECK_EQ_INT(r.result, -ETIMEDOUT);
	pthread_join(r.tid, NULL);
	CHECK_EQ_INT(lw_readers(sem), 0);
	CHECK_EQ_INT(lw_readers_waiting(sem), 0);
	CHECK(lw_blocked(sem)); /* still the writer's */
	cpuhp_rwsem_write_unlock(sem);
	CHECK_EQ_INT(cpuhp_rwsem_read_lock_timeout(sem, 0), 0);
	cpuhp_rwsem_read_unlock(sem);
	cpuhp_rwsem_free(sem);
}

static void rwsem_read_timeout_let_in_by_the_writers_unlock_holds_the_lock(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct actor r = {.timeout_ms = 3600 * 1000}, w2;

	cpuhp_rwsem_write_lock(sem);
	actor_start(&r, sem, OP_READ_TIMEOUT);
	WAIT_FOR(lw_readers_waiting(sem) == 1);
	actor_start(&w2, sem, OP_WRITE);
	WAIT_FOR(lw_writers_queued(sem) == 1);
	cpuhp_rwsem_write_unlock(sem);
	actor_wait_locked(&r); /* before the writer that queued after it */
	CHECK_EQ_INT(r.result, 0);
	WAIT_FOR(lw_writer_draining(sem));
	CHECK(!w2.locked);
	actor_unlock(&r);
	actor_wait_locked(&w2);
	CHECK(r.order < w2.order);
	actor_unlock(&w2);
	cpuhp_rwsem_free(sem);
}

/*
 * A reader that timed out in the queue is gone from it: the unlock grants
 * only the readers still waiting, and the next writer, which waits for
 * every granted reader to count itself, gets the lock once they leave.
 */
static void rwsem_read_timeout_in_the_queue_is_not_granted_by_the_unlock(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct actor timed = {.timeout_ms = 30}, r, w2;

	cpuhp_rwsem_write_lock(sem);
	actor_start(&r, sem, OP_READ);
	WAIT_FOR(lw_readers_waiting(sem) == 1);
	actor_start(&timed, sem, OP_READ_TIMEOUT);
	WAIT_FOR(lw_readers_waiting(sem) == 2);
	actor_wait_locked(&timed);
	CHECK_EQ_INT(timed.result, -ETIMEDOUT);
	pthread_join(timed.tid, NULL);
	CHECK_EQ_INT(lw_readers_waiting(sem), 1);
	actor_start(&w2, sem, OP_WRITE);
	WAIT_FOR(lw_writers_queued(sem) == 1);
	cpuhp_rwsem_write_unlock(sem);
	actor_wait_locked(&r);
	WAIT_FOR(lw_writer_draining(sem));
	CHECK_EQ_INT(lw_readers(sem), 1);
	actor_unlock(&r);
	actor_wait_locked(&w2);
	actor_unlock(&w2);
	CHECK_EQ_INT(lw_readers_waiting(sem), 0);
	CHECK_EQ_INT(cpuhp_rwsem_read_lock_timeout(sem, 1000), 0);
	cpuhp_rwsem_read_unlock(sem);
	cpuhp_rwsem_free(sem);
}

static void *unlock_thread(void *p)
{
	cpuhp_rwsem_read_unlock(p);
	return NULL;
}

static void rwsem_read_lock_released_on_another_thread(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	pthread_t t;

	for (int phase = 0; phase < 2; phase++) {
		/* phase 0: fast path both ways; 1: with rcu_sync not idle */
		cpuhp_rwsem_read_lock(sem);
		CHECK_EQ_INT(lw_readers(sem), 1);
		pthread_create(&t, NULL, unlock_thread, sem);
		pthread_join(t, NULL); /* its slot went to -1, then into ->shared */
		CHECK_EQ_INT(lw_readers(sem), 0);
		CHECK_EQ_INT(cpuhp_rwsem_write_lock_timeout(sem, 5000), 0);
		cpuhp_rwsem_write_unlock(sem);
	}
	cpuhp_rwsem_free(sem);
}

/*
 * Lock ids: the lowest free one, so that freed ids are reused (ids below 64
 * take the fast path's cached chunk), past the first tables' growth.
 */
static void rwsem_new_takes_the_lowest_free_id_and_reuses_freed_ones(void)
{
	enum { N = 5000 };
	static struct cpuhp_rwsem *s[N];
	struct cpuhp_rwsem *a, *b, *c;
	unsigned base;

	for (int i = 0; i < N; i++)
		s[i] = new_sem();
	base = s[0]->readers.id;
	for (int i = 1; i < N; i++)
		CHECK_EQ_INT(s[i]->readers.id, s[i - 1]->readers.id + 1);
	/* Free one id in the first word, one past 4096 ids (another summary word). */
	cpuhp_rwsem_free(s[4200]);
	cpuhp_rwsem_free(s[7]);
	a = new_sem();
	b = new_sem();
	c = new_sem();
	CHECK_EQ_INT(a->readers.id, base + 7);
	CHECK_EQ_INT(b->readers.id, base + 4200);
	CHECK_EQ_INT(c->readers.id, base + N);
	s[7] = a;
	s[4200] = b;
	cpuhp_rwsem_free(c);
	for (int i = 0; i < N; i++)
		cpuhp_rwsem_free(s[i]);
	/* All free again: the next lock gets the lowest id there was. */
	a = new_sem();
	CHECK_EQ_INT(a->readers.id, base);
	cpuhp_rwsem_free(a);
}

/*
 * cpuhp_rwsem_new()'s locks live in slabs, one per group of 64 ids (object
 * id % 64 of it): a freed lock's memory is the next lock's, and must come
 * back as new however it was used; a group whose locks are all freed gives
 * its slab back, and the next lock in it gets a slab again.
 */
static void rwsem_new_reuses_a_freed_lock_slot_as_a_new_lock(void)
{
	enum { N = 3 * 64 };
	static struct cpuhp_rwsem *s[N];
	struct cpuhp_rwsem *a, *again;
	struct actor r;

	for (int i = 0; i < N; i++) {
		s[i] = new_sem();
		CHECK_EQ_INT((uintptr_t)s[i] % 128, 0);
	}
	/* Neighbours in a group are neighbours in memory. */
	for (int i = 1; i < N; i++)
		if (s[i]->readers.id / 64 == s[i - 1]->readers.id / 64)
			CHECK(s[i] == s[i - 1] + 1);
	/* Use one hard: a writer, a reader queued behind it, a named copy. */
	a = s[N / 2];
	cpuhp_rwsem_write_lock(a);
	actor_start(&r, a, OP_READ);
	WAIT_FOR(lw_readers_waiting(a) == 1);
	cpuhp_rwsem_write_unlock(a);
	actor_wait_locked(&r);
	actor_unlock(&r);
	cpuhp_rwsem_free(a);
	CHECK_EQ_INT(cpuhp_rwsem_new_named(&again, "again"), 0);
	CHECK(again == a);
	CHECK_EQ_STR(again->readers.name, "again");
	CHECK_EQ_INT(lw_readers(again), 0);
	CHECK_EQ_INT(lw_readers_waiting(again), 0);
	CHECK(cpuhp_rcu_sync_is_idle(&again->rss));
	CHECK(cpuhp_rwsem_read_trylock(again));
	CHECK_EQ_INT(cpuhp_rwsem_write_lock_timeout(again, 10), -ETIMEDOUT);
	cpuhp_rwsem_read_unlock(again);
	CHECK_EQ_INT(cpuhp_rwsem_write_lock_timeout(again, 1000), 0);
	cpuhp_rwsem_write_unlock(again);
	s[N / 2] = again;
	/* Free every lock of the middle group, then fill it again. */
	for (int i = 0; i < N; i++)
		if (s[i]->readers.id / 64 == s[N / 2]->readers.id / 64 && i != N / 2) {
			cpuhp_rwsem_free(s[i]);
			s[i] = NULL;
		}
	cpuhp_rwsem_free(s[N / 2]);
	s[N / 2] = NULL;
	for (int i = 0; i < N; i++) {
		if (!s[i])
			s[i] = new_sem();
		cpuhp_rwsem_read_lock(s[i]);
		cpuhp_rwsem_read_unlock(s[i]);
		cpuhp_rwsem_write_lock(s[i]);
		cpuhp_rwsem_write_unlock(s[i]);
	}
	for (int i = 0; i < N; i++)
		cpuhp_rwsem_free(s[i]);
}

static unsigned registered_threads(void)
{
	unsigned n;

	cpuhp__registry_lock();
	n = cpuhp__registry_count_locked();
	cpuhp__registry_unlock();
	return n;
}

static void *short_reader(void *p)
{
	cpuhp_rwsem_read_lock(p);
	cpuhp_rwsem_read_unlock(p);
	return NULL;
}

static void rwsem_ten_thousand_short_lived_reader_threads_leave_nothing_behind(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	unsigned before = registered_threads();
	pthread_t t[16];

	for (int i = 0; i < 10000; i += 16) {
		for (int j = 0; j < 16; j++)
			pthread_create(&t[j], NULL, short_reader, sem);
		for (int j = 0; j < 16; j++)
			pthread_join(t[j], NULL);
	}
	/* Joined threads ran their exit destructors: nothing stays registered. */
	CHECK_EQ_INT(registered_threads(), before);
	CHECK_EQ_INT(lw_readers(sem), 0);
	CHECK_EQ_INT(cpuhp_rwsem_write_lock_timeout(sem, 5000), 0);
	cpuhp_rwsem_write_unlock(sem);
	cpuhp_rwsem_free(sem);
}

struct hammer {
	struct cpuhp_rwsem *sem;
	_Atomic int stop;
	_Atomic int started;
	_Atomic long loops;
};

static void *hammer_thread(void *p)
{
	struct hammer *h = p;

	atomic_fetch_add(&h->started, 1);
	while (!atomic_load(&h->stop)) {
		cpuhp_rwsem_read_lock(h->sem);
		cpuhp_rwsem_read_unlock(h->sem);
		atomic_fetch_add(&h->loops, 1);
	}
	return NULL;
}

static int child_uses_lock(struct cpuhp_rwsem *sem)
{
	/* Read locks of the parent's other threads do not exist here. */
	for (int i = 0; i < 3; i++) {
		if (cpuhp_rwsem_write_lock_timeout(sem, 5000))
			return 10 + i;
		cpuhp_rwsem_write_unlock(sem);
		cpuhp_rwsem_read_lock(sem);
		cpuhp_rwsem_read_unlock(sem);
	}
	lw_wait_idle(&sem->rss); /* the child's call_rcu worker runs */
	cpuhp_rwsem_free(sem);
	return 0;
}

CHECK_TSAN_SKIPS static void rwsem_survives_fork_with_readers_running(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct hammer h = {.sem = sem};
	pthread_t t[2];

	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, hammer_thread, &h);
	/*
	 * Both threads past their start-up: clang 14's ASan allocates there
	 * under allocator locks that a fork child would inherit held (a new
	 * thread of the child then hung in malloc()).
	 */
	WAIT_FOR(atomic_load(&h.started) == 2);
	for (int round = 0; round < 20; round++) {
		int status;
		pid_t pid;

		WAIT_FOR(atomic_load(&h.loops) > 1000L * (round + 1));
		if (round % 2) { /* also fork with an exit callback pending */
			cpuhp_rwsem_write_lock(sem);
			cpuhp_rwsem_write_unlock(sem);
		}
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			_exit(child_uses_lock(sem));
		CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status))
			fprintf(stderr, "child killed by signal %d\n", WTERMSIG(status));
		CHECK(WIFEXITED(status));
		CHECK_EQ_INT(WEXITSTATUS(status), 0);
	}
	atomic_store(&h.stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	/* The parent's lock still works. */
	CHECK_EQ_INT(cpuhp_rwsem_write_lock_timeout(sem, 5000), 0);
	cpuhp_rwsem_write_unlock(sem);
	cpuhp_rwsem_free(sem);
}

/* ---- the way back to IDLE after the last writer */

/*
 * With membarrier (H) the last exit lingers: nothing is queued, no thread
 * is needed, and a reader on the slow path ends it (I).  Without it (G)
 * the exit goes through a grace period (the timer thread's own, not
 * liburcu's call_rcu()) and its callback.
 */
static void rwsem_last_exit_lingers_with_membarrier_else_goes_idle_by_grace_period(void)
{
	struct cpuhp_rwsem *sem = new_sem();

	cpuhp_rwsem_write_lock(sem);
	cpuhp_rwsem_write_unlock(sem); /* PASSED -> LINGER, or PASSED -> EXIT */
	if (cpuhp__asym_fence) {
		CHECK_EQ_INT(lw_gp_state(&sem->rss), CPUHP__GP_LINGER);
		CHECK(!atomic_load(&sem->rss.defer.queued)); /* no timer: nothing queued */
	}
	lw_wait_idle(&sem->rss); /* -> IDLE */
	if (cpuhp__asym_fence) {
		CHECK_EQ_INT(lw_gp_linger_ends(&sem->rss), 1);
		CHECK_EQ_INT(lw_gp_callbacks(&sem->rss), 0);
	} else {
		CHECK_EQ_INT(lw_gp_linger_ends(&sem->rss), 0);
		CHECK_EQ_INT(lw_gp_callbacks(&sem->rss), 1);
	}
	cpuhp_rwsem_read_lock(sem); /* IDLE again: the fast path */
	CHECK_EQ_INT(lw_readers(sem), 1);
	cpuhp_rwsem_read_unlock(sem);
	cpuhp_rwsem_free(sem);
}

/*
 * Freeing right after the last writer ends its linger (H) or waits for its
 * grace period's callback (G), which touches nothing after it lets the
 * free go (ASan sees a use after free).
 */
static void rwsem_free_right_after_last_writer_waits_for_idle(void)
{
	for (int i = 0; i < 50; i++) {
		struct cpuhp_rwsem *sem = new_sem();

		cpuhp_rwsem_write_lock(sem);
		cpuhp_rwsem_write_unlock(sem);
		cpuhp_rwsem_free(sem);
	}
}

/*
 * A writer comes and goes; its exit lingers for an hour: an eighth of its
 * re-enter cost, which is 8 hours here, with 3 such costs of credit.
 */
static void linger_for_an_hour(struct cpuhp_rwsem *sem)
{
	const uint64_t hour = 3600ull * 1000000000u;
	uint64_t t0;

	cpuhp_rwsem_write_lock(sem);
	lw_set_budget(&sem->rss, 8 * hour, (int64_t)(24 * hour));
	t0 = cpuhp__now_ns();
	cpuhp_rwsem_write_unlock(sem);
	CHECK_EQ_INT(lw_gp_state(&sem->rss), CPUHP__GP_LINGER);
	cpuhp__futex_lock(&sem->rss.lock);
	CHECK(sem->rss.idle_at_ns >= t0 + hour && sem->rss.idle_at_ns <= cpuhp__now_ns() + hour);
	cpuhp__futex_unlock(&sem->rss.lock);
}

static bool skip_without_membarrier(struct cpuhp_rwsem *sem)
{
	if (cpuhp__asym_fence)
		return false;
	printf("# SKIP: no lingering exit without membarrier (G readers need the grace period)\n");
	cpuhp_rwsem_free(sem);
	return true;
}

/* PASSED -> LINGER (nothing queued), then LINGER -> IDLE by a slow reader. */
static void rwsem_exit_lingers_until_a_slow_reader_ends_it(void)
{
	struct cpuhp_rwsem *sem = new_sem();

	if (skip_without_membarrier(sem))
		return;
	cpuhp_rwsem_write_lock(sem);
	lw_set_budget(&sem->rss, 1000, 3000); /* a linger of 125 ns */
	cpuhp_rwsem_write_unlock(sem);
	CHECK_EQ_INT(lw_gp_state(&sem->rss), CPUHP__GP_LINGER);
	CHECK(!atomic_load(&sem->rss.defer.queued));
	CHECK_EQ_INT(lw_gp_linger_ends(&sem->rss), 0);
	while (lw_gp_state(&sem->rss) != CPUHP__GP_IDLE) {
		cpuhp_rwsem_read_lock(sem); /* the slow path polls */
		CHECK_EQ_INT(lw_readers(sem), 1);
		cpuhp_rwsem_read_unlock(sem);
	}
	CHECK_EQ_INT(lw_gp_linger_ends(&sem->rss), 1);
	CHECK_EQ_INT(lw_gp_callbacks(&sem->rss), 0);
	CHECK_EQ_INT(lw_gp_fences(&sem->rss), 1);
	cpuhp_rwsem_read_lock(sem); /* IDLE: the fast path */
	CHECK_EQ_INT(lw_readers(sem), 1);
	cpuhp_rwsem_read_unlock(sem);
	cpuhp_rwsem_free(sem);
}

/*
 * Before its time (here an hour) readers leave LINGER alone; a writer that
 * comes finds it, skips the membarrier and moves it to PASSED itself
 * (LINGER -> PASSED); its exit lingers again; free ends it without waiting.
 */
static void rwsem_writer_finds_lingering_exit_and_skips_membarrier(void)
{
	struct cpuhp_rwsem *sem = new_sem();

	if (skip_without_membarrier(sem))
		return;
	linger_for_an_hour(sem);
	for (int i = 0; i < 1000; i++) {
		cpuhp_rwsem_read_lock(sem);
		CHECK_EQ_INT(lw_readers(sem), 1);
		cpuhp_rwsem_read_unlock(sem);
	}
	CHECK_EQ_INT(lw_gp_state(&sem->rss), CPUHP__GP_LINGER);
	cpuhp_rwsem_write_lock(sem);
	CHECK_EQ_INT(lw_gp_state(&sem->rss), CPUHP__GP_PASSED);
	CHECK_EQ_INT(lw_gp_fences(&sem->rss), 1); /* only the first writer's */
	CHECK(!cpuhp_rwsem_read_trylock(sem));
	cpuhp_rwsem_write_unlock(sem);
	CHECK_EQ_INT(lw_gp_state(&sem->rss), CPUHP__GP_LINGER);
	cpuhp_rwsem_free(sem); /* nothing would end it: free does */
}

/*
 * Writers with nobody reading: however long after the linger's end they
 * come, nobody has ended it, and each finds LINGER and skips the
 * membarrier: a writer from idle pays no system call (tests/bench's
 * bench-peers counts them).
 */
static void rwsem_writers_without_readers_keep_finding_the_linger(void)
{
	struct cpuhp_rwsem *sem = new_sem();

	if (skip_without_membarrier(sem))
		return;
	for (int i = 0; i < 100; i++) {
		cpuhp_rwsem_write_lock(sem);
		cpuhp_rwsem_write_unlock(sem);
		cpuhp__futex_lock(&sem->rss.lock);
		sem->rss.idle_at_ns = 0; /* long past, as after any gap */
		cpuhp__futex_unlock(&sem->rss.lock);
		CHECK_EQ_INT(lw_gp_state(&sem->rss), CPUHP__GP_LINGER);
	}
	CHECK_EQ_INT(lw_gp_fences(&sem->rss), 1);
	CHECK(!atomic_load(&sem->rss.defer.queued));
	cpuhp_rwsem_free(sem);
}

/*
 * The rule (rcu_sync.c): a linger ends CPUHP__LINGER_SHARE (8) of a
 * re-enter cost after the exit, or, while the writers owe credit, once
 * they have earned it back at 1/16 of the time passing.  Credit is capped
 * at 3 costs.  The inputs are set here: this checks the rule, not the clock.
 */
static void rwsem_linger_ends_a_share_of_a_cost_after_the_exit_or_once_the_credit_is_back(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct cpuhp_rcu_sync *rss = &sem->rss;
	const uint64_t t = cpuhp__now_ns();

	cpuhp__futex_lock(&rss->lock);
	rss->reenter_ns = 1000;
	rss->credit_ns = 3000;
	rss->credit_at_ns = t;
	CHECK_EQ_INT(cpuhp__rcu_sync_linger_end_at_locked(rss, t) - t, 1000 / 8);
	rss->credit_ns = 0;
	CHECK_EQ_INT(cpuhp__rcu_sync_linger_end_at_locked(rss, t) - t, 1000 / 8);
	rss->credit_ns = -2000; /* owed: 2000 ns of credit, 32 us of time */
	CHECK_EQ_INT(cpuhp__rcu_sync_linger_end_at_locked(rss, t) - t, 2000 * 16);
	CHECK_EQ_INT(cpuhp__rcu_sync_linger_end_at_locked(rss, t + 15) - (t + 15), 2000 * 16);
	CHECK_EQ_INT(cpuhp__rcu_sync_linger_end_at_locked(rss, t + 16) - (t + 16), 1999 * 16);
	CHECK_EQ_INT(rss->credit_ns, -1999);
	rss->credit_ns = -1; /* a short debt: the share is longer */
	rss->credit_at_ns = t;
	CHECK_EQ_INT(cpuhp__rcu_sync_linger_end_at_locked(rss, t) - t, 1000 / 8);
	rss->credit_ns = 0;
	(void)cpuhp__rcu_sync_linger_end_at_locked(rss, t + 1000000000u); /* a second: capped */
	CHECK_EQ_INT(rss->credit_ns, 3000);
	rss->reenter_ns = 0; /* nothing measured: no share, no cap */
	rss->credit_ns = 0;
	CHECK_EQ_INT(cpuhp__rcu_sync_linger_end_at_locked(rss, t + 2000000000u), t + 2000000000u);
	CHECK_EQ_INT(rss->credit_ns, 0);
	cpuhp__futex_unlock(&rss->lock);
	cpuhp_rwsem_free(sem);
}

/*
 * Frequent writers (BRAVO's case): a writer that left IDLE spent its
 * re-enter cost; while the writers owe it, the exit lingers on, readers
 * stay slow, and the next writers find LINGER and skip the membarrier.
 * Once the credit is back, the next linger ends soon after its exit, a
 * slow reader ends it, and the writer after that pays the membarrier.
 */
static void rwsem_writers_that_owe_credit_skip_the_membarrier_until_it_is_back(void)
{
	const uint64_t hour = 3600ull * 1000000000u;
	struct cpuhp_rwsem *sem = new_sem();

	if (skip_without_membarrier(sem))
		return;
	cpuhp_rwsem_write_lock(sem);                    /* from IDLE: a membarrier */
	lw_set_budget(&sem->rss, 1000, -(int64_t)hour); /* owing an hour of cost */
	cpuhp_rwsem_write_unlock(sem);
	for (int i = 0; i < 10; i++) {
		for (int j = 0; j < 100; j++) { /* slow readers poll, and find it not due */
			cpuhp_rwsem_read_lock(sem);
			cpuhp_rwsem_read_unlock(sem);
		}
		CHECK_EQ_INT(lw_gp_state(&sem->rss), CPUHP__GP_LINGER);
		cpuhp_rwsem_write_lock(sem); /* LINGER -> PASSED */
		cpuhp_rwsem_write_unlock(sem);
	}
	CHECK_EQ_INT(lw_gp_fences(&sem->rss), 1);
	cpuhp_rwsem_write_lock(sem);
	lw_set_budget(&sem->rss, 1000, 0); /* paid back */
	cpuhp_rwsem_write_unlock(sem);
	while (lw_gp_state(&sem->rss) != CPUHP__GP_IDLE) {
		cpuhp_rwsem_read_lock(sem);
		cpuhp_rwsem_read_unlock(sem);
	}
	cpuhp_rwsem_write_lock(sem); /* from IDLE again */
	cpuhp_rwsem_write_unlock(sem);
	CHECK_EQ_INT(lw_gp_fences(&sem->rss), 2);
	cpuhp_rwsem_free(sem);
}

/*
 * The spin before a futex wait (internal.h), that both slow paths make: it
 * pauses, reads the clock once in CPUHP__SPIN_CLOCK calls, and says stop
 * only once CPUHP__SPIN_NS have passed since its first clock read.  Checked
 * against the clock, not a speed: it must not stop early, and it stops.
 */
static void rwsem_spin_before_sleeping_stops_only_after_its_budget(void)
{
	struct cpuhp__spin spin = {0, 0};
	uint64_t t0 = cpuhp__now_ns(), t1;
	unsigned calls = 1;

	while (cpuhp__spin(&spin))
		calls++;
	t1 = cpuhp__now_ns();
	CHECK(calls > CPUHP__SPIN_CLOCK);
	CHECK(calls % CPUHP__SPIN_CLOCK == 1); /* it stops at a clock read */
	CHECK(t1 - t0 >= CPUHP__SPIN_NS);
}

/*
 * The re-enter cost's estimate: the first sample as it is, then 1/4 new,
 * each sample counted at most 5/4 of the estimate, in the estimate and in
 * the credit alike (an outlier is the scheduler's, and must not keep
 * readers slow 16 times as long).  The samples are given here: this
 * checks the rule, not the clock.
 */
static void rwsem_reenter_cost_estimate_and_credit_clip_outliers(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	struct cpuhp_rcu_sync *rss = &sem->rss;
	uint64_t t;

	cpuhp__futex_lock(&rss->lock);
	t = rss->credit_at_ns = cpuhp__now_ns();
	rss->reenter_ns = 0;
	rss->credit_ns = 0;
	cpuhp__rcu_sync_reenter_cost_locked(rss, 4000, t); /* the first sample: whole */
	CHECK_EQ_INT(rss->reenter_ns, 4000);
	CHECK_EQ_INT(rss->credit_ns, -4000);
	cpuhp__rcu_sync_reenter_cost_locked(rss, 4800, t); /* 1/4 new */
	CHECK_EQ_INT(rss->reenter_ns, 4200);
	cpuhp__rcu_sync_reenter_cost_locked(rss, 5250, t); /* 5/4 of it: whole */
	CHECK_EQ_INT(rss->reenter_ns, (3 * 4200 + 5250) / 4);
	rss->reenter_ns = 4000;
	cpuhp__rcu_sync_reenter_cost_locked(rss, 10000000, t); /* 10 ms: counts 5000 */
	CHECK_EQ_INT(rss->reenter_ns, (3 * 4000 + 5000) / 4);
	CHECK_EQ_INT(rss->credit_ns, -4000 - 4800 - 5250 - 5000);
	cpuhp__rcu_sync_reenter_cost_locked(rss, 0, t + 16 * 4000); /* 64 us earn 4000 */
	CHECK_EQ_INT(rss->credit_ns, -4000 - 4800 - 5250 - 5000 + 4000);
	cpuhp__futex_unlock(&rss->lock);
	cpuhp_rwsem_free(sem);
}

/*
 * Readers running while writers linger: their slow paths end LINGER (the
 * trylock, the clock) racing with writers that find it and move it to
 * PASSED; every other writer comes while it still lingers.  Readers never
 * see a write half done (plain words: ThreadSanitizer sees any unordered
 * access), and each waited-for linger ends in IDLE by a reader.
 */
struct linger_readers {
	struct cpuhp_rwsem *sem;
	_Atomic int stop;
	long a, b; /* written under the write lock only */
	_Atomic long reads;
};

static void *linger_reader_main(void *p)
{
	struct linger_readers *lr = p;

	while (!atomic_load(&lr->stop)) {
		cpuhp_rwsem_read_lock(lr->sem);
		CHECK_EQ_INT(lr->a, lr->b);
		cpuhp_rwsem_read_unlock(lr->sem);
		atomic_fetch_add(&lr->reads, 1);
	}
	return NULL;
}

static void rwsem_lingering_exits_with_readers_running(void)
{
	struct linger_readers lr = {.sem = new_sem()};
	pthread_t t[2];
	unsigned long ended = 0;

	if (skip_without_membarrier(lr.sem))
		return;
	for (int i = 0; i < 2; i++)
		CHECK_EQ_INT(pthread_create(&t[i], NULL, linger_reader_main, &lr), 0);
	for (int i = 0; i < 200; i++) {
		cpuhp_rwsem_write_lock(lr.sem);
		lr.a++;
		lr.b = lr.a;
		lw_set_budget(&lr.sem->rss, 1000, 3000); /* a linger of 125 ns */
		cpuhp_rwsem_write_unlock(lr.sem);
		if (i % 2)
			continue; /* the next writer may find LINGER */
		WAIT_FOR(lw_gp_state(&lr.sem->rss) != CPUHP__GP_LINGER);
		CHECK_EQ_INT(lw_gp_state(&lr.sem->rss), CPUHP__GP_IDLE);
		CHECK(lw_gp_linger_ends(&lr.sem->rss) > ended);
		ended = lw_gp_linger_ends(&lr.sem->rss);
	}
	atomic_store(&lr.stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ_INT(lw_gp_callbacks(&lr.sem->rss), 0);
	CHECK(atomic_load(&lr.reads) > 0);
	cpuhp_rwsem_free(lr.sem);
}

/* A fork child inherits LINGER: nothing was queued, and its lock works. */
static void rwsem_fork_child_of_a_lingering_exit_uses_and_frees_the_lock(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	int status;
	pid_t pid;

	if (skip_without_membarrier(sem))
		return;
	linger_for_an_hour(sem);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* The reset again (idempotent here: nobody else runs) says no requeue. */
		if (lw_gp_state(&sem->rss) != CPUHP__GP_LINGER ||
		    cpuhp__rcu_sync_reset_after_fork(&sem->rss))
			_exit(2);
		cpuhp_rwsem_read_lock(sem);
		cpuhp_rwsem_read_unlock(sem);
		cpuhp_rwsem_write_lock(sem); /* LINGER -> PASSED */
		cpuhp_rwsem_write_unlock(sem);
		if (lw_readers(sem) != 0 || lw_gp_fences(&sem->rss) != 1)
			_exit(3);
		cpuhp_rwsem_free(sem);
		_exit(0);
	}
	CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ_INT(WEXITSTATUS(status), 0);
	cpuhp_rwsem_free(sem);
}

/*
 * Where the timer thread cannot start (no descriptor left for its
 * timerfd; in a fork child, which has none yet), nothing would end a G
 * exit, so the unlock waits its grace period itself: the lock is idle when
 * it returns.  An H exit needs no thread: it lingers, and a slow reader
 * ends it.  Either way no liburcu callback (nor its worker thread) was
 * needed.  test-exhaust does the same with no thread at all.
 */
CHECK_TSAN_SKIPS static void rwsem_exit_without_a_timer_thread_needs_none(void)
{
	int status;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		struct cpuhp_rwsem *sem = new_sem();
		int lowest = dup(0);
		struct rlimit none_left = {(rlim_t)lowest, (rlim_t)lowest};

		close(lowest);
		if (setrlimit(RLIMIT_NOFILE, &none_left) || dup(0) != -1)
			_exit(2);
		for (int i = 0; i < 2; i++) {
			cpuhp_rwsem_write_lock(sem);
			cpuhp_rwsem_write_unlock(sem);
			if (cpuhp__asym_fence) {
				if (lw_gp_state(&sem->rss) != CPUHP__GP_LINGER)
					_exit(3);
				lw_wait_idle(&sem->rss); /* as a slow reader would */
			} else if (!cpuhp_rcu_sync_is_idle(&sem->rss)) {
				_exit(3);
			}
		}
		/* Each writer left IDLE: the fence or grace period twice. */
		if (lw_gp_fences(&sem->rss) + lw_gp_syncs(&sem->rss) != 2)
			_exit(4);
		if (cpuhp__asym_fence
		        ? lw_gp_linger_ends(&sem->rss) != 2 || lw_gp_callbacks(&sem->rss)
		        : lw_gp_linger_ends(&sem->rss) || lw_gp_callbacks(&sem->rss) != 2)
			_exit(5);
		cpuhp_rwsem_free(sem);
		_exit(0);
	}
	CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ_INT(WEXITSTATUS(status), 0);
}

int main(void)
{
	/* The -rcu-readers variant must really run the fallback fast path. */
	if (getenv("CPUHP_NO_MEMBARRIER"))
		CHECK(!cpuhp__asym_fence);
	printf("# reader fast path: %s\n", cpuhp__asym_fence
	                                       ? "fenced by the writer's membarrier (H)"
	                                       : "liburcu read-side sections (G)");
	RUN_TEST(rwsem_readers_take_fast_path_while_no_writer);
	RUN_TEST(rwsem_first_writer_fences_with_membarrier_else_waits_a_grace_period);
	RUN_TEST(rwsem_new_named_keeps_a_copy_of_its_name);
	RUN_TEST(rwsem_reader_handle_goes_through_the_library_where_inline_cannot_run);
	RUN_TEST(rwsem_writer_excludes_readers_and_writers);
	RUN_TEST(rwsem_writer_waits_for_readers_inside);
	RUN_TEST(rwsem_writer_preference_blocks_new_readers_while_old_ones_hold);
	RUN_TEST(rwsem_readers_blocked_by_writer_enter_before_next_writer);
	RUN_TEST(rwsem_writers_are_served_in_arrival_order);
	RUN_TEST(rwsem_read_trylock_fails_only_while_writer_blocks);
	RUN_TEST(rwsem_write_timeout_while_draining_restores_lock_and_lets_readers_in);
	RUN_TEST(rwsem_write_timeout_while_queued_leaves_queue_unchanged);
	RUN_TEST(rwsem_read_timeout_behind_a_writer_leaves_the_lock_unchanged);
	RUN_TEST(rwsem_read_timeout_let_in_by_the_writers_unlock_holds_the_lock);
	RUN_TEST(rwsem_read_timeout_in_the_queue_is_not_granted_by_the_unlock);
	RUN_TEST(rwsem_read_lock_released_on_another_thread);
	RUN_TEST(rwsem_new_takes_the_lowest_free_id_and_reuses_freed_ones);
	RUN_TEST(rwsem_new_reuses_a_freed_lock_slot_as_a_new_lock);
	RUN_TEST(rwsem_ten_thousand_short_lived_reader_threads_leave_nothing_behind);
	RUN_TEST(rwsem_last_exit_lingers_with_membarrier_else_goes_idle_by_grace_period);
	RUN_TEST(rwsem_free_right_after_last_writer_waits_for_idle);
	RUN_TEST(rwsem_exit_lingers_until_a_slow_reader_ends_it);
	RUN_TEST(rwsem_writer_finds_lingering_exit_and_skips_membarrier);
	RUN_TEST(rwsem_writers_without_readers_keep_finding_the_linger);
	RUN_TEST(rwsem_linger_ends_a_share_of_a_cost_after_the_exit_or_once_the_credit_is_back);
	RUN_TEST(rwsem_writers_that_owe_credit_skip_the_membarrier_until_it_is_back);
	RUN_TEST(rwsem_spin_before_sleeping_stops_only_after_its_budget);
	RUN_TEST(rwsem_reenter_cost_estimate_and_credit_clip_outliers);
	RUN_TEST(rwsem_lingering_exits_with_readers_running);
	RUN_TEST(rwsem_fork_child_of_a_lingering_exit_uses_and_frees_the_lock);
#ifdef CHECK_UNDER_TSAN
	/* The gcc and ASan builds run it; TSan aborts a child that starts threads. */
	printf("# SKIP rwsem_survives_fork_with_readers_running, "
	       "rwsem_exit_without_a_timer_thread_needs_none: ThreadSanitizer "
	       "does not support threads started after a multi-threaded fork\n");
#else
	RUN_TEST(rwsem_survives_fork_with_readers_running);
	RUN_TEST(rwsem_exit_without_a_timer_thread_needs_none);
#endif
	return 0;
}
