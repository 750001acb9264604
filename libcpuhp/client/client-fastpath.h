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

#include "fastpath.h"

struct cpuhp_client;

struct cpuhp__fast {
	const struct cpuhp__fast_header *hdr; /* read-only mapping */
	struct cpuhp__fast_region *reg;       /* this connection's slots */
	size_t reg_size;
	uint32_t open;   /* hdr->state while fast leases may be taken */
	bool fence;      /* P and T are full fences (no membarrier to rely on) */
	unsigned nslots; /* slot 0 is shared, the others are claimed by threads */
	uint64_t serial; /* never 0, never reused by another handle */
	pid_t pid;       /* a fork child must not touch its parent's slots */
	pthread_mutex_t claim_lock;
	pid_t owner[CPUHP__FAST_MAX_SLOTS]; /* under claim_lock: the thread using slot i */
	uint8_t wake_frame[32];            /* Request{id 0, FastWake}, packed once */
	size_t wake_len;
};

/* One thread's slot in one handle. */
struct cpuhp__fast_tls {
	uint64_t serial; /* the handle's; 0: empty */
	_Atomic int32_t *count;
	uint32_t slot;
	uint32_t seq; /* numbers this thread's fast lease ids */
};

#define CPUHP__FAST_TLS_WAYS 2
extern __thread struct cpuhp__fast_tls cpuhp__fast_tls[CPUHP__FAST_TLS_WAYS]
    __attribute__((tls_model("initial-exec")));

/*
 * cpuhp__client_fast_setup() - ask for the fast path, map it, publish it in
 * c->fast.  Call with c->lock held, the fast path offered and not yet set.
 * Return: 0 (whether or not it was granted); a connection -errno.
 */
int cpuhp__client_fast_setup(struct cpuhp_client *c);
void cpuhp__client_fast_free(struct cpuhp__fast *f);

/*
 * cpuhp__fast_slow_acquire() - after a failed fast attempt: try again if the
 * hotplug is over, else -EAGAIN (@timeout_ms 0), else wait for a socket
 * lease on a connection of its own; -ECONNRESET if the daemon closed this
 * connection, stopped or died.
 */
int cpuhp__fast_slow_acquire(struct cpuhp_client *c, struct cpuhp__fast *f, unsigned timeout_ms,
                             uint64_t *lease_id);

/* The connection a lease from cpuhp__fast_slow_acquire() waits on, now the caller's; or NULL. */
struct cpuhp_client *cpuhp__fallback_take(struct cpuhp_client *c, uint64_t id);
/* cpuhp_client_close(): those connections close with the handle, and their leases end. */
void cpuhp__client_fallback_close_all(struct cpuhp_client *c);

/* The calling thread's entry for @f, claiming a slot; NULL in a fork child. */
struct cpuhp__fast_tls *cpuhp__fast_claim(struct cpuhp__fast *f);

/* The state was not "open" after a slot--: send FastWake if a hotplug waits. */
void cpuhp__fast_after_release(struct cpuhp_client *c, struct cpuhp__fast *f);

/* A failed attempt: undo the count like a release, the daemon may have seen it (out of line). */
void cpuhp__fast_back_out(struct cpuhp_client *c, struct cpuhp__fast *f,
                          const struct cpuhp__fast_tls *t);

static inline void cpuhp__fast_add(const struct cpuhp__fast_tls *t, int32_t v)
{
	/*
	 * R, for the decrement: release, the section before it; pairs with S
	 * (the daemon's acquire loads in its sums).  Free on x86.
	 */
	if (__builtin_expect(t->slot == 0, 0))
		atomic_fetch_add_explicit(t->count, v, memory_order_release);
	else
		atomic_store_explicit(t->count,
		                      atomic_load_explicit(t->count, memory_order_relaxed) + v,
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
 * A fast lease, or false: then nothing is held and the caller asks over the
 * socket (where a hotplug in the way makes it wait).
 */
static inline bool cpuhp__fast_acquire(struct cpuhp_client *c, struct cpuhp__fast *f,
                                       uint64_t *lease_id)
{
	struct cpuhp__fast_tls *t = cpuhp__fast_tls_get(f);

	if (__builtin_expect(!t, 0))
		return false;
	cpuhp__fast_add(t, 1);
	cpuhp__fast_order(f); /* P */
	/*
	 * Acquire: pairs with U, what a hotplug did before "open" is visible to
	 * the section.  ->revoked is a flag with no partner (relaxed).
	 */
	if (__builtin_expect(atomic_load_explicit(&f->hdr->state, memory_order_acquire) ==
	                             f->open &&
	                         !atomic_load_explicit(&f->reg->head.revoked, memory_order_relaxed),
	                     1)) {
		*lease_id = CPUHP_CLIENT_FAST_LEASE | (uint64_t)t->slot << 32 | ++t->seq;
		return true;
	}
	cpuhp__fast_back_out(c, f, t);
	return false;
}

static inline int cpuhp__fast_release(struct cpuhp_client *c, struct cpuhp__fast *f)
{
	struct cpuhp__fast_tls *t = cpuhp__fast_tls_get(f);

	if (__builtin_expect(!t, 0))
		return -ESRCH;
	cpuhp__fast_add(t, -1); /* R */
	cpuhp__fast_order(f);   /* T */
	if (__builtin_expect(atomic_load_explicit(&f->hdr->state, memory_order_relaxed) != f->open,
	                     0))
		cpuhp__fast_after_release(c, f);
	return 0;
}

#endif /* CPUHP_CLIENT_FASTPATH_H */
