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
 * sends a phase's forward calls in batches (proto/FRAMING.md, "Batches"):
 * with the call it awaits, the next due states' calls of that phase, each
 * awaited in its turn (an offline's batch skips the states with nothing
 * due, an online's stops at one started before a kill: engine.c's plan has
 * a step there that needs no call); the client runs them in order and,
 * once one fails, skips the rest of the batch (answers it failed, changing
 * nothing).  Its rollback undoes the calls that ran; after a late call also
 * every call sent after it in the batch (the client runs those if the late
 * one ends well).  The client's death ends all its states at once.
 * Rollback and external calls are never batched.
 *
 * With -DRESTART the daemon may be SIGKILLed once, while it awaits an
 * answer: the next cpuhpd runs the same hotplug again from its record
 * (started[], what the state text says each state is started on, and
 * unsure[], a call written down before it went out and not answered: due
 * again whichever way), with the killed one's calls still in the clients'
 * channels and their answers still on their way.  With -DBATCH every call
 * of a batch is written down before the batch goes out; after an answered
 * failure the rest of its batch, which the client skips, is as unsure as
 * before it was sent.  Checked: an answer the daemon takes for its call is
 * an answer to that call of that daemon, not a late one to the killed
 * daemon's call (each message carries which daemon sent the call, a
 * ghost); calls only under the writer side, in order.  What the views end
 * as after a kill needs the daemon's reconciling, which is not modelled:
 * the daemon tests show it (test_restart_states.py).
 *
 * Mutants (run.py): -DMUTANT_NO_ROLLBACK (a failure is not rolled back),
 * -DMUTANT_EARLY_TEARDOWN (teardown before the leases drained),
 * -DMUTANT_MATCH_STATE (an answer matched by its state alone, so an answer
 * given twice is taken for the next call), -DMUTANT_AWAIT_DEAD (a dead
 * owner's call still awaited; with -DNO_DEADLINE nothing ends the wait);
 * with -DBATCH, -DMUTANT_BATCH_NO_SKIP (the client runs the rest of a batch
 * after a failure) and -DMUTANT_BATCH_LATE_KEEP (the calls sent after a
 * late one are not undone); with -DRESTART, -DMUTANT_SAVED_IDS (call ids
 * go on from what the state text said at the last change, not from above
 * every id sent, so the next daemon reuses the id of the call cut by the
 * kill).
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
#ifdef RESTART
#define MAY_KILL (!killed)
#else
#define MAY_KILL false
#endif

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

#ifdef BATCH
/* The one client's connection: state, call id, phase, rollback, batch id (0: none), daemon. */
chan bcall = [10] of { byte, byte, bit, bit, byte, bit };
byte sent_id[NS];   /* the call id sent ahead in a batch, per state */
bit was_unsure[NS]; /* unsure[] before that call went out */
byte sentmask;      /* states whose call was sent after a late one: undone too */
#else
/* call id, phase, rollback, which daemon sent it (a ghost the client echoes) */
chan call[NS] = [6] of { byte, bit, bit, bit };
#endif
chan ans = [10] of { byte, byte, bit, bit };    /* state, call id, ok, daemon */

byte next_id = 1;
byte nlate, ndead;

/* The daemon's record, the state text: state i started on the CPU; a call of it unanswered. */
bit started[NS];
bit unsure[NS];
bit inc;              /* which daemon runs: 1 after the kill */
bit killed;
byte saved_id = 1;    /* the next call id as the text said it at the last change */

/* A call of that phase is due: where started for a teardown, else a startup; both if unsure. */
#define DUE(k, ph) (unsure[k] || started[k] == (ph == TEARDOWN))

/* Written down (the state text's "call" line) before it goes out. */
#define WRITE_DOWN(k) unsure[k] = 1

#if defined(BATCH) && !defined(MUTANT_BATCH_LATE_KEEP)
#define UNDO_SENT(k) (sentmask & (1 << (k)))
#else
#define UNDO_SENT(k) false
#endif

/* A call sent alone: a rollback or external one (or any, without -DBATCH). */
inline send_one(s, ph, rb) {
	atomic {
		/* Every hotplug call runs under the writer side, after the leases drained. */
		assert(blocked && leases == 0);
		myid = next_id;
		next_id++;
		WRITE_DOWN(s);
#ifdef BATCH
		bcall!s, myid, ph, rb, 0, inc
#else
		call[s]!myid, ph, rb, inc
#endif
	}
}

#ifdef BATCH
/*
 * The forward call of state s in phase ph and, in the same write, the next
 * due states' calls of that phase in its order (an online's stops at a
 * state not due: its step needs no call; an offline has no step for one),
 * each written down first; the batch id is the first call's.
 */
inline send_batch(s, ph) {
	atomic {
		assert(blocked && leases == 0);
		myid = next_id;
		next_id++;
		WRITE_DOWN(s);
		bcall!s, myid, ph, 0, myid, inc;
		k = s;
		do
		:: (ph == TEARDOWN && k == 0) || (ph == STARTUP && k == NS - 1) -> break
		:: else ->
			if
			:: ph == TEARDOWN -> k--
			:: else -> k++
			fi;
			if
			:: dead[k] -> break
			:: !dead[k] && DUE(k, ph) ->
				sent_id[k] = next_id;
				was_unsure[k] = unsure[k];
				WRITE_DOWN(k);
				bcall!k, next_id, ph, 0, myid, inc;
				next_id++
			:: !dead[k] && !DUE(k, ph) && ph == STARTUP -> break
			:: else -> skip
			fi
		od;
		k = 0
	}
}

/*
 * A forward call failed or was late: the calls sent ahead after it are no
 * longer awaited.  After an answered failure (r == 1) the client skips
 * them: never run, they are as unsure as before; after a late one (r == 2)
 * they may run, and are undone (sentmask).
 */
inline forget_sent(r) {
	d_step {
		k = 0;
		do
		:: k < NS ->
			if
			:: sent_id[k] != 0 && r == 1 -> unsure[k] = was_unsure[k]
			:: sent_id[k] != 0 && r != 1 -> sentmask = sentmask | (1 << k)
			:: else -> skip
			fi;
			sent_id[k] = 0;
			was_unsure[k] = 0;
			k++
		:: else -> k = 0; break
		od
	}
}

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

/* One call of state s.  res: 0 done (or the owner is gone), 1 failed, 2 late, 3 killed. */
inline invoke(s, ph, rb, res) {
	if
	:: dead[s] ->
		res = 0
#ifdef BATCH
		; sent_id[s] = 0; was_unsure[s] = 0
#endif
	:: else ->
#ifdef BATCH
		if
		:: sent_id[s] != 0 ->
			/* sent ahead: awaited now */
			d_step { myid = sent_id[s]; sent_id[s] = 0; was_unsure[s] = 0 }
		:: sent_id[s] == 0 && !rb -> send_batch(s, ph)
		:: sent_id[s] == 0 && rb -> send_one(s, ph, rb)
		fi;
#else
		send_one(s, ph, rb);
#endif
		do
		:: ans?as, aid, aok, ainc ->
			if
#ifdef MUTANT_MATCH_STATE
			:: as == s ->
#else
			:: as == s && aid == myid ->
#endif
				/* Taken for this call: it answers this call of this daemon. */
				assert(ainc == inc);
				if
				:: aok -> res = 0
				:: else -> res = 1
				fi;
				break
			:: else -> skip  /* late, repeated or foreign: ignored */
			fi;
			as = 0; aid = 0; aok = 0; ainc = 0
#ifndef MUTANT_AWAIT_DEAD
		:: dead[s] -> res = 0; break  /* the connection closed: counts as done */
#endif
		:: DEADLINE -> res = 2; late = 1; nlate++; break
		:: MAY_KILL -> res = 3; break  /* SIGKILL while it waits */
		od;
		if
		:: res != 3 ->
			d_step {
				unsure[s] = (res == 2);  /* past its deadline: it may still run */
				if
				:: res == 0 -> started[s] = (ph == STARTUP)
				:: else -> skip
				fi;
				saved_id = next_id
			}
		:: else -> skip
		fi;
		/* Spent locals are reset: the search would count their old values as states. */
		as = 0; aid = 0; aok = 0; ainc = 0; myid = 0
	fi
}

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
	bit aok, ainc, late;
	byte res, r2;
	short i, failed;
	byte done;   /* states whose call of this hotplug succeeded (or started before a kill) */
	bit phase;   /* 0: the offline, 1: the online */

	ready;
hotplug:
	blocked = 1;
#ifndef MUTANT_EARLY_TEARDOWN
	(leases == 0);
#endif
	late = killed;  /* after a kill, the killed daemon's calls still run */
	failed = -1;
	done = 0;
#ifdef BATCH
	sentmask = 0;
#endif
	if
	:: phase == 1 -> goto online_phase
	:: else -> skip
	fi;
	/* ---- offline ---- */
	i = NS - 1;
	do
	:: i >= 0 ->
		if
		:: DUE(i, TEARDOWN) ->
			assert_order(i, TEARDOWN);
			invoke(i, TEARDOWN, 0, res);
			if
			:: res == 3 -> goto kill
			:: res == 1 || res == 2 -> failed = i; break
			:: res == 0 -> done = done | (1 << i)
			fi
		:: else -> skip
		fi;
		i--
	:: else -> break
	od;
	if
	:: failed < 0 ->
		if
		:: !late -> assert_views(0)
		:: else -> skip
		fi;
		online = 0
	:: else ->
#ifdef BATCH
		forget_sent(res);
#endif
#ifndef MUTANT_NO_ROLLBACK
		/* startup again, lowest first: those done, the failed state if it was late */
		i = 0;
		do
		:: i < NS ->
			if
			:: (done & (1 << i)) || (i == failed && res == 2) || UNDO_SENT(i) ->
				invoke(i, STARTUP, 1, r2);
				if
				:: r2 == 3 -> goto kill
				:: else -> skip
				fi
			:: else -> skip
			fi;
			i++
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
	if
	:: online == 0 -> phase = 1; goto hotplug
	:: else -> goto finished
	fi;

online_phase:
	/* ---- online, the CPU having gone ---- */
	if
	:: online == 0 -> online = 1
	:: else -> skip  /* written before a kill: the startups go on where they were */
	fi;
	i = 0;
	do
	:: i < NS ->
		if
		:: DUE(i, STARTUP) ->
			assert_order(i, STARTUP);
			invoke(i, STARTUP, 0, res);
			if
			:: res == 3 -> goto kill
			:: res == 1 || res == 2 -> failed = i; break
			:: res == 0 -> done = done | (1 << i)
			fi
		:: else -> done = done | (1 << i)  /* started before a kill: a rollback undoes it */
		fi;
		i++
	:: else -> break
	od;
	if
	:: failed >= 0 ->
#ifdef BATCH
		forget_sent(res);
#endif
#ifndef MUTANT_NO_ROLLBACK
		/* teardown, highest first: those done, the failed state if it was late */
		i = NS - 1;
		do
		:: i >= 0 ->
			if
			:: (done & (1 << i)) || (i == failed && res == 2) || UNDO_SENT(i) ->
				invoke(i, TEARDOWN, 1, r2);
				if
				:: r2 == 3 -> goto kill
				:: else -> skip
				fi
			:: else -> skip
			fi;
			i--
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
	blocked = 0;
	goto finished;

kill:
	/* The next cpuhpd: the same hotplug again, from the record; ids as the fix gives them. */
	atomic {
		killed = 1;
		inc = 1;
#ifdef MUTANT_SAVED_IDS
		next_id = saved_id;
#endif
#ifdef BATCH
		/* It sent nothing ahead. */
		k = 0;
		do
		:: k < NS -> sent_id[k] = 0; was_unsure[k] = 0; k++
		:: else -> k = 0; break
		od;
#endif
		res = 0; r2 = 0
	}
	goto hotplug;

finished:
	daemon_done = 1;
	/* cpuhpd reads (and drops) what clients still send. */
end_drain:
	do
	:: ans?as, aid, aok, ainc -> as = 0; aid = 0; aok = 0; ainc = 0
	od
}

#ifndef BATCH
proctype client(byte s) {
	byte id;
	bit ph, rb, sent, ci;
#ifdef DUP
	bit dupped;
#endif

end_idle:
	do
	:: atomic { call[s]?id, ph, rb, ci -> busy[s] = 1 };
		if
		:: atomic { view[s] = (ph == STARTUP); ans!s, id, 1, ci; sent = 1; busy[s] = 0 }
		:: atomic { !rb -> ans!s, id, 0, ci; sent = 0; busy[s] = 0 }  /* fails, changing nothing */
#ifdef KILL
		:: atomic { MAY_DIE -> dead[s] = 1; ndead++; busy[s] = 0 };  /* inside the callback */
			goto gone
#endif
		fi;
#ifdef DUP
		/* Answered twice, at any later moment before the next call. */
		if
		:: !dupped -> ans!s, id, sent, ci; dupped = 1
		:: skip
		fi;
#endif
		id = 0; ph = 0; rb = 0; sent = 0; ci = 0
#ifdef KILL
	:: atomic { MAY_DIE -> dead[s] = 1; ndead++ };  /* between calls */
		goto gone
#endif
	od;
gone:
	skip
}
#else
/*
 * The one client of every state: runs the calls in the order they come; a
 * call of a batch whose earlier call failed is skipped (answered failed,
 * nothing changed).
 */
proctype bclient() {
	byte s, id, b, skipb;
	bit ph, rb, ci;

end_idle:
	do
	:: atomic { bcall?s, id, ph, rb, b, ci -> busy[s] = 1 };
		if
#ifdef MUTANT_BATCH_NO_SKIP
		:: false -> skip
#else
		:: b != 0 && b == skipb -> atomic { ans!s, id, 0, ci; busy[s] = 0 }  /* skipped */
#endif
		:: else ->
			if
			:: atomic { view[s] = (ph == STARTUP); ans!s, id, 1, ci; busy[s] = 0 }
			:: atomic { !rb -> ans!s, id, 0, ci; skipb = b; busy[s] = 0 }  /* fails: nothing changed */
#ifdef KILL
			:: atomic { MAY_DIE -> k_all_dead(); ndead++; busy[s] = 0 };  /* inside the callback */
				goto gone
#endif
			fi
		fi;
		s = 0; id = 0; ph = 0; rb = 0; b = 0; ci = 0
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
		:: k < NS -> assert(killed || dead[k] || len(bcall) > 0 || busy[k] || view[k] == online); k++
#else
		:: k < NS -> assert(killed || dead[k] || len(call[k]) > 0 || busy[k] || view[k] == online); k++
#endif
		:: else -> break
		od
	}
}

init {
	byte k = 0;

	atomic {
		do
		:: k < NS ->
			view[k] = 1;
			started[k] = 1;
#ifndef BATCH
			run client(k);
#endif
			k++
		:: else -> break
		od;
#ifdef BATCH
		run bclient();
#endif
		ready = 1
	}
}
