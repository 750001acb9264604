/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A Promela model of cpuhp_rwsem (libcpuhp/src/rwsem.c) on top of rcu_sync
 * (libcpuhp/src/rcu_sync.c), checked with spin by run.py beside this file.
 * README.md maps every part to the C code; barrier letters are the ones
 * tabled in libcpuhp/src/internal.h.
 *
 * Processes: NR_READERS reader(), NR_WRITERS writer(), one rcu_worker()
 * (liburcu's call_rcu thread running rcu_sync_func()).
 *
 * Steps: every C access that another thread can observe without holding
 * the same mutex is a step of its own.  Accesses under a mutex are merged
 * with the mutex's lock or unlock into one atomic step when the only
 * lock-free observers see at most one store of the merged run (taking a
 * mutex earlier or later is seen only by the threads that contend for it,
 * and they still serialise on it).  Each merge says so where it is made.
 *
 * Memory: sequentially consistent except where the C code relies on a full
 * barrier.  There a mutant (MUTANT_NO_A, MUTANT_NO_E) keeps the store
 * before the missing barrier in a one-entry store buffer (pend_inc,
 * pend_dec) that drains only after the load the barrier protected: the
 * store->load reordering of x86 (TSO) and of every weaker machine.
 * MUTANT_NO_B lets a reader's decrement be seen while its critical
 * section still runs (load/store->store reordering, ARM and POWER).
 *
 * RCU: rcu_in[i] says reader i is inside a read-side section.  A grace
 * period (synchronize_rcu() in cpuhp__rcu_sync_enter(), call_rcu() in
 * cpuhp__rcu_sync_exit() and rcu_sync_func()) snapshots rcu_in[] into a
 * bit set when it starts and ends once every reader in the set has left
 * its section: RCU's guarantee and nothing more.
 *
 * Switches (spin -D...): NR_READERS (2 or 3), NR_WRITERS (1 or 2),
 * READER_LOOPS and WRITER_LOOPS (iterations; FOREVER: endless, for the LTL
 * claims at the end), TIMEOUTS (writers may use
 * cpuhp_rwsem_write_lock_timeout(), and each of its waits may time out),
 * TRYLOCK (readers may use cpuhp_rwsem_read_trylock()), and the MUTANT_*
 * switches, each documented where it acts.
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
 * FOREVER (for the LTL claims): every writer but writer 0 loops for ever;
 * reader 0 and writer 0, whose progress the claims are about, and the
 * other readers run their bounded loops.  So the claims say: reader 0 and
 * writer 0 get in although writers keep coming.
 */
#define READER_MORE(n) (n < READER_LOOPS)
#ifdef FOREVER
#define WRITER_MORE(n) (w != 0 || n < WRITER_LOOPS)
#define WRITER_NEXT(n) if :: w == 0 -> n++ :: else fi
#else
#define WRITER_MORE(n) (n < WRITER_LOOPS)
#define WRITER_NEXT(n) n++
#endif
/*
 * Ghost variables cost states: rstate/wstate exist only for the LTL claims
 * (LIVENESS), the others only for the safety assertions.
 */
#ifdef FOREVER
#define LIVENESS
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

/* ---------------------------------------------------------------- RCU */

bit rcu_in[NR_READERS];    /* reader i is inside urcu_memb_read_lock() */
bit sync_wait[NR_READERS]; /* synchronize_rcu() still waits for reader i */
bit cb_wait[NR_READERS];   /* the queued call_rcu() callback waits for i */

/* ------------------------------------------------ struct cpuhp_rcu_sync */

byte gp_state = GP_IDLE;   /* ->state */
byte gp_count;             /* ->count */
byte rss_lock = NONE;      /* ->lock: the owner's _pid */
bit rss_cond[NR_WRITERS];  /* writer w sleeps on ->cond */
bit cb_queued;             /* ->cb handed to call_rcu(), not yet run */

/* --------------------------------------------------- struct cpuhp_rwsem */

byte slot[NR_READERS];     /* ->readers: reader i's per-thread slot */
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
 * ->block or queued for it), 2 inside, 0 after the unlock.  The claims start
 * at the queue, not at the mutex before it: pthread mutexes promise no
 * fairness, and the model assumes none.
 */
byte rstate[NR_READERS];
byte wstate[NR_WRITERS];

/* ------------------------------------------------- mutexes and condvars */

/* pthread_mutex_lock() as the guard of an atomic step. */
#define LOCKS(m) m == NONE -> m = _pid
#define UNLOCKS(m) assert(m == _pid); m = NONE

/*
 * pthread_cond_wait(): unlock and sleep in one step; wake on a signal or
 * broadcast (they clear the flag) and retake the mutex.  Spurious wake-ups
 * are left out: every C wait loop re-checks its condition anyway.
 */
#define COND_WAIT(flag, m)                                                     \
	atomic { flag = 1; UNLOCKS(m) };                                       \
	atomic { flag == 0 && m == NONE -> m = _pid }

/* --------------------------------------------------- rcu_sync.c and RCU */

/* urcu_memb_read_unlock(): this reader no longer holds up any GP. */
#define RCU_READ_UNLOCK(me)                                                    \
	rcu_in[me] = 0;                                                        \
	sync_wait[me] = 0;                                                     \
	cb_wait[me] = 0;                                                       \
	SAFETY_GHOST(exit_gp[me] = 0)

/*
 * urcu_memb_read_lock(); ok = cpuhp__rcu_sync_is_idle().  (Not idle, the
 * section still lasts a step: grace periods, and the rcu_sync property,
 * must take such readers into account.)
 */
#define RCU_SECTION_IS_IDLE(me)                                                \
	atomic { rcu_in[me] = 1; ok = (gp_state == GP_IDLE) }

/*
 * synchronize_rcu(), first half: the readers inside a section now are the
 * ones to wait for.  The second half is the guard NONE_OF(sync_wait).
 */
inline synchronize_rcu_start()
{
	d_step {
		i = 0;
		do
		:: i < NR_READERS -> sync_wait[i] = rcu_in[i]; i++
		:: else -> i = 0; break
		od
	}
}

/* urcu_memb_call_rcu(&rss->cb, rcu_sync_func); inside a locked step. */
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
 *  1. lock; count++; then IDLE -> ENTER and unlock, or ENTER: sleep on
 *     ->cond (unlocking), or PASSED/EXIT/REPLAY: unlock.  Readers see at
 *     most the one store to ->state.
 *  2. IDLE: synchronize_rcu() starts (G), then once it is over (which
 *     stays true) and ->lock is free: lock; ENTER -> PASSED; broadcast;
 *     unlock.  ENTER: woken (only the ENTER -> PASSED broadcast wakes
 *     anyone), retake ->lock, see PASSED, unlock: a guard.
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
		:: was_idle -> gp_state = GP_ENTER
		:: gp_state == GP_ENTER -> rss_cond[w] = 1
		:: else
		fi;
		UNLOCKS(rss_lock)
	};
	if
	:: was_idle ->
#ifndef MUTANT_NO_GP
		/* G: readers that saw IDLE leave their sections first. */
		synchronize_rcu_start();
#else
		/* Mutant: the first enter does not wait for a grace period. */
#endif
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
#ifndef LIVENESS
		/* Ghost: the readers inside a section now must leave before IDLE. */
		i = 0;
		do
		:: i < NR_READERS -> exit_gp[i] = exit_gp[i] | rcu_in[i]; i++
		:: else -> i = 0; break
		od;
#endif
		if
		:: gp_count == 0 && gp_state == GP_PASSED ->
			gp_state = GP_EXIT; /* PASSED -> EXIT */
			call_rcu()
		:: gp_count == 0 && gp_state == GP_EXIT ->
#ifndef MUTANT_NO_REPLAY
			gp_state = GP_REPLAY /* EXIT -> REPLAY */
#else
			skip /* mutant: the pending callback will go IDLE too early */
#endif
		:: gp_count == 0 && gp_state == GP_REPLAY -> skip
		:: else -> assert(gp_count > 0 && gp_state != GP_IDLE && gp_state != GP_ENTER)
		fi
	}
}

/*
 * liburcu's call_rcu worker thread: runs rcu_sync_func() once a grace
 * period has passed since call_rcu().  lock ... unlock in one step.
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
				 * EXIT -> IDLE.  The rcu_sync property: no
				 * updater between enter and exit, and a grace
				 * period has passed since every exit.
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

/* wake_writer(): bump ->wseq, then futex_wake(): two steps. */
#define WAKE_WRITER                                                            \
	wseq_moved = 1;                                                        \
	futex_asleep = 0

/*
 * The decrement before E.  MUTANT_NO_E: it may stay in the store buffer
 * until after ->wwait is read.
 */
#ifndef MUTANT_NO_E
#define DEC_SLOT(me) slot[me]--
#else
#define DEC_SLOT(me) if :: slot[me]-- :: pend_dec = 1 fi
#endif

/*
 * read_unlock_slow(): B, decrement, E, look at ->wwait.  @cs: a critical
 * section (rather than a failed attempt) ends here, at B.
 */
inline read_unlock_slow(me, cs)
{
#ifndef MUTANT_NO_B
	/* The section ends, B, the decrement: one step (B orders them). */
	atomic {
		if
		:: cs -> rcs--
		:: else
		fi;
		DEC_SLOT(me)
	};
#else
	/* Mutant: the decrement may be seen while the section still runs. */
	DEC_SLOT(me);
	if
	:: cs -> rcs--
	:: else
	fi;
#endif
	/* E: the decrement is visible before ->wwait is read. */
	if
	:: wwait ->
#ifndef MUTANT_NO_WAKE
		WAKE_WRITER
#else
		skip /* mutant: the writer is never woken */
#endif
	:: else
	fi;
#ifdef MUTANT_NO_E
	/* The store buffer drains (at the latest at the next barrier). */
	if
	:: pend_dec -> slot[me]--; pend_dec = 0
	:: else
	fi
#else
	skip
#endif
}

/*
 * read_trylock_slow(): ok = 1 if in; otherwise the count is as before.
 * @lock: take ->lock first, in the increment's step (only contenders for
 * ->lock see when it is taken).  MUTANT_NO_A: the increment may stay in
 * the store buffer until after ->block is read.
 */
inline read_trylock_slow(me, lock)
{
#ifndef MUTANT_NO_A
	atomic {
		if
		:: lock -> LOCKS(sem_lock)
		:: else
		fi;
		slot[me]++
	};
	/* A: the increment is visible before ->block is read. */
	atomic {
		ok = !block;
		if
		:: ok -> READER_CS_ENTER
		:: else
		fi
	};
#else
	atomic {
		if
		:: lock -> LOCKS(sem_lock)
		:: else
		fi;
		if
		:: slot[me]++
		:: pend_inc = 1
		fi
	};
	atomic {
		ok = !block;
		if
		:: ok -> READER_CS_ENTER
		:: else
		fi
	};
	if
	:: pend_inc -> slot[me]++; pend_inc = 0
	:: else
	fi;
#endif
	if
	:: ok
	:: else -> read_unlock_slow(me, 0)
	fi
}

proctype reader(byte me)
{
	byte n, i;
	/*
	 * cpuhp__slot_fast() finds a slot after the thread's first lock.
	 * Reader 0 starts without one (its first lock takes the slow path);
	 * the others have used the lock before.
	 */
	bit has_slot = (me != 0);
	bit ok, gen, trying;
	bit pend_inc, pend_dec;

	do
	:: READER_MORE(n) ->
#ifdef TRYLOCK
		if
		:: trying = 1 /* cpuhp_rwsem_read_trylock() */
		:: trying = 0 /* cpuhp_rwsem_read_lock() */
		fi;
#endif
		/* cpuhp_rwsem_read_lock(): the fast path */
		if
		:: has_slot ->
			RCU_SECTION_IS_IDLE(me);
			if
			:: ok ->
				/*
				 * slot++ (relaxed), urcu_memb_read_unlock(): one
				 * step, for only a grace period watches the
				 * section's end, and it also waits for the slot.
				 */
				atomic {
					slot[me]++;
					RCU_READ_UNLOCK(me);
					ok = 0;
					READER_CS_ENTER
				};
				goto locked
			:: else -> atomic { RCU_READ_UNLOCK(me) }
			fi
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
			slot[me]++;
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
		/* cpuhp_rwsem_read_unlock(): the fast path */
		RCU_SECTION_IS_IDLE(me);
		if
		:: ok ->
			/*
			 * The section ends; slot-- (a release store, no
			 * barrier: G orders the section before any writer);
			 * urcu_memb_read_unlock().
			 */
			atomic { rcs--; slot[me]--; RCU_READ_UNLOCK(me); ok = 0 }
		:: else ->
			atomic { RCU_READ_UNLOCK(me) };
			read_unlock_slow(me, 1)
		fi;
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
 */
inline pcount_sum()
{
	sum = 0;
	i = 0;
	do
	:: i < NR_READERS -> atomic { sum = sum | (slot[i] != 0); i++ }
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
#ifndef LIVENESS
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
			wgranted[nw] = 1;
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
	bit sum, was_idle, queued, drain, err, deadline, timedout;

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
				assert(wgranted[w]);
				GRANT_WAIT
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
		 * D: ->block is visible before the slots are read.  (In the
		 * model every store to ->block is, being SC; the NO_A mutant
		 * shows the other half of the pair.)
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
		   futex_wait()
		od;
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
			/* Timed out: counts summed to zero since are fine too. */
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

init {
	byte i;

	atomic {
		run rcu_worker();
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
	 * Everyone is done (only init and rcu_worker left): the lock is as
	 * new, and rcu_sync goes back to IDLE (or init never ends: an
	 * invalid end state).
	 */
	atomic {
		_nr_pr == 2 && gp_state == GP_IDLE ->
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

#ifdef LIVENESS
/* A queued writer gets in (with weak fairness). */
ltl writer_enters { [] ((wstate[0] == 1) -> <> (wstate[0] == 2)) }
/* A queued reader gets in (with weak fairness). */
ltl reader_enters { [] ((rstate[0] == 1) -> <> (rstate[0] == 2)) }
#endif
