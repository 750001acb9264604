/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A Promela model of cpuhp_rwsem (libcpuhp/src/rwsem.c) on top of rcu_sync
 * (libcpuhp/src/rcu_sync.c), checked with spin by run.py beside this file.
 * README.md maps every part to the C code; barrier letters are the ones
 * tabled in libcpuhp/src/internal.h.
 *
 * Processes: NR_READERS reader(), NR_WRITERS writer(), and, G only,
 * rcu_worker() (the grace period after the last exit and rcu_sync_func(),
 * which defer.c's timer thread or liburcu's call_rcu worker runs).
 *
 * Reader fast path: by default the membarrier scheme (H: slot++, compiler
 * barrier, load the state; the writer's membarrier fences the readers, and
 * its rcu_sync enter waits for no grace period; a reader that sees the
 * state not idle keeps its increment, A, and loads ->block).  With
 * NO_MEMBARRIER, the fallback (G: check and increment inside an RCU
 * read-side section, ordered by the writer's grace period).
 *
 * Memory (x86-TSO for the readers' slots): a reader's store to its own
 * slot goes into a one-entry store buffer (sbuf); the reader reads its own
 * buffered value, everybody else reads slot[] in memory.  The buffer
 * drains at any moment, at the latest at the reader's full barriers (A, B,
 * E) and mutex operations, and when a writer's membarrier() reaches the
 * reader (H).  Only writers read other threads' slots, so "any moment" is
 * modelled as a choice at each of their loads (pcount_sum()): the same
 * runs, without a process that may drain at every step.  A second store
 * to a full buffer first drains the old one: that keeps TSO's order and
 * only leaves out runs that need two stores in flight.  Everything else is
 * sequentially consistent.  The MUTANT_NO_A, MUTANT_NO_FAST_A and
 * MUTANT_NO_E switches drop a barrier and so let the store stay in the
 * buffer past the load the barrier protected; MUTANT_NO_B lets a reader's
 * decrement be seen while its critical section still runs (a load->store
 * reordering: not on x86, but on ARM and POWER).
 *
 * Steps: every C access that another thread can observe without holding
 * the same mutex is a step of its own.  Accesses under a mutex are merged
 * with the mutex's lock or unlock into one atomic step when lock-free code
 * sees at most one store of the merged run (taking a mutex earlier or later
 * is seen only by the threads that contend for it, and they still
 * serialise on it).  Each merge says so where it is made.
 *
 * RCU: rcu_in[i] says reader i is inside a read-side section.  A grace
 * period (synchronize_rcu() in cpuhp__rcu_sync_enter(), G only; call_rcu()
 * in cpuhp__rcu_sync_exit() and rcu_sync_func()) snapshots rcu_in[] into a
 * bit set when it starts and ends once every reader in the set has left
 * its section: RCU's guarantee and nothing more.  H readers use no
 * sections: their last exit lingers instead (I in internal.h), and a
 * reader on the slow path ends it (LINGER_END) at a moment of its
 * choosing (the linger's length is policy: any length, zero included,
 * must be safe).
 *
 * K: H readers' fenced unlock has no barrier between its decrement and
 * its load of ->wwait; a writer about to sleep for readers issues a
 * membarrier instead (once per wait) and sums again.  A reader's bump of
 * ->wseq is a release after its decrement (its buffer drains there).
 *
 * Switches (spin -D...): NR_READERS (2 or 3), NR_WRITERS (1 or 2),
 * READER_LOOPS and WRITER_LOOPS (iterations), NO_MEMBARRIER (see above),
 * TIMEOUTS (the last writer uses cpuhp_rwsem_write_lock_timeout(), and
 * each of its waits may time out), TRYLOCK (readers may use
 * cpuhp_rwsem_read_trylock()), FOREVER (for the LTL claims at the end:
 * writers other than writer 0 loop for ever), and the MUTANT_* switches,
 * each documented where it acts.
 */

#ifndef NR_READERS
#define NR_READERS 2
#endif
#ifndef NR_WRITERS
#define NR_WRITERS 2
#endif
#ifndef READER_LOOPS
#define READER_LOOPS 1
#endif
#ifndef WRITER_LOOPS
#define WRITER_LOOPS 1
#endif

#define NONE 255

#if NR_READERS == 2
#define NONE_OF(a) (a[0] == 0 && a[1] == 0)
#elif NR_READERS == 3
#define NONE_OF(a) (a[0] == 0 && a[1] == 0 && a[2] == 0)
#else
#error "NR_READERS must be 2 or 3"
#endif

/*
 * FOREVER: every writer but writer 0 loops for ever; reader 0 and writer 0,
 * whose progress the LTL claims are about, and the other readers run their
 * bounded loops.  So the claims say: they get in although writers keep
 * coming (and once readers stop arriving).
 */
#ifdef FOREVER
#define WRITER_MORE(n) (w != 0 || n < WRITER_LOOPS)
#define WRITER_NEXT(n) if :: w == 0 -> n++ :: else fi
#else
#define WRITER_MORE(n) (n < WRITER_LOOPS)
#define WRITER_NEXT(n) n++
#endif

/*
 * Ghost variables cost states: rstate/wstate exist only for the LTL claims
 * (FOREVER), the others only for the safety assertions.
 */
#ifdef FOREVER
#define LTL_GHOST(x) x
#define SAFETY_GHOST(x) skip
#else
#define LTL_GHOST(x) skip
#define SAFETY_GHOST(x) x
#endif

/* Set every element of a[0..len-1] to 0 (a broadcast), inside a step. */
#define CLEAR_ALL(a, len)                                                      \
	i = 0;                                                                 \
	do                                                                     \
	:: i < len -> a[i] = 0; i++                                            \
	:: else -> i = 0; break                                                \
	od

/* enum cpuhp__gp_state (internal.h) */
#define GP_IDLE   0
#define GP_ENTER  1
#define GP_PASSED 2
#define GP_EXIT   3
#define GP_REPLAY 4
#define GP_LINGER 5

/* ---------------------------------------------------------------- RCU */

bit rcu_in[NR_READERS];    /* reader i is inside urcu_memb_read_lock() */
bit sync_wait[NR_READERS]; /* synchronize_rcu() still waits for reader i */
bit cb_wait[NR_READERS];   /* the queued call_rcu() callback waits for i */

/* ------------------------------------------------ struct cpuhp_rcu_sync */

byte gp_state = GP_IDLE;   /* ->state */
byte gp_count;             /* ->count */
byte rss_lock = NONE;      /* ->lock: the owner's _pid */
bit rss_cond[NR_WRITERS];  /* writer w sleeps on ->cond */
bit cb_queued;             /* ->defer.rcu handed to call_rcu(), not yet run (G) */

/* --------------------------------------------------- struct cpuhp_rwsem */

byte slot[NR_READERS];     /* ->readers: reader i's per-thread slot */
byte sbuf[NR_READERS];     /* reader i's store buffer: a slot value... */
bit sbuf_full[NR_READERS]; /* ...not yet in memory */
bit block;                 /* ->block */
bit wwait;                 /* ->wwait */
bit wseq_moved;            /* ->wseq changed since the writer loaded it */
bit futex_asleep;          /* the writer sleeps in futex_wait(&->wseq) */
byte sem_lock = NONE;      /* ->lock: the owner's _pid */
bit rcond[NR_READERS];     /* reader i sleeps on ->rcond */
bit gcond[NR_WRITERS];     /* writer w sleeps on ->gcond */
/*
 * ->rgen modulo 2, which is exact: a reader waits for one bump, and no
 * second bump can come before it has counted itself (a bump needs a
 * writer that waited for ->nr_granted == 0; release_block() asserts it).
 */
bit rgen;
byte nr_rwait;             /* ->nr_rwait */
byte nr_granted;           /* ->nr_granted */
chan wq = [NR_WRITERS] of { byte }; /* ->whead..->wtail, in FIFO order */
bit wgranted[NR_WRITERS];  /* writer w's struct cpuhp__wwaiter.granted */
bit wcond[NR_WRITERS];     /* writer w sleeps on its w.cond */

/* ------------------------------------------------------------ ghosts */

byte rcs;                   /* readers inside their critical section */
byte wcs;                   /* writers inside theirs */
bit rs_entered[NR_WRITERS]; /* writer w between rcu_sync enter and exit */
bit exit_gp[NR_READERS];    /* reader i was in a section at an exit */
bit rqueued[NR_READERS];    /* reader i queued (or let in, not counted) */
bit rq_old[NR_READERS];     /* ...and a release_block() came since */
/*
 * For the LTL claims: 1 once queued (reader: on ->rcond; writer: holding
 * ->block or queued for it), 2 inside, 0 after the unlock.  The claims
 * start at the queue, not at the mutex before it: pthread mutexes promise
 * no fairness, and the model assumes none.
 */
byte rstate[NR_READERS];
byte wstate[NR_WRITERS];

/* ------------------------------------------------- mutexes and condvars */

/* pthread_mutex_lock() as the guard of an atomic step. */
#define LOCKS(m) m == NONE -> m = _pid
#define UNLOCKS(m) assert(m == _pid); m = NONE

/* ------------------------------------------------------- store buffers */

/* The slot value reader @me sees: its own buffered store first. */
#define SLOT_VIEW(me) (sbuf_full[me] -> sbuf[me] : slot[me])

/* A store to reader @me's slot, into its buffer (inside a step). */
#define SLOT_STORE(me, v)                                                      \
	if                                                                     \
	:: sbuf_full[me] -> slot[me] = sbuf[me]                                \
	:: else                                                                \
	fi;                                                                    \
	sbuf[me] = v;                                                          \
	sbuf_full[me] = 1

/* A full barrier of reader @me (inside a step): its buffer drains. */
#define DRAIN(me)                                                              \
	if                                                                     \
	:: sbuf_full[me] -> slot[me] = sbuf[me]; sbuf_full[me] = 0; sbuf[me] = 0 \
	:: else                                                                \
	fi

/* --------------------------------------------------- rcu_sync.c and RCU */

/*
 * urcu_memb_read_unlock(): this reader no longer holds up a grace period.
 * Its earlier stores drain first: a grace period sees the section's end
 * only after them (TSO keeps store order).
 */
#define RCU_READ_UNLOCK(me)                                                    \
	DRAIN(me);                                                             \
	rcu_in[me] = 0;                                                        \
	sync_wait[me] = 0;                                                     \
	cb_wait[me] = 0;                                                       \
	SAFETY_GHOST(exit_gp[me] = 0)

/*
 * synchronize_rcu(), first half (inside a step): the readers inside a
 * section now are the ones to wait for.  The second half is the guard
 * NONE_OF(sync_wait).
 */
#define SYNCHRONIZE_RCU_START                                                  \
	i = 0;                                                                 \
	do                                                                     \
	:: i < NR_READERS -> sync_wait[i] = rcu_in[i]; i++                     \
	:: else -> i = 0; break                                                \
	od

/* urcu_memb_call_rcu(&rss->defer.rcu, rcu_sync_func); inside a locked step. */
inline call_rcu()
{
	assert(!cb_queued); /* never two callbacks pending */
	cb_queued = 1;
	i = 0;
	do
	:: i < NR_READERS -> cb_wait[i] = rcu_in[i]; i++
	:: else -> i = 0; break
	od
}

/*
 * cpuhp__rcu_sync_enter().  Steps:
 *  1. lock; count++; then IDLE -> ENTER, unlock (G: the grace period
 *     starts), or ENTER: sleep on ->cond (unlocking), or
 *     PASSED/EXIT/REPLAY: unlock.  Readers see at most the one store to
 *     ->state.  (G: a reader that leaves its section between the unlock
 *     and the start of synchronize_rcu() is the same as one that left
 *     before: the period need not wait for it either way.)
 *  2. IDLE, H (a cpuhp_rwsem's rcu_sync, ->fenced_readers, where
 *     membarrier works): cpuhp__membarrier() alone, no grace period (the
 *     readers use no read-side sections); it reaches one reader per step.
 *     G: synchronize_rcu() alone: the grace period ends.  Then lock;
 *     ENTER -> PASSED; broadcast; unlock.  ENTER: woken (only the ENTER ->
 *     PASSED broadcast wakes anyone), retake ->lock, see PASSED, unlock: a
 *     guard.
 */
inline rcu_sync_enter(w)
{
	atomic {
		LOCKS(rss_lock);
		assert(gp_count < NR_WRITERS);
		gp_count++;
		rs_entered[w] = 1;
		was_idle = (gp_state == GP_IDLE);
		if
		:: was_idle ->
			gp_state = GP_ENTER;
#if defined(NO_MEMBARRIER) && !defined(MUTANT_NO_GP)
			/* G: readers that saw IDLE leave their sections first. */
			SYNCHRONIZE_RCU_START
#else
			skip /* H: no grace period; G mutant: none either. */
#endif
		:: gp_state == GP_ENTER -> rss_cond[w] = 1
#ifndef MUTANT_LINGER_IGNORES_ENTER
		:: gp_state == GP_LINGER ->
			/*
			 * LINGER -> PASSED: nothing is queued that would move
			 * it, and readers must not end it while we are inside.
			 */
			gp_state = GP_PASSED
#endif
		:: else
		fi;
		UNLOCKS(rss_lock)
	};
	if
	:: was_idle ->
#ifndef NO_MEMBARRIER
#ifndef MUTANT_NO_H
		/*
		 * H: cpuhp__membarrier(): every reader executes a full
		 * barrier, at its own moment.
		 */
		atomic { DRAIN(0) };
		atomic { DRAIN(1) };
#if NR_READERS >= 3
		atomic { DRAIN(2) };
#endif
#else
		/*
		 * Mutant: no membarrier.  Nothing else orders the fast-path
		 * increments (H waits for no grace period): they stay buffered.
		 */
#endif
#endif
		/*
		 * G: the grace period is over (that stays true; in H nothing
		 * sets sync_wait).  ->lock is free: lock; ENTER -> PASSED;
		 * broadcast ->cond; unlock.
		 */
		atomic {
			NONE_OF(sync_wait) && rss_lock == NONE ->
			gp_state = GP_PASSED;
			CLEAR_ALL(rss_cond, NR_WRITERS)
		};
		was_idle = 0
	:: else ->
		atomic { rss_cond[w] == 0 && rss_lock == NONE -> assert(gp_state != GP_ENTER) }
	fi
}

/* cpuhp__rcu_sync_exit(): lock ... unlock in one step (one ->state store). */
inline rcu_sync_exit(w)
{
	atomic {
		rss_lock == NONE ->
		assert(gp_count > 0 && rs_entered[w]);
		gp_count--;
		rs_entered[w] = 0;
#ifndef FOREVER
		/* Ghost: the readers inside a section now must leave before IDLE. */
		i = 0;
		do
		:: i < NR_READERS -> exit_gp[i] = exit_gp[i] | rcu_in[i]; i++
		:: else -> i = 0; break
		od;
#endif
		if
		:: gp_count == 0 && gp_state == GP_PASSED ->
#ifdef NO_MEMBARRIER
			gp_state = GP_EXIT; /* PASSED -> EXIT */
			call_rcu()
#else
			/*
			 * H: PASSED -> LINGER, nothing queued; a slow reader or
			 * free ends it (LINGER_END), whenever the writers'
			 * budget lets it: any moment here.
			 */
			gp_state = GP_LINGER
#endif
		:: gp_count == 0 && gp_state == GP_EXIT ->
#ifndef MUTANT_NO_REPLAY
			gp_state = GP_REPLAY /* EXIT -> REPLAY */
#else
			skip /* mutant: the pending callback will go IDLE too early */
#endif
		:: gp_count == 0 && gp_state == GP_REPLAY -> skip
#ifdef MUTANT_LINGER_IGNORES_ENTER
		/* The mutant's enter left LINGER: the C code's exit does nothing. */
		:: gp_count == 0 && gp_state == GP_LINGER -> skip
#endif
#ifndef MUTANT_LINGER_IGNORES_ENTER
		:: else -> assert(gp_count > 0 && gp_state != GP_IDLE && gp_state != GP_ENTER)
#else
		/*
		 * The C code does nothing in the states the mutant makes
		 * possible: only what the lock lets readers and writers do may
		 * catch it.
		 */
		:: else -> skip
#endif
		fi
	}
}

/*
 * linger_end_locked(): LINGER -> IDLE (I), inside a step holding ->lock.
 * The rcu_sync property for H: no updater between enter and exit.  An
 * enter moves LINGER to PASSED, so the C code finds ->count zero here
 * (CPUHP_BUG_ON); MUTANT_LINGER_IGNORES_ENTER drops both: the end goes
 * IDLE under a writer that found LINGER and skipped the membarrier.
 */
#ifndef MUTANT_LINGER_IGNORES_ENTER
#define LINGER_END                                                             \
	assert(gp_count == 0);                                                 \
	i = 0;                                                                 \
	do                                                                     \
	:: i < NR_WRITERS -> assert(!rs_entered[i]); i++                      \
	:: else -> i = 0; break                                                \
	od;                                                                    \
	gp_state = GP_IDLE;                                                    \
	CLEAR_ALL(rss_cond, NR_WRITERS)
#else
#define LINGER_END                                                             \
	gp_state = GP_IDLE;                                                    \
	CLEAR_ALL(rss_cond, NR_WRITERS)
#endif

/*
 * liburcu's call_rcu worker thread: runs rcu_sync_func() once a grace
 * period has passed since call_rcu().
 */
proctype rcu_worker()
{
	byte i;

end_idle:
	do
	:: /*
	    * The grace period is over (that stays true) and ->lock is free:
	    * dequeue, lock, run, unlock in one step, as in rcu_sync_exit().
	    */
	   atomic {
		cb_queued && NONE_OF(cb_wait) && rss_lock == NONE ->
		cb_queued = 0;
		if
		:: gp_count > 0 -> gp_state = GP_PASSED /* EXIT/REPLAY -> PASSED */
		:: gp_count == 0 && gp_state == GP_REPLAY ->
			gp_state = GP_EXIT; /* REPLAY -> EXIT, requeued */
			call_rcu()
		:: gp_count == 0 && gp_state == GP_EXIT ->
			/*
			 * EXIT -> IDLE.  The rcu_sync property: no updater
			 * between enter and exit, and a grace period has
			 * passed since every exit.
			 */
			i = 0;
			do
			:: i < NR_WRITERS -> assert(!rs_entered[i]); i++
			:: else -> i = 0; break
			od;
			assert(NONE_OF(exit_gp));
			gp_state = GP_IDLE;
			CLEAR_ALL(rss_cond, NR_WRITERS)
		:: else -> assert(false) /* a callback in IDLE, ENTER or PASSED */
		fi
	   }
	od
}

/* ---------------------------------------------------- readers (rwsem.c) */

/*
 * The reader's critical section starts in the step that gets it in (the
 * lock call returns right after it).
 */
#define READER_CS_ENTER                                                        \
	assert(wcs == 0);                                                      \
	rcs++;                                                                 \
	LTL_GHOST(rstate[me] = 2)

/*
 * wake_writer(): bump ->wseq, then futex_wake(): two steps.  The bump is a
 * release after the decrement (K): the decrement drains no later.
 */
#ifndef MUTANT_NO_WAKE
#define WAKE_WRITER                                                            \
	atomic { DRAIN(me); wseq_moved = 1 };                                  \
	futex_asleep = 0
#else
#define WAKE_WRITER skip /* mutant: the writer is never woken */
#endif

/* E: ->wwait is read after the decrement is visible. */
#ifndef MUTANT_NO_E
#define E_DRAIN(me) DRAIN(me)
#else
#define E_DRAIN(me) skip /* mutant: the decrement may still be buffered */
#endif

/* A critical section ends (@cs), rather than a failed attempt. */
#define CS_END(cs)                                                             \
	if                                                                     \
	:: cs -> rcs--                                                         \
	:: else                                                                \
	fi

/* Look at ->wwait (after E, or K's fenced unlock) and wake the writer: three steps. */
#define CHECK_WWAIT                                                            \
	wake = wwait;                                                          \
	if                                                                     \
	:: wake -> WAKE_WRITER; wake = 0                                       \
	:: else                                                                \
	fi

/* read_unlock_slow(): B, the decrement, E; look at ->wwait. */
inline read_unlock_slow(me, cs)
{
#ifndef MUTANT_NO_B
	atomic {
		DRAIN(me); /* B */
		CS_END(cs);
		SLOT_STORE(me, SLOT_VIEW(me) - 1);
		E_DRAIN(me)
	};
#else
	/* Mutant: the decrement may be seen while the section still runs. */
	atomic { SLOT_STORE(me, SLOT_VIEW(me) - 1); DRAIN(me) };
	atomic { CS_END(cs); E_DRAIN(me) };
#endif
	CHECK_WWAIT
}

/*
 * read_trylock_slow(): ok = 1 if in; otherwise the count is as before.
 * @lock: take ->lock first, in the increment's step (only contenders for
 * ->lock see when it is taken; a mutex lock is a full barrier too).
 * A: the increment is visible before ->block is read; MUTANT_NO_A lets it
 * stay in the store buffer.
 */
inline read_trylock_slow(me, lock)
{
	atomic {
		if
		:: lock -> LOCKS(sem_lock); DRAIN(me)
		:: else
		fi;
		SLOT_STORE(me, SLOT_VIEW(me) + 1);
#ifndef MUTANT_NO_A
		DRAIN(me)
#endif
	};
	atomic {
		ok = !block;
		if
		:: ok -> READER_CS_ENTER
		:: else
		fi
	};
	if
	:: ok
	:: else -> read_unlock_slow(me, 0)
	fi
}

proctype reader(byte me)
{
	byte n, i;
	/*
	 * cpuhp__slot_lookup() finds a slot after the thread's first lock.
	 * Reader 0 starts without one (its first lock takes the slow path);
	 * the others have used the lock before.
	 */
	bit has_slot = (me != 0);
	bit ok, gen, trying, wake;

	do
	:: n < READER_LOOPS ->
#ifdef TRYLOCK
		if
		:: trying = 1 /* cpuhp_rwsem_read_trylock() */
		:: trying = 0 /* cpuhp_rwsem_read_lock() */
		fi;
#endif
		/* cpuhp_rwsem_read_lock(): fast_inc() */
		if
		:: has_slot ->
#ifndef NO_MEMBARRIER
			/*
			 * fast_inc_fenced() (H): slot++ (relaxed: buffered),
			 * compiler barrier, load the state (acquire).
			 */
			atomic { SLOT_STORE(me, SLOT_VIEW(me) + 1) };
			atomic {
				ok = (gp_state == GP_IDLE);
				if
				:: ok -> READER_CS_ENTER
				:: else
				fi
			};
			if
			:: ok -> goto locked
			:: else
			fi;
			/*
			 * Not idle: fast_inc_writer_coming() (also the inline
			 * lock's cpuhp__rwsem_read_lock_writer_coming()).  The
			 * increment stands: A, then load ->block, as in
			 * read_trylock_slow().  The barrier only empties our
			 * buffer, and a drain at any earlier moment is the
			 * writer's choice in pcount_sum(), so A and the load
			 * are one step.  MUTANT_NO_FAST_A drops this A: the
			 * increment may stay buffered past the load.
			 */
			atomic {
#ifndef MUTANT_NO_FAST_A
				DRAIN(me);
#endif
				ok = !block;
				if
				:: ok -> READER_CS_ENTER
				:: else
				fi
			};
			if
			:: ok ->
				/*
				 * In: cpuhp__rcu_sync_linger_poll() on LINGER.
				 * Whether its time has come (and its clock read is
				 * due) is left open; it only trylocks ->lock.
				 */
				atomic {
					if
					:: gp_state == GP_LINGER && rss_lock == NONE -> LINGER_END
					:: true
					fi
				};
				goto locked
			:: else -> read_unlock_slow(me, 0) /* a writer holds ->block: back out */
			fi
#else
			/*
			 * fast_inc_rcu() (G): urcu_memb_read_lock(); idle?
			 * slot++; urcu_memb_read_unlock().  The increment and the
			 * section's end are one step: only a grace period watches
			 * the end, and it sees the increment first (RCU_READ_UNLOCK).
			 */
			atomic { rcu_in[me] = 1; ok = (gp_state == GP_IDLE) };
			if
			:: ok ->
				atomic {
					SLOT_STORE(me, SLOT_VIEW(me) + 1);
					RCU_READ_UNLOCK(me);
					READER_CS_ENTER
				};
				goto locked
			:: else -> atomic { RCU_READ_UNLOCK(me) }
			fi
#endif
		:: else -> has_slot = 1 /* read_lock_slow() allocates it */
		fi;
		/* read_lock_slow(): one attempt without ->lock */
		read_trylock_slow(me, 0);
		if
		:: ok -> goto locked
		:: else
		fi;
		if
		:: trying -> goto next
		:: else
		fi;
		/* The attempt again under ->lock: ->block cannot change now. */
		read_trylock_slow(me, 1);
		if
		:: ok -> atomic { UNLOCKS(sem_lock) }; goto locked
		:: else
		fi;
		/*
		 * Queue: gen = ->rgen; ->nr_rwait++; then pthread_cond_wait()
		 * unlocks and sleeps (one step: only ->lock holders see it).
		 */
		atomic {
			gen = rgen;
			nr_rwait++;
			SAFETY_GHOST(rqueued[me] = 1);
			LTL_GHOST(rstate[me] = 1);
			rcond[me] = 1;
			UNLOCKS(sem_lock)
		};
		/*
		 * Woken by release_block() (the only ->rcond broadcast, and it
		 * bumps ->rgen): retake ->lock, see ->rgen moved, count
		 * ourselves, unlock.  One step: lock-free code sees only the
		 * increment.  The next writer waits under ->lock for
		 * ->nr_granted == 0 before it sums, so the mutex orders our
		 * increment before its sum (no barrier needed).
		 */
		atomic {
			rcond[me] == 0 && sem_lock == NONE ->
			assert(rgen != gen);
			SLOT_STORE(me, SLOT_VIEW(me) + 1);
			DRAIN(me); /* the mutex unlock */
			assert(nr_granted > 0);
			nr_granted--;
			SAFETY_GHOST(rqueued[me] = 0);
			SAFETY_GHOST(rq_old[me] = 0);
			if
			:: nr_granted == 0 -> CLEAR_ALL(gcond, NR_WRITERS)
			:: else
			fi;
			gen = 0;
			READER_CS_ENTER
		};
locked:
		/* the critical section (entered with the step that got us in) */
		/* cpuhp_rwsem_read_unlock() */
#ifndef NO_MEMBARRIER
		/*
		 * H: slot-- (a release store, buffered; the section ends
		 * before it), compiler barrier, load the state.  Not idle:
		 * read_unlock_fenced_slow(): no barrier (K), look at ->wwait,
		 * wake.
		 */
#ifndef MUTANT_NO_B
		atomic { rcs--; SLOT_STORE(me, SLOT_VIEW(me) - 1) };
#else
		/* Mutant: a relaxed store, seen while the section still runs. */
		atomic { SLOT_STORE(me, SLOT_VIEW(me) - 1) };
		rcs--;
#endif
		ok = (gp_state == GP_IDLE);
		if
		:: !ok -> CHECK_WWAIT
		:: else
		fi;
#else
		/* fast_dec_rcu() (G) */
		atomic { rcu_in[me] = 1; ok = (gp_state == GP_IDLE) };
		if
		:: ok ->
			/*
			 * The section ends; slot-- (a release store, no
			 * barrier: G orders the section before any writer);
			 * urcu_memb_read_unlock().
			 */
			atomic { rcs--; SLOT_STORE(me, SLOT_VIEW(me) - 1); RCU_READ_UNLOCK(me) }
		:: else ->
			atomic { RCU_READ_UNLOCK(me) };
			read_unlock_slow(me, 1)
		fi;
#endif
		LTL_GHOST(rstate[me] = 0);
next:
		trying = 0;
		ok = 0;
		n++
	:: else -> break
	od
}

/* ---------------------------------------------------- writers (rwsem.c) */

/*
 * cpuhp__pcount_sum(), one slot per step (readers run in between).  The
 * writer only asks "zero or not", and slots are never negative here (no
 * release on another thread), so sum keeps just that: fewer states.
 *
 * A buffered store may have drained by now or not: the choice is made
 * here.  These loads are the only ones that read slot[] in memory, so a
 * drain at any earlier moment looks the same as a drain just before one
 * of them (see "Memory" at the top).
 */
inline pcount_sum()
{
	sum = 0;
	i = 0;
	do
	:: i < NR_READERS ->
		atomic {
			if
			:: sbuf_full[i] -> DRAIN(i)
			:: true
			fi;
			sum = sum | (slot[i] != 0);
			i++
		}
	:: else -> i = 0; break
	od
}

/* cpuhp__futex_wait(&->wseq, seq, deadline): err = 1 if it timed out. */
inline futex_wait()
{
	atomic {
		if
		:: !wseq_moved -> futex_asleep = 1
		:: else
		fi
	};
	if
	:: !futex_asleep -> err = 0
#ifdef TIMEOUTS
	:: atomic { deadline && futex_asleep -> futex_asleep = 0; err = 1 }
#endif
	fi
}

/*
 * release_block() with ->lock taken before and released after, in one step:
 * lock-free readers see only the store to ->block.  @cs: the critical
 * section ends here too (its ghost ends one step late: stricter).
 */
inline release_block_locked(cs)
{
	atomic {
		LOCKS(sem_lock);
		if
		:: cs -> wcs--
		:: else
		fi;
		assert(block);
		if
		:: nr_rwait > 0 ->
			assert(nr_granted == 0);
			nr_granted = nr_granted + nr_rwait;
			nr_rwait = 0;
			rgen = 1 - rgen;
#ifndef MUTANT_NO_RCOND
			CLEAR_ALL(rcond, NR_READERS)
#else
			skip /* mutant: the readers let in are not woken */
#endif
		:: else
		fi;
#ifndef FOREVER
		/* Ghost: the readers waiting now were blocked by this writer. */
		i = 0;
		do
		:: i < NR_READERS -> rq_old[i] = rq_old[i] | rqueued[i]; i++
		:: else -> i = 0; break
		od;
#endif
		if
		:: nempty(wq) -> /* hand ->block to the next writer */
			wq?nw;
#ifndef MUTANT_BARGING
			wgranted[nw] = 1;
#else
			block = 0; /* mutant: wake it, and let anyone take ->block */
#endif
			wcond[nw] = 0;
			nw = 0
		:: empty(wq) -> block = 0
		fi;
		UNLOCKS(sem_lock)
	}
}

/*
 * take_block()'s end, inside a step holding ->lock: readers let in before
 * us must count themselves before we sum (wait for ->nr_granted == 0 on
 * ->gcond, unlocking), or unlock at once.
 */
#ifndef MUTANT_NO_GRANT_WAIT
#define GRANT_WAIT                                                             \
	if                                                                     \
	:: nr_granted > 0 -> gcond[w] = 1; drain = 1                          \
	:: else                                                                \
	fi;                                                                    \
	UNLOCKS(sem_lock)
#else
/* Mutant: sum at once, before the readers let in have counted themselves. */
#define GRANT_WAIT UNLOCKS(sem_lock)
#endif

/*
 * The writer's critical section starts: no reader or writer inside, and
 * every reader blocked by an earlier writer got in before us.
 */
#define WRITER_CS_ENTER                                                        \
	assert(rcs == 0 && wcs == 0);                                          \
	i = 0;                                                                 \
	do                                                                     \
	:: i < NR_READERS -> assert(!(rqueued[i] && rq_old[i])); i++           \
	:: else -> i = 0; break                                                \
	od;                                                                    \
	wcs++;                                                                 \
	LTL_GHOST(wstate[w] = 2)

proctype writer(byte w)
{
	byte n, i, nw;
	bit sum, was_idle, queued, drain, err, deadline, timedout, retry, fenced;

	do
	:: WRITER_MORE(n) ->
#ifdef TIMEOUTS
		/*
		 * The last writer uses cpuhp_rwsem_write_lock_timeout(), the
		 * others cpuhp_rwsem_write_lock(): a timed writer then times
		 * out both behind and ahead of a plain one.
		 */
		deadline = (w == NR_WRITERS - 1);
#endif
		/* write_lock_common() */
		rcu_sync_enter(w);
		/*
		 * take_block().  Step 1: lock; ->block free: take it and
		 * GRANT_WAIT; taken: queue and sleep on w.cond (unlocking).
		 */
take:
		atomic {
			LOCKS(sem_lock);
			LTL_GHOST(wstate[w] = 1);
			if
			:: !block -> block = 1; GRANT_WAIT
			:: else ->
				wq!w;
				wgranted[w] = 0;
				wcond[w] = 1;
				UNLOCKS(sem_lock);
				queued = 1
			fi
		};
		/*
		 * Step 2, queued: woken by release_block() (the only w.cond
		 * signal, and it sets w.granted): retake ->lock, GRANT_WAIT.
		 * With a deadline, pthread_cond_timedwait() may instead return
		 * ETIMEDOUT (also after the signal): unless granted meanwhile,
		 * unqueue_writer(), unlock, -ETIMEDOUT.
		 */
		if
		:: queued ->
			if
			:: atomic {
				wcond[w] == 0 && sem_lock == NONE ->
				sem_lock = _pid;
#ifndef MUTANT_BARGING
				assert(wgranted[w]);
				GRANT_WAIT
#else
				/* Mutant: woken, not handed ->block: try again. */
				UNLOCKS(sem_lock);
				retry = 1
#endif
			   }
#ifdef TIMEOUTS
			:: atomic {
				deadline && sem_lock == NONE ->
				sem_lock = _pid;
				wcond[w] = 0;
				if
				:: wgranted[w] -> GRANT_WAIT
				:: else ->
					wq??eval(w);
					UNLOCKS(sem_lock);
					timedout = 1
				fi
			   }
#endif
			fi;
			queued = 0;
			if
			:: retry -> retry = 0; goto take
			:: timedout ->
				timedout = 0;
				rcu_sync_exit(w);
				goto done
			:: else
			fi
		:: else
		fi;
		/*
		 * Step 3, draining: woken by the last let-in reader's ->gcond
		 * broadcast, retake ->lock, see ->nr_granted == 0 (nothing
		 * raises it while we hold ->block), unlock: a guard.
		 */
		if
		:: drain ->
			atomic { gcond[w] == 0 && sem_lock == NONE -> assert(nr_granted == 0) };
			drain = 0
		:: else
		fi;
		/*
		 * D: ->block is visible before the slots are read.  (Writers'
		 * stores are SC in the model; F below would order them anyway.)
		 */
		/* wait_for_readers() */
		err = 0;
		do
		:: /* seq = load(->wseq); ->wwait = 1: one step (a bump in
		    * between is the same as a bump before the load). */
		   atomic { wseq_moved = 0; wwait = 1 };
		   /* F: ->wwait is visible before the slots are read. */
		   pcount_sum();
		   if
		   :: sum == 0 -> break
		   :: else
		   fi;
		   if
		   :: err -> break
		   :: else
		   fi;
#if !defined(NO_MEMBARRIER) && !defined(MUTANT_NO_K)
		   /*
		    * K: before the first sleep, cpuhp__membarrier() (it
		    * reaches one reader per step) and the sum again.
		    * MUTANT_NO_K sleeps without it: the fenced unlock has no
		    * barrier of its own.
		    */
		   if
		   :: !fenced ->
			atomic { DRAIN(0) };
			atomic { DRAIN(1) };
#if NR_READERS >= 3
			atomic { DRAIN(2) };
#endif
			fenced = 1;
			pcount_sum();
			if
			:: sum == 0 -> break
			:: else
			fi
		   :: else
		   fi;
#endif
		   futex_wait()
		od;
		fenced = 0;
		/*
		 * ->wwait = 0, C, and (unless timed out) the critical section
		 * starts: its ghost from this step on (stricter: nothing but
		 * the store to ->wwait happens before the C code's section).
		 */
		atomic {
			wwait = 0;
			if
			:: !err -> WRITER_CS_ENTER
			:: else
			fi
		};
		if
		:: err ->
			/* Timed out: a zero sum now still gets the lock. */
			pcount_sum();
			err = (sum != 0);
			if
			:: !err -> atomic { WRITER_CS_ENTER }
			:: else
			fi
		:: else
		fi;
		sum = 0;
		if
		:: err ->
			/* Timed out: let our readers in, serve the next writer. */
			release_block_locked(0);
			rcu_sync_exit(w);
			err = 0;
			goto done
		:: else
		fi;
		/* the critical section */
		/* cpuhp_rwsem_write_unlock() */
		release_block_locked(1);
		rcu_sync_exit(w);
done:
		LTL_GHOST(wstate[w] = 0);
		deadline = 0;
		WRITER_NEXT(n)
	:: else -> break
	od
}

/* Processes other than init, readers and writers: G's rcu_worker. */
#ifdef NO_MEMBARRIER
#define HELPERS 1
#else
#define HELPERS 0
#endif

init {
	byte i;

	atomic {
#ifdef NO_MEMBARRIER
		run rcu_worker();
#endif
		run reader(0);
		run reader(1);
#if NR_READERS >= 3
		run reader(2);
#endif
		run writer(0);
#if NR_WRITERS >= 2
		run writer(1);
#endif
	}
#ifndef FOREVER
	/*
	 * Everyone is done (only init, and rcu_worker for G, are left): once
	 * the stores have drained, the lock is as new, and rcu_sync goes back
	 * to IDLE (or init never ends: an invalid end state).
	 */
	atomic {
		_nr_pr == HELPERS + 1 && (gp_state == GP_IDLE || gp_state == GP_LINGER) ->
		/* cpuhp_rwsem_free(): destroy ends LINGER itself. */
		if
		:: gp_state == GP_LINGER -> LINGER_END
		:: else
		fi;
		DRAIN(0);
		DRAIN(1);
#if NR_READERS >= 3
		DRAIN(2);
#endif
		assert(gp_count == 0 && !cb_queued);
		assert(!block && !wwait && nr_rwait == 0 && nr_granted == 0 && empty(wq));
		assert(rcs == 0 && wcs == 0);
		i = 0;
		do
		:: i < NR_READERS -> assert(slot[i] == 0); i++
		:: else -> break
		od
	}
#endif
}

#ifdef FOREVER
/*
 * Under weak fairness, while writer 1 keeps coming: a queued writer 0 gets
 * in, and a queued reader 0 gets in.
 */
ltl progress {
	[] ((wstate[0] == 1) -> <> (wstate[0] == 2)) &&
	[] ((rstate[0] == 1) -> <> (rstate[0] == 2))
}
#endif
