/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The client's fast leases: the inline acquire and release that
 * cpuhp_client_lease_acquire/release try first, and what fastpath.c
 * provides around them (setup, a thread's slot, the wake-up).  The protocol
 * and the barrier labels (P, R, T, W here; Q, S, U, V on the daemon's side)
 * are proto/FASTPATH.md; the memory layout is proto/fastpath.h.
 *
 * Each thread writes one slot of the handle's region with plain stores (it
 * is the slot's only writer); threads beyond the region's slots share slot
 * 0 with atomic read-modify-writes.  A thread finds its slot through a
 * small thread-local cache keyed by the handle's serial number.  Not
 * installed.
 */
#ifndef CPUHP_CLIENT_FASTPATH_H
#define CPUHP_CLIENT_FASTPATH_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cpuhp/client.h>

#include "client-internal.h"
#include "fastpath.h"

struct cpuhp_client;

/*
 * The lease table of one slot: the ids of the fast leases counted in it.
 * Private memory (never shared with the daemon).  An entry is 0 (free),
 * CPUHP__FAST_RESERVED (an acquire of slot 0 claimed it), CPUHP__FAST_TOMB
 * (a release is taking it back) or a live id.  Only the slot's owner thread
 * makes a free entry of slot > 0 anything else (slot 0's entries are claimed
 * with a compare-and-swap); any thread ends a live id with a
 * compare-and-swap id -> TOMB, so an id is released at most once and an id
 * this table does not hold is refused without touching any count.
 */
#define CPUHP__FAST_TOMB     UINT64_C(1)
#define CPUHP__FAST_RESERVED UINT64_C(2)
struct cpuhp__fast_table {
	_Alignas(CPUHP__FAST_LINE) _Atomic uint64_t id[CPUHP__FAST_SLOT_MAX_LEASES];
	_Atomic uint64_t seq; /* numbers the ids of this slot */
	/*
	 * The region's ->bypasses when entry k's lease was granted: written
	 * before X publishes the id, read by the release after its
	 * compare-and-swap took the id (which pairs with X).
	 */
	uint32_t bypasses[CPUHP__FAST_SLOT_MAX_LEASES];
};

/*
 * A fast lease id: bit 63 CPUHP_CLIENT_FAST_LEASE, bits 48-62 the handle's
 * serial, 42-47 the slot, 38-41 the table entry, 0-37 the slot's sequence.
 */
#define CPUHP__FAST_ID_SERIAL(id) (((id) >> 48) & 0x7fff)
#define CPUHP__FAST_ID_SLOT(id)   ((unsigned)((id) >> 42) & 0x3f)
#define CPUHP__FAST_ID_ENTRY(id)  ((unsigned)((id) >> 38) & 0xf)
#define CPUHP__FAST_ID_SEQ_MASK   ((UINT64_C(1) << 38) - 1)
_Static_assert(CPUHP__FAST_MAX_SLOTS <= 64 && CPUHP__FAST_SLOT_MAX_LEASES <= 16, "id fields");

struct cpuhp__fast {
	const struct cpuhp__fast_header *hdr; /* read-only mapping */
	struct cpuhp__fast_region *reg;       /* this connection's slots */
	size_t reg_size;
	struct cpuhp__fast_table *table; /* nslots of them */
	/*
	 * hdr->state while fast leases may be taken.  The inline acquire and
	 * release compare the state with the region's ->live instead
	 * (proto/fastpath.h), which is ->open until cpuhpd drops the region
	 * (closed, or its leases revoked) or the client sees the connection
	 * end (cpuhp__fast_lost): then every acquire backs out and every
	 * release leaves the inline path, at no cost while open.
	 */
	uint32_t open;
	/* Revoked by cpuhpd, kept for its leases' releases (-ETIME) until the handle closes. */
	struct cpuhp__fast *retired_next;
	bool fence;      /* P and T are full fences (no membarrier to rely on) */
	unsigned nslots; /* slot 0 is shared, the others are claimed by threads */
	uint64_t serial; /* never 0, never reused by another handle */
	pid_t pid;       /* a fork child must not touch its parent's slots */
	unsigned forks;  /* cpuhp__client_forks when it was set up (client-internal.h) */
	pthread_mutex_t claim_lock;
	pid_t owner[CPUHP__FAST_MAX_SLOTS]; /* under claim_lock: the thread using slot i */
	uint8_t wake_frame[32];             /* Request{id 0, FastWake}, packed once */
	size_t wake_len;
};

/* One thread's slot in one handle. */
struct cpuhp__fast_tls {
	uint64_t serial; /* the handle's; 0: empty */
	_Atomic int32_t *count;
	struct cpuhp__fast_table *table;
	uint32_t slot;
};

#define CPUHP__FAST_TLS_WAYS 2
extern __thread struct cpuhp__fast_tls cpuhp__fast_tls[CPUHP__FAST_TLS_WAYS]
    __attribute__((tls_model("initial-exec")));

void cpuhp__client_fast_free(struct cpuhp__fast *f, bool forked);

/*
 * cpuhp__fast_try() - after a failed fast attempt: try again if the hotplug
 * is over, on a new region if cpuhpd revoked this one's leases.
 * Return: 0 with *@lease_id; 1: a hotplug is in the way and @timeout_ms
 * is not 0, or the handle has no region now (whatever @timeout_ms), so
 * ask for a socket lease on a connection of its own; -EAGAIN (@timeout_ms 0); -ECONNRESET if the
 * connection ended (the daemon closed it, stopped or died); -EDQUOT if
 * this thread's slot is full.  A daemon that stopped or died while the
 * connection lives on (a restart that kept it) counts as a hotplug in the
 * way.
 */
int cpuhp__fast_try(struct cpuhp_client *c, struct cpuhp__fast *f, unsigned timeout_ms,
                    uint64_t *lease_id);

/* cpuhp__fast_try(), and when it says 1 the wait on a connection of its own (call.c). */
int cpuhp__fast_slow_acquire(struct cpuhp_client *c, struct cpuhp__fast *f, unsigned timeout_ms,
                             uint64_t *lease_id);

/* The calling thread's entry for @f, claiming a slot; NULL in a fork child. */
struct cpuhp__fast_tls *cpuhp__fast_claim(struct cpuhp__fast *f);

/*
 * The state was not the region's ->live after a slot--: send FastWake if a
 * hotplug waits, or if the daemon stopped or died but the connection is
 * still there (a new daemon that took it over sums again on it).
 * Return: 0; -ETIME (message set) if cpuhpd had revoked the lease (a
 * delay, a forced hotplug); -ECONNRESET (message set) if the connection
 * has ended, and the lease with it.  @id 0 (a back-out): no message.
 */
int cpuhp__fast_after_release(struct cpuhp_client *c, struct cpuhp__fast *f, uint64_t id);

/*
 * The connection ended (cpuhp__client_end): no fast lease is granted or
 * ended quietly from now on.  Return: the fast leases still held (0 for
 * a NULL @f).
 */
unsigned cpuhp__fast_lost(struct cpuhp__fast *f);

/* A failed attempt: undo the count like a release, the daemon may have seen it (out of line). */
void cpuhp__fast_back_out(struct cpuhp_client *c, struct cpuhp__fast *f,
                          const struct cpuhp__fast_tls *t, unsigned entry);

/*
 * The end of a release whose state was not "open" (cpuhp__fast_after_release)
 * or whose lease was held across a bypass (@bypasses, the region's count at
 * its acquire, differs from it now: -ESTALE with a message, released all
 * the same).  Out of line.
 */
int cpuhp__fast_released_late(struct cpuhp_client *c, struct cpuhp__fast *f, uint64_t id,
                              uint32_t bypasses);

/* A release the table refused: -ESRCH with a message, nothing changed (out of line). */
int cpuhp__fast_release_refused(struct cpuhp_client *c, struct cpuhp__fast *f, uint64_t id);

static inline void cpuhp__fast_add(const struct cpuhp__fast_tls *t, int32_t v)
{
	/*
	 * R, for the decrement: release, the section before it; pairs with S
	 * (the daemon's acquire loads in its sums).  Free on x86.
	 */
	if (__builtin_expect(t->slot == 0, 0))
		atomic_fetch_add_explicit(t->count, v, memory_order_release);
	else
		/* Modular: ->count keeps growing when other threads release (->released). */
		atomic_store_explicit(
		    t->count,
		    (int32_t)((uint32_t)atomic_load_explicit(t->count, memory_order_relaxed) +
		              (uint32_t)v),
		    memory_order_release);
}

/*
 * P and T: the slot update before the load of the state; pair with Q (the
 * daemon stores "blocked", then its membarrier or fence, then sums).
 */
static inline void cpuhp__fast_order(const struct cpuhp__fast *f)
{
	if (__builtin_expect(f->fence, 0))
		atomic_thread_fence(memory_order_seq_cst);
	else
		atomic_signal_fence(
		    memory_order_seq_cst); /* the daemon's membarrier does the rest */
}

static inline struct cpuhp__fast_tls *cpuhp__fast_tls_get(struct cpuhp__fast *f)
{
	struct cpuhp__fast_tls *t = &cpuhp__fast_tls[f->serial % CPUHP__FAST_TLS_WAYS];

	if (__builtin_expect(t->serial == f->serial, 1))
		return t;
	return cpuhp__fast_claim(f);
}

/*
 * A free entry of @t's table, claimed; -1 if the slot holds
 * CPUHP__FAST_SLOT_MAX_LEASES.  Y: acquire on the free value (pairs with
 * the release store that freed it): the release's decrement happened
 * before this lease is counted, which keeps an honest slot within the
 * daemon's limit.
 */
static inline int cpuhp__fast_entry_claim(const struct cpuhp__fast_tls *t)
{
	for (unsigned k = 0; k < CPUHP__FAST_SLOT_MAX_LEASES; k++) {
		uint64_t v = atomic_load_explicit(&t->table->id[k], memory_order_acquire);

		if (v)
			continue;
		/* Slot > 0: only this thread makes a free entry busy. */
		if (__builtin_expect(t->slot != 0, 1))
			return (int)k;
		if (atomic_compare_exchange_strong_explicit(
		        &t->table->id[k], &v, CPUHP__FAST_RESERVED, memory_order_acquire,
		        memory_order_relaxed))
			return (int)k;
	}
	return -1;
}

/*
 * A fast lease: 0; -EAGAIN: nothing is held and the caller asks over the
 * socket (where a hotplug in the way makes it wait); -EDQUOT: this
 * thread's slot holds all the leases it may.
 */
static inline int cpuhp__fast_acquire(struct cpuhp_client *c, struct cpuhp__fast *f,
                                      uint64_t *lease_id)
{
	struct cpuhp__fast_tls *t = cpuhp__fast_tls_get(f);
	uint64_t seq, id;
	uint32_t s;
	int k;

	if (__builtin_expect(!t, 0))
		return -EAGAIN;
	k = cpuhp__fast_entry_claim(t);
	if (__builtin_expect(k < 0, 0))
		return -EDQUOT;
	cpuhp__fast_add(t, 1);
	cpuhp__fast_order(f); /* P */
	/*
	 * Acquire: pairs with U, what a hotplug did before "open" is visible to
	 * the section.  L: ->live after it, so that a region revoked before
	 * that "open" is seen revoked (relaxed: the acquire orders it).
	 */
	s = atomic_load_explicit(&f->hdr->state, memory_order_acquire);
	if (__builtin_expect(s == atomic_load_explicit(&f->reg->head.live, memory_order_relaxed),
	                     1)) {
		if (__builtin_expect(t->slot != 0, 1)) {
			seq = atomic_load_explicit(&t->table->seq, memory_order_relaxed) + 1;
			atomic_store_explicit(&t->table->seq, seq, memory_order_relaxed);
		} else {
			seq =
			    atomic_fetch_add_explicit(&t->table->seq, 1, memory_order_relaxed) + 1;
		}
		id = CPUHP_CLIENT_FAST_LEASE | (f->serial & 0x7fff) << 48 |
		     (uint64_t)t->slot << 42 | (uint64_t)k << 38 | (seq & CPUHP__FAST_ID_SEQ_MASK);
		/* The bypasses so far: one noticed from now on makes this lease stale. */
		t->table->bypasses[k] =
		    atomic_load_explicit(&f->reg->head.bypasses, memory_order_relaxed);
		/*
		 * X: release, the count before the id; pairs with the acquire of
		 * the compare-and-swap that releases it (cpuhp__fast_release), so
		 * another thread's ->released++ comes after this ->count++.
		 */
		atomic_store_explicit(&t->table->id[k], id, memory_order_release);
		*lease_id = id;
		return 0;
	}
	cpuhp__fast_back_out(c, f, t, (unsigned)k);
	return -EAGAIN;
}

/*
 * End fast lease @id: the table gives it back once (else -ESRCH, nothing
 * changed); its count goes from the slot it was counted in: ->count by the
 * slot's own thread (or anyone, atomically, for slot 0), ->released by any
 * other thread.
 */
static inline int cpuhp__fast_release(struct cpuhp_client *c, struct cpuhp__fast *f, uint64_t id)
{
	unsigned s = CPUHP__FAST_ID_SLOT(id), k = CPUHP__FAST_ID_ENTRY(id);
	struct cpuhp__fast_tls *t = &cpuhp__fast_tls[f->serial % CPUHP__FAST_TLS_WAYS];
	uint64_t want = id;
	uint32_t bypasses;

	if (__builtin_expect(
	        CPUHP__FAST_ID_SERIAL(id) != (f->serial & 0x7fff) || s >= f->nslots ||
	            f->forks != atomic_load_explicit(&cpuhp__client_forks, memory_order_relaxed) ||
	            !atomic_compare_exchange_strong_explicit(&f->table[s].id[k], &want,
	                                                     CPUHP__FAST_TOMB, memory_order_acquire,
	                                                     memory_order_relaxed),
	        0))
		return cpuhp__fast_release_refused(c, f, id);
	/* Ours since the compare-and-swap; before the entry is free again (Y). */
	bypasses = f->table[s].bypasses[k];
	if (__builtin_expect(t->serial == f->serial && t->slot == s, 1))
		cpuhp__fast_add(t, -1); /* R */
	else if (s == 0)
		atomic_fetch_sub_explicit(&f->reg->slot[0].count, 1, memory_order_release); /* R */
	else
		atomic_fetch_add_explicit(&f->reg->slot[s].released, 1,
		                          memory_order_release); /* R */
	/* Y: release, the decrement before the entry is free (cpuhp__fast_entry_claim). */
	atomic_store_explicit(&f->table[s].id[k], 0, memory_order_release);
	cpuhp__fast_order(f); /* T */
	/* Out of line, rarely: the state is not "open", or a bypass was noticed meanwhile. */
	if (__builtin_expect(
	        atomic_load_explicit(&f->hdr->state, memory_order_relaxed) !=
	                atomic_load_explicit(&f->reg->head.live, memory_order_relaxed) ||
	            atomic_load_explicit(&f->reg->head.bypasses, memory_order_relaxed) != bypasses,
	        0))
		return cpuhp__fast_released_late(c, f, id, bypasses);
	return 0;
}

#endif /* CPUHP_CLIENT_FASTPATH_H */
