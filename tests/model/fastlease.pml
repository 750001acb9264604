/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A Promela model of fast leases: the cross-process read side of the
 * hotplug lock, with cpuhpd as the writer (daemon/cpuhpd/leases/fastlease.c,
 * libcpuhp/client/fastpath.c, proto/fastpath.h), checked with spin by
 * run.py beside this file.  README.md maps every part to the C code; the
 * protocol and its barrier letters (P, Q, T, W, R, S, U, V) are
 * proto/FASTPATH.md.
 *
 * Processes: two client processes (client(0), client(1)), each with a
 * region of its own holding one slot, and the daemon's event loop
 * (daemon()), which also plays the fast-path thread's membarrier and the
 * hotplug worker.  With KILL, killer() may kill client 1 at any step: the
 * kernel closes its connections, and the daemon drops its region's count
 * when it reads the close.
 *
 * Memory (x86-TSO for the clients' slots, as in rwsem.pml): a client's
 * store to its slot goes into a one-entry store buffer; the client reads its
 * own buffered value, the daemon reads the slot in memory.  The buffer
 * drains at any moment: only the daemon reads other processes' slots, so
 * the drain is a choice at each of its loads (region_sum), and it is forced
 * by membarrier (Q) and by sending on a socket (the kernel's send path is
 * a full barrier: what W relies on; a death also drains).  Everything else
 * is sequentially consistent.
 *
 * Connections: each client talks to the daemon over its region's
 * connection (FastWake frames) and over a connection of its own for socket
 * leases (acquire, release).  Each is a FIFO channel; a kill appends CLOSE
 * to both (what the daemon reads after the frames sent before the death).
 *
 * Switches (spin -D...): HOTPLUGS (1 or 2), READER_LOOPS (leases per
 * client), KILL (see above), NEGATIVE (client 1 leaves -1 in its slot and
 * then dies: what a crashed or malicious client can leave behind), REVOKE
 * (see below), and the MUTANT_* switches, each documented where it acts.
 *
 * Revocation (REVOKE): while a hotplug waits for client 1's region, the
 * daemon may revoke it (a delay lease's delay, a forced hotplug's grace:
 * cpuhpd_fastpath_revoke()): the region's ->live says "revoked" (L), the
 * daemon drops it and no longer waits for it.  A lease held in it then is
 * voided (its holder is told; ghost voided[]); what must hold is that no
 * lease taken in a revoked region is ever inside a hotplug, this one or a
 * later one: the acquire loads ->live after its acquire load of the state
 * (L pairs with U).  MUTANT_LIVE_FIRST loads ->live first;
 * MUTANT_NO_LIVE drops the region without storing "revoked".
 *
 * One process, two threads: with SAME_PROCESS the two
 * clients are threads of one process, each with its own slot in one region
 * (region 0, one connection: fconn[0]); the daemon sums the region over
 * both slots.  Then:
 *   DOUBLE  thread 1 releases its fast lease a second time.  The client
 *           library's lease table refuses it (nothing changes);
 *           MUTANT_NO_TABLE decrements again, as the library did before.
 *   FORGE   thread 1 writes -1 into its slot (the table bypassed) and sends
 *           FastWake.
 * The daemon judges each slot (fastlease.c, slot_read): a slot below 0 is a
 * protocol violation, the region counts as held, and the connection is
 * closed: the process's fast leases end (their ghosts with them) and its
 * threads die, as with a kill.  MUTANT_NO_POLICE judges only the sum.
 */

#ifndef HOTPLUGS
#define HOTPLUGS 1
#endif
#ifndef READER_LOOPS
#define READER_LOOPS 1
#endif

#define NR_CLIENTS 2

mtype = { WAKE, ACQ, REL, CLOSE };

/* --------------------------------------------- shared memory (fastpath.h) */

bit blocked;              /* header ->state: "open" (0) or "blocked" (1) */
short slot[NR_CLIENTS];   /* client i's region: its one slot, in memory */
short sbuf[NR_CLIENTS];   /* client i's store buffer: a slot value... */
bit sbuf_full[NR_CLIENTS]; /* ...not yet in memory */

/* ------------------------------------------------------------ connections */

chan fconn[NR_CLIENTS] = [4] of { mtype }; /* region connection: WAKE, CLOSE */
chan lconn[NR_CLIENTS] = [4] of { mtype }; /* lease connection: ACQ, REL, CLOSE */
bit granted[NR_CLIENTS];  /* the lease grant frame, sent to client i */

/* ---------------------------------------------------- daemon (its memory) */

bit alive[NR_CLIENTS];     /* region in fast.regions */
bit undrained[NR_CLIENTS]; /* struct cpuhpd_fast_region.undrained */
bit counted;               /* fast.counted */
byte leases;               /* socket leases held (lease.c) */
bit held[NR_CLIENTS];      /* client i holds a socket lease */
bit waiting[NR_CLIENTS];   /* client i's acquire waits in the gate */
bit gate_closed;           /* the lease gate is closed for a hotplug */
bit killed[NR_CLIENTS];    /* the kernel killed client i */
bit revoked[NR_CLIENTS];   /* region i's ->live is not "open": closed, or revoked */

/* Hotplug phases (the daemon's, in order). */
#define IDLE    0
#define BAR0    1 /* membarrier has reached no client yet */
#define BAR1    2 /* ...client 0 */
#define COUNT   3 /* membarrier returned; count_all() next */
#define WAITING 4 /* counted: waiting for the regions and leases to drain */
#define HOT     5 /* the hotplug's section runs */
#define ANSWERED 6 /* "open" stored, the answer sent; the gate opens next */
byte phase = IDLE;
byte hp_left = HOTPLUGS;

/* ----------------------------------------------------------------- ghosts */

bit in_cs[NR_CLIENTS]; /* client i is inside a lease (fast or socket) */
bit in_fast[NR_CLIENTS]; /* ...a fast one (voided when its connection is closed) */
bit voided[NR_CLIENTS]; /* ...one cpuhpd revoked (REVOKE): a hotplug may run under it */
bit hp_in;             /* the hotplug's section runs */
bit qd[NR_CLIENTS];    /* client i's socket acquire waits... */
bit qd_old[NR_CLIENTS]; /* ...and a hotplug has opened the gate since */
byte finished;         /* clients that returned or died */

#define NONE_OF(a) (a[0] == 0 && a[1] == 0)

/* ---------------------------------------------------------- store buffers */

#define SLOT_VIEW(me) (sbuf_full[me] -> sbuf[me] : slot[me])

/* A store to client @me's slot, into its buffer (inside a step). */
#define SLOT_STORE(me, v)                                                      \
	if                                                                     \
	:: sbuf_full[me] -> slot[me] = sbuf[me]                                \
	:: else                                                                \
	fi;                                                                    \
	sbuf[me] = v;                                                          \
	sbuf_full[me] = 1

/* A full barrier of client @me (inside a step): its buffer drains. */
#define DRAIN(me)                                                              \
	if                                                                     \
	:: sbuf_full[me] -> slot[me] = sbuf[me]; sbuf_full[me] = 0; sbuf[me] = 0 \
	:: else                                                                \
	fi

/* The daemon loads a slot: a buffered store may have drained or not. */
#define MAY_DRAIN(me)                                                          \
	if                                                                     \
	:: sbuf_full[me] -> DRAIN(me)                                          \
	:: true                                                                \
	fi

/* Which region (and region connection) a client's slot is in. */
#ifdef SAME_PROCESS
#define RGN(me) 0
#else
#define RGN(me) me
#endif

/* --------------------------------------------------------------- clients */

/* The lease's section starts in the step that gets the client in. */
#define CS_ENTER(me)                                                           \
	assert(!hp_in);                                                        \
	in_cs[me] = 1

/*
 * cpuhp__fast_after_release(): load the state; "blocked": send FastWake
 * (W: after the slot--, which the caller made first).
 */
#ifndef MUTANT_NO_WAKE
#define SEND_WAKE(me) atomic { DRAIN(me); fconn[RGN(me)]!WAKE }
#else
#define SEND_WAKE(me) skip /* mutant: nobody tells the daemon */
#endif

#define AFTER_RELEASE(me)                                                      \
	wake = blocked;                                                        \
	if                                                                     \
	:: wake -> SEND_WAKE(me); wake = 0                                     \
	:: else                                                                \
	fi

/*
 * slot-- then AFTER_RELEASE (T pairs with Q): the release (R: @cs, the
 * section ends before the decrement) or the back-out.  MUTANT_WAKE_FIRST
 * loads the state and sends FastWake before the decrement (W broken).
 */
#ifndef MUTANT_WAKE_FIRST
#define FAST_DEC(me, cs)                                                       \
	atomic {                                                               \
		if                                                             \
		:: cs -> in_cs[me] = 0; in_fast[me] = 0; voided[me] = 0        \
		:: else                                                        \
		fi;                                                            \
		SLOT_STORE(me, SLOT_VIEW(me) - 1)                              \
	};                                                                     \
	AFTER_RELEASE(me)
#else
#define FAST_DEC(me, cs)                                                       \
	AFTER_RELEASE(me);                                                     \
	atomic {                                                               \
		if                                                             \
		:: cs -> in_cs[me] = 0; in_fast[me] = 0; voided[me] = 0        \
		:: else                                                        \
		fi;                                                            \
		SLOT_STORE(me, SLOT_VIEW(me) - 1)                              \
	}
#endif

proctype client(byte me)
{
	byte n;
	bit ok, wake, st, lv;

	{
		do
		:: n < READER_LOOPS ->
#ifdef NEGATIVE
			if
			:: me == 1 ->
				/*
				 * A slot left at -1 (a thread released a lease
				 * another took, or a malicious write), then death.
				 */
				atomic { SLOT_STORE(me, -1) };
				killed[me] = 1;
				goto next
			:: else
			fi;
#endif
#ifdef FORGE
			if
			:: me == 1 ->
				/* The table bypassed: -1 written by hand, then a wake-up. */
				atomic { SLOT_STORE(me, -1) };
				SEND_WAKE(me);
				goto next
			:: else
			fi;
#endif
			/*
			 * Fast acquire (P): cpuhp__fast_claim(), slot++ (relaxed:
			 * buffered), compiler barrier, load the state (acquire),
			 * then the region's ->live (L).  The lease is held (its
			 * section starts) in the step of the second load.
			 */
			atomic { SLOT_STORE(me, SLOT_VIEW(me) + 1) };
#ifndef MUTANT_LIVE_FIRST
			st = blocked;
			atomic {
				ok = !st && !revoked[RGN(me)];
				if
				:: ok -> CS_ENTER(me); in_fast[me] = 1
				:: else
				fi
			};
#else
			lv = revoked[RGN(me)]; /* mutant: ->live before the state */
			atomic {
				ok = !blocked && !lv;
				if
				:: ok -> CS_ENTER(me); in_fast[me] = 1
				:: else
				fi
			};
#endif
			if
			:: ok ->
				/* the section; then the fast release (R, T, W) */
				FAST_DEC(me, 1);
#ifdef DOUBLE
				/*
				 * A second release of the same id: the lease table
				 * refuses it (-ESRCH, nothing changes).
				 */
#ifdef MUTANT_NO_TABLE
				if
				:: me == 1 -> FAST_DEC(me, 0) /* mutant: counted again */
				:: else
				fi;
#endif
#endif
				goto next
			:: else
			fi;
			/* cpuhp__fast_back_out(): slot--, T, FastWake if blocked. */
			FAST_DEC(me, 0);
			/*
			 * cpuhp__fast_slow_acquire(): a socket lease on the
			 * lease connection, granted when the gate opens.
			 */
			atomic { DRAIN(me); lconn[me]!ACQ };
			atomic { granted[me] -> granted[me] = 0; qd[me] = 0; qd_old[me] = 0; CS_ENTER(me) };
			/* the section; then the socket release */
			atomic { in_cs[me] = 0; DRAIN(me); lconn[me]!REL };
next:
			n++
		:: else -> break
		od
	} unless {
		killed[me] ->
		/* Death: the kernel closes both connections. */
		atomic {
			in_cs[me] = 0;
			in_fast[me] = 0;
			DRAIN(me);
#ifndef SAME_PROCESS
			fconn[me]!CLOSE;
#endif
			lconn[me]!CLOSE
		}
	};
	finished++
}

#ifdef KILL
/* SIGKILL of client 1, at any step (or never). */
proctype killer()
{
	if
	:: killed[1] = 1
	:: skip
	fi
}
#endif

/* ---------------------------------------------------------------- daemon */

/*
 * region_sum() of region @r (S: acquire loads), a choice of drain first.
 * MUTANT_GLOBAL_SUM: one sum over every live region, so that a negative
 * count in one region cancels a lease in another.
 */
#if defined(SAME_PROCESS)
#define REGION_NONZERO(r) (slot[0] + slot[1] != 0)
#elif !defined(MUTANT_GLOBAL_SUM)
#define REGION_NONZERO(r) (slot[r] != 0)
#else
#define REGION_NONZERO(r) ((alive[0] -> slot[0] : 0) + (alive[1] -> slot[1] : 0) != 0)
#endif

/*
 * slot_read(): a slot below 0 makes region @r bad; it counts as held.
 * MUTANT_NO_POLICE: only the sum is judged.
 */
#if defined(SAME_PROCESS) && !defined(MUTANT_NO_POLICE)
#define REGION_BAD(r) (slot[0] < 0 || slot[1] < 0)
#elif !defined(MUTANT_NO_POLICE)
#define REGION_BAD(r) (slot[r] < 0)
#else
#define REGION_BAD(r) 0
#endif
#define REGION_HELD(r) (REGION_NONZERO(r) || REGION_BAD(r))

/*
 * police_cb(): close the connection of a bad region: ->revoked, its fast
 * leases end (their ghosts go), and its process's threads die (what they
 * hold on their lease connections ends when those close).
 */
#ifdef SAME_PROCESS
#define POLICE(r)                                                              \
	if                                                                     \
	:: alive[r] && REGION_BAD(r) ->                                        \
		alive[r] = 0; undrained[r] = 0; revoked[r] = 1;                \
		in_cs[0] = in_cs[0] && !in_fast[0]; in_fast[0] = 0;            \
		in_cs[1] = in_cs[1] && !in_fast[1]; in_fast[1] = 0;            \
		killed[0] = 1; killed[1] = 1                                   \
	:: else                                                                \
	fi
#else
#define POLICE(r)                                                              \
	if                                                                     \
	:: alive[r] && REGION_BAD(r) ->                                        \
		alive[r] = 0; undrained[r] = 0; revoked[r] = 1;                \
		in_cs[r] = in_cs[r] && !in_fast[r]; in_fast[r] = 0;            \
		killed[r] = 1                                                  \
	:: else                                                                \
	fi
#endif

/*
 * Q: membarrier(GLOBAL_EXPEDITED) makes each client execute a full barrier
 * at its own moment inside the call: its store buffer drains.
 */
#ifndef MUTANT_NO_Q
#define MEMBARRIER_AT(r) DRAIN(r)
#else
#define MEMBARRIER_AT(r) skip /* mutant: no barrier; slot++ may stay buffered */
#endif

/* The hotplug's section starts: no lease inside (but a revoked one), no waiter passed over. */
#define HOTPLUG_ENTER                                                          \
	assert((!in_cs[0] || voided[0]) && (!in_cs[1] || voided[1]));         \
	assert(!(qd[0] && qd_old[0]) && !(qd[1] && qd_old[1]));                \
	hp_in = 1

proctype daemon()
{
	byte r;

end_loop:
	do
	/* ---- the event loop reads the connections (in any order) ---- */
	:: atomic {
		nempty(fconn[0]) || nempty(fconn[1]) ->
		if
		:: fconn[0]?[WAKE] -> r = 0
		:: fconn[1]?[WAKE] -> r = 1
		:: fconn[0]?[CLOSE] -> r = 0
		:: fconn[1]?[CLOSE] -> r = 1
		fi;
		if
		:: fconn[r]?WAKE ->
			/*
			 * cpuhpd_fastpath_wake() (W): this frame came after the
			 * client's slot--: sum its region again.
			 */
			if
			:: alive[r] && gate_closed && blocked && counted && undrained[r] ->
				MAY_DRAIN(0);
				MAY_DRAIN(1);
				if
				:: !REGION_HELD(r) -> undrained[r] = 0
				:: else
				fi
			:: else
			fi
		:: fconn[r]?CLOSE ->
			/* cpuhpd_fastpath_conn_gone(): its count is released. */
#ifndef MUTANT_KEEP_DEAD
			alive[r] = 0;
			undrained[r] = 0
#else
			skip /* mutant: a dead client's count is still waited for */
#endif
		fi;
		r = 0
	   }
	:: atomic {
		nempty(lconn[0]) || nempty(lconn[1]) ->
		if
		:: lconn[0]?[ACQ] -> r = 0
		:: lconn[1]?[ACQ] -> r = 1
		:: lconn[0]?[REL] -> r = 0
		:: lconn[1]?[REL] -> r = 1
		:: lconn[0]?[CLOSE] -> r = 0
		:: lconn[1]?[CLOSE] -> r = 1
		fi;
		if
		:: lconn[r]?ACQ ->
			/* lease.c: the gate grants, or queues (FIFO). */
			if
			:: gate_closed -> waiting[r] = 1; qd[r] = 1
			:: else -> held[r] = 1; leases++; granted[r] = 1
			fi
		:: lconn[r]?REL -> assert(held[r]); held[r] = 0; leases--
		:: lconn[r]?CLOSE ->
			/* The connection's lease (held or waiting) ends with it. */
			if
			:: held[r] -> held[r] = 0; leases--
			:: else
			fi;
			waiting[r] = 0;
			qd[r] = 0;
			qd_old[r] = 0
		fi;
		r = 0
	   }
	/* ---- a hotplug (hotplug.c with fastlease.c) ---- */
	:: atomic {
		phase == IDLE && hp_left > 0 ->
		/*
		 * The lease gate closes; cpuhpd_fastpath_block(): store
		 * "blocked" (Q, V), ask the fast-path thread for membarrier.
		 */
		gate_closed = 1;
		blocked = 1;
		counted = 0;
		phase = BAR0
	   }
	:: atomic { phase == BAR0 -> MEMBARRIER_AT(0); phase = BAR1 }
	:: atomic { phase == BAR1 -> MEMBARRIER_AT(1); phase = COUNT }
	:: atomic {
		phase == COUNT ->
		/*
		 * async_cb() -> count_all(): judge each region on its own.
		 * (One step: the regions are disjoint and no client writes
		 * ->state, so sums made one region per step look the same.)
		 */
		MAY_DRAIN(0);
		MAY_DRAIN(1);
		undrained[0] = alive[0] && REGION_HELD(0);
		undrained[1] = alive[1] && REGION_HELD(1);
		counted = 1;
		phase = WAITING
	   }
#ifdef REVOKE
	/*
	 * cpuhpd_fastpath_revoke() of client 1's region, while the hotplug
	 * waits for it: ->live says "revoked" (L), then the region is dropped.
	 */
	:: atomic {
		phase == WAITING && alive[1] && undrained[1] ->
#ifndef MUTANT_NO_LIVE
		revoked[1] = 1;
#endif
		alive[1] = 0;
		undrained[1] = 0;
		voided[1] = in_fast[1]
	   }
#endif
	/* The police timer: a bad region's connection is closed (any time it is bad). */
	:: atomic { alive[0] && REGION_BAD(0) -> POLICE(0) }
	:: atomic { alive[1] && REGION_BAD(1) -> POLICE(1) }
	:: atomic {
		/* cpuhpd_fastpath_drained() and no socket lease: the section (S). */
		phase == WAITING && NONE_OF(undrained) && leases == 0 ->
		HOTPLUG_ENTER;
		phase = HOT
	   }
	:: atomic {
		/*
		 * The section ends; cpuhpd_fastpath_unblock() stores "open"
		 * (U) before the answer goes out.
		 */
		phase == HOT ->
		hp_in = 0;
		blocked = 0;
		counted = 0;
		phase = ANSWERED
	   }
	:: atomic {
		/* The gate opens: every waiting acquire is granted, in order. */
		phase == ANSWERED ->
		gate_closed = 0;
		r = 0;
		do
		:: r < NR_CLIENTS ->
			qd_old[r] = waiting[r]; /* ghost: passed over once */
#ifndef MUTANT_LATE_GRANT
			if
			:: waiting[r] ->
				waiting[r] = 0;
				held[r] = 1;
				leases++;
				granted[r] = 1
			:: else
			fi;
#endif
			r++
		:: else -> r = 0; break
		od;
		hp_left--;
		phase = IDLE
	   }
#ifdef MUTANT_LATE_GRANT
	/* Mutant: the waiters are granted in later steps, while the gate is open. */
	:: atomic {
		!gate_closed && (waiting[0] || waiting[1]) ->
		r = (waiting[0] -> 0 : 1);
		waiting[r] = 0;
		held[r] = 1;
		leases++;
		granted[r] = 1;
		r = 0
	   }
#endif
	od
}

init {
	atomic {
		alive[0] = 1;
#ifndef SAME_PROCESS
		alive[1] = 1;
#endif
		run daemon();
		run client(0);
		run client(1);
#ifdef KILL
		run killer();
#endif
	}
	/*
	 * Once the clients are done (returned or dead), every hotplug
	 * finishes: no lost wake-up.  Otherwise init never ends: an invalid
	 * end state.
	 */
	atomic {
		finished == NR_CLIENTS && phase == IDLE && hp_left == 0 ->
		assert(NONE_OF(in_cs) && !hp_in)
	}
}
