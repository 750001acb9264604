/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * states.pml: the hotplug-state callback protocol of cpuhpd
 * (daemon/cpuhpd/states/, "Hotplug states" in daemon/cpuhpd/README.md).
 *
 * One CPU, online at the start, is taken offline and, if that worked,
 * brought back online, by one hotplug each.  NS states are registered,
 * state i with priority i, each owned by its own client process; a lease
 * holder takes and releases a lease around them.  What each process may do
 * (every choice is explored):
 *
 *   daemon   as the worker and states.c together: close the lease gate,
 *            wait for the leases to drain, then call teardown from the
 *            highest priority down and write the file; online: write the
 *            file, startup from the lowest up.  Each call waits for its
 *            answer (matched by call id and owner), the owner's death, or
 *            the deadline (which may pass at any moment).  A failure or a
 *            missed deadline rolls back, kernel-style: the other phase, in
 *            reverse, on the states whose call succeeded, and on the failed
 *            one only if it missed its deadline (it may finish late).  Dead
 *            owners are skipped.
 *   client   per call: do it and answer ok, or (not in a rollback) answer a
 *            failure having changed nothing, or die inside the callback
 *            (-DKILL); it may answer a call twice (-DDUP).  Its view of the
 *            CPU (view[i]: has its per-CPU resource) follows the calls it ran.
 *   holder   takes a lease while the gate is open, releases it.
 *
 * Checked (assertions; and no invalid end state: nothing waits for ever):
 *   - every call is sent with the gate closed and no lease held (the leases
 *     drained first);
 *   - teardown runs highest priority first, startup lowest first: when a
 *     state is called, the live ones before it in that order are done;
 *   - when the file says offline, every live state has torn down;
 *   - at the end of a hotplug in which no call missed its deadline, every
 *     live state's view matches the file (rollback restored it);
 *   - once every live client has run every call sent to it, every live
 *     state's view matches the file (late calls are undone in order).
 *
 * -DBATCH: the states are one client's, on one connection, and the daemon
 * sends a phase's forward calls in one batch (proto/FRAMING.md, "Batches"):
 * all at once, each awaited in its turn; the client runs them in order and,
 * once one fails, skips the rest of the batch (answers it failed, changing
 * nothing).  Its rollback undoes the calls that ran; after a late call also
 * every call sent after it in the batch (the client runs those if the late
 * one ends well).  The client's death ends all its states at once.
 *
 * Mutants (run.py): -DMUTANT_NO_ROLLBACK (a failure is not rolled back),
 * -DMUTANT_EARLY_TEARDOWN (teardown before the leases drained),
 * -DMUTANT_MATCH_STATE (an answer matched by its state alone, so an answer
 * given twice is taken for the next call), -DMUTANT_AWAIT_DEAD (a dead
 * owner's call still awaited; with -DNO_DEADLINE nothing ends the wait);
 * with -DBATCH, -DMUTANT_BATCH_NO_SKIP (the client runs the rest of a batch
 * after a failure) and -DMUTANT_BATCH_LATE_KEEP (the calls sent after a
 * late one are not undone).
 */

#ifndef NS
#define NS 3
#endif

/*
 * How many calls may miss their deadline, and how many clients may die, in
 * one run (bounds on the search; any call may be the one).
 */
#ifndef MAXLATE
#define MAXLATE 1
#endif
#ifndef MAXDEAD
#define MAXDEAD 1
#endif
#ifdef NO_DEADLINE
#define DEADLINE false
#else
#define DEADLINE (nlate < MAXLATE)
#endif
#define MAY_DIE (ndead < MAXDEAD)

#define TEARDOWN 1
#define STARTUP 0

bit online = 1;          /* the CPU's online file */
bit view[NS];            /* client i has its per-CPU resource (starts set: registered) */
bit dead[NS];
bit busy[NS];            /* client i is inside a callback */
byte leases;
bit blocked;             /* the lease gate */
bit daemon_done;
bit ready;               /* init has set the views and started the clients */

chan call[NS] = [4] of { byte, bit, bit };  /* call id, phase, rollback */
chan ans = [8] of { byte, byte, bit };      /* state, call id, ok */
#ifdef BATCH
/* The one client's connection: state, call id, phase, rollback, batch id (0: none). */
chan bcall = [8] of { byte, byte, bit, bit, byte };
byte sent_id[NS]; /* the call id sent ahead in the batch, per state */
#endif

byte next_id = 1;
byte nlate, ndead;

/* One call of state s.  res: 0 done (or the owner is gone), 1 failed, 2 late. */
inline invoke(s, ph, rb, res) {
	if
	:: dead[s] -> res = 0
	:: else ->
#ifdef BATCH
		if
		:: sent_id[s] != 0 -> myid = sent_id[s]; sent_id[s] = 0  /* sent ahead */
		:: else ->
			atomic {
				assert(blocked && leases == 0);
				myid = next_id;
				next_id++;
				bcall!s, myid, ph, rb, 0
			}
		fi;
#else
		atomic {
			/* Every call runs under the writer side, after the leases drained. */
			assert(blocked && leases == 0);
			myid = next_id;
			next_id++;
			call[s]!myid, ph, rb
		};
#endif
		do
		:: ans?as, aid, aok ->
			if
#ifdef MUTANT_MATCH_STATE
			:: as == s ->
#else
			:: as == s && aid == myid ->
#endif
				if
				:: aok -> res = 0
				:: else -> res = 1
				fi;
				break
			:: else -> skip  /* late, repeated or foreign: ignored */
			fi;
			as = 0; aid = 0; aok = 0
#ifndef MUTANT_AWAIT_DEAD
		:: dead[s] -> res = 0; break  /* the connection closed: counts as done */
#endif
		:: DEADLINE -> res = 2; late = 1; nlate++; break
		od;
		/* Spent locals are reset: the search would count their old values as states. */
		as = 0; aid = 0; aok = 0; myid = 0
	fi
}

#ifdef BATCH
/*
 * Send the forward calls of phase ph to the live states, in its order, as
 * one batch (its id: the first call's); each is awaited later by invoke().
 */
inline send_batch(ph) {
	atomic {
		assert(blocked && leases == 0);
		first = next_id;
		if
		:: ph == TEARDOWN -> k = NS - 1
		:: else -> k = 0
		fi;
		do
		:: k >= 0 && k < NS ->
			if
			:: !dead[k] ->
				sent_id[k] = next_id;
				bcall!k, next_id, ph, 0, first;
				next_id++
			:: else -> skip
			fi;
			if
			:: ph == TEARDOWN -> k--
			:: else -> k++
			fi
		:: else -> break
		od;
		k = 0; first = 0
	}
}

/* Calls sent ahead and never awaited (the batch ended early) are forgotten here. */
inline forget_sent() {
	d_step {
		k = 0;
		do
		:: k < NS -> sent_id[k] = 0; k++
		:: else -> k = 0; break
		od
	}
}
#endif

/*
 * The order: before a (non-rollback) call of state s, every live state
 * before it in that phase's order has been called: its view is the new one.
 */
inline assert_order(s, ph) {
	d_step {
		k = 0;
		do
		:: k < NS ->
			assert(dead[k] || (ph == TEARDOWN && k <= s) || (ph == STARTUP && k >= s) ||
			       view[k] == (ph == STARTUP));
			k++
		:: else -> k = 0; break
		od
	}
}

#ifdef BATCH
/* The one client died: every state with it. */
inline k_all_dead() {
	dead[0] = 1;
	if
	:: NS > 1 -> dead[1] = 1
	:: else -> skip
	fi;
	if
	:: NS > 2 -> dead[2] = 1
	:: else -> skip
	fi
}
#endif

/* Every live state's view is @v. */
inline assert_views(v) {
	d_step {
		k = 0;
		do
		:: k < NS -> assert(dead[k] || view[k] == v); k++
		:: else -> k = 0; break
		od
	}
}

active proctype daemon() {
	byte myid, as, aid, k;
	bit aok, late;
	byte res, r2;
	short i, failed;
#ifdef BATCH
	byte first;
#endif

	ready;
	/* ---- offline ---- */
	blocked = 1;
#ifndef MUTANT_EARLY_TEARDOWN
	(leases == 0);
#endif
	late = 0;
	failed = -1;
#ifdef BATCH
	send_batch(TEARDOWN);
#endif
	i = NS - 1;
	do
	:: i >= 0 ->
		assert_order(i, TEARDOWN);
		invoke(i, TEARDOWN, 0, res);
		if
		:: res != 0 -> failed = i; break
		:: else -> i--
		fi
	:: else -> break
	od;
	if
	:: failed < 0 ->
		assert_views(0);
		online = 0
	:: else ->
#ifdef BATCH
		forget_sent();
#endif
#ifndef MUTANT_NO_ROLLBACK
		/* startup again, lowest first: the failed state if it was late, those above it */
		if
#if defined(BATCH) && !defined(MUTANT_BATCH_LATE_KEEP)
		:: res == 2 -> i = 0  /* and those sent after it, which may run */
#else
		:: res == 2 -> i = failed
#endif
		:: else -> i = failed + 1
		fi;
		do
		:: i < NS -> invoke(i, STARTUP, 1, r2); i++
		:: else -> break
		od
#endif
		skip
	fi;
	if
	:: !late -> assert_views(online)
	:: else -> skip
	fi;
	blocked = 0;

	/* ---- online, if the CPU went ---- */
	if
	:: online == 0 ->
		blocked = 1;
		(leases == 0);
		late = 0;
		online = 1;
		failed = -1;
#ifdef BATCH
		send_batch(STARTUP);
#endif
		i = 0;
		do
		:: i < NS ->
			assert_order(i, STARTUP);
			invoke(i, STARTUP, 0, res);
			if
			:: res != 0 -> failed = i; break
			:: else -> i++
			fi
		:: else -> break
		od;
		if
		:: failed >= 0 ->
#ifdef BATCH
			forget_sent();
#endif
#ifndef MUTANT_NO_ROLLBACK
			/* teardown, highest first: the failed state if late, those below it */
			if
#if defined(BATCH) && !defined(MUTANT_BATCH_LATE_KEEP)
			:: res == 2 -> i = NS - 1  /* and those sent after it, which may run */
#else
			:: res == 2 -> i = failed
#endif
			:: else -> i = failed - 1
			fi;
			do
			:: i >= 0 -> invoke(i, TEARDOWN, 1, r2); i--
			:: else -> break
			od;
#endif
			online = 0
		:: else -> skip
		fi;
		if
		:: !late -> assert_views(online)
		:: else -> skip
		fi;
		blocked = 0
	:: else -> skip
	fi;
	daemon_done = 1;
	/* cpuhpd reads (and drops) what clients still send. */
end_drain:
	do
	:: ans?as, aid, aok -> as = 0; aid = 0; aok = 0
	od
}

proctype client(byte s) {
	byte id;
	bit ph, rb, sent;
#ifdef DUP
	bit dupped;
#endif

end_idle:
	do
	:: atomic { call[s]?id, ph, rb -> busy[s] = 1 };
		if
		:: atomic { view[s] = (ph == STARTUP); ans!s, id, 1; sent = 1; busy[s] = 0 }
		:: atomic { !rb -> ans!s, id, 0; sent = 0; busy[s] = 0 }  /* fails, changing nothing */
#ifdef KILL
		:: atomic { MAY_DIE -> dead[s] = 1; ndead++; busy[s] = 0 };  /* inside the callback */
			goto gone
#endif
		fi;
#ifdef DUP
		/* Answered twice, at any later moment before the next call. */
		if
		:: !dupped -> ans!s, id, sent; dupped = 1
		:: skip
		fi;
#endif
		id = 0; ph = 0; rb = 0; sent = 0
#ifdef KILL
	:: atomic { MAY_DIE -> dead[s] = 1; ndead++ };  /* between calls */
		goto gone
#endif
	od;
gone:
	skip
}

#ifdef BATCH
/*
 * The one client of every state: runs the calls in the order they come; a
 * call of a batch whose earlier call failed is skipped (answered failed,
 * nothing changed).
 */
proctype bclient() {
	byte s, id, b, skipb;
	bit ph, rb;

end_idle:
	do
	:: atomic { bcall?s, id, ph, rb, b -> busy[s] = 1 };
#ifdef MUTANT_BATCH_NO_SKIP
		if
		:: false -> skip
#else
		if
		:: b != 0 && b == skipb -> atomic { ans!s, id, 0; busy[s] = 0 }  /* skipped */
#endif
		:: else ->
			if
			:: atomic { view[s] = (ph == STARTUP); ans!s, id, 1; busy[s] = 0 }
			:: atomic { !rb -> ans!s, id, 0; skipb = b; busy[s] = 0 }  /* fails: nothing changed */
#ifdef KILL
			:: atomic { MAY_DIE -> k_all_dead(); ndead++; busy[s] = 0 };  /* inside the callback */
				goto gone
#endif
			fi
		fi;
		s = 0; id = 0; ph = 0; rb = 0; b = 0
#ifdef KILL
	:: atomic { MAY_DIE -> k_all_dead(); ndead++ };  /* between calls */
		goto gone
#endif
	od;
gone:
	skip
}
#endif

active proctype holder() {
	byte n = 0;

	ready;
	do
	:: n < 1 ->
		atomic { !blocked -> leases++ };
		leases--;
		n++
	:: break
	od
}

/* Once the daemon is done and every live client has run what was sent to it. */
active proctype quiesced() {
	byte k;

	daemon_done;
	k = 0;
	do
	:: k < NS ->
#ifdef BATCH
		(dead[k] || (len(bcall) == 0 && !busy[k]));
#else
		(dead[k] || (len(call[k]) == 0 && !busy[k]));
#endif
		k++
	:: else -> break
	od;
	atomic {
		k = 0;
		do
#ifdef BATCH
		:: k < NS -> assert(dead[k] || len(bcall) > 0 || busy[k] || view[k] == online); k++
#else
		:: k < NS -> assert(dead[k] || len(call[k]) > 0 || busy[k] || view[k] == online); k++
#endif
		:: else -> break
		od
	}
}

init {
	byte k = 0;

	atomic {
		do
#ifdef BATCH
		:: k < NS -> view[k] = 1; k++
#else
		:: k < NS -> view[k] = 1; run client(k); k++
#endif
		:: else -> break
		od;
#ifdef BATCH
		run bclient();
#endif
		ready = 1
	}
}
