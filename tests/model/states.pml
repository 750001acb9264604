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
 * With -DRESTART the daemon may be SIGKILLed once, while it awaits an
 * answer: the next cpuhpd runs the same hotplug again from its record
 * (started[], what the state text says each state is started on, and
 * unsure[], a call written down before it went out and not answered: due
 * again whichever way), with the killed one's calls still in the clients'
 * channels and their answers still on their way.  Checked: an answer the
 * daemon takes for its call is an answer to that call of that daemon, not a
 * late one to the killed daemon's call (each message carries which daemon
 * sent the call, a ghost); calls only under the writer side, in order.
 * What the views end as after a kill needs the daemon's reconciling, which
 * is not modelled: the daemon tests show it (test_restart_states.py).
 *
 * Mutants (run.py): -DMUTANT_NO_ROLLBACK (a failure is not rolled back),
 * -DMUTANT_EARLY_TEARDOWN (teardown before the leases drained),
 * -DMUTANT_MATCH_STATE (an answer matched by its state alone, so an answer
 * given twice is taken for the next call), -DMUTANT_AWAIT_DEAD (a dead
 * owner's call still awaited; with -DNO_DEADLINE nothing ends the wait),
 * -DMUTANT_SAVED_IDS (with -DRESTART: call ids go on from what the state
 * text said at the last change, not from above every id sent, so the next
 * daemon reuses the id of the call cut by the kill).
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

/* call id, phase, rollback, which daemon sent it (a ghost the client echoes) */
chan call[NS] = [6] of { byte, bit, bit, bit };
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

/* One call of state s.  res: 0 done (or the owner is gone), 1 failed, 2 late. */
inline invoke(s, ph, rb, res) {
	if
	:: dead[s] -> res = 0
	:: else ->
		atomic {
			/* Every call runs under the writer side, after the leases drained. */
			assert(blocked && leases == 0);
			myid = next_id;
			next_id++;
			unsure[s] = 1;  /* written down before it goes out */
			call[s]!myid, ph, rb, inc
		};
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
#ifndef MUTANT_NO_ROLLBACK
		/* startup again, lowest first: the failed state if it was late, those done */
		i = 0;
		do
		:: i < NS ->
			if
			:: (done & (1 << i)) || (i == failed && res == 2) ->
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
#ifndef MUTANT_NO_ROLLBACK
		/* teardown, highest first: the failed state if late, those done */
		i = NS - 1;
		do
		:: i >= 0 ->
			if
			:: (done & (1 << i)) || (i == failed && res == 2) ->
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
		(dead[k] || (len(call[k]) == 0 && !busy[k]));
		k++
	:: else -> break
	od;
	atomic {
		k = 0;
		do
		:: k < NS -> assert(killed || dead[k] || len(call[k]) > 0 || busy[k] ||
		                    view[k] == online); k++
		:: else -> break
		od
	}
}

init {
	byte k = 0;

	atomic {
		do
		:: k < NS -> view[k] = 1; started[k] = 1; run client(k); k++
		:: else -> break
		od;
		ready = 1
	}
}
