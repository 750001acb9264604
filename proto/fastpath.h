/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The memory of the fast path, shared by cpuhpd (daemon/cpuhpd/leases/fastlease.c)
 * and libcpuhp-client (libcpuhp/client/fastpath.c).  FASTPATH.md beside this
 * file is the protocol: who writes what, the barrier table (P-W) and the
 * security argument; FRAMING.md says how the two memfds travel.
 *
 * The header: one memfd for the whole daemon, one page.  cpuhpd writes it
 * through the only writable mapping there will ever be (it is sealed
 * F_SEAL_FUTURE_WRITE after that mapping), so clients can only map it
 * read-only: no client can change what another reads.
 *
 * A region: one memfd per connection, sealed against resizing.  Line 0 is
 * the region head, written by cpuhpd (and ->live by the client once it saw
 * the connection end); then nslots slots, one
 * CPUHP__FAST_LINE each, written by the client only, each slot by one thread
 * (slot 0 is shared, changed with atomic read-modify-writes).  cpuhpd reads
 * the slots and judges every region on its own: a client can write its own
 * slots and nothing else, so it can lie only about its own leases.
 *
 * A slot's leases are ->count - ->released: ->count is written by the
 * threads that take leases through the slot (acquire +1, their own release
 * -1), ->released only by other threads releasing one of those leases
 * (+1, an atomic add).  So a release always lands on the slot its lease was
 * counted in, and an honest slot never reads below 0 or above
 * CPUHP__FAST_SLOT_MAX_LEASES (the reader loads ->released before ->count,
 * each acquire: a release it sees was counted first).  cpuhpd treats any
 * other value as a protocol violation of the connection and closes it.
 */
#ifndef CPUHP_PROTO_FASTPATH_H
#define CPUHP_PROTO_FASTPATH_H

#include <stdatomic.h>
#include <stdint.h>

#define CPUHP__FAST_MAGIC 0x63687066u /* "fphc" as a little-endian word */
/*
 * 2: ->released beside ->count, and the per-slot limit; 3: the region's
 * ->live, which cpuhpd can take away (revoked leases).  Daemons of another
 * layout are refused (the client takes socket leases from them).
 */
#define CPUHP__FAST_LAYOUT 3u
/* Keep writers of different slots 128 bytes apart: x86 prefetches line pairs. */
#define CPUHP__FAST_LINE 128u
/* Slots one connection may have, the shared slot included. */
#define CPUHP__FAST_MAX_SLOTS 64u
/*
 * Fast leases one slot may hold at once: the client library gives at most
 * this many per slot (-EDQUOT beyond), and cpuhpd closes a connection whose
 * slot says more (or less than 0).  A connection's limit is nslots times it.
 */
#define CPUHP__FAST_SLOT_MAX_LEASES 16

/*
 * ->state, a robust futex word of the daemon's fast-path thread (whose TID is
 * ->open): the kernel rewrites it if that thread dies, however the daemon
 * ends, and any value but ->open sends a reader to the socket.
 *
 *   open                          fast leases may be taken
 *   open | CPUHP__FAST_BLOCKED     a hotplug waits or runs: take the socket
 *                                 path; a lease that ends wakes the daemon
 *   CPUHP__FAST_STOPPED (0)        cpuhpd is stopping
 *   anything with bit 30 set      cpuhpd died (FUTEX_OWNER_DIED)
 *
 * BLOCKED is bit 31 so the TID bits stay intact while blocked: a daemon that
 * dies in the middle of a hotplug is still noticed.
 */
#define CPUHP__FAST_BLOCKED 0x80000000u
#define CPUHP__FAST_STOPPED 0u

/*
 * A region's ->live: what its readers compare the state word with.  The
 * header's ->open while the region counts (cpuhpd sets it before the
 * grant); then one of these, which the state word never takes (a TID is
 * below 2^22, and the kernel's FUTEX_OWNER_DIED keeps no TID), so that
 * every acquire on the region backs out and every release leaves the
 * inline path:
 *
 *   CPUHP__FAST_LIVE_CLOSED   cpuhpd closed the connection and dropped its counts
 *   CPUHP__FAST_LIVE_REVOKED  cpuhpd revoked the region's leases (a delay
 *                             lease's delay, a forced hotplug) and dropped
 *                             its counts; the connection lives on, and a
 *                             new FastPathRequest gets a new region
 *   CPUHP__FAST_LIVE_ENDED    the client saw the connection end (written by it)
 */
#define CPUHP__FAST_LIVE_CLOSED  0xfffffffeu
#define CPUHP__FAST_LIVE_REVOKED 0xfffffffdu
#define CPUHP__FAST_LIVE_ENDED   0xffffffffu

struct cpuhp__fast_header {
	uint32_t magic;  /* CPUHP__FAST_MAGIC */
	uint32_t layout; /* CPUHP__FAST_LAYOUT */
	uint32_t open;   /* ->state's value while fast leases may be taken */
	uint32_t reserved;
	/* Own line: read on every fast acquire and release, written per hotplug. */
	_Alignas(CPUHP__FAST_LINE) _Atomic uint32_t state;
};

struct cpuhp__fast_region_head {
	/*
	 * The header's ->open while this region counts; a CPUHP__FAST_LIVE_*
	 * value once it does not (set before cpuhpd drops its counts).
	 */
	_Atomic uint32_t live;
	uint32_t nslots;
	/*
	 * Bumped each time cpuhpd notices the online set changed behind its
	 * back (a bypass): a fast lease held across a bump may be stale, and
	 * its release says so (-ESTALE), as a socket lease's does.  A flag with
	 * no data behind it (relaxed); 0 for ever from a daemon that predates it.
	 */
	_Atomic uint32_t bypasses;
};

struct cpuhp__fast_slot {
	/* Fast leases taken through this slot, minus those its own threads released. */
	_Alignas(CPUHP__FAST_LINE) _Atomic int32_t count;
	/* Leases of this slot that other threads released (atomic adds only). */
	_Atomic int32_t released;
};

struct cpuhp__fast_region {
	_Alignas(CPUHP__FAST_LINE) struct cpuhp__fast_region_head head;
	struct cpuhp__fast_slot slot[]; /* nslots */
};

#define CPUHP__FAST_HEADER_SIZE 4096u
#define CPUHP__FAST_REGION_SIZE(nslots)                                                            \
	((uint32_t)(sizeof(struct cpuhp__fast_region) + (nslots) * sizeof(struct cpuhp__fast_slot)))

_Static_assert(sizeof(struct cpuhp__fast_header) <= CPUHP__FAST_HEADER_SIZE, "header fits a page");
_Static_assert(sizeof(struct cpuhp__fast_slot) == CPUHP__FAST_LINE, "one slot per line");

#endif /* CPUHP_PROTO_FASTPATH_H */
