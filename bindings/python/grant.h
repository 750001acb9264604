/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The leases and freezes of the cpuhp Python package's cpuhpd client
 * (cpuhp/_session.py): the C source that build_cffi.py writes for
 * cpuhp._cpuhp_client includes this header, and cpuhp_client.cdef declares
 * what Python calls.
 *
 * CPython raises a pending signal's exception (Ctrl-C: KeyboardInterrupt) at
 * the start of a Python function and as a C function returns to Python: a
 * lease that one C call got, or a call begun that will get one, would be
 * held with no Python object to end it.  So:
 * - A call is begun into a slot that Python allocated before (zeroed), and
 *   that cffi frees with the call when Python drops it (ffi.gc: C, so no
 *   signal stops it); freeing a call that is not done gives its request up.
 * - Every C call that gets a lease or a freeze records it, in the same call,
 *   in a struct cpuhp_py_grant that Python made before; the one that ends it
 *   clears the record.  A record is freed by cffi too (allocated by it,
 *   with its finaliser, in one step): one that still holds
 *   its grant then is not freed but becomes an orphan of its session, which
 *   the session ends on its next call (cpuhp_py_reap()), or forgets once its
 *   connection has closed (which ended it).
 * So whatever exception comes, the grant is either recorded in a record
 * that Python holds, or an orphan: never lost.
 *
 * A record is written by one thread at a time: the one taking it, then
 * (Python's Session lock) the one ending it, or cffi's finaliser once no
 * Python object refers to it.  The orphans are shared: a finaliser adds one
 * on any thread while a reap, without the GIL, takes them all.
 */
#ifndef CPUHP_PY_GRANT_H
#define CPUHP_PY_GRANT_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <cpuhp/client.h>

struct cpuhp_py_grants;

/* A lease or a freeze that Python holds.  Its memory is an orphan's too. */
struct cpuhp_py_grant {
	uint64_t id;                 /* the daemon's number for it, once granted */
	bool freeze;                 /* a freeze, else a lease (ids are per kind) */
	bool held;                   /* granted and not ended: end it exactly once */
	bool granted;                /* it was granted (a done call keeps saying so): never again */
	struct cpuhp_py_grants *s;   /* its session's, which it holds a reference to */
	struct cpuhp_py_grant *next; /* in s->orphans */
};

/* One per Python Session: its orphans. */
struct cpuhp_py_grants {
	_Atomic(struct cpuhp_py_grant *) orphans;
	atomic_uint refs;   /* the Session's, and one per record */
	atomic_bool closed; /* the connection closed, and ended every grant */
};

/*
 * What cffi allocates records and sessions with (ffi.new_allocator), the
 * finaliser given in the same step: zeroed, holding nothing.
 */
static inline void *cpuhp_py_alloc(size_t size)
{
	return calloc(1, size);
}

/* The Session's, once allocated. */
static inline void cpuhp_py_grants_init(struct cpuhp_py_grants *s)
{
	atomic_init(&s->refs, 1);
}

static inline void cpuhp_py__grants_put(struct cpuhp_py_grants *s)
{
	/* acq_rel: every use of @s by a thread that let go comes before the free. */
	if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
		free(s);
}

static inline void cpuhp_py__grant_destroy(struct cpuhp_py_grant *g)
{
	struct cpuhp_py_grants *s = g->s;

	free(g);
	cpuhp_py__grants_put(s);
}

/* Free the orphans taken off a list: the connection ended them. */
static inline void cpuhp_py__orphans_free(struct cpuhp_py_grant *g)
{
	while (g) {
		struct cpuhp_py_grant *next = g->next;

		cpuhp_py__grant_destroy(g);
		g = next;
	}
}

/*
 * The session's connection closed, which ended its grants: forget its
 * orphans, and every grant dropped from now on.
 */
static inline void cpuhp_py_grants_close(struct cpuhp_py_grants *s)
{
	/*
	 * A: closed, then the orphans taken; pairs with B in
	 * cpuhp_py_grant_free(), so that an orphan added as the session closes
	 * is freed by one of the two.
	 */
	atomic_store_explicit(&s->closed, true, memory_order_seq_cst);
	cpuhp_py__orphans_free(atomic_exchange_explicit(&s->orphans, NULL, memory_order_seq_cst));
}

/* The Session's finaliser: its connection is closed. */
static inline void cpuhp_py_grants_free(struct cpuhp_py_grants *s)
{
	if (!atomic_load_explicit(&s->refs, memory_order_relaxed)) {
		free(s); /* never initialised, so no record names it */
		return;
	}
	cpuhp_py_grants_close(s);
	cpuhp_py__grants_put(s);
}

/* A record, once allocated, for a lease or a freeze of session @s. */
static inline void cpuhp_py_grant_init(struct cpuhp_py_grant *g, struct cpuhp_py_grants *s,
                                       bool freeze)
{
	g->freeze = freeze;
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	g->s = s;
}

/* A record's finaliser: nothing else refers to @g. */
static inline void cpuhp_py_grant_free(struct cpuhp_py_grant *g)
{
	struct cpuhp_py_grants *s = g->s;
	struct cpuhp_py_grant *head;

	if (!s) {
		free(g); /* never initialised */
		return;
	}
	if (!g->held || atomic_load_explicit(&s->closed, memory_order_relaxed)) {
		cpuhp_py__grant_destroy(g);
		return;
	}
	head = atomic_load_explicit(&s->orphans, memory_order_relaxed);
	do
		g->next = head;
	/* C: release, the record before it is an orphan; pairs with D (cpuhp_py_reap()). */
	while (!atomic_compare_exchange_weak_explicit(&s->orphans, &head, g, memory_order_seq_cst,
	                                              memory_order_relaxed));
	/* B: added, then closed looked at; pairs with A. */
	if (atomic_load_explicit(&s->closed, memory_order_seq_cst))
		cpuhp_py__orphans_free(
		    atomic_exchange_explicit(&s->orphans, NULL, memory_order_acquire));
}

static inline void cpuhp_py__take(struct cpuhp_py_grant *g, uint64_t id)
{
	g->id = id;
	g->granted = true;
	g->held = true;
}

static inline int cpuhp_py__end(struct cpuhp_client *c, struct cpuhp_py_grant *g)
{
	g->held = false;
	return g->freeze ? cpuhp_client_thaw(c, g->id) : cpuhp_client_lease_release(c, g->id);
}

/*
 * End every orphan of @s on @c, its session's open handle (under the
 * Session's lock).  Errors are nobody's to hear: the lease ends with the
 * connection at worst.  Return: how many it ended.
 */
static inline int cpuhp_py_reap(struct cpuhp_py_grants *s, struct cpuhp_client *c)
{
	struct cpuhp_py_grant *g;
	int n = 0;

	if (!atomic_load_explicit(&s->orphans, memory_order_relaxed))
		return 0;
	/* D: acquire, each orphan's record; pairs with C. */
	g = atomic_exchange_explicit(&s->orphans, NULL, memory_order_acquire);
	while (g) {
		struct cpuhp_py_grant *next = g->next;

		cpuhp_py__end(c, g);
		cpuhp_py__grant_destroy(g);
		g = next;
		n++;
	}
	return n;
}

/*
 * End @g's grant on @c, once (under the Session's lock), the orphans of its
 * session first.  @c NULL: the connection closed, and ended it.  Return: 0,
 * -ENOLCK if @g holds nothing, or the release's (or thaw's) error.
 */
static inline int cpuhp_py_end(struct cpuhp_client *c, struct cpuhp_py_grant *g)
{
	if (!g->held)
		return -ENOLCK;
	if (!c) {
		g->held = false;
		return 0;
	}
	cpuhp_py_reap(g->s, c);
	return cpuhp_py__end(c, g);
}

/*
 * A fast lease taken at once into @g (cpuhp_client_lease_acquire() with
 * timeout 0: it never waits), the orphans of its session ended first
 * (under the Session's lock).  Return: as that; -EBUSY if @g was used.
 */
static inline int cpuhp_py_lease_now(struct cpuhp_client *c, struct cpuhp_py_grant *g)
{
	uint64_t id;
	int ret;

	if (g->granted)
		return -EBUSY;
	cpuhp_py_reap(g->s, c);
	ret = cpuhp_client_lease_acquire(c, 0, &id);
	if (ret == 0)
		cpuhp_py__take(g, id);
	return ret;
}

/* The slot's call, freed, and the slot emptied: a call not done gives its request up. */
static inline void cpuhp_py_call_free(struct cpuhp_client_call **slot)
{
	struct cpuhp_client_call *call = *slot;

	*slot = NULL;
	cpuhp_client_call_free(call);
}

/*
 * cpuhp_client_call_done() of the slot's call; once it says 0 for a lease
 * or a freeze call, its grant is taken into @g (NULL for other calls).
 * Return: as that; -ECANCELED for an empty slot.
 */
static inline int cpuhp_py_call_done(struct cpuhp_client_call **slot, struct cpuhp_py_grant *g)
{
	uint64_t id;
	int ret;

	if (!*slot)
		return -ECANCELED;
	ret = cpuhp_client_call_done(*slot);
	if (ret != 0 || !g || g->granted)
		return ret;
	ret = g->freeze ? cpuhp_client_call_freeze(*slot, &id)
	                : cpuhp_client_call_lease_acquire(*slot, &id);
	if (ret == 0)
		cpuhp_py__take(g, id);
	return ret;
}

/*
 * Begin a lease into @slot: cpuhp_client_lease_acquire_as_begin() if
 * @named, else cpuhp_client_lease_acquire_begin(), whose fast lease is
 * granted here, into @g.  Return: as those.
 */
static inline int cpuhp_py_lease_begin(struct cpuhp_client *c, unsigned timeout_ms, bool named,
                                       const char *who, const char *why,
                                       struct cpuhp_client_call **slot, struct cpuhp_py_grant *g)
{
	int ret = named ? cpuhp_client_lease_acquire_as_begin(c, timeout_ms, who, why, slot)
	                : cpuhp_client_lease_acquire_begin(c, timeout_ms, slot);

	if (ret == 0 && cpuhp_client_call_fd(*slot) < 0)
		cpuhp_py_call_done(slot, g);
	return ret;
}

#endif /* CPUHP_PY_GRANT_H */
