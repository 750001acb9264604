# SPDX-License-Identifier: LGPL-2.1-or-later
"""Fault injection against one long-lived cpuhpd: each test injects one
kind of fault, randomised from the printed seed, records what it injected
and checked in the report, and ends with faultlib.check_invariants().  The
SIGTERM fault comes last because it ends the daemon."""
import collections
import os
import signal

import fixture
import faultlib
from faultlib import GUARD_MS, check_invariants, parse_cpus, sim_online
from fixture import error_code


def frame(payload):
    return len(payload).to_bytes(4, 'big') + payload


# ---- 1. clients killed at random points ----

def _step(line):
    """Where a churn client was when its last line was printed."""
    words = line.split()
    if not words:
        return 'starting'
    if words[0] == 'sent':
        return {'hello': 'hello in flight', 'acquire': 'acquire in flight',
                'release': 'release in flight'}.get(words[2], 'hotplug in flight')
    if words[0] == 'got':
        return {'granted': 'holding a lease', 'released': 'after a release',
                'hello': 'after hello', 'set_online': 'after a hotplug'}.get(
                    words[2], 'after an error reply')
    return words[0]


def test_clients_sigkilled_at_random_points_of_acquire_and_release(rig, row):
    """SIGKILL of clients at random points of acquire, hold, release and hotplug."""
    rnd = faultlib.rng('sigkill')
    rounds = 12
    steps = collections.Counter()
    kills = lines_seen = 0
    row['injected'].append(f'{rounds} rounds: 1-3 lease clients (1-4 pipelined acquires, '
                           'timeout 2 s) and half the time a hotplug client (CPUs 1-3 off/on), '
                           'each SIGKILLed after a random 0-40 of its steps')
    row['checked'] += ['no reply to an id not outstanding (cpuhpd-churn)',
                       'invariants after every round',
                       'a last client runs 50 rounds to the end']
    for _ in range(rounds):
        procs = [rig.churn('lease', rnd.randint(1, 4), 2000, 10**6)
                 for _ in range(rnd.randint(1, 3))]
        if rnd.random() < 0.5:
            procs.append(rig.churn('hotplug', '1-3', 2000, 10**6))
        for proc in procs:
            want = rnd.randint(0, 40)
            got = []
            while len(got) < want:
                line = proc.stdout.readline()
                if not line:
                    break
                got.append(line)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            rest = proc.stdout.read()
            proc.stdout.close()
            everything = ''.join(got) + rest
            assert 'anomaly' not in everything and 'error:' not in everything, everything
            last = everything.splitlines()[-1] if everything else ''
            steps[_step(last)] += 1
            kills += 1
            lines_seen += len(everything.splitlines())
        check_invariants(rig, rnd, row)
    # A client left alone finishes, every request answered once.
    proc = rig.churn('lease', 3, 2000, 50)
    out, _ = proc.communicate(timeout=fixture.GUARD_S)
    assert proc.returncode == 0 and 'done rounds=50' in out, out[-2000:]
    row['numbers']['SIGKILLs'] = kills
    row['numbers']['client steps'] = lines_seen
    row['numbers']['killed at'] = '/'.join(f'{k} {v}' for k, v in sorted(steps.items()))


# ---- 2. sysfs refuses the write ----

# mode -> (the code the client must get, words its message must carry: the
# errno's text and the daemon's explanation of it)
SYSFS_FAULTS = {
    'EBUSY': ('ERR_EBUSY', ('Device or resource busy', 'hotplug is disabled')),
    'EIO': ('ERR_EIO', ('Input/output error', 'I/O error from the kernel')),
    'EPERM': ('ERR_EPERM', ('Operation not permitted', 'does not allow')),
    'short': ('ERR_EIO', ('Input/output error', 'short write')),
}


def test_sysfs_online_write_fails_with_ebusy_eio_eperm_or_comes_back_short(rig, row):
    """sysfs cpuN/online: write fails with EBUSY, EIO, EPERM, or is short."""
    rnd = faultlib.rng('sysfs')
    led, sim = rig.ledger, rig.sim
    h = rig.name('h')
    led.connect(h)
    # Every mode once on a single CPU, then random ones inside multi-CPU requests.
    plan = [(mode, [cpu], cpu) for mode, cpu in zip(SYSFS_FAULTS, (1, 2, 3, 1))]
    for _ in range(6):
        cpus = sorted(rnd.sample(faultlib.HOTPLUGGABLE, rnd.randint(1, 3)))
        plan.append((rnd.choice(list(SYSFS_FAULTS)), cpus, rnd.choice(cpus)))
    injected = 0
    for i, (mode, cpus, bad) in enumerate(plan):
        before = sim_online(sim)
        # The first ones always write (the opposite of the CPU's state).
        online = bad not in before if i < len(SYSFS_FAULTS) else rnd.random() < 0.5
        rig.ctl.write_text(f'cpu{bad}/online write {mode}\n')
        n0 = len(rig.injections())
        r = led.call(h, 'online' if online else 'offline', ','.join(map(str, cpus)), 1000)
        rig.ctl.write_text('')
        assert r['kind'] == 'set_online', r
        by_cpu = {x['cpu']: x for x in r['results']}
        assert sorted(by_cpu) == cpus, r
        # The fault fires only if the daemon writes: a CPU already in the asked
        # state is not written at all, and that is an answer too.
        wrote = (bad in before) != online
        assert len(rig.injections()) == n0 + wrote, (rig.injections(), r)
        res = by_cpu[bad]
        if wrote:
            injected += 1
            code, words = SYSFS_FAULTS[mode]
            assert not res['ok'] and not res['changed'] and res['code'] == code, r
            assert f'cpu{bad}/online' in res['message'], r
            assert all(w in res['message'] for w in words), (words, r)
        else:
            assert res['ok'] and not res['changed'], r
        # A failure does not stop the other CPUs of the request.
        for cpu in cpus:
            if cpu != bad:
                assert by_cpu[cpu]['ok'], r
        after = sim_online(sim)
        assert (bad in after) == (bad in before), 'the failed CPU changed state'
        assert parse_cpus(r['online']) == after, (r, after)
        # Status is consistent and leases are grantable at once.
        s = led.status(h)
        assert s['writer'] == 'WRITER_IDLE' and s['leases_held'] == 0, s
        assert parse_cpus(s['online']) == after
        led.release(h, led.lease(h, 0))
    led.finish(h)
    row['injected'].append(f'{len(plan)} SetOnline requests with a fault on one CPU through the '
                           'preloaded libsysfs-fault.so (write(2) of cpuN/online fails with '
                           'EBUSY/EIO/EPERM or returns 1): each mode once, then random modes '
                           'and CPUs inside 1-3 CPU requests')
    row['checked'] += ['the shim log shows the fault fired exactly when the daemon wrote',
                       'the failed CPU: ok=false, the right ErrorCode, a message naming '
                       'cpuN/online, the errno and what it means',
                       'the other CPUs of the request done', 'the failed CPU unchanged',
                       'reply and status online = files', 'writer idle',
                       'a try-lease granted at once', 'invariants']
    row['numbers']['faults fired'] = injected
    row['numbers']['requests'] = len(plan)
    check_invariants(rig, rnd, row)
