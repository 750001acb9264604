/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-thread counters and the registry of threads that hold them.
 *
 * Each counter (one per cpuhp_rwsem) has a small integer id; each thread has
 * a table of 64-slot chunks indexed by id, allocated when the thread first
 * touches a counter in that chunk.  A slot is written only by its thread
 * (a plain load and store, no lock prefix), so readers on different CPUs
 * never write the same cache line.  The value of a counter is the sum of its
 * slots in every registered thread plus ->shared.
 *
 * A writer's sum must visit every thread that has the counter's chunk.  It
 * does not walk the registry for that (a chain of dependent loads per
 * thread, ~26 ns each with 20,000 threads) but an array per chunk index of
 * the chunks themselves ("users"), whose slot loads are independent of each
 * other and overlap; threads that never touched the chunk are not in it.
 * The read path does not see these arrays.
 *
 * The ids also place cpuhp_rwsem_new()'s locks: lock i is object i % 64
 * of the slab of group i / 64 (internal.h), so making a lock is one id
 * allocation, one critical section, and no allocation but a slab's per 64
 * locks.
 *
 * Invariants:
 *  - A thread's ->chunks/->nchunks change only in that thread, under the
 *    registry lock; other threads read them only under the registry lock.
 *  - users[c] holds exactly the non-NULL chunks[c] of registered threads;
 *    thread t's is at users[c].chunk[t->chunk_pos[c]].  Under the registry
 *    lock.
 *  - When a thread exits, its non-zero slots move into ->shared under the
 *    registry lock, so a sum (also under that lock) never sees half a move.
 *  - A counter's slots are all zero while its id is free: destroy clears them.
 *  - The registry lock is never taken inside an RCU read-side section
 *    (synchronize_rcu() holds liburcu's registry lock while it waits for
 *    readers, and registration takes liburcu's lock under ours).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

__thread struct cpuhp__thread *cpuhp__self CPUHP__TLS_IE;
/*
 * The thread's record lives in its TLS, not on the heap: registering then
 * allocates nothing, so a thread's first read lock works when memory is
 * gone (its slots' chunks are allocated later, and a thread without them
 * counts in ->shared).
 */
__thread struct cpuhp__thread cpuhp__self_record CPUHP__TLS_IE;
__thread struct cpuhp__slot *cpuhp__chunk0 CPUHP__TLS_IE;
CPUHP_EXPORT __thread long *cpuhp__inline_slots CPUHP__TLS_IE;

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct cpuhp__thread *registry;  /* every registered thread */
static struct cpuhp__pcount **counters; /* id -> counter, NULL when free */
static unsigned nr_counters;
/*
 * Which ids are taken, to find the lowest free one without a scan of
 * every id (creating n locks was O(n^2)): bit i of used[w] is id 64w+i;
 * bit j of full[f] says used[64f+j] has no free bit.  Lowest, because ids
 * below 64 take the fast path's cached chunk and low ids keep the threads'
 * chunk tables short.  The lowest free id is then at most one look per 4096
 * ids away, and first_free (no free id below it) skips even that while
 * locks are only created.  All under the registry lock.
 */
static uint64_t *used, *full;
static unsigned first_free;

/*
 * cpuhp_rwsem_new()'s locks (internal.h): per group of 64 ids, the slab
 * and how many of its objects are in use (ids of the group that are not
 * slab objects, as the static hotplug lock's, leave theirs unused).  As
 * many entries as used[].  spare_slab: one empty slab kept back.
 */
struct slab {
	struct cpuhp_rwsem *objs;
	unsigned live;
};
static struct slab *slabs;
static struct cpuhp_rwsem *spare_slab;
static pthread_key_t exit_key;

/* Every registered thread's chunk c, for a sum over counters in chunk c. */
struct chunk_users {
	struct cpuhp__slot **chunk;
	struct cpuhp__thread **owner; /* to fix ->chunk_pos after a swap-remove */
	unsigned n, cap;
};
static struct chunk_users *users;
static unsigned nr_users; /* entries of users[]: chunk indexes seen so far */

#define CHUNK_BYTES                                                                                \
	((sizeof(struct cpuhp__slot) * CPUHP__CHUNK_SLOTS + CPUHP__FALSE_SHARING - 1) /            \
	 CPUHP__FALSE_SHARING * CPUHP__FALSE_SHARING)

void cpuhp__registry_lock(void)
{
	pthread_mutex_lock(&registry_mutex);
}

void cpuhp__registry_unlock(void)
{
	pthread_mutex_unlock(&registry_mutex);
}

static void registry_unlink(struct cpuhp__thread *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		registry = t->next;
	if (t->next)
		t->next->prev = t->prev;
}

/* Under the registry lock: add @t's chunk @c to users[c]; -ENOMEM leaves all as it was. */
static int users_add(struct cpuhp__thread *t, unsigned c)
{
	struct chunk_users *u;

	if (c >= nr_users) {
		unsigned n = nr_users ? nr_users : 4;
		struct chunk_users *grown;

		while (n <= c)
			n *= 2;
		grown = realloc(users, n * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		memset(grown + nr_users, 0, (n - nr_users) * sizeof(*grown));
		users = grown;
		nr_users = n;
	}
	u = &users[c];
	if (u->n == u->cap) {
		unsigned cap = u->cap ? 2 * u->cap : 16;
		struct cpuhp__slot **ch = realloc(u->chunk, cap * sizeof(*ch));
		struct cpuhp__thread **ow;

		if (!ch)
			return -ENOMEM;
		u->chunk = ch;
		ow = realloc(u->owner, cap * sizeof(*ow));
		if (!ow)
			return -ENOMEM;
		u->owner = ow;
		u->cap = cap;
	}
	t->chunk_pos[c] = u->n;
	u->chunk[u->n] = t->chunks[c];
	u->owner[u->n] = t;
	u->n++;
	return 0;
}

/* Under the registry lock: take @t's chunk @c out of users[c] (the last entry fills the hole). */
static void users_remove(struct cpuhp__thread *t, unsigned c)
{
	struct chunk_users *u = &users[c];
	unsigned pos = t->chunk_pos[c], last = --u->n;

	if (pos != last) {
		u->chunk[pos] = u->chunk[last];
		u->owner[pos] = u->owner[last];
		u->owner[pos]->chunk_pos[c] = pos;
	}
}

/*
 * Under the registry lock: free what @t allocated and clear it as new (the
 * record itself is a thread's TLS; see cpuhp__self_record).  What the
 * calling thread's get_online_cpus() nesting says stays: it is not a
 * registration's.
 */
static void thread_free(struct cpuhp__thread *t)
{
	for (unsigned i = 0; i < t->nchunks; i++) {
		if (t->chunks[i])
			users_remove(t, i);
		free(t->chunks[i]);
	}
	free(t->chunks);
	free(t->chunk_pos);
	t->chunks = NULL;
	t->chunk_pos = NULL;
	t->nchunks = 0;
	t->urcu_registered_by_us = false;
	t->urcu = NULL;
	t->prev = t->next = NULL;
}

/* pthread key destructor: runs as the thread exits. */
static void thread_exit(void *arg)
{
	struct cpuhp__thread *t = arg;

	/*
	 * First: an outstanding cpuhp_get_online_cpus() is also a read lock
	 * of the hotplug lock, which the debug checks below would report
	 * less precisely.
	 */
	CPUHP_BUG_ON(t->hotplug_depth, "cpuhp_hotplug_lock",
	             "thread exits holding cpuhp_get_online_cpus() %u time(s)", t->hotplug_depth);
	if (CPUHP_DEBUG)
		cpuhp__debug_thread_exit(t);

	cpuhp__registry_lock();
	for (unsigned c = 0; c < t->nchunks; c++) {
		if (!t->chunks[c])
			continue;
		for (unsigned s = 0; s < CPUHP__CHUNK_SLOTS; s++) {
			long v = atomic_load_explicit(&t->chunks[c][s].count, memory_order_relaxed);

			/* B (internal.h): the thread's read sections before the move. */
			if (v)
				atomic_fetch_add_explicit(
				    &counters[c * CPUHP__CHUNK_SLOTS + s]->shared, v,
				    memory_order_release);
		}
	}
	registry_unlink(t);
	if (t->urcu_registered_by_us)
		urcu_memb_unregister_thread();
	thread_free(t);
	cpuhp__registry_unlock();

	cpuhp__self = NULL;
	cpuhp__chunk0 = NULL;
	cpuhp__inline_slots = NULL;
}

struct cpuhp__thread *cpuhp__thread_slow(void)
{
	struct cpuhp__thread *t = &cpuhp__self_record;

	/*
	 * The exit hook comes first: a thread must not become a liburcu
	 * reader that nobody unregisters.  glibc stores the first 32 keys'
	 * values in the thread itself (no allocation), and ours is made by
	 * the library's constructor, so this fails only in a process that
	 * made 32 keys before loading us, and then only when out of memory.
	 */
	if (pthread_setspecific(exit_key, t))
		return NULL;
	cpuhp__registry_lock();
	/* The application (or liburcu's call_rcu worker) may have registered it. */
	if (!URCU_TLS(urcu_memb_reader).registered) {
		urcu_memb_register_thread();
		t->urcu_registered_by_us = true;
	}
	t->urcu = &URCU_TLS(urcu_memb_reader);
	t->next = registry;
	if (registry)
		registry->prev = t;
	registry = t;
	cpuhp__registry_unlock();
	cpuhp__self = t;
	return t;
}

struct cpuhp__slot *cpuhp__slot_slow(struct cpuhp__thread *t, const struct cpuhp__pcount *pc)
{
	struct cpuhp__slot *s = cpuhp__slot_fast(t, pc);
	struct cpuhp__slot **old = NULL;
	unsigned *old_pos = NULL;

	if (s)
		return s;
	cpuhp__registry_lock();
	if (pc->chunk >= t->nchunks) {
		unsigned n = t->nchunks ? t->nchunks : 4;
		struct cpuhp__slot **grown;
		unsigned *pos;

		while (n <= pc->chunk)
			n *= 2;
		grown = calloc(n, sizeof(*grown));
		pos = calloc(n, sizeof(*pos));
		if (!grown || !pos) {
			free(grown);
			free(pos);
			goto out;
		}
		if (t->nchunks) {
			memcpy(grown, t->chunks, t->nchunks * sizeof(*grown));
			memcpy(pos, t->chunk_pos, t->nchunks * sizeof(*pos));
		}
		old = t->chunks;
		old_pos = t->chunk_pos;
		t->chunks = grown;
		t->chunk_pos = pos;
		t->nchunks = n;
	}
	if (!t->chunks[pc->chunk]) {
		struct cpuhp__slot *chunk = aligned_alloc(CPUHP__FALSE_SHARING, CHUNK_BYTES);

		if (!chunk)
			goto out;
		memset(chunk, 0, CHUNK_BYTES);
		t->chunks[pc->chunk] = chunk;
		if (users_add(t, pc->chunk)) {
			t->chunks[pc->chunk] = NULL;
			free(chunk);
			goto out;
		}
		if (pc->chunk == 0) {
			cpuhp__chunk0 = chunk;
			/* <cpuhp/rwsem-inline.h>'s view: NULL where the inline path may not run. */
			cpuhp__inline_slots = cpuhp__inline_ok ? (long *)(void *)chunk : NULL;
		}
	}
	s = &t->chunks[pc->chunk][pc->slot];
out:
	cpuhp__registry_unlock();
	free(old);
	free(old_pos);
	return s;
}

/* Under the registry lock: the lowest free id, growing the tables if none. */
static int id_alloc(unsigned *out)
{
	unsigned nfull = (nr_counters / 64 + 63) / 64, f, w, id;

	for (f = first_free / 4096; f < nfull && full[f] == UINT64_MAX; f++)
		;
	if (f == nfull) {
		/* Every id taken: double the tables (64 ids at first). */
		unsigned n = nr_counters ? 2 * nr_counters : CPUHP__CHUNK_SLOTS;
		unsigned nw = n / 64, nf = (nw + 63) / 64;
		struct cpuhp__pcount **grown = realloc(counters, n * sizeof(*grown));
		uint64_t *u, *fl;
		struct slab *sl;

		if (!grown)
			return -ENOMEM;
		counters = grown;
		u = realloc(used, nw * sizeof(*u));
		if (!u)
			return -ENOMEM;
		used = u;
		fl = realloc(full, nf * sizeof(*fl));
		if (!fl)
			return -ENOMEM;
		full = fl;
		sl = realloc(slabs, nw * sizeof(*sl));
		if (!sl)
			return -ENOMEM;
		slabs = sl;
		memset(counters + nr_counters, 0, (n - nr_counters) * sizeof(*counters));
		memset(used + nr_counters / 64, 0, (nw - nr_counters / 64) * sizeof(*used));
		memset(slabs + nr_counters / 64, 0, (nw - nr_counters / 64) * sizeof(*slabs));
		/* Words past the end count as full, so that the search never picks one. */
		memset(full + nfull, 0xff, (nf - nfull) * sizeof(*full));
		for (w = nr_counters / 64; w < nw; w++)
			full[w / 64] &= ~(1ull << (w % 64));
		/* The new ids start where the old ones ended: f is their summary word. */
		f = nr_counters / 4096;
		nr_counters = n;
	}
	w = 64 * f + (unsigned)__builtin_ctzll(~full[f]);
	id = 64 * w + (unsigned)__builtin_ctzll(~used[w]);
	used[w] |= 1ull << (id % 64);
	if (used[w] == UINT64_MAX)
		full[f] |= 1ull << (w % 64);
	first_free = id + 1;
	*out = id;
	return 0;
}

static void id_free(unsigned id)
{
	used[id / 64] &= ~(1ull << (id % 64));
	full[id / 4096] &= ~(1ull << (id / 64 % 64));
	if (id < first_free)
		first_free = id;
}

void cpuhp__pcount_publish_locked(struct cpuhp__pcount *pc, unsigned id, const char *name)
{
	counters[id] = pc;
	pc->id = id;
	pc->chunk = id / CPUHP__CHUNK_SLOTS;
	pc->slot = id % CPUHP__CHUNK_SLOTS;
	pc->name = name;
	atomic_init(&pc->shared, 0);
}

int cpuhp__pcount_init(struct cpuhp__pcount *pc, const char *name)
{
	unsigned id;
	int err;

	cpuhp__registry_lock();
	err = id_alloc(&id);
	if (!err)
		cpuhp__pcount_publish_locked(pc, id, name);
	cpuhp__registry_unlock();
	return err;
}

/* Under the registry lock: the slots of counter @id cleared, the id free. */
static void pcount_destroy_locked(unsigned id)
{
	unsigned c = id / CPUHP__CHUNK_SLOTS, slot = id % CPUHP__CHUNK_SLOTS;

	/* Slots may be +1 here and -1 there (released on another thread). */
	for (unsigned i = 0; c < nr_users && i < users[c].n; i++) {
		struct cpuhp__slot *s = &users[c].chunk[i][slot];

		atomic_store_explicit(&s->count, 0, memory_order_relaxed);
#if CPUHP_DEBUG
		s->held = 0;
#endif
	}
	counters[id] = NULL;
	id_free(id);
}

void cpuhp__pcount_destroy(struct cpuhp__pcount *pc)
{
	cpuhp__registry_lock();
	pcount_destroy_locked(pc->id);
	cpuhp__registry_unlock();
}

/*
 * AddressSanitizer: a slab object not in use is poisoned, so that a lock
 * used after cpuhp_rwsem_free() is still reported, as it was when each
 * lock was its own heap block.
 */
#if defined(__SANITIZE_ADDRESS__)
#define CPUHP__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CPUHP__ASAN 1
#endif
#endif
#ifdef CPUHP__ASAN
#include <sanitizer/asan_interface.h>
#define slab_poison(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define slab_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define slab_poison(p, n)   ((void)(p), (void)(n))
#define slab_unpoison(p, n) ((void)(p), (void)(n))
#endif

#define SLAB_BYTES (CPUHP__CHUNK_SLOTS * sizeof(struct cpuhp_rwsem))

struct cpuhp_rwsem *cpuhp__rwsem_slab_get_locked(unsigned *out)
{
	struct slab *sl;
	struct cpuhp_rwsem *sem;
	unsigned id;

	if (id_alloc(&id))
		return NULL;
	sl = &slabs[id / CPUHP__CHUNK_SLOTS];
	if (!sl->objs) {
		if (spare_slab) {
			sl->objs = spare_slab;
			spare_slab = NULL;
		} else {
			sl->objs = aligned_alloc(_Alignof(struct cpuhp_rwsem), SLAB_BYTES);
			if (!sl->objs) {
				id_free(id);
				return NULL;
			}
			slab_poison(sl->objs, SLAB_BYTES);
		}
	}
	sl->live++;
	sem = &sl->objs[id % CPUHP__CHUNK_SLOTS];
	slab_unpoison(sem, sizeof(*sem));
	/* Not published yet: the caller does, once the lock is set up. */
	sem->readers.id = id;
	*out = id;
	return sem;
}

void cpuhp__rwsem_slab_put_locked(struct cpuhp_rwsem *sem)
{
	unsigned id = sem->readers.id;
	struct slab *sl = &slabs[id / CPUHP__CHUNK_SLOTS];

	pcount_destroy_locked(id);
	slab_poison(sem, sizeof(*sem));
	if (--sl->live)
		return;
	if (spare_slab)
		free(sl->objs);
	else
		spare_slab = sl->objs;
	sl->objs = NULL;
}

/* How far ahead the sum prefetches: 16-64 measured alike, 8 less well. */
#define SUM_AHEAD 32

long cpuhp__pcount_sum_locked(struct cpuhp__pcount *pc)
{
	/* C (internal.h): a reader's section happens before its decrement we count. */
	long sum = atomic_load_explicit(&pc->shared, memory_order_acquire);
	struct chunk_users *u;

	if (pc->chunk >= nr_users)
		return sum;
	u = &users[pc->chunk];
	for (unsigned i = 0; i < u->n; i++) {
		/*
		 * Each thread's slot is a line of its own (a miss, ~2 ns
		 * apiece with 20,000 threads); asking for the line SUM_AHEAD
		 * threads on keeps more of them in flight when other work
		 * competes for the memory system (bench-writer-scale).
		 */
		if (i + SUM_AHEAD < u->n)
			__builtin_prefetch(&u->chunk[i + SUM_AHEAD][pc->slot]);
		sum += atomic_load_explicit(&u->chunk[i][pc->slot].count,
		                            memory_order_acquire); /* C */
	}
	return sum;
}

long cpuhp__pcount_sum(struct cpuhp__pcount *pc)
{
	long sum;

	cpuhp__registry_lock();
	sum = cpuhp__pcount_sum_locked(pc);
	cpuhp__registry_unlock();
	return sum;
}

#if CPUHP_DEBUG
void cpuhp__pcount_debug_exit(struct cpuhp__thread *t,
                              void (*check)(struct cpuhp__pcount *pc, long held))
{
	cpuhp__registry_lock();
	for (unsigned c = 0; c < t->nchunks; c++)
		for (unsigned s = 0; t->chunks[c] && s < CPUHP__CHUNK_SLOTS; s++)
			if (t->chunks[c][s].held > 0)
				check(counters[c * CPUHP__CHUNK_SLOTS + s], t->chunks[c][s].held);
	cpuhp__registry_unlock();
}
#endif

void cpuhp__registry_forget_others(void)
{
	struct cpuhp__thread *t = registry, *next;

	for (; t; t = next) {
		next = t->next;
		if (t == cpuhp__self)
			continue;
		/*
		 * The thread does not exist in the child, but its liburcu
		 * reader record is still linked in liburcu's registry, inside
		 * a TLS block that glibc will hand to the next new thread (the
		 * call_rcu worker, for one): a grace period would then wait
		 * on, or walk through, garbage.  Unlink it, as liburcu's own
		 * call_rcu workers unregister around fork.  Only this thread
		 * runs now, so liburcu's registry lock is not needed.
		 */
		if (t->urcu->registered)
			cds_list_del(&t->urcu->node);
		/* Its read locks do not exist in the child either. */
		registry_unlink(t);
		thread_free(t);
	}
}

unsigned cpuhp__registry_count_locked(void)
{
	unsigned n = 0;

	for (struct cpuhp__thread *t = registry; t; t = t->next)
		n++;
	return n;
}

void cpuhp__registry_for_each_counter(void (*fn)(struct cpuhp__pcount *pc))
{
	for (unsigned id = 0; id < nr_counters; id++)
		if (counters[id])
			fn(counters[id]);
}

__attribute__((constructor)) static void cpuhp_lib_init(void)
{
	int err = pthread_key_create(&exit_key, thread_exit);

	CPUHP_BUG_ON(err, "libcpuhp", "pthread_key_create failed: %s", strerror(err));
	cpuhp__membarrier_init();
	cpuhp__fork_init();
	cpuhp__hotplug_init();
}
