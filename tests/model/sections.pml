/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sections.pml: the PREPARE and ONLINE sections of hotplug states, and
 * instances (doc/design.md, "Hotplug states: sections and instances").  states.pml checks the call protocol itself
 * (ids, deaths, repeated answers, restarts, leases); this model takes that
 * as given and checks where each section's calls go around the write of
 * cpuN/online, and what a failure or a silent callback does there.
 *
 * Sections (the default): one CPU, online at the start, taken offline and,
 * if that worked, online again.  NP states in the PREPARE section (state
 * i, i < NP) and NO in the ONLINE section (NP <= i < NS); the startup order
 * is 0, 1, ..., NS - 1 (every PREPARE state before every ONLINE state, as
 * the kernel numbers them), the teardown order its reverse.  Each state is
 * owned by a client process.
 *
 *   offline   ONLINE teardowns (highest first), the write, PREPARE
 *             teardowns (highest first).  An ONLINE teardown that fails or
 *             misses its deadline: startup again on those torn down (lowest
 *             first; the failed one too if it was late), nothing written.
 *             A PREPARE teardown cannot fail: the CPU is gone; a failure or
 *             a missed deadline is logged (ghost leak[] for a failure: the
 *             client kept its resource) and the next one runs.
 *   online    PREPARE startups (lowest first), the write, ONLINE startups
 *             (lowest first).  A PREPARE startup that fails or misses its
 *             deadline: nothing is written, the PREPARE states already run
 *             get their teardown in reverse (the late one too).  An ONLINE
 *             startup that fails or is late: teardown of the ONLINE states
 *             started (reverse, the late one too), the write back to
 *             offline, then every PREPARE teardown (reverse): the whole way
 *             back, as the kernel's rollback goes.
 *   client    per call: run it and answer ok, or (not in a rollback) fail
 *             having changed nothing, or get stuck (-DMAXSTUCK clients, 1
 *             by default): it takes every later call and never answers.
 *             Its view[] follows the calls it ran.  A call's deadline may
 *             pass at any moment (MAXLATE in a run; a late call may still
 *             run later), and always passes for a stuck client's call.
 *
 * Checked (assertions; no invalid end state: nothing waits for ever):
 *   - each call is sent on the right side of the write: PREPARE startups
 *     and ONLINE teardowns while the file says online = 0 / 1 respectively
 *     as the rules put them (PREPARE startup and teardown with the CPU
 *     offline, ONLINE startup and teardown with it online);
 *   - what a client sees (no late call around): the CPU is written online
 *     only with every PREPARE state's resource there; a PREPARE resource
 *     is freed only with the CPU offline; an ONLINE startup and teardown
 *     run with the CPU online;
 *   - order: a call of state s (forward or rollback) comes after the calls
 *     of the states before s in its phase's order that this hotplug makes
 *     (a rollback: of those it undoes; the DEAD phase: of every state);
 *   - at the end of a hotplug with no late call, every state's view
 *     matches the file, but a stuck client's and a PREPARE teardown that
 *     failed (logged, leaked by its client: ghost leak[]);
 *   - once every client ran what was sent to it, the same with late calls.
 *
 * Mutants, one per rule (run.py names them sections-mutant-*):
 *   MUTANT_PREPARE_AFTER_WRITE         PREPARE startups after the write
 *   MUTANT_ONLINE_BEFORE_WRITE         ONLINE startups before it
 *   MUTANT_ONLINE_TEARDOWN_AFTER_WRITE ONLINE teardowns after it
 *   MUTANT_DEAD_BEFORE_WRITE           PREPARE teardowns before it
 *   MUTANT_PREPARE_FAIL_WRITES         a PREPARE startup failure still writes
 *   MUTANT_PREPARE_NO_ROLLBACK         ... and tears nothing down
 *   MUTANT_ROLLBACK_FORWARD            the rollback in forward order (-DNP=3)
 *   MUTANT_DEAD_ROLLBACK               a failed PREPARE teardown rolled back
 *   MUTANT_NO_DEADLINE                 no deadline on calls
 *   MUTANT_LATE_KEEP                   the late call itself not rolled back
 *   MUTANT_ONLINE_FAIL_NO_DEAD         an ONLINE startup failure leaves the
 *                                      PREPARE states up on the dead CPU
 *
 * Instances (-DINSTANCES): see the second half of the file.
 */

#ifndef INSTANCES

#ifndef NP
#define NP 2
#endif
#ifndef NO
#define NO 2
#endif
#define NS (NP + NO)
#define IS_PREP(k) ((k) < NP)

#ifndef MAXLATE
#define MAXLATE 1
#endif
#ifndef MAXSTUCK
#define MAXSTUCK 1
#endif

#ifdef MUTANT_NO_DEADLINE
#define DEADLINE(s) false
#else
/* A stuck client's call always reaches its deadline; others may, MAXLATE times. */
#define DEADLINE(s) (stuck[s] || nlate < MAXLATE)
#endif

#define TEARDOWN 1
#define STARTUP 0

bit online = 1; /* the CPU's online file */
bit view[NS];   /* client i has its per-CPU resource */
bit stuck[NS];  /* client i's callback never returns */
bit leak[NS];   /* a PREPARE teardown of i failed: logged, its resource stays */
bit busy[NS];   /* client i is inside a callback */
bit blocked;    /* the writer side is held */
bit ready, daemon_done;
byte nlate, nstuck;
byte next_id = 1;

chan call[NS] = [6] of { byte, bit, bit }; /* call id, phase, rollback */
chan ans = [10] of { byte, byte, bit };    /* state, call id, ok */

/* Every state that is neither stuck nor leaked has view @v. */
inline assert_views(v) {
	d_step {
		k = 0;
		do
		:: k < NS -> assert(stuck[k] || leak[k] || view[k] == v); k++
		:: else -> k = 0; break
		od
	}
}

/*
 * The side of the write: PREPARE calls with the CPU offline, ONLINE calls
 * with it online (a rollback's too: each goes on its own side).
 */
inline assert_side(s) {
	assert(IS_PREP(s) && !online || !IS_PREP(s) && online)
}

/*
 * Order: before a call of s in phase ph, the states before s in that
 * phase's order that this hotplug called (mask @m) are done with it.
 */
inline assert_order(s, ph, m) {
	d_step {
		k = 0;
		do
		:: k < NS ->
			assert(late || nlate > 0 || stuck[k] || leak[k] || !(m & (1 << k)) ||
			       (ph == TEARDOWN && k <= s) || (ph == STARTUP && k >= s) ||
			       view[k] == (ph == STARTUP));
			k++
		:: else -> k = 0; break
		od
	}
}

/* One call of state s.  res: 0 ok, 1 failed, 2 missed its deadline. */
inline invoke(s, ph, rb, res) {
	atomic {
		assert(blocked);
		assert_side(s);
		myid = next_id;
		next_id++;
		call[s]!myid, ph, rb
	};
	do
	:: ans?as, aid, aok ->
		if
		:: as == s && aid == myid ->
			if
			:: aok -> res = 0
			:: else -> res = 1
			fi;
			break
		:: else -> skip /* late or foreign: ignored */
		fi;
		as = 0; aid = 0; aok = 0
	:: DEADLINE(s) ->
		atomic {
			res = 2;
			if
			:: !stuck[s] -> late = 1; nlate++
			:: else -> skip
			fi
		};
		break
	od;
	as = 0; aid = 0; aok = 0; myid = 0
}

/* The write, online: every PREPARE resource is there (no late call around). */
inline write_online() {
	d_step {
		k = 0;
		do
		:: k < NP -> assert(nlate > 0 || stuck[k] || leak[k] || view[k]); k++
		:: else -> k = 0; break
		od;
		online = 1
	}
}

/*
 * The PREPARE teardowns after the CPU went (the DEAD phase), highest
 * first.  None can fail: a failure or a missed deadline is logged and the
 * next one runs.
 */
inline dead_teardowns() {
	i = NP - 1;
	dmask = 0;
	do
	:: i >= 0 ->
		assert_order(i, TEARDOWN, 255);
		invoke(i, TEARDOWN, 0, res);
		if
		:: res == 1 -> skip /* logged */
#ifdef MUTANT_DEAD_ROLLBACK
			/* startup again those this phase tore down: they are up on a dead CPU */
			;
			k2 = 0;
			do
			:: k2 < NP ->
				if
				:: dmask & (1 << k2) -> invoke(k2, STARTUP, 1, r2)
				:: else -> skip
				fi;
				k2++
			:: else -> break
			od;
			break
#endif
		:: else -> skip
		fi;
		dmask = dmask | (1 << i);
		i--
	:: else -> break
	od
}

active proctype daemon() {
	byte myid, as, aid, k, k2;
	bit aok, late;
	byte res, r2;
	short i, failed;
	byte done, dmask; /* this hotplug's forward calls that succeeded; the DEAD phase's */
	bit phase;        /* 0: the offline, 1: the online */

	ready;
hotplug:
	blocked = 1;
	late = 0;
	failed = -1;
	done = 0;
	if
	:: phase == 1 -> goto online_phase
	:: else -> skip
	fi;

	/* ---- offline: ONLINE teardowns, the write, PREPARE teardowns ---- */
#ifdef MUTANT_DEAD_BEFORE_WRITE
	dead_teardowns();
#endif
#ifdef MUTANT_ONLINE_TEARDOWN_AFTER_WRITE
	online = 0;
#endif
	i = NS - 1;
	do
	:: i >= NP ->
		assert_order(i, TEARDOWN, done);
		invoke(i, TEARDOWN, 0, res);
		if
		:: res != 0 -> failed = i; break
		:: else -> done = done | (1 << i)
		fi;
		i--
	:: else -> break
	od;
	if
	:: failed >= 0 ->
		/* startup again, lowest first: those torn down, the failed one if late */
		i = NP;
		dmask = 0;
		do
		:: i < NS ->
			if
			:: (done & (1 << i)) || (i == failed && res == 2) ->
				assert_order(i, STARTUP, done);
				invoke(i, STARTUP, 1, r2);
				dmask = dmask | (1 << i)
			:: else -> skip
			fi;
			i++
		:: else -> break
		od;
		goto finish
	:: else -> skip
	fi;
	online = 0;
#ifndef MUTANT_DEAD_BEFORE_WRITE
	dead_teardowns();
#endif
	goto finish;

online_phase:
	/* ---- online: PREPARE startups, the write, ONLINE startups ---- */
#ifdef MUTANT_PREPARE_AFTER_WRITE
	write_online();
#endif
#ifdef MUTANT_ONLINE_BEFORE_WRITE
	i = NP;
	do
	:: i < NS ->
		invoke(i, STARTUP, 0, res);
		i++
	:: else -> break
	od;
#endif
	i = 0;
	do
	:: i < NP ->
		assert_order(i, STARTUP, done);
		invoke(i, STARTUP, 0, res);
		if
		:: res != 0 -> failed = i; break
		:: else -> done = done | (1 << i)
		fi;
		i++
	:: else -> break
	od;
	if
	:: failed >= 0 ->
#ifdef MUTANT_PREPARE_FAIL_WRITES
		write_online();
#endif
#ifndef MUTANT_PREPARE_NO_ROLLBACK
		/* nothing written; teardown of those started (and the late one), highest first */
		dmask = 0;
#ifndef MUTANT_ROLLBACK_FORWARD
		i = NP - 1;
		do
		:: i >= 0 ->
#else
		i = 0;
		do
		:: i < NP ->
#endif
			if
#ifndef MUTANT_LATE_KEEP
			:: (done & (1 << i)) || (i == failed && res == 2) ->
#else
			:: (done & (1 << i)) ->
#endif
				assert_order(i, TEARDOWN, done);
				invoke(i, TEARDOWN, 1, r2);
				dmask = dmask | (1 << i)
			:: else -> skip
			fi;
#ifndef MUTANT_ROLLBACK_FORWARD
			i--
#else
			i++
#endif
		:: else -> break
		od;
#endif
		goto finish
	:: else -> skip
	fi;
#ifndef MUTANT_PREPARE_AFTER_WRITE
	write_online();
#endif
	i = NP;
	do
	:: i < NS ->
#ifndef MUTANT_ONLINE_BEFORE_WRITE
		assert_order(i, STARTUP, done);
		invoke(i, STARTUP, 0, res);
		if
		:: res != 0 -> failed = i; break
		:: else -> done = done | (1 << i)
		fi;
#else
		done = done | (1 << i);
#endif
		i++
	:: else -> break
	od;
	if
	:: failed >= 0 ->
		/* the whole way back: ONLINE teardowns, the write, PREPARE teardowns */
		i = NS - 1;
		dmask = 0;
		do
		:: i >= NP ->
			if
			:: (done & (1 << i)) || (i == failed && res == 2) ->
				assert_order(i, TEARDOWN, done);
				invoke(i, TEARDOWN, 1, r2);
				dmask = dmask | (1 << i)
			:: else -> skip
			fi;
			i--
		:: else -> break
		od;
		online = 0;
#ifndef MUTANT_ONLINE_FAIL_NO_DEAD
		dead_teardowns()
#endif
	:: else -> skip
	fi;

finish:
	if
	:: !late && nlate == 0 -> assert_views(online)
	:: else -> skip
	fi;
	blocked = 0;
	if
	:: phase == 0 && online == 0 -> phase = 1; goto hotplug
	:: else -> skip
	fi;
	daemon_done = 1;
	/* cpuhpd reads (and drops) what clients still send. */
end_drain:
	do
	:: ans?as, aid, aok -> as = 0; aid = 0; aok = 0
	od
}

/* What the client's callback does to its resource, and what it must find. */
inline run_call(s, ph) {
	if
	:: IS_PREP(s) && ph == TEARDOWN ->
		/* the PREPARE resource goes only once the CPU is gone */
		assert(nlate > 0 || !online)
	:: !IS_PREP(s) ->
		/* an ONLINE state's startup and teardown run on a live CPU */
		assert(nlate > 0 || online)
	:: else -> skip
	fi;
	view[s] = (ph == STARTUP)
}

proctype client(byte s) {
	byte id;
	bit ph, rb;

end_idle:
	do
	:: atomic { call[s]?id, ph, rb -> busy[s] = 1 };
		if
		:: atomic { stuck[s] -> busy[s] = 0 } /* taken, never answered */
		:: atomic { !stuck[s] -> run_call(s, ph); ans!s, id, 1; busy[s] = 0 }
		:: atomic {
			!stuck[s] && !rb ->
			/* fails, changing nothing; a PREPARE teardown's failure keeps the resource */
			if
			:: IS_PREP(s) && ph == TEARDOWN -> leak[s] = 1
			:: else -> skip
			fi;
			ans!s, id, 0;
			busy[s] = 0
		   }
		:: atomic { !stuck[s] && nstuck < MAXSTUCK -> stuck[s] = 1; nstuck++; busy[s] = 0 }
		fi;
		id = 0; ph = 0; rb = 0
	od
}

/* Once the daemon is done and every client has run what was sent to it. */
active proctype quiesced() {
	byte k;

	daemon_done;
	k = 0;
	do
	:: k < NS -> (stuck[k] || (len(call[k]) == 0 && !busy[k])); k++
	:: else -> break
	od;
	atomic {
		k = 0;
		do
		:: k < NS -> assert(stuck[k] || leak[k] || len(call[k]) > 0 || busy[k] ||
		                    view[k] == online); k++
		:: else -> break
		od
	}
}

init {
	byte k = 0;

	atomic {
		do
		:: k < NS -> view[k] = 1; run client(k); k++
		:: else -> break
		od;
		ready = 1
	}
}

#else /* INSTANCES */

/*
 * Instances: one PREPARE state P with instances, and one ONLINE state O
 * (one instance, whose startup may fail).  CPU 0 stays online; CPU 1 is
 * brought online and, if that worked, taken offline again.  Instance 0 is
 * there from the start (started on CPU 0); instance 1 is added at any
 * moment by process adder: its startup runs for every CPU that P is up on,
 * and it then joins P's list, which the hotplugs' calls walk.  An add is a
 * reader of the writer side, as a registration is: it waits while a
 * hotplug holds it, and a hotplug waits for an add in progress.
 *
 * The client side is not modelled (each call is one step, which succeeds
 * for P): what is checked is which calls the daemon makes.  A hotplug is
 * the worker's asks (PREPARE startups; the write; ONLINE startups; on a
 * failure, the way back), and each call is a step of its own, so an add
 * could slip between any two.  Checked: an instance's startup on a CPU
 * runs only when it is not up there (exactly once), its teardown only when
 * it is; at the end every instance in the list is up on exactly the CPUs
 * that are online.  MUTANT_INST_NO_GATE: the add does not wait for the
 * writer side, and the hotplug does not wait for it: the add plans from
 * what P is up on while a hotplug is half way, and an instance misses a
 * CPU or gets it twice.
 */

#define NI 2
#define NC 2
#define UP(i, c) up[(i) * NC + (c)]

bit up[NI * NC];   /* instance i's startup ran on CPU c (and no teardown since) */
bit listed[NI];    /* in P's list: hotplugs call it */
bit pcpu[NC];      /* P is up on CPU c (what an add plans from) */
bit online[NC];
bit blocked;
byte readers;
bit added, hp_done, ready;

inline inst_startup(i, c) {
	atomic { assert(!UP(i, c)); UP(i, c) = 1 }
}

inline inst_teardown(i, c) {
	atomic { assert(UP(i, c)); UP(i, c) = 0 }
}

active proctype hotplug() {
	byte i;
	byte done; /* instances this hotplug started on CPU 1 (a rollback undoes them) */
	bit ofail;

	ready;
	/* ---- CPU 1 online ---- */
	blocked = 1;
#ifndef MUTANT_INST_NO_GATE
	(readers == 0);
#endif
	i = 0;
	do
	:: i < NI ->
		if
		:: listed[i] -> inst_startup(i, 1); done = done | (1 << i)
		:: else -> skip
		fi;
		i++
	:: else -> break
	od;
	pcpu[1] = 1;
	online[1] = 1;
	if
	:: ofail = 1 /* O's startup failed: the whole way back */
	:: ofail = 0
	fi;
	if
	:: ofail ->
		online[1] = 0;
		i = NI;
		do
		:: i > 0 ->
			i--;
			if
			:: done & (1 << i) -> inst_teardown(i, 1)
			:: else -> skip
			fi
		:: else -> break
		od;
		pcpu[1] = 0;
		blocked = 0;
		goto end_hp
	:: else -> skip
	fi;
	blocked = 0;

	/* ---- CPU 1 offline ---- */
	blocked = 1;
#ifndef MUTANT_INST_NO_GATE
	(readers == 0);
#endif
	online[1] = 0;
	i = NI;
	do
	:: i > 0 ->
		i--;
		if
		:: listed[i] -> inst_teardown(i, 1)
		:: else -> skip
		fi
	:: else -> break
	od;
	pcpu[1] = 0;
	blocked = 0;
end_hp:
	hp_done = 1
}

active proctype adder() {
	byte c;

	ready;
#ifndef MUTANT_INST_NO_GATE
	atomic { !blocked -> readers++ };
#endif
	c = 0;
	do
	:: c < NC ->
		if
		:: pcpu[c] -> inst_startup(1, c)
		:: else -> skip
		fi;
		c++
	:: else -> break
	od;
	listed[1] = 1;
#ifndef MUTANT_INST_NO_GATE
	readers--;
#endif
	added = 1
}

active proctype check() {
	byte i, c;

	atomic {
		hp_done && added ->
		i = 0;
		do
		:: i < NI ->
			c = 0;
			do
			:: c < NC -> assert(!listed[i] || UP(i, c) == online[c]); c++
			:: else -> break
			od;
			i++
		:: else -> break
		od
	}
}

init {
	atomic {
		online[0] = 1;
		pcpu[0] = 1;
		listed[0] = 1;
		UP(0, 0) = 1;
		ready = 1
	}
}

#endif /* INSTANCES */
