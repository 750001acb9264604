#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Model-check rwsem.pml, fastlease.pml, states.pml and sections.pml with spin.

For each check: spin generates the verifier (pan.c) with the check's
switches, the C compiler builds it, pan runs with an explicit depth bound
and memory limit, and its report decides: the model's checks must end with
"errors: 0" over a complete search; each mutant's check must find a
counterexample of the expected kind (the test fails if the mutant passes).

  run.py --list                 the checks, with what each one proves
  run.py --check NAME [...]     run some (or --ci: those meson runs, --all)
  run.py --check NAME --keep    keep the work directory (pan, trail)
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RWSEM = "rwsem.pml"
FASTLEASE = "fastlease.pml"
STATES = "states.pml"
SECTIONS = "sections.pml"

# Bounds.  The deepest run needs ~470 steps (safety) and ~2,200 (liveness);
# a search that hits the bound is incomplete and fails the check.
SAFETY_DEPTH = 10000
LIVENESS_DEPTH = 100000
MEMLIM_MB = 4096
# fastlease.pml's checks are small: hold them to 1 GB.
FASTLEASE_MEMLIM_MB = 1024


class Check:
    def __init__(self, name, about, defines, liveness=False, expect=None,
                 collapse=False, ignore_deadlocks=False, ci=True, model=RWSEM,
                 memlim=None):
        self.name = name
        self.model = model
        self.memlim = memlim or (FASTLEASE_MEMLIM_MB if model in (FASTLEASE, STATES, SECTIONS)
                                 else MEMLIM_MB)
        self.about = about
        self.defines = defines
        self.liveness = liveness
        # None: no error allowed; else the kind the counterexample must be.
        self.expect = expect
        # COLLAPSE: lossless state compression, for memory on small CI VMs.
        self.collapse = collapse
        # pan -E: look for assertion violations past deadlocks.
        self.ignore_deadlocks = ignore_deadlocks
        self.ci = ci


ASSERT = "assertion violated"
DEADLOCK = "invalid end state"
CYCLE = "acceptance cycle"
MEMBARRIER_OFF = ["-DNO_MEMBARRIER"]

CHECKS = [
    # The model: every property holds.
    Check("safety",
          "membarrier readers (H), 2 readers, 2 writers (one timed), trylock: "
          "exclusion, blocked readers before the next writer, no deadlock",
          ["-DTIMEOUTS", "-DTRYLOCK"]),
    Check("safety-reader-loops",
          "membarrier readers, each reader locks twice (slot-less first lock, "
          "fast path after a writer)",
          ["-DREADER_LOOPS=2"]),
    Check("safety-3-readers",
          "membarrier readers, 3 readers, 1 timed writer",
          ["-DNR_READERS=3", "-DNR_WRITERS=1", "-DTIMEOUTS"]),
    Check("safety-rcu-fallback",
          "RCU-section readers (G), 2 readers, 2 writers (one timed), trylock",
          MEMBARRIER_OFF + ["-DTIMEOUTS", "-DTRYLOCK"]),
    Check("safety-rcu-fallback-writer-loops",
          "RCU-section readers, each writer locks twice: rcu_sync EXIT/REPLAY "
          "and the grace period after every exit",
          MEMBARRIER_OFF + ["-DWRITER_LOOPS=2"], collapse=True),
    Check("liveness",
          "membarrier readers, writer 1 for ever: a queued writer 0 and a "
          "queued reader 0 get in (LTL, weak fairness)",
          ["-DFOREVER"], liveness=True, collapse=True),
    # Bigger runs, on demand (minutes, gigabytes).
    Check("safety-3r2w",
          "membarrier readers, 3 readers, 2 writers",
          ["-DNR_READERS=3"], collapse=True, ci=False, memlim=8192),
    Check("safety-3r2w-rcu-fallback",
          "RCU-section readers, 3 readers, 2 writers",
          MEMBARRIER_OFF + ["-DNR_READERS=3"], collapse=True, ci=False),
    Check("safety-writer-loops",
          "membarrier readers, each writer locks twice",
          ["-DWRITER_LOOPS=2"], collapse=True, ci=False),
    Check("liveness-rcu-fallback",
          "RCU-section readers, writer 1 for ever: progress (LTL)",
          MEMBARRIER_OFF + ["-DFOREVER"], liveness=True, collapse=True,
          ci=False),
    # Mutants: spin must find what each one breaks.
    Check("mutant-no-a",
          "barrier A removed: a slow-path reader and a writer both get in",
          ["-DMUTANT_NO_A"], expect=ASSERT, ignore_deadlocks=True),
    Check("mutant-no-fast-a",
          "barrier A removed where the fast path found rcu_sync not idle and "
          "kept its increment: a reader and a writer both get in",
          ["-DMUTANT_NO_FAST_A"], expect=ASSERT, ignore_deadlocks=True),
    Check("mutant-no-b",
          "B removed (relaxed unlock store): the writer gets in while a reader "
          "is still inside",
          ["-DMUTANT_NO_B"], expect=ASSERT, ignore_deadlocks=True),
    Check("mutant-no-e",
          "barrier E removed (RCU-section readers, whose unlocks all have "
          "it): the writer sleeps for ever (lost wake-up)",
          MEMBARRIER_OFF + ["-DMUTANT_NO_E"], expect=DEADLOCK),
    Check("mutant-no-k",
          "no membarrier before the writer's first sleep (K; membarrier "
          "readers' fenced unlock has no barrier of its own): the writer "
          "sleeps for ever (lost wake-up)",
          ["-DMUTANT_NO_K"], expect=DEADLOCK),
    Check("mutant-no-h",
          "no membarrier in rcu_sync enter (with membarrier readers it waits "
          "for no grace period): a fast-path reader and a writer both get in",
          ["-DMUTANT_NO_H"], expect=ASSERT, ignore_deadlocks=True),
    Check("mutant-no-gp",
          "no grace period in rcu_sync enter (RCU-section readers; the "
          "membarrier readers have none to drop): a fast-path reader and a "
          "writer both get in",
          MEMBARRIER_OFF + ["-DMUTANT_NO_GP"], expect=ASSERT,
          ignore_deadlocks=True),
    Check("mutant-linger-ignores-enter",
          "a writer that finds the H exit lingering leaves it LINGER (and "
          "skips the membarrier), and a slow reader ends it in IDLE with that "
          "writer inside: a fast-path reader and the writer both get in",
          ["-DMUTANT_LINGER_IGNORES_ENTER", "-DREADER_LOOPS=2"], expect=ASSERT,
          ignore_deadlocks=True),
    Check("mutant-no-replay",
          "rcu_sync EXIT not turned into REPLAY: IDLE before a grace period "
          "after the last exit",
          MEMBARRIER_OFF + ["-DMUTANT_NO_REPLAY"], expect=ASSERT),
    Check("mutant-no-wake",
          "a leaving reader does not wake the writer: lost wake-up",
          ["-DMUTANT_NO_WAKE"], expect=DEADLOCK),
    Check("mutant-no-rcond",
          "release_block() lets readers in without waking them",
          ["-DMUTANT_NO_RCOND"], expect=DEADLOCK),
    Check("mutant-no-grant-wait",
          "the next writer does not wait for let-in readers to count "
          "themselves: it overtakes them",
          ["-DMUTANT_NO_GRANT_WAIT"], expect=ASSERT, ignore_deadlocks=True),
    Check("mutant-no-wake-liveness",
          "the lost wake-up again, seen by the liveness claim",
          ["-DFOREVER", "-DMUTANT_NO_WAKE"], liveness=True, expect=CYCLE),
    Check("mutant-barging",
          "release_block() clears ->block instead of handing it over: safe, "
          "but writer 0 can starve (only the liveness claim sees it)",
          ["-DFOREVER", "-DMUTANT_BARGING"], liveness=True, expect=CYCLE),
    Check("mutant-barging-safety",
          "the barging mutant keeps every safety property: what only the "
          "liveness claim catches",
          ["-DMUTANT_BARGING", "-DTRYLOCK"], ci=False),
    # fastlease.pml: fast leases across processes, cpuhpd as the writer.
    Check("fastlease-safety",
          "2 client processes (one may be SIGKILLed at any step), 2 hotplugs: "
          "no lease inside a hotplug, waiters behind a hotplug get in before "
          "the next, every hotplug finishes",
          ["-DKILL", "-DHOTPLUGS=2"], model=FASTLEASE),
    Check("fastlease-safety-2-leases",
          "the same, each client taking 2 leases in turn",
          ["-DKILL", "-DHOTPLUGS=2", "-DREADER_LOOPS=2"], collapse=True,
          model=FASTLEASE),
    Check("fastlease-negative",
          "client 1 leaves -1 in its slot and dies; client 0's lease still "
          "holds the hotplug off (regions summed apart)",
          ["-DNEGATIVE", "-DHOTPLUGS=2"], model=FASTLEASE),
    # two threads of one process, one region.
    Check("fastlease-double-release",
          "2 threads of one process (one region, 2 slots), 2 hotplugs: thread "
          "1 releases its fast lease twice; the lease table refuses the "
          "second, thread 0's lease still holds the hotplug off",
          ["-DSAME_PROCESS", "-DDOUBLE", "-DHOTPLUGS=2"], model=FASTLEASE),
    Check("fastlease-double-release-daemon-only",
          "the same with the client's table removed: the daemon finds the "
          "slot at -1 and closes the connection (its leases end with it); "
          "no live lease is inside a hotplug",
          ["-DSAME_PROCESS", "-DDOUBLE", "-DMUTANT_NO_TABLE", "-DHOTPLUGS=2"],
          model=FASTLEASE),
    Check("fastlease-forged-slot",
          "thread 1 writes -1 into its slot and wakes the daemon: the "
          "connection is closed, the hotplug neither runs under thread 0's "
          "lease nor waits for ever",
          ["-DSAME_PROCESS", "-DFORGE", "-DHOTPLUGS=2"], model=FASTLEASE),
    # a region's leases revoked (a delay, a forced hotplug).
    Check("fastlease-revoke",
          "2 client processes, 2 hotplugs; the first may revoke client 1's "
          "region while it waits for it: no lease taken in a revoked region "
          "gets inside either hotplug, client 0's lease still holds them off",
          ["-DREVOKE", "-DKILL", "-DHOTPLUGS=2"], model=FASTLEASE),
    Check("fastlease-mutant-live-first",
          "the acquire loads the region's ->live before the state (L broken): "
          "it sees the region live, the state open after the revoking "
          "hotplug, and holds a lease that the next hotplug does not count",
          ["-DREVOKE", "-DHOTPLUGS=2", "-DMUTANT_LIVE_FIRST"], expect=ASSERT,
          ignore_deadlocks=True, model=FASTLEASE),
    Check("fastlease-mutant-no-live",
          "the region dropped without storing 'revoked': its client takes a "
          "fast lease there after the hotplug, which the next one does not count",
          ["-DREVOKE", "-DHOTPLUGS=2", "-DMUTANT_NO_LIVE"], expect=ASSERT,
          ignore_deadlocks=True, model=FASTLEASE),
    Check("fastlease-mutant-old-release",
          "the code before the fix (no lease table, no per-slot judgement): a "
          "double release cancels thread 0's lease and the hotplug gets in",
          ["-DSAME_PROCESS", "-DDOUBLE", "-DMUTANT_NO_TABLE",
           "-DMUTANT_NO_POLICE"], expect=ASSERT, ignore_deadlocks=True,
          model=FASTLEASE),
    Check("fastlease-mutant-no-police",
          "only the region's sum judged: a forged -1 cancels thread 0's lease "
          "and the hotplug gets in",
          ["-DSAME_PROCESS", "-DFORGE", "-DMUTANT_NO_POLICE"], expect=ASSERT,
          ignore_deadlocks=True, model=FASTLEASE),
    Check("fastlease-mutant-no-q",
          "no membarrier after storing 'blocked' (Q): a buffered slot++ is "
          "missed and a reader and the hotplug both get in",
          ["-DMUTANT_NO_Q"], expect=ASSERT, ignore_deadlocks=True,
          model=FASTLEASE),
    Check("fastlease-mutant-wake-first",
          "FastWake sent before the slot-- (W): the daemon sums too early, "
          "the hotplug waits for ever",
          ["-DMUTANT_WAKE_FIRST"], expect=DEADLOCK, model=FASTLEASE),
    Check("fastlease-mutant-no-wake",
          "no FastWake at all: the hotplug waits for ever (lost wake-up)",
          ["-DMUTANT_NO_WAKE"], expect=DEADLOCK, model=FASTLEASE),
    Check("fastlease-mutant-global-sum",
          "one sum over all regions: a dead client's -1 cancels a live "
          "client's lease and the hotplug gets in",
          ["-DNEGATIVE", "-DMUTANT_GLOBAL_SUM"], expect=ASSERT,
          ignore_deadlocks=True, model=FASTLEASE),
    Check("fastlease-mutant-keep-dead",
          "a closed connection's region is still waited for: a client killed "
          "inside a fast lease holds the hotplug for ever",
          ["-DKILL", "-DMUTANT_KEEP_DEAD"], expect=DEADLOCK, model=FASTLEASE),
    Check("fastlease-mutant-late-grant",
          "the gate opens before it grants its waiters: the next hotplug "
          "closes it first and overtakes them",
          ["-DHOTPLUGS=2", "-DMUTANT_LATE_GRANT"], expect=ASSERT,
          ignore_deadlocks=True, model=FASTLEASE),
    # states.pml: hotplug-state callbacks.
    Check("states-safety",
          "3 states, a lease, an offline then an online: calls only after the "
          "leases drained, teardown highest priority first, startup lowest "
          "first, every live state torn down when the file says offline, "
          "rollback restores every view; a client may fail a call, die inside "
          "or between callbacks, or miss its deadline; nothing waits for ever",
          ["-DKILL"], model=STATES),
    Check("states-safety-2-late",
          "the same with 2 missed deadlines in a run (a late call, then a late "
          "rollback call)",
          ["-DKILL", "-DMAXLATE=2"], model=STATES),
    Check("states-safety-no-deadline",
          "no deadlines at all: a client's death alone ends the wait for its "
          "call, so a dead client never wedges a hotplug",
          ["-DKILL", "-DNO_DEADLINE"], model=STATES),
    Check("states-safety-answered-twice",
          "2 states whose clients may answer a call twice, at any later "
          "moment: the repeat is never taken for another call",
          ["-DNS=2", "-DKILL", "-DDUP"], model=STATES),
    Check("states-safety-batch",
          "3 states of one client on one connection, a phase's calls sent in "
          "one batch (-DBATCH): the same properties; after a failure the "
          "client skips the rest, after a late call its batch's rest is "
          "undone too; the client may die (all its states with it)",
          ["-DBATCH", "-DKILL"], model=STATES),
    Check("states-safety-batch-2-late",
          "the same with 2 missed deadlines in a run",
          ["-DBATCH", "-DKILL", "-DMAXLATE=2"], model=STATES),
    Check("states-mutant-batch-no-skip",
          "a batch's client runs the rest after a failure: states the "
          "rollback does not know of stay torn down",
          ["-DBATCH", "-DMUTANT_BATCH_NO_SKIP"], expect=ASSERT, ignore_deadlocks=True,
          model=STATES),
    Check("states-mutant-batch-late-keep",
          "the calls sent after a late one are not undone: when it ends well "
          "its client runs them, and they stay",
          ["-DBATCH", "-DMUTANT_BATCH_LATE_KEEP"], expect=ASSERT, ignore_deadlocks=True,
          model=STATES),
    Check("states-mutant-no-rollback",
          "a failed or late call is not rolled back: a state stays torn down "
          "while its CPU stays online",
          ["-DMUTANT_NO_ROLLBACK"], expect=ASSERT, ignore_deadlocks=True,
          model=STATES),
    Check("states-mutant-early-teardown",
          "teardown called before the held leases drained",
          ["-DMUTANT_EARLY_TEARDOWN"], expect=ASSERT, ignore_deadlocks=True,
          model=STATES),
    Check("states-mutant-match-state",
          "an answer matched by its state alone: a callback answered twice "
          "completes the state's next call before it ran",
          ["-DNS=2", "-DDUP", "-DMUTANT_MATCH_STATE"], expect=ASSERT,
          ignore_deadlocks=True, model=STATES),
    Check("states-restart",
          "3 states, the daemon SIGKILLed once while it awaits an answer and the "
          "hotplug run again by the next one from its record (unanswered calls "
          "due again), the killed one's calls and answers still in flight: an "
          "answer taken for a call is that call's, never a late one to the "
          "killed daemon's; calls in order, under the writer side",
          ["-DRESTART", "-DKILL"], model=STATES),
    Check("states-restart-batch",
          "the same with the 3 states of one client, batches of calls "
          "(-DBATCH): every call of a batch written down before the batch "
          "goes out, the rest of a failed batch (skipped) as unsure as before",
          ["-DBATCH", "-DRESTART", "-DKILL"], collapse=True, model=STATES),
    Check("states-mutant-saved-ids",
          "after the kill, call ids go on from what the state text said at the "
          "last change: the next daemon reuses the id of the call cut by the "
          "kill and takes the killed daemon's late answer for its own",
          ["-DNS=2", "-DRESTART", "-DMUTANT_SAVED_IDS"], expect=ASSERT,
          ignore_deadlocks=True, model=STATES),
    Check("states-mutant-await-dead",
          "a dead client's call still awaited (no deadline to end it): the "
          "hotplug waits for ever",
          ["-DKILL", "-DNO_DEADLINE", "-DMUTANT_AWAIT_DEAD"], expect=DEADLOCK,
          model=STATES),
    # sections.pml: the PREPARE and ONLINE sections of hotplug states, and instances.
    Check("sections-safety",
          "2 PREPARE and 2 ONLINE states, an offline then an online: PREPARE "
          "startups before the write and teardowns after it, ONLINE ones the "
          "other way round; a PREPARE startup failure writes nothing and tears "
          "down those run, in reverse; a PREPARE teardown's failure is logged, "
          "never rolled back; a client may fail, be late, or never answer "
          "(the deadline rolls it back); nothing waits for ever",
          [], model=SECTIONS),
    Check("sections-safety-2-late",
          "the same with 2 missed deadlines in a run",
          ["-DMAXLATE=2"], model=SECTIONS),
    Check("sections-safety-3-prepare",
          "3 PREPARE states and 1 ONLINE state (a rollback of 2 PREPARE states)",
          ["-DNP=3", "-DNO=1"], model=SECTIONS),
    Check("sections-instances",
          "a PREPARE state's instance added while CPU 1 comes and goes (an "
          "ONLINE startup may fail, and roll back): its startup runs once on "
          "every CPU the state is up on, its teardown once where it ran",
          ["-DINSTANCES"], model=SECTIONS),
    Check("sections-mutant-prepare-after-write",
          "PREPARE startups after the write: the CPU runs without their resources",
          ['-DMUTANT_PREPARE_AFTER_WRITE'], expect=ASSERT, ignore_deadlocks=True,
          model=SECTIONS),
    Check("sections-mutant-online-before-write",
          "ONLINE startups before the write",
          ['-DMUTANT_ONLINE_BEFORE_WRITE'], expect=ASSERT, ignore_deadlocks=True,
          model=SECTIONS),
    Check("sections-mutant-online-teardown-after-write",
          "ONLINE teardowns after the write",
          ['-DMUTANT_ONLINE_TEARDOWN_AFTER_WRITE'], expect=ASSERT, ignore_deadlocks=True,
          model=SECTIONS),
    Check("sections-mutant-dead-before-write",
          "PREPARE teardowns before the write: a resource freed under a running CPU",
          ['-DMUTANT_DEAD_BEFORE_WRITE'], expect=ASSERT, ignore_deadlocks=True,
          model=SECTIONS),
    Check("sections-mutant-prepare-fail-writes",
          "a PREPARE startup failure still writes the CPU online",
          ['-DMUTANT_PREPARE_FAIL_WRITES'], expect=ASSERT, ignore_deadlocks=True,
          model=SECTIONS),
    Check("sections-mutant-prepare-no-rollback",
          "a PREPARE startup failure tears nothing down: resources of an offline CPU stay",
          ['-DMUTANT_PREPARE_NO_ROLLBACK'], expect=ASSERT, ignore_deadlocks=True,
          model=SECTIONS),
    Check("sections-mutant-rollback-forward",
          "the PREPARE rollback in startup order, not reverse",
          ['-DNP=3', '-DNO=1', '-DMUTANT_ROLLBACK_FORWARD'], expect=ASSERT, ignore_deadlocks=True,
          model=SECTIONS),
    Check("sections-mutant-dead-rollback",
          "a failed PREPARE teardown rolled back: states started again on a dead CPU",
          ['-DMUTANT_DEAD_ROLLBACK'], expect=ASSERT, ignore_deadlocks=True,
          model=SECTIONS),
    Check("sections-mutant-late-keep",
          "a PREPARE startup past its deadline not torn down itself: it ends late and stays",
          ['-DMUTANT_LATE_KEEP'], expect=ASSERT, ignore_deadlocks=True,
          model=SECTIONS),
    Check("sections-mutant-online-fail-no-dead",
          "an ONLINE startup failure takes the CPU offline but leaves the PREPARE states up",
          ['-DMUTANT_ONLINE_FAIL_NO_DEAD'], expect=ASSERT, ignore_deadlocks=True,
          model=SECTIONS),
    Check("sections-mutant-no-deadline",
          "no deadline on calls: a callback that never answers holds the "
          "hotplug for ever",
          ["-DMUTANT_NO_DEADLINE"], expect=DEADLOCK, model=SECTIONS),
    Check("sections-mutant-inst-no-gate",
          "an instance's add does not wait for the writer side: planned from "
          "what the state is up on half way through a hotplug, it misses a "
          "CPU or gets one twice",
          ["-DINSTANCES", "-DMUTANT_INST_NO_GATE"], expect=ASSERT,
          ignore_deadlocks=True, model=SECTIONS),
]
BY_NAME = {c.name: c for c in CHECKS}


def fail(msg):
    print(f"run.py: FAIL: {msg}", flush=True)
    sys.exit(1)


def run(cmd, cwd, what):
    print("  $ " + " ".join(shlex.quote(a) for a in cmd), flush=True)
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    except FileNotFoundError:
        fail(f"{cmd[0]} not found: {what}")
    return p


def field(pattern, text, conv=float):
    m = re.search(pattern, text)
    return conv(m.group(1)) if m else None


def trail_summary(check, spin, work, steps=40):
    """The counterexample's last steps, without bookkeeping noise."""
    p = subprocess.run([spin] + check.defines + ["-t", "-p", check.model],
                       cwd=work, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    noise = re.compile(r"\[\(1\)\]|\[else\]|\[i = |\[\(\(i<|\[n = |\[skip\]|"
                       r"\[ok = 0\]|\[break\]|\[goto ")
    lines = []
    for line in p.stdout.splitlines():
        m = re.match(r"\s*\d+:\s+proc\s+(\d+ \(\w+:\d+\)) \S+:(\d+) "
                     r"\(state \d+\)\s+(\[.*\])", line)
        if m and not noise.search(m.group(3)):
            lines.append(f"    {m.group(1):<18} line {m.group(2):>4}  {m.group(3)}")
        elif "START OF CYCLE" in line:
            lines.append("    ----- the cycle starts here -----")
        elif "assertion violated" in line:
            lines.append("    " + line.strip())
    shown = lines[-steps:]
    if len(lines) > steps:
        shown.insert(0, f"    ... {len(lines) - steps} earlier steps")
    return "\n".join(shown)


def run_check(check, spin, cc, workdir, keep):
    kind = "LTL claim 'progress'" if check.liveness else "assertions, end states"
    print(f"check {check.name}: {check.about}", flush=True)
    if workdir:
        work = os.path.join(workdir, check.name)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    else:
        work = tempfile.mkdtemp(prefix=f"model-{check.name}-")
    shutil.copy(os.path.join(HERE, check.model), work)

    p = run([spin] + check.defines + ["-a", check.model], work,
            "install spin (Debian: apt-get install spin)")
    if p.returncode or not os.path.exists(os.path.join(work, "pan.c")):
        fail(f"spin could not generate the verifier:\n{p.stdout}")

    # A mutant's search is short: compiling pan.c fast matters more.
    cflags = ["-O0" if check.expect else "-O2", "-w", f"-DMEMLIM={check.memlim}"]
    if check.liveness:
        cflags += ["-DNFAIR=3"]
    else:
        cflags += ["-DSAFETY", "-DNOCLAIM"]
    if check.collapse:
        cflags += ["-DCOLLAPSE"]
    p = run(cc + cflags + ["-o", "pan", "pan.c"], work,
            "set CC or pass --cc to a C compiler")
    if p.returncode:
        fail(f"compiling pan failed:\n{p.stdout}")

    depth = LIVENESS_DEPTH if check.liveness else SAFETY_DEPTH
    args = [f"-m{depth}"]
    if check.liveness:
        args += ["-a", "-f"]
    if check.ignore_deadlocks:
        args += ["-E"]
    t0 = time.monotonic()
    p = run(["./pan"] + args, work, "")
    elapsed = time.monotonic() - t0
    out = p.stdout

    errors = field(r"errors: (\d+)", out, int)
    stored = field(r"([\d.e+]+) states, stored", out)
    transitions = field(r"([\d.e+]+) transitions", out)
    reached = field(r"depth reached (\d+)", out, int)
    memory = field(r"([\d.]+)\s+total actual memory usage", out)
    if errors is None or stored is None:
        fail(f"no verdict in pan's output:\n{out}")
    print(f"  {stored:,.0f} states stored, {transitions or 0:,.0f} transitions, "
          f"depth {reached} (bound {depth}), {memory or 0:,.0f} MB, {elapsed:.1f} s",
          flush=True)
    if "max search depth too small" in out and (check.expect is None or errors == 0):
        fail(f"the search hit the depth bound {depth}: incomplete (work dir {work})")
    if "-DMEMLIM bound" in out or "out of memory" in out:
        fail(f"pan ran out of memory ({check.memlim} MB): incomplete (work dir {work})")

    # pan's first error line: its kind is what a mutant's check compares.
    first = next((l for l in out.splitlines() if l.startswith("pan:1:")), "")
    if check.expect is None:
        if errors:
            print(f"  {first}")
            print(trail_summary(check, spin, work))
            fail(f"{check.name}: spin found a counterexample ({kind}); "
                 f"trail in {work}, replay: cd {work} && "
                 f"spin {' '.join(check.defines)} -t -p {check.model}")
        print(f"  ok: errors: 0 ({kind}; complete search)")
    else:
        if not errors:
            fail(f"{check.name}: the mutant passed: the model does not catch "
                 f"it (expected: {check.expect})")
        if check.expect not in first:
            print(trail_summary(check, spin, work))
            fail(f"{check.name}: expected a counterexample of kind "
                 f"'{check.expect}', got: {first}")
        print(f"  counterexample, as expected: {first}")
        print(trail_summary(check, spin, work))
        print("  ok: the mutant is caught")
    if not keep and not workdir:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(
        description="Model-check the Promela models (cpuhp_rwsem/rcu_sync, fast leases) with spin.",
        epilog="Example: tests/model/run.py --check safety --keep")
    ap.add_argument("--check", action="append", default=[],
                    help="a check to run (repeatable); see --list")
    ap.add_argument("--ci", action="store_true", help="the checks meson runs")
    ap.add_argument("--all", action="store_true",
                    help="every check, the big ones too (minutes, gigabytes)")
    ap.add_argument("--list", action="store_true", help="list the checks")
    ap.add_argument("--ci-names", action="store_true",
                    help="print the names of the --ci checks (for meson.build)")
    ap.add_argument("--spin", default=shutil.which("spin") or "spin",
                    help="the spin binary (default: spin in PATH)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"),
                    help="C compiler command for pan (default: $CC or cc)")
    ap.add_argument("--workdir",
                    help="keep each check's files in WORKDIR/NAME (default: a "
                         "temporary directory, removed after a pass)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the temporary work directory")
    a = ap.parse_args()

    if a.ci_names:
        print("\n".join(c.name for c in CHECKS if c.ci))
        return 0
    if a.list:
        for c in CHECKS:
            tag = "ci" if c.ci else "on demand"
            print(f"{c.name:34} [{tag}] {c.about}")
        return 0
    names = list(a.check)
    if a.ci:
        names += [c.name for c in CHECKS if c.ci]
    if a.all:
        names += [c.name for c in CHECKS]
    if not names:
        ap.error("say which checks: --check NAME, --ci or --all (--list shows them)")
    for n in names:
        if n not in BY_NAME:
            ap.error(f"unknown check '{n}' (--list shows them)")
    if not os.path.exists(a.spin) and not shutil.which(a.spin):
        fail(f"spin not found ('{a.spin}'): install it (Debian: apt-get install spin) "
             "or pass --spin")
    cc = shlex.split(a.cc)
    for n in dict.fromkeys(names):
        run_check(BY_NAME[n], a.spin, cc, a.workdir, a.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
