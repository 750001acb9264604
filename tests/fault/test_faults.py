# SPDX-License-Identifier: LGPL-2.1-or-later
"""Fault injection against one long-lived cpuhpd: each test injects one
kind of fault, randomised from the printed seed, records what it injected
and checked in the report, and ends with faultlib.check_invariants().  The
SIGTERM fault comes last because it ends the daemon."""
import collections
import errno
import json
import os
import signal
import subprocess
import time

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
                'release': 'release in flight', 'freeze': 'freeze in flight',
                'thaw': 'thaw in flight'}.get(words[2], 'hotplug in flight')
    if words[0] == 'got':
        if words[1] == 'fast':
            return 'holding a fast lease'
        return {'granted': 'holding a lease', 'released': 'after a release',
                'hello': 'after hello', 'set_online': 'after a hotplug',
                'frozen': 'holding a freeze', 'thawed': 'after a thaw'}.get(
                    words[2], 'after an error reply')
    if words[0] == 'fast':
        return 'after hello'
    return words[0]


def _killed_client_hotplug_never_runs(rig, rnd):
    """A client killed while its hotplug waits (behind its own lease): the
    hotplug is dropped with the client, it never runs for nobody."""
    led, sim = rig.ledger, rig.sim
    victim = fixture.Probe(rig.daemon.socket)
    wt, h = rig.name('wt'), rig.name('h')
    led.connect(wt)
    led.connect(h)
    assert led.call(wt, 'watch')['kind'] == 'watch_started'
    cpus = sorted(rnd.sample(faultlib.HOTPLUGGABLE, rnd.randint(1, 3)))
    victim.connect('v')
    victim.lease('v')
    victim.send('v', 'offline', ','.join(map(str, cpus)), GUARD_MS)
    assert victim.status('v')['writer'] == 'WRITER_WAITING'
    victim.kill()
    # Ours queues behind the victim's and runs once the daemon has seen the
    # victim go (its lease ends then): after our reply, the victim's fate is known.
    mine = led.call(h, 'offline', '1', GUARD_MS)
    assert mine['kind'] == 'set_online', mine
    # Its hotplug was announced pending (it waited for the victim's own lease),
    # then cancelled when the victim went.
    pend, canc = led.recv(wt), led.recv(wt)
    assert pend['event'] == 'hotplug_pending' and \
        parse_cpus(pend['cpus']) == set(cpus), pend
    assert (canc['event'], canc['hotplug_id'], canc['code']) == \
        ('hotplug_cancelled', pend['hotplug_id'], 'ERR_ECANCELED'), canc
    first = led.recv(wt)
    assert first['event'] == 'hotplug_started' and first['cpus'] == '1' and not first['online'], \
        f'the hotplug of a killed client ran: {first}'
    assert led.recv(wt)['event'] == 'hotplug_finished'
    led.call(h, 'online', '1', GUARD_MS)
    assert sim_online(sim) == {0, 1, 2, 3}
    led.finish(wt)
    led.finish(h)


def _killed_fast_holder_lets_the_waiting_hotplug_run(rig, rnd):
    """A client killed while a hotplug waits for its fast leases: the
    hotplug runs at once, it does not wait out its timeout."""
    led, d = rig.ledger, rig.daemon
    h = rig.name('h')
    led.connect(h)
    holder = rig.churn('fasthold', rnd.randint(1, 4), 0, 1)
    line = holder.stdout.readline().decode()
    assert line.startswith('holding') and ' 0 fast' not in line, line
    marker = 'hold fast leases; the hotplug waits'
    seen = d.log().count(marker)
    hp = led.send(h, 'offline', '1', GUARD_MS)
    # The kill must land after the daemon counted the holder's slots (the
    # path under test): each status round trip lets the loop run until the
    # count is logged.
    for _ in range(10000):
        s = led.status(h)
        assert s['writer'] == 'WRITER_WAITING', s
        if d.log().count(marker) > seen:
            break
    else:
        raise AssertionError('the hotplug never counted the fast leases it waits for')
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    holder.stdout.close()
    r = led.recv(h)
    assert r['id'] == hp and r['kind'] == 'set_online' and r['results'][0]['ok'], \
        f'the fast leases of a dead client kept a hotplug waiting: {r}'
    led.call(h, 'online', '1', GUARD_MS)
    led.finish(h)


def test_clients_sigkilled_at_random_points_of_acquire_and_release(rig, row):
    """SIGKILL of clients at random points of acquire, hold, release and hotplug."""
    rnd = faultlib.rng('sigkill')
    rounds = 25
    steps = collections.Counter()
    kills = lines_seen = fast_on = 0
    row['injected'].append(f'{rounds} rounds: 1-3 lease clients (socket leases, 1-4 pipelined '
                           'acquires, or fast leases in shared memory through libcpuhp-client; '
                           'timeout 2 s), half the time a hotplug client (CPUs 1-3 off/on) and '
                           'a third of the time a freeze client (1-2 pipelined freezes, then '
                           'their thaws), each SIGKILLed after a random 0-40 of its steps')
    row['checked'] += ['no reply to an id not outstanding (cpuhpd-churn)',
                       'invariants after every round (no freeze outlives its client)',
                       'a last socket and a last fast client run 50 rounds to the end',
                       'the waiting hotplug of a client killed behind its own lease is '
                       'dropped, never run (watcher)',
                       'a hotplug waiting for the fast leases of a client that is killed runs '
                       'at once']
    for _ in range(rounds):
        procs = [rig.churn(rnd.choice(('lease', 'fast')), rnd.randint(1, 4), 2000, 10**6)
                 for _ in range(rnd.randint(1, 3))]
        if rnd.random() < 0.5:
            procs.append(rig.churn('hotplug', '1-3', 2000, 10**6))
        if rnd.random() < 1 / 3:
            procs.append(rig.churn('freeze', rnd.randint(1, 2), 2000, 10**6))
        outputs = faultlib.kill_after(procs, [rnd.randint(0, 40) for _ in procs])
        for everything in outputs:
            bad = [x for x in everything.splitlines() if x.startswith(('anomaly', 'error:'))]
            assert not bad, f'cpuhpd-churn: {bad}'
            last = everything.splitlines()[-1] if everything else ''
            steps[_step(last)] += 1
            kills += 1
            fast_on += 'fast path on' in everything
            lines_seen += len(everything.splitlines())
        check_invariants(rig, rnd, row)
    # Clients left alone finish, every request answered once.
    for kind in ('lease', 'fast'):
        proc = rig.churn(kind, 3, 2000, 50)
        out = proc.communicate(timeout=fixture.GUARD_S)[0].decode()
        assert proc.returncode == 0 and 'done rounds=50' in out, out[-2000:]
    _killed_client_hotplug_never_runs(rig, rnd)
    _killed_fast_holder_lets_the_waiting_hotplug_run(rig, rnd)
    row['numbers']['SIGKILLs'] = kills
    row['numbers']['of fast-lease clients'] = fast_on
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


# ---- 3. a watcher that stops reading ----

def test_watcher_that_stops_reading_is_cut_off_at_the_bound_others_unaffected(rig, row):
    """A watcher that stops reading while events pile up."""
    rnd = faultlib.rng('stalled-watcher')
    led, d = rig.ledger, rig.daemon
    stalled, good, h = rig.name('sw'), rig.name('gw'), rig.name('h')
    for n in (stalled, good, h):
        led.connect(n)
    assert led.call(stalled, 'watch')['kind'] == 'watch_started'
    assert led.call(good, 'watch')['kind'] == 'watch_started'
    conns = led.status(h)['connections']
    hotplugs = 0
    events = []
    # The stalled watcher never reads again; the good one reads every event.
    # Each hotplug names 1-3 random CPUs, so events vary in size.
    for _ in range(5000):
        cpus = ','.join(map(str, sorted(rnd.sample(faultlib.HOTPLUGGABLE, rnd.randint(1, 3)))))
        for verb in ('offline', 'online'):
            r = led.call(h, verb, cpus, 1000)
            assert r['kind'] == 'set_online' and all(x['ok'] for x in r['results']), r
            hotplugs += 1
            # started, finished, and online_changed when the set changed
            want = 3 if any(x['changed'] for x in r['results']) else 2
            events += [led.recv(good) for _ in range(want)]
        if led.status(h)['connections'] == conns - 1:
            break
    else:
        raise AssertionError('a watcher that never reads was never disconnected')
    assert 'does not read its replies or events (1024 queued)' in d.log()
    # The good watcher saw every event, in order, and is still connected.
    kinds = [e['event'] for e in events]
    assert kinds.count('hotplug_started') == kinds.count('hotplug_finished') == hotplugs
    assert all(e['id'] == 2 for e in events)  # its Watch was request 2
    assert led.status(good)['connections'] == conns - 1
    # The stalled one reads what its socket buffer held (the queue beyond it
    # was dropped with the connection), then the end of the stream.
    end = rig.probe(f'eof {stalled}')
    assert end['end'] in ('eof', 'ECONNRESET'), end
    backlog = len(end['responses'])
    assert backlog > 0 and all(x['kind'] == 'event' for x in end['responses'])
    rig.probe(f'close {stalled}')
    led.finish(good)
    led.finish(h)
    row['injected'].append('one watcher stops reading; random 1-3 CPU hotplugs (each 2-3 '
                           'events) until the daemon drops it; a second watcher reads on')
    row['checked'] += ['dropped at the 1024-message queue bound ("does not read" logged)',
                       'the reading watcher got every event of every hotplug and stays',
                       'the dropped one reads its socket backlog, then EOF', 'invariants']
    row['numbers']['hotplugs until cut off'] = hotplugs
    row['numbers']['events to the good watcher'] = len(events)
    row['numbers']['backlog read by the stalled one'] = backlog
    check_invariants(rig, rnd, row)


# ---- 4. connection floods ----

def test_connection_flood_past_the_limit_gets_eusers_and_service_goes_on(rig, row):
    """Connection floods past --max-connections."""
    rnd = faultlib.rng('flood')
    led, limit = rig.ledger, faultlib.MAX_CONNECTIONS
    h = rig.name('h')
    led.connect(h)
    room = limit - led.status(h)['connections']
    # Fill the daemon up: every filler holds a lease, so a hotplug can later
    # prove that every one of them is gone.
    fill = fixture.Probe(rig.daemon.socket)
    flooders = [fixture.Probe(rig.daemon.socket) for _ in range(rnd.randint(2, 4))]
    try:
        assert fill(f'many f {room} 0') == {'ok': True, 'granted': room}
        # Floods from several processes at once: all commands written first.
        per = [rnd.randint(5, 15) for _ in flooders]
        for fl, n in zip(flooders, per):
            fl.proc.stdin.write(''.join(f'connect x{i}\n' for i in range(n)))
            fl.proc.stdin.flush()
        refused = 0
        for fl, n in zip(flooders, per):
            answers = [json.loads(fl.proc.stdout.readline()) for _ in range(n)]
            for i, r in enumerate(answers):
                assert r.get('kind') == 'error' and r['code'] == 'ERR_EUSERS' and r['id'] == 0, r
                assert f'the limit is {limit}' in r['message'] and \
                    '--max-connections' in r['message'], r
                end = fl(f'eof x{i}')
                assert end['end'] in ('eof', 'ECONNRESET') and not end['responses'], end
                refused += 1
        # Those inside the limit are served throughout.
        s = led.status(h)
        assert s['connections'] == limit and s['leases_held'] == room, s
        # Closing some lets as many new clients in.
        k = rnd.randint(1, min(5, room))
        assert fill(f'closemany f {k}')['closed'] == k
        mine = led.lease(h, 0)
        hp = led.send(h, 'online', '1', GUARD_MS)   # waits for fillers and mine
        led.release(h, mine)
        assert fill(f'closemany f {room - k}')['closed'] == room - k
        r = led.reply(h)   # past the notice that it waits for h's own lease
        assert r['id'] == hp and r['kind'] == 'set_online', r
        s = led.status(h)
        assert s['leases_held'] == 0 and s['connections'] <= limit - room, s
        for i in range(room):
            fill.connect(f'n{i}')
        assert led.status(h)['connections'] <= limit
    finally:
        fill.kill()
        for fl in flooders:
            fl.kill()
    led.finish(h)
    row['injected'].append(f'--max-connections {limit}: filled with lease holders, then '
                           f'{len(flooders)} processes connecting at once past the limit')
    row['checked'] += ['each refused one gets id-0 ERR_EUSERS naming the limit and '
                       '--max-connections, then EOF',
                       'connections = limit and the holders served meanwhile',
                       'after the holders leave (proved by a hotplug needing zero leases) as '
                       'many new clients get in as left', 'invariants']
    row['numbers']['refused'] = refused
    row['numbers']['held at the limit'] = room
    check_invariants(rig, rnd, row)


# ---- 5. random bytes from many clients at once ----

CONNECTION_ERRORS = {'ERR_EPROTO', 'ERR_EMSGSIZE'}
REQUEST_ERRORS = {'ERR_EOPNOTSUPP', 'ERR_EPROTONOSUPPORT', 'ERR_EINVAL', 'ERR_ESRCH',
                  'ERR_EDQUOT', 'ERR_EALREADY', 'ERR_EAGAIN', 'ERR_ERANGE', 'ERR_ETIMEDOUT'}


def _garbage(rnd):
    """Random bytes in the shapes that reach different parts of the input path."""
    shape = rnd.randrange(5)
    if shape == 0:    # random payload in a well-formed frame
        return 'framed', frame(rnd.randbytes(rnd.randint(1, 64)))
    if shape == 1:    # random bytes, prefix included
        return 'raw', rnd.randbytes(rnd.randint(1, 256))
    if shape == 2:    # a frame, then garbage
        return 'frame+garbage', frame(rnd.randbytes(8)) + rnd.randbytes(rnd.randint(1, 16))
    if shape == 3:    # a prefix announcing more than is ever sent
        return 'truncated', rnd.randint(1, 65536).to_bytes(4, 'big') + rnd.randbytes(3)
    return 'oversized', rnd.randint(65537, 2**32 - 1).to_bytes(4, 'big')


def test_random_bytes_from_many_clients_at_once(rig, row):
    """Random bytes from many clients at once."""
    rnd = faultlib.rng('random-bytes')
    led = rig.ledger
    by = rig.name('by')
    led.connect(by)
    mine = led.lease(by)
    # A well-behaved client works through all of it.
    worker = rig.churn('lease', 2, GUARD_MS, 200)
    procs = [fixture.Probe(rig.daemon.socket) for _ in range(rnd.randint(4, 6))]
    plan = []
    try:
        # Every command of every process is written before any answer is read,
        # so the daemon sees the connections and their bytes interleaved.
        for pi, p in enumerate(procs):
            cmds = []
            for ci in range(rnd.randint(3, 6)):
                name = f'g{ci}'
                shape, data = _garbage(rnd)
                hello = rnd.random() < 0.5
                plan.append((pi, name, shape, hello, len(data)))
                cmds += [f'{"connect" if hello else "rawconnect"} {name}',
                         f'raw {name} {data.hex()}', f'shutwr {name}', f'eof {name}']
            p.proc.stdin.write(''.join(c + '\n' for c in cmds))
            p.proc.stdin.flush()
        codes = collections.Counter()
        for pi, name, shape, hello, _ in plan:
            p = procs[pi]
            answers = [json.loads(p.proc.stdout.readline()) for _ in range(4)]
            assert answers[0].get('kind') == 'hello' or answers[0].get('ok'), answers
            end = answers[3]
            assert end['end'] in ('eof', 'ECONNRESET'), (shape, end)
            errs = [x for x in end['responses'] if x['kind'] == 'error']
            conn_errs = [i for i, x in enumerate(end['responses'])
                         if x['kind'] == 'error' and x['id'] == 0 and x['code'] in CONNECTION_ERRORS]
            # A connection-level error is the last thing sent.
            assert all(i == len(end['responses']) - 1 for i in conn_errs), end
            for x in errs:
                assert x['code'] in CONNECTION_ERRORS | REQUEST_ERRORS, (shape, x)
                assert x['message'], x
                codes[x['code']] += 1
            if shape == 'oversized':
                assert conn_errs and end['responses'][-1]['code'] == 'ERR_EMSGSIZE', end
    finally:
        for p in procs:
            p.kill()
    out = worker.communicate(timeout=fixture.GUARD_S)[0].decode()
    assert worker.returncode == 0 and 'done rounds=200' in out, out[-2000:]
    s = led.status(by)
    assert s['leases_held'] >= 1, s
    led.release(by, mine)
    led.finish(by)
    row['injected'].append(f'{len(plan)} connections from {len(procs)} processes, all '
                           'written before any answer is read: random payloads in frames, '
                           'random bytes, frame + garbage, truncated frames, oversized '
                           'prefixes; half after a Hello')
    row['checked'] += ['each ends in EOF with only known error codes, each with a message',
                       'a connection error (EPROTO/EMSGSIZE, id 0) is the last message',
                       'an oversized prefix gets ERR_EMSGSIZE',
                       'a lease client runs 200 rounds to the end meanwhile',
                       'a lease held throughout stays held', 'invariants']
    row['numbers']['connections'] = len(plan)
    row['numbers']['bytes'] = sum(x[4] for x in plan)
    row['numbers']['errors'] = '/'.join(f'{k[4:]} {v}' for k, v in sorted(codes.items()))
    check_invariants(rig, rnd, row)


# ---- 5b. a nobody flood: connections, unread replies, a stalled frame ----

def test_nobody_flood_stops_at_its_per_uid_caps_and_root_is_served(rig, row):
    """A per-uid flood from nobody: connections past its cap, replies it never reads, a stalled frame."""
    import shutil
    if os.geteuid() != 0 or not shutil.which('setpriv'):
        import pytest
        pytest.skip('needs root and setpriv to run a client as nobody: skipped')
    rnd = faultlib.rng('per-uid')
    led, cap = rig.ledger, faultlib.PER_UID
    h = rig.name('h')
    led.connect(h)
    base = led.status(h)['connections']
    nob = fixture.Probe(rig.daemon.socket, fixture.NOBODY)
    try:
        # 1. Connections: the cap, then refusals naming it; root hotplugs meanwhile.
        for i in range(cap):
            nob.connect(f'c{i}')
        extra = rnd.randint(2, 6)
        for i in range(extra):
            r = nob(f'connect x{i}')
            assert error_code(r) == 'ERR_EUSERS' and r['id'] == 0, r
            assert '--max-connections-per-uid' in r['message'], r
        cpu = rnd.choice(faultlib.HOTPLUGGABLE)
        for state in ('offline', 'online'):
            r = led.call(h, state, cpu, GUARD_MS)
            assert r['kind'] == 'set_online' and r['results'][0]['ok'], r
        assert led.status(h)['connections'] == base + cap
        nob(f'closemany c {cap}')
        for _ in range(1000):
            if led.status(h)['connections'] == base:
                break
        else:
            raise AssertionError("nobody's connections never went")
        # 2. Replies never read, past the uid's share of buffered bytes.
        n, k = cap - 1, rnd.randint(900, 1000)
        r = nob(f'flood f {n} {k}')
        assert r['ok'] and r['still_open'] < n, r
        cut = n - r['still_open']
        # A connection cpuhpd is closing may still look open to the flooder.
        s = led.status(h)
        assert s['connections'] <= base + r['still_open'], s
        # 3. A frame begun and never finished: closed at the timeout.
        nob.connect('stall')
        nob(f'raw stall {frame(bytes(rnd.randint(8, 64)))[:rnd.randint(1, 7)].hex()}')
        end = nob('eof stall')
        errs = [x for x in end['responses'] if x['kind'] == 'error']
        assert errs and errs[-1]['code'] == 'ERR_ETIMEDOUT' and errs[-1]['id'] == 0, end
    finally:
        nob.kill()
    assert 'uid 65534 would have over' in rig.daemon.log()
    led.finish(h)
    row['injected'].append(f'nobody: {cap} connections then {extra} more; {n} connections '
                           f'x {k} Status requests never read; one stalled partial frame')
    row['checked'] += [f'refusals get id-0 ERR_EUSERS naming --max-connections-per-uid',
                       'root offlines and onlines a CPU with nobody at its cap',
                       f'connections over --max-buffered-bytes-per-uid '
                       f'{faultlib.PER_UID_BYTES} closed, the rest kept',
                       f'the stalled frame closed with ERR_ETIMEDOUT '
                       f'(--client-timeout-ms {faultlib.CLIENT_TIMEOUT_MS})', 'invariants']
    row['numbers']['refused'] = extra
    row['numbers']['cut at the byte share'] = cut
    check_invariants(rig, rnd, row)


# ---- 5b. the limits an administrator sets on lease holders ----

MAX_LEASE_MS = 1500   # longer than any check holds a lease, so only the holder below is revoked


def test_clients_sigkilled_under_max_lease_ms_and_max_leases_per_uid(rig, row):
    """SIGKILL of root's and nobody's lease clients under --max-lease-ms and --max-leases-per-uid."""
    import shutil
    if os.geteuid() != 0 or not shutil.which('setpriv'):
        import pytest
        pytest.skip('needs root and setpriv to run clients as nobody: skipped')
    rnd = faultlib.rng('limits')
    tmp = rig.tmp / 'limits'
    tmp.mkdir(mode=0o755)
    lim = faultlib.Rig(tmp).start(extra=['--max-lease-ms', str(MAX_LEASE_MS),
                                         '--max-leases-per-uid', '2'])
    rounds, kills, refused, revoked = 8, 0, 0, 0
    try:
        for _ in range(rounds):
            procs = [lim.churn(rnd.choice(('lease', 'fast')), rnd.randint(1, 4), 2000, 10**6)
                     for _ in range(rnd.randint(1, 2))]
            procs += [lim.churn('lease', rnd.randint(1, 4), 2000, 10**6, prefix=fixture.NOBODY)
                      for _ in range(rnd.randint(1, 2))]
            if rnd.random() < 0.5:
                procs.append(lim.churn('hotplug', '1-3', 2000, 10**6))
            outputs = faultlib.kill_after(procs, [rnd.randint(0, 40) for _ in procs])
            for everything in outputs:
                bad = [x for x in everything.splitlines() if x.startswith(('anomaly', 'error:'))]
                assert not bad, f'cpuhpd-churn: {bad}'
                assert 'fast path on' not in everything, 'a fast path under --max-lease-ms'
                refused += everything.count(' ERR_EDQUOT')
                revoked += everything.count(' revoked')
                kills += 1
            check_invariants(lim, rnd, row)
        # The limits themselves, seen: nobody's third lease is refused, its two
        # are revoked at the limit (a notice each), and their releases say so.
        nob = fixture.Probe(lim.daemon.socket, fixture.NOBODY)
        try:
            nob.connect('n')
            held = [nob.lease('n'), nob.lease('n')]
            r = nob.call('n', 'acquire', 0)
            assert error_code(r) == 'ERR_EDQUOT' and '--max-leases-per-uid 2' in r['message'], r
            notices = [nob.recv('n') for _ in held]
            assert sorted(ev['lease_id'] for ev in notices) == sorted(held), notices
            assert all(ev['event'] == 'lease_revoked' and ev['id'] == 0 for ev in notices)
            for lease in held:
                assert error_code(nob.call('n', 'release', lease)) == 'ERR_ETIME'
        finally:
            nob.kill()
        check_invariants(lim, rnd, row)
    finally:
        lim.stop()
    row['injected'].append(f'{rounds} rounds on a cpuhpd of its own with --max-lease-ms '
                           f'{MAX_LEASE_MS} --max-leases-per-uid 2: 1-2 root lease clients '
                           '(socket, or libcpuhp-client), 1-2 of nobody (1-4 pipelined '
                           'acquires), half the time a hotplug client, each SIGKILLed after '
                           'a random 0-40 steps; then nobody holding two leases past the limit')
    row['checked'] += ['no reply to an id not outstanding; a release answered ERR_ETIME only '
                       'after its LeaseRevoked notice (cpuhpd-churn)',
                       'no fast path is offered', 'invariants after every round',
                       "nobody's third lease is ERR_EDQUOT naming the limit; its two are "
                       'revoked with a notice each and their releases are ERR_ETIME']
    row['numbers']['SIGKILLs'] = kills
    row['numbers']['acquires refused at the per-uid limit'] = refused
    row['numbers']['revocations seen by the churn clients'] = revoked


# ---- 6. forged, double and inherited releases ----

FAST_BIT = 1 << 63


def test_forged_double_and_fork_child_releases_cancel_no_lease(rig, row):
    """Forged, double and fork-child releases while another thread of the process holds a fast lease."""
    from fastlib import FastClient, Raw
    rnd = faultlib.rng('forged')
    led, d, sim = rig.ledger, rig.daemon, rig.sim
    rounds = 8
    kinds = collections.Counter()
    closed = 0
    row['injected'].append(f'{rounds} rounds: a libcpuhp-client process holds 1-3 fast '
                           'leases on one thread while, at random, another of its threads '
                           'releases its own lease twice or releases forged ids, a fork '
                           'child releases the held ids, or a raw client writes a random '
                           'count (in or out of 0..16) into a random slot and wakes the daemon')
    row['checked'] += ['every misuse of the library is ESRCH (ECHILD for the child acquire)',
                       'a 300 ms hotplug still times out behind the held leases',
                       'a raw client outside 0..16 is closed with ERR_EPROTO',
                       'invariants after every round']
    for _ in range(rounds):
        c = FastClient(d.socket)
        raw = None
        try:
            c.connect('a')
            c.thread('t0', 'a')
            c.thread('t1', 'a')
            held = [c.lease('t0') for _ in range(rnd.randint(1, 3))]
            kind = rnd.choice(('double', 'forged', 'fork', 'raw'))
            kinds[kind] += 1
            if kind == 'double':
                mine = c.lease('t1')
                c.unlease('t1', mine)
                c.release('t1', mine)
                assert c.wait('t1')['ret'] == -errno.ESRCH
            elif kind == 'forged':
                for _ in range(rnd.randint(1, 5)):
                    forged = FAST_BIT | rnd.getrandbits(63)
                    if forged in held:
                        continue
                    c.release('t1', forged)
                    assert c.wait('t1')['ret'] == -errno.ESRCH, forged
            elif kind == 'fork':
                r = c(f'forklease a {rnd.choice(held)}')
                assert r['acquire'] == -errno.ECHILD and r['release'] == -errno.ESRCH, r
            else:
                raw = Raw(d.socket)
                assert raw('hello')['fast_path']
                g = raw('fastpath 4')
                assert g['kind'] == 'granted', g
                value = rnd.choice((-1, -2, 17, 2**31 - 1, rnd.randint(-100, 100)))
                word = rnd.choice(('set', 'setrel'))
                assert raw(f'{word} {rnd.randrange(4)} {value}')['ok']
                leases = value if word == 'set' else -value
                bad = not 0 <= leases <= 16
            h = rig.name('h')
            led.connect(h)
            r = led.call(h, 'offline', '1', 300)
            assert error_code(r) == 'ERR_ETIMEDOUT', \
                f'{kind}: a hotplug ran while {len(held)} fast lease(s) were held: {r}'
            assert sim_online(sim) == {0, 1, 2, 3}
            if raw and bad:
                # The hotplug's count judged the slot: the connection is closed.
                r = raw('closed')
                assert r['code'] == 'ERR_EPROTO' and r['live'] == 0xfffffffe, r  # closed
                closed += 1
            for lease in held:
                c.unlease('t0', lease)
            led.finish(h)
        finally:
            c.kill()
            if raw:
                raw.kill()
        check_invariants(rig, rnd, row)
    row['numbers']['rounds'] = '/'.join(f'{k} {v}' for k, v in sorted(kinds.items()))
    row['numbers']['raw clients closed for a bad slot'] = closed
    # Logged for each raw client closed for its slot; a raw round may also
    # write a value within 0..16, which is no violation.
    assert ('protocol violation' in d.log()) == (closed > 0), (closed, kinds)


# ---- 6a. cpuhpd killed while leases are held ----

LEASES_LOST = 7


def test_cpuhpd_killed_while_leases_are_held_tells_every_holder(rig, row):
    """cpuhpd SIGKILLed or SIGTERMed while clients hold socket and fast leases."""
    from fastlib import FastClient
    rnd = faultlib.rng('lost')
    rounds = 4
    sigs = collections.Counter()
    told = released = 0
    row['injected'].append(f'{rounds} rounds, each on a cpuhpd of its own: 2-4 libcpuhp-client '
                           'processes hold 1-3 socket or fast leases each and `cpuhpctl hold '
                           '--strict` runs a command, then cpuhpd is SIGKILLed or SIGTERMed; '
                           'each holder reads its socket first or releases straight away')
    row['checked'] += ['a holder that reads gets LEASES_LOST naming its leases',
                       'every release of a lease held then is ECONNRESET',
                       'hold --strict ends its command and exits 70',
                       'invariants of the shared daemon after all rounds']
    for i in range(rounds):
        d, _ = _own_daemon(rig, f'lost{i}')
        clients, hold = [], None
        try:
            for k in range(rnd.randint(2, 4)):
                fast = rnd.random() < 0.5
                c = FastClient(d.socket, env=None if fast else {'CPUHP_CLIENT_FAST_PATH': '0'})
                clients.append(c)
                c.connect('a', fast=fast)
                c.thread('t', 'a')
                c.held = [c.lease('t', fast=fast) for _ in range(rnd.randint(1, 3))]
            hold = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', d.socket, 'hold',
                                     '--strict', '--', 'sh', '-c', 'echo ready; exec sleep 1000'],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            assert hold.stdout.readline() == 'ready\n'
            sig = rnd.choice((signal.SIGKILL, signal.SIGTERM))
            sigs[sig.name] += 1
            d.send_signal(sig)
            d.wait()
            for c in clients:
                if rnd.random() < 0.5:
                    r = c(f'event a {GUARD_MS}')
                    assert (r['ret'], r['type'], r['leases']) == \
                        (0, LEASES_LOST, len(c.held)), r
                    told += 1
                for lease in c.held:
                    c.release('t', lease)
                    r = c.wait('t')
                    assert r['ret'] == -errno.ECONNRESET, r
                    released += 1
            _, err = hold.communicate(timeout=fixture.GUARD_S)
            assert hold.returncode == 70, err
        finally:
            for c in clients:
                c.kill()
            if hold and hold.poll() is None:
                hold.kill()
                hold.wait()
            d.kill()
    check_invariants(rig, rnd, row)
    row['numbers']['signals'] = '/'.join(f'{k} {v}' for k, v in sorted(sigs.items()))
    row['numbers']['LEASES_LOST read'] = told
    row['numbers']['releases ECONNRESET'] = released


# ---- 6b. SMT control ----

def _smt_control(sim):
    return (sim.cpu / 'smt' / 'control').read_text().strip()


def test_smt_control_refused_a_sibling_failing_and_a_killed_smt_request(rig, row):
    """SetSmt: smt/control refused, a sibling's write failing, its client killed while it waits."""
    rnd = faultlib.rng('smt')
    led, sim = rig.ledger, rig.sim
    h, wt = rig.name('h'), rig.name('wt')
    led.connect(h)
    led.connect(wt)
    assert led.call(wt, 'watch')['kind'] == 'watch_started'
    before = sim_online(sim)
    # 1. The kernel refuses the control write itself: nothing changes.
    mode = rnd.choice(('EBUSY', 'EIO', 'EINVAL'))
    rig.ctl.write_text(f'smt/control write {mode}\n')
    r = led.call(h, 'smt', 'off', 1000)
    rig.ctl.write_text('')
    assert error_code(r) == f'ERR_{mode}' and "the kernel refused 'off'" in r['message'], r
    assert 'nothing was changed' in r['message'], r
    assert sim_online(sim) == before and _smt_control(sim) == 'on'
    assert [led.recv(wt)['event'] for _ in range(2)] == ['hotplug_started', 'hotplug_finished']
    # 2. One sibling's online file fails: the other goes, the reply says which.
    bad = rnd.choice(faultlib.SMT_SIBLINGS)
    rig.ctl.write_text(f'cpu{bad}/online write EIO\n')
    r = led.call(h, 'smt', 'off', 1000)
    rig.ctl.write_text('')
    assert r['kind'] == 'smt' and r['control'] == 'off', r
    by_cpu = {x['cpu']: x for x in r['results']}
    assert sorted(by_cpu) == list(faultlib.SMT_SIBLINGS), r
    assert not by_cpu[bad]['ok'] and by_cpu[bad]['code'] == 'ERR_EIO', r
    good = 5 - bad
    assert by_cpu[good]['ok'] and by_cpu[good]['changed'], r
    assert sim_online(sim) == before - {good} and parse_cpus(r['online']) == sim_online(sim)
    ev = [led.recv(wt) for _ in range(3)]
    assert [e['event'] for e in ev] == ['hotplug_started', 'hotplug_finished', 'online_changed']
    assert not ev[1]['ok'], ev
    r = led.call(h, 'smt', 'on', 1000)
    assert r['kind'] == 'smt' and all(x['ok'] for x in r['results']), r
    assert sim_online(sim) == before and _smt_control(sim) == 'on'
    assert [led.recv(wt)['event'] for _ in range(3)] == \
        ['hotplug_started', 'hotplug_finished', 'online_changed']
    # 3. Its client killed while it waits behind the client's own lease: it never runs.
    victim = fixture.Probe(rig.daemon.socket)
    victim.connect('v')
    victim.lease('v')
    victim.send('v', 'smt', 'off', GUARD_MS)
    assert victim.status('v')['writer'] == 'WRITER_WAITING'
    victim.kill()
    mine = led.call(h, 'offline', '1', GUARD_MS)
    assert mine['kind'] == 'set_online', mine
    pend, canc = led.recv(wt), led.recv(wt)
    assert (pend['event'], pend['cpus'], pend['smt']) == ('hotplug_pending', '', 'off'), pend
    assert (canc['event'], canc['hotplug_id'], canc['smt']) == \
        ('hotplug_cancelled', pend['hotplug_id'], 'off'), canc
    first = led.recv(wt)
    assert first['event'] == 'hotplug_started' and first['cpus'] == '1', \
        f'the SMT request of a killed client ran: {first}'
    assert led.recv(wt)['event'] == 'hotplug_finished'
    assert _smt_control(sim) == 'on' and all(sim.read_online(c) == '1'
                                             for c in faultlib.SMT_SIBLINGS)
    assert led.recv(wt)['event'] == 'online_changed'
    led.call(h, 'online', '1', GUARD_MS)
    assert [led.recv(wt)['event'] for _ in range(3)] == \
        ['hotplug_started', 'hotplug_finished', 'online_changed']
    assert sim_online(sim) == before
    # The counters saw all of it.
    text = led.call(h, 'metrics')['text']
    assert 'cpuhpd_hotplugs_total{kind="smt",result="failed"} 1' in text, text
    assert 'cpuhpd_hotplugs_total{kind="smt",result="partial"} 1' in text, text
    assert 'cpuhpd_hotplugs_total{kind="smt",result="dropped"} 1' in text, text
    led.finish(h)
    led.finish(wt)
    row['injected'].append(f'SetSmt off with smt/control\'s write failing ({mode}), with '
                           f'cpu{bad}/online\'s failing (EIO), and from a client SIGKILLed '
                           'while it waited behind its own lease')
    row['checked'] += ['the refused control write: its errno, "nothing was changed", files '
                       'unchanged, started/finished to watchers',
                       'the failing sibling: ok=false ERR_EIO, the other one done, reply online '
                       '= files',
                       'the killed client\'s SMT request never ran', 'metrics count failed, '
                       'partial and dropped SMT requests', 'invariants']
    check_invariants(rig, rnd, row)



# ---- 6c. a hotplug's notices, delay leases, forced hotplugs ----

def test_clients_killed_while_hotplugs_are_pending_forced_or_delayed(rig, row):
    """Holders of block, delay and fast leases, and plain and forced hotplugs, SIGKILLed.

    Killed at random points: notices and revocations go to dead and dying
    clients."""
    rnd = faultlib.rng('ready')
    rounds = 15
    steps = collections.Counter()
    notices = revoked = kills = 0
    row['injected'].append(f'{rounds} rounds: 1-3 lease clients (block socket leases, delay '
                           'leases of 5 ms, fast leases; 1-4 pipelined acquires) and a client '
                           'taking CPUs 1-3 off and on, forced (grace 5 ms) two times in three, '
                           'each SIGKILLed after a random 0-40 of its steps; then a forced '
                           'hotplug whose client is killed in its grace')
    row['checked'] += ['no reply to an id not outstanding, notices apart (cpuhpd-churn); a '
                       'release refused ETIME only after a LeaseRevoked notice',
                       'invariants after every round',
                       'a forced hotplug withdrawn in its grace revokes nothing, and its '
                       'holders hear it cancelled']
    for _ in range(rounds):
        procs = [rig.churn(rnd.choice(('lease', 'delay', 'fast')), rnd.randint(1, 4), 2000,
                           10**6) for _ in range(rnd.randint(1, 3))]
        procs.append(rig.churn('forced' if rnd.random() < 2 / 3 else 'hotplug', '1-3', 2000,
                               10**6))
        outputs = faultlib.kill_after(procs, [rnd.randint(0, 40) for _ in procs])
        for everything in outputs:
            lines = everything.splitlines()
            bad = [x for x in lines if x.startswith(('anomaly', 'error:'))]
            assert not bad, f'cpuhpd-churn: {bad}'
            steps[_step(lines[-1] if lines else '')] += 1
            notices += sum(x == 'notice' or x.startswith('got 0 revoked') for x in lines)
            revoked += sum(x == 'got - revoked' or 'ERR_ETIME' in x for x in lines)
            kills += 1
        check_invariants(rig, rnd, row)
    _forced_hotplug_withdrawn_in_its_grace_revokes_nothing(rig, rnd)
    row['numbers']['SIGKILLs'] = kills
    row['numbers']['notices read before the kills'] = notices
    row['numbers']['releases of revoked leases'] = revoked
    row['numbers']['killed at'] = '/'.join(f'{k} {v}' for k, v in sorted(steps.items()))


def _forced_hotplug_withdrawn_in_its_grace_revokes_nothing(rig, rnd):
    led = rig.ledger
    holder, wt = rig.name('hold'), rig.name('wt')
    led.connect(holder)
    led.connect(wt)
    assert led.call(wt, 'watch')['kind'] == 'watch_started'
    lease = led.lease(holder)
    victim = fixture.Probe(rig.daemon.socket)
    victim.connect('v')
    cpus = ','.join(map(str, sorted(rnd.sample(faultlib.HOTPLUGGABLE, rnd.randint(1, 3)))))
    victim.send('v', 'forceoffline', cpus, GUARD_MS, GUARD_MS)
    pend = led.recv(holder)
    assert (pend['event'], pend['force']) == ('hotplug_pending', True), pend
    victim.kill()
    for n in (holder, wt):
        ev = led.recv(n)
        if ev['event'] == 'hotplug_pending':   # the watcher's own copy came first
            ev = led.recv(n)
        assert (ev['event'], ev['hotplug_id'], ev['code']) == \
            ('hotplug_cancelled', pend['hotplug_id'], 'ERR_ECANCELED'), (n, ev)
    led.release(holder, lease)                  # still held: nothing was revoked
    led.finish(holder)
    led.finish(wt)


# ---- 7. SIGTERM with requests waiting (last: it ends the daemon) ----

# ---- hotplug states: each on a daemon of its own ----

STATE_CLIENT = fixture.BUILD / 'tests' / 'daemon' / 'state-client'


class StateClient:
    """tests/daemon/state-client: one state, callbacks on libcpuhp-client's thread."""

    def __init__(self, sock, name, prio, deadline_ms=5000, faults='', prefix=()):
        self.name = name
        self.proc = subprocess.Popen(list(prefix) + [str(STATE_CLIENT), sock, name, str(prio),
                                                     str(deadline_ms)]
                                     + ([faults] if faults else []), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        self.alive = True

    def line(self):
        got = self.proc.stdout.readline()
        assert got, f'state-client {self.name} ended (exit {self.proc.wait()})'
        return got.strip()

    def wait_registered(self):
        while not self.line().startswith('registered '):
            pass

    def view(self):
        """(the CPUs it holds, whether a callback runs); call lines before are skipped."""
        self.proc.stdin.write('view\n')
        self.proc.stdin.flush()
        while not (got := self.line()).startswith('view '):
            pass
        cpus, busy = got.split()[1:]
        if cpus == 'MISMATCH':   # a multi state whose instances disagree
            return cpus, busy != 'busy=0'
        return (frozenset() if cpus == '-' else parse_cpus(cpus)), busy != 'busy=0'

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.alive = False


def _own_daemon(rig, tag, args=()):
    tmp = rig.tmp / tag
    tmp.mkdir()
    sim = fixture.SimSysfs(tmp / 'sys', cpus=faultlib.CPUS)
    return fixture.Daemon(tmp, sim.root, args=list(args)).start(), sim


def _ctl(d, *args):
    return subprocess.run([str(fixture.CPUHPCTL), '--socket', d.socket, '--json', *args],
                          capture_output=True, text=True, timeout=fixture.GUARD_S)


def _views_match_files(clients, sim, d, settle=False):
    """Every live state's view is the files' online set, and cpuhpd lists
    exactly the live states, each started on those CPUs.  @settle: calls
    that missed their deadline may still run in their clients: ask until
    they are done (each try a round trip, bounded by the guard)."""
    online = sim_online(sim)
    live = [c for c in clients if c.alive]
    for c in live:
        got = c.view()
        deadline = time.monotonic() + fixture.GUARD_S
        while settle and got != (online, False) and time.monotonic() < deadline:
            got = c.view()
        assert got == (online, False), (c.name, got, online)
    listed = json.loads(_ctl(d, 'states').stdout)['states']
    assert sorted(x['name'] for x in listed) == sorted(c.name for c in live), listed
    # A multi state has no CPUs of its own: its instances' are in their clients' views.
    assert all(frozenset(x['cpus']) == online for x in listed if not x.get('instances')), \
        (listed, online)


def test_state_clients_sigkilled_during_a_multi_cpu_offline_never_wedge_it(rig, row):
    """State clients SIGKILLed at random points of a multi-CPU offline, 5 states."""
    rnd = faultlib.rng('states-kill')
    d, sim = _own_daemon(rig, 'states-kill')
    rounds, kills = 8, 0
    try:
        for r in range(rounds):
            clients = [StateClient(d.socket, f'k{r}s{i}', rnd.randint(0, 9)) for i in range(5)]
            for c in clients:
                c.wait_registered()
            victims = rnd.sample(clients, rnd.randint(1, 3))
            hp = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', d.socket, '--json',
                                   'offline', '1-3'], stdout=subprocess.PIPE, text=True)
            for v in victims:
                for _ in range(rnd.randint(0, 2)):   # each gets 3 teardowns, 1-3
                    v.line()
                v.kill()
                kills += 1
            out = hp.communicate(timeout=fixture.GUARD_S)[0]
            assert hp.returncode == 0, out          # dead clients count as done
            res = json.loads(out)['results']
            assert [x['ok'] for x in res] == [True] * 3, res
            assert sim_online(sim) == {0}
            _views_match_files(clients, sim, d)
            r2 = _ctl(d, 'online', '1-3')
            assert r2.returncode == 0 and sim_online(sim) == {0, 1, 2, 3}, r2
            _views_match_files(clients, sim, d)
            for c in clients:
                c.kill()
    finally:
        assert d.stop() == 0, d.log()
    row['injected'].append(f'{rounds} rounds: 5 state clients (random priorities), 1-3 of them '
                           'SIGKILLed after 0-2 of their teardown calls while cpuhpctl '
                           'offline 1-3 runs')
    row['checked'] += ['the offline ends, every CPU done (a dead client counts as done)',
                       'every live state\'s view equals the files, offline and after online',
                       'cpuhpd lists exactly the live states, started on the online CPUs']
    row['numbers']['SIGKILLs'] = kills


def _faulty_state_rounds(rig, tag, name, how=lambda rnd: ''):
    """6 rounds of 5 state clients, each failing (EBUSY) or taking 300 ms
    against a 100 ms deadline at a random CPU of 1-3, or healthy, and each
    made as how(rnd) says (state-client's "p", "m"); offline then online
    1-3.  Return: the exit codes counted, and the kinds."""
    rnd = faultlib.rng(tag)
    d, sim = _own_daemon(rig, tag)
    codes, kinds = collections.Counter(), collections.Counter()
    try:
        for r in range(6):
            clients = []
            for i in range(5):
                kind, cpu = rnd.choice(('', 'f', 's')), rnd.choice(faultlib.HOTPLUGGABLE)
                made = how(rnd)
                kinds[made or 'online'] += 1
                faults = ','.join(x for x in (made, {'': '', 'f': f'f{cpu}',
                                                     's': f's{cpu}:300'}[kind]) if x)
                clients.append(StateClient(d.socket, f'{name}{r}s{i}', rnd.randint(0, 9),
                                           deadline_ms=100 if kind == 's' else 5000,
                                           faults=faults))
            for c in clients:
                c.wait_registered()
            for verb in ('offline', 'online'):
                before = sim_online(sim)
                res = _ctl(d, verb, '1-3')
                codes[res.returncode] += 1
                assert res.returncode in (0, 1, 64), res
                for x in json.loads(res.stdout)['results']:
                    if not x['ok']:
                        # Rolled back: the CPU is as it was, the failed state named.
                        assert (x['cpu'] in sim_online(sim)) == (x['cpu'] in before), x
                        assert "state '" in x['message'] and 'rolled back' in x['message'], x
                _views_match_files(clients, sim, d, settle=True)
            # Back to all online for the next round, with no faulty states left.
            for c in clients:
                c.kill()
            assert _ctl(d, 'online', '1-3').returncode == 0
    finally:
        assert d.stop() == 0, d.log()
    return codes, kinds


def test_state_callbacks_that_fail_or_stall_at_random_cpus_roll_back(rig, row):
    """State callbacks that fail or miss their deadline at random CPUs, 5 states."""
    codes, _ = _faulty_state_rounds(rig, 'states-faults', 'f')
    row['injected'].append('6 rounds: 5 state clients, each failing (EBUSY) or taking '
                           '300 ms against a 100 ms deadline at a random CPU of 1-3, or '
                           'healthy; offline 1-3 then online 1-3')
    row['checked'] += ['exit 0, 1 or 64; a failed CPU is as it was, its state named',
                       'once late calls have run, every state\'s view equals the files']
    row['numbers']['exit codes'] = '/'.join(f'{k}:{v}' for k, v in sorted(codes.items()))


def test_prepare_states_and_instances_that_fail_or_stall_roll_back(rig, row):
    """PREPARE, ONLINE and multi-instance states failing or stalling at random CPUs."""
    codes, kinds = _faulty_state_rounds(rig, 'sections-faults', 'p',
                                        lambda rnd: rnd.choice(('p', 'm', 'p,m', '')))
    row['injected'].append('6 rounds: 5 state clients each in the PREPARE or ONLINE '
                           'section, plain or with 2 instances, failing (EBUSY, but a PREPARE '
                           'teardown) or taking 300 ms against a 100 ms deadline at a random '
                           'CPU of 1-3, or healthy; offline 1-3 then online 1-3')
    row['checked'] += ['exit 0, 1 or 64; a failed CPU is as it was, its state named',
                       'once late calls have run, every state\'s (every instance\'s) view '
                       'equals the files']
    row['numbers']['exit codes'] = '/'.join(f'{k}:{v}' for k, v in sorted(codes.items()))
    row['numbers']['states'] = '/'.join(f'{k}:{v}' for k, v in sorted(kinds.items()))


def test_cpuhpd_sigterm_inside_a_callback_finishes_the_hotplug_then_exits(rig, row):
    """cpuhpd SIGTERMed while a state callback runs."""
    outcomes = []
    for answer in (True, False):
        d, sim = _own_daemon(rig, f'states-term-{answer}')
        p = fixture.Probe(d.socket)
        try:
            p.connect('s')
            rid = p.send('s', 'register', 'owner', 0, 200, 'nocalls')
            assert p.recv('s')['id'] == rid
            p.connect('h')
            hid = p.send('h', 'offline', 2, 5000)
            call = p.recv('s')
            assert call['kind'] == 'state_call' and call['phase'] == 'teardown', call
            d.send_signal(signal.SIGTERM)
            if answer:
                p.send('s', 'answer', call['call_id'], 'ok')
            r = p.recv('h')
            # The hotplug in the worker finishes, with its calls; then cpuhpd exits.
            assert r['id'] == hid and r['kind'] == 'set_online', r
            if answer:
                assert r['results'][0]['ok'] and sim.read_online(2) == '0', r
            else:   # the deadline passed: rolled back (the startup goes to a closing client)
                assert not r['results'][0]['ok'] and sim.read_online(2) == '1', r
                assert r['results'][0]['code'] == 'ERR_ETIMEDOUT', r
            assert d.wait() == 0, d.log()
            outcomes.append('answered: offline' if answer else 'unanswered: rolled back')
        finally:
            p.kill()
            if d.proc.poll() is None:
                d.stop()
    row['injected'].append('SIGTERM while a teardown call is outstanding; then the call '
                           'answered, or left to its 200 ms deadline')
    row['checked'] += ['the hotplug already in the worker finishes and is answered',
                       'answered: the CPU goes offline; unanswered: ERR_ETIMEDOUT, rolled '
                       'back, the CPU stays', 'cpuhpd exits 0']
    row['numbers']['outcomes'] = ', '.join(outcomes)


def test_state_limits_on_nobody_capped_root_cut_at_its_timeouts_and_a_stop(rig, row):
    """Hotplug-state limits on: nobody's states capped, stalling
    or failing; root's hotplugs with short timeouts cut its stalling state."""
    import shutil
    if os.geteuid() != 0 or not shutil.which('setpriv'):
        import pytest
        pytest.skip('needs root and setpriv to run a client as nobody: skipped')
    rnd = faultlib.rng('states-limits')
    d, sim = _own_daemon(rig, 'states-limits', ['--socket-mode', '0666',
                                                '--max-states-per-uid', '3',
                                                '--max-state-deadline-ms', '200'])
    rounds, refused, cut = 4, collections.Counter(), 0
    try:
        for r in range(rounds):
            clients = []
            for i in range(3):
                kind, cpu = rnd.choice(('', 'f', 's')), rnd.choice(faultlib.HOTPLUGGABLE)
                faults = {'': '', 'f': f'f{cpu}', 's': f's{cpu}:300'}[kind]
                clients.append(StateClient(d.socket, f'n{r}s{i}', rnd.randint(0, 9),
                                           deadline_ms=rnd.choice((0, 100, 200)),
                                           faults=faults, prefix=fixture.NOBODY))
            for c in clients:
                c.wait_registered()
            # Past nobody's 3 states, and past its deadline cap: refused, told why.
            for name, deadline, code in ((f'n{r}x', 0, -errno.EDQUOT),
                                         (f'n{r}y', 201, -errno.EPERM)):
                x = subprocess.run(fixture.NOBODY + [str(STATE_CLIENT), d.socket, name, '0',
                                                     str(deadline)],
                                   stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                   timeout=fixture.GUARD_S)
                assert x.returncode == 1 and x.stdout.startswith(f'error {code} '), x
                refused[errno.errorcode[-code]] += 1
            # Root's state, first to tear down, stalls past every hotplug's timeout here.
            slow_cpu = rnd.choice(faultlib.HOTPLUGGABLE)
            slow = StateClient(d.socket, f'r{r}', 100, deadline_ms=600000,
                               faults=f's{slow_cpu}:{rnd.randint(400, 800)}')
            slow.wait_registered()
            clients.append(slow)
            timeout = rnd.randint(100, 300)
            res = _ctl(d, 'offline', '--timeout', str(timeout), '1-3')
            assert res.returncode in (1, 64), res
            for x in json.loads(res.stdout)['results']:
                if not x['ok']:
                    assert x['cpu'] in sim_online(sim), x          # rolled back
                    assert 'rolled back' in x['message'], x
                if x['cpu'] == slow_cpu:
                    assert x['error'] == 'ETIMEDOUT', x
                    cut += 1
            _views_match_files(clients, sim, d, settle=True)
            res = _ctl(d, 'online', '--timeout', str(timeout), '1-3')
            assert res.returncode in (0, 1, 64), res
            _views_match_files(clients, sim, d, settle=True)
            # Back to all online for the next round, with no faulty states left.
            for c in clients:
                c.kill()
            assert _ctl(d, 'online', '1-3').returncode == 0
        # A stop while root's silent state holds a teardown: cut after 1 s, exit 0.
        p = fixture.Probe(d.socket)
        try:
            p.connect('s')
            rid = p.send('s', 'register', 'silent', 0, 600000, 'nocalls')
            assert p.recv('s')['id'] == rid
            p.connect('h')
            hid = p.send('h', 'offline', 2, 600000)
            assert p.recv('s')['kind'] == 'state_call'
            d.send_signal(signal.SIGTERM)
            assert d.wait() == 0, d.log()
            r = p.recv('h')
            assert r['id'] == hid and r['results'][0]['code'] == 'ERR_ECANCELED', r
            assert sim.read_online(2) == '1'
        finally:
            p.kill()
    finally:
        if d.proc.poll() is None:
            assert d.stop() == 0, d.log()
    row['injected'].append(f'{rounds} rounds with --max-states-per-uid 3 '
                           '--max-state-deadline-ms 200: 3 states of nobody, failing (EBUSY), '
                           'taking 300 ms or healthy at a random CPU, a 4th and one asking '
                           '201 ms refused; root\'s state stalling 400-800 ms at a random CPU '
                           'against offline 1-3 with a 100-300 ms timeout; then SIGTERM while '
                           'root\'s silent state holds a teardown')
    row['checked'] += ['nobody\'s 4th state is EDQUOT, a deadline over the cap EPERM',
                       'the stalling state\'s CPU ends ETIMEDOUT at the hotplug\'s timeout, '
                       'rolled back; once late calls ran every view equals the files',
                       'the stop cuts the silent call: ECANCELED, the CPU stays, exit 0']
    row['numbers']['refused'] = '/'.join(f'{k} {v}' for k, v in sorted(refused.items()))
    row['numbers']['cut at the timeout'] = cut


def test_sigterm_while_hotplugs_and_leases_wait_cancels_them_and_exits_0(rig, row):
    """The daemon SIGTERMed while hotplugs and leases wait behind a lease."""
    rnd = faultlib.rng('sigterm')
    led, d, sim = rig.ledger, rig.daemon, rig.sim
    holder, watcher, idle = rig.name('hold'), rig.name('watch'), rig.name('idle')
    for n in (holder, watcher, idle):
        led.connect(n)
    led.call(watcher, 'watch')
    led.lease(holder)
    waiting = []   # (connection, request id) that must be answered ECANCELED
    nh, nl = rnd.randint(1, 3), rnd.randint(1, 4)
    for i in range(nh):
        n = rig.name('hp')
        led.connect(n)
        cpus = ','.join(map(str, sorted(rnd.sample(faultlib.HOTPLUGGABLE, rnd.randint(1, 3)))))
        waiting.append((n, led.send(n, rnd.choice(('online', 'offline')), cpus, 60000)))
    for i in range(nl):
        n = rig.name('lw')
        led.connect(n)
        waiting += [(n, led.send(n, 'acquire', 60000)) for _ in range(rnd.randint(1, 3))]
    s = led.status(idle)
    assert s['writer'] == 'WRITER_WAITING' and s['pending_hotplugs'] == nh, s
    assert s['pending_leases'] == len(waiting) - nh, s
    before = sim_online(sim)
    d.send_signal(signal.SIGTERM)
    for n, rid in waiting:
        r = led.recv(n)
        assert r['id'] == rid and error_code(r) == 'ERR_ECANCELED', (n, rid, r)
        assert 'shutting down' in r['message'], r
    assert d.wait() == 0, d.log()
    assert not os.path.exists(d.socket), 'the socket file outlived the daemon'
    conns = {n for n, _ in waiting} | {holder, watcher, idle}
    for n in conns:
        rest = led.finish(n)
        # The holder and the watcher were told the first hotplug was pending, then cancelled.
        told = [(x['event'], x.get('code')) for x in rest if x['kind'] == 'event']
        assert told == ([('hotplug_pending', None), ('hotplug_cancelled', 'ERR_ECANCELED')]
                        if n in (holder, watcher) else []), (n, rest)
        assert [(x['id'], x.get('code')) for x in rest if x['kind'] != 'event'] == \
            [(0, 'ERR_ECANCELED')], (n, rest)
    assert sim_online(sim) == before, 'a cancelled hotplug changed a CPU'
    # A daemon started again on the same path serves a fresh client.
    again = fixture.Daemon(rig.tmp, sim.root, socket_path=d.socket)
    again.start()
    try:
        p = fixture.Probe(again.socket)
        p.connect('f')
        lease = p.lease('f')
        assert p.call('f', 'release', lease)['kind'] == 'lease_released'
        assert parse_cpus(p.status('f')['online']) == sim_online(sim)
        p.kill()
    finally:
        assert again.stop() == 0
    row['injected'].append(f'SIGTERM with a lease held, {nh} hotplug(s) and {len(waiting) - nh} '
                           f'lease acquire(s) from {nl} client(s) waiting behind it, a watcher '
                           'and an idle client')
    row['checked'] += ['every waiting request answered ERR_ECANCELED once, under its id',
                       'then one id-0 ERR_ECANCELED and EOF on every connection',
                       'exit status 0', 'the socket file removed', 'no CPU changed',
                       'a daemon restarted on the same path serves a fresh client and reports '
                       'the files\' online set']
    row['numbers']['cancelled'] = len(waiting)
    row['numbers']['connections closed'] = len(conns)


# ---- a restart with the fd store: on a daemon of its own ----

def test_cpuhpd_sigkilled_and_restarted_with_its_fd_store_keeps_every_lease(rig, row):
    """cpuhpd SIGKILLed and restarted with its fd store."""
    import fastlib
    import fdstore
    rnd = faultlib.rng('restart')
    tmp = rig.tmp / 'restart'
    tmp.mkdir()
    sim = fixture.SimSysfs(tmp / 'sys', cpus=faultlib.CPUS)
    manager = fdstore.Manager(tmp)
    d = manager.start(fixture.Daemon(tmp, sim.root))
    probe = fixture.Probe(d.socket)
    fast = fastlib.FastClient(d.socket)
    led = faultlib.Ledger(probe)
    rounds, kept, waited, fast_kept, conns = 5, 0, 0, 0, []
    try:
        for i in range(rounds):
            held = []     # (connection, lease id); connection None: the fast client's
            for _ in range(rnd.randint(1, 4)):
                n = rig.name('rh')
                led.connect(n)
                conns.append(n)
                held += [(n, led.lease(n)) for _ in range(rnd.randint(1, 3))]
            if rnd.random() < 0.5:
                fast.connect(f'f{i}')
                fast.thread(f't{i}', f'f{i}')
                fast.lease(f't{i}')
                held.append((None, f't{i}'))
                fast_kept += 1
            hpn = rig.name('rhp')
            led.connect(hpn)
            conns.append(hpn)
            cpus = ','.join(map(str, sorted(rnd.sample(faultlib.HOTPLUGGABLE,
                                                       rnd.randint(1, 3)))))
            hp = led.send(hpn, rnd.choice(('online', 'offline')), cpus, 60000)
            waiters = []
            for _ in range(rnd.randint(0, 3)):
                n = rig.name('rw')
                led.connect(n)
                conns.append(n)
                waiters.append((n, led.send(n, 'acquire', 60000)))
            s = led.status(hpn)
            assert s['writer'] == 'WRITER_WAITING' and s['pending_leases'] == len(waiters), s
            before = sim_online(sim)
            d.kill()
            manager.sync()
            d = manager.start(d)
            kept += len(held)
            waited += len(waiters)
            # Everything as it was: the leases, the waiting acquires, the queued hotplug.
            s = led.status(hpn)
            assert (s['leases_held'], s['pending_leases'], s['pending_hotplugs']) == \
                (len(held), len(waiters), 1), (s, held, d.log()[-3000:])
            rnd.shuffle(held)
            for n, lease in held:
                s = led.status(hpn)
                assert s['pending_hotplugs'] == 1 and sim_online(sim) == before, \
                    f'a hotplug ran under a lease taken before the restart: {s}'
                if n is None:
                    fast.unlease(lease)
                else:
                    led.release(n, lease)
            r = led.reply(hpn)
            assert r['id'] == hp and r['kind'] == 'set_online', r
            assert all(x['ok'] for x in r['results']), r
            for n, rid in waiters:
                r = led.recv(n)
                assert r['id'] == rid and r['kind'] == 'lease_granted', r
                led.release(n, r['lease_id'])
            s = led.status(hpn)
            assert (s['leases_held'], s['pending_leases'], s['pending_hotplugs'],
                    s['writer']) == (0, 0, 0, 'WRITER_IDLE'), s
            assert parse_cpus(s['online']) == sim_online(sim)
        # Every request of every connection answered exactly once, across the restarts.
        for n in conns:
            led.finish(n)
        fresh = fixture.Probe(d.socket)
        fresh.connect('x')
        assert fresh.call('x', 'release', fresh.lease('x'))['kind'] == 'lease_released'
        fresh.kill()
    finally:
        fast.kill()
        probe.kill()
        d.stop()
        manager.close()
    row['injected'].append(f'{rounds} rounds: 1-4 clients holding 1-3 socket leases each (and '
                           'a libcpuhp-client fast lease in about half), a hotplug of 1-3 CPUs '
                           'and 0-3 lease acquires waiting behind them; cpuhpd SIGKILLed, then '
                           'started again with the fd store (the test plays systemd)')
    row['checked'] += ['after each restart: the same leases held, the same acquires and hotplug '
                       'waiting', 'the hotplug waits until the last lease taken before the '
                       'restart is released, then runs; the acquires are granted after it',
                       'every request answered exactly once (ledger), across the restarts',
                       'the online set equals the files; a new client is served']
    row['numbers']['restarts'] = rounds
    row['numbers']['leases kept'] = kept
    row['numbers']['of them fast'] = fast_kept
    row['numbers']['acquires kept waiting'] = waited


def test_cpuhpd_restarted_with_an_fd_store_too_small_keeps_each_lease_or_ends_it(rig, row):
    """cpuhpd restarted (SIGKILL or SIGTERM) with an fd store too small for its clients."""
    from fastlib import FastClient
    import fdstore
    rnd = faultlib.rng('fullstore')
    rounds, kept, ended, fast_kept = 4, 0, 0, 0
    for i in range(rounds):
        tmp = rig.tmp / f'fullstore{i}'
        tmp.mkdir()
        sim = fixture.SimSysfs(tmp / 'sys', cpus=faultlib.CPUS)
        manager = fdstore.Manager(tmp)
        size = rnd.randint(3, 9)
        d = manager.start(fixture.Daemon(tmp, sim.root, args=['--fd-store-max', str(size)]))
        probe = fixture.Probe(d.socket)
        holders = []     # [probe connection name or FastClient, leases held]
        try:
            # Socket and fast holders interleaved, so that the store fills at any point.
            for k in range(rnd.randint(3, 6)):
                if rnd.random() < 0.5:
                    n = f's{k}'
                    probe.connect(n)
                    holders.append([n, [probe.lease(n) for _ in range(rnd.randint(1, 2))]])
                else:
                    c = FastClient(d.socket)
                    r = c('connect h')
                    assert r['ret'] == 0, r
                    c.thread('t', 'h')
                    c.fast = r['fast']
                    holders.append([c, [c.lease('t', fast=r['fast'])]])
            sig = rnd.choice((signal.SIGKILL, signal.SIGTERM))
            d.send_signal(sig)
            d.wait()
            manager.sync()
            d = manager.start(d)
            # Each holder is either still served, with its leases counted, or told the end.
            alive = []
            for h, leases in holders:
                if isinstance(h, str):
                    r = probe.call(h, 'status')
                    ok = r.get('kind') == 'status'
                    assert ok or r.get('eof') or r.get('errno') in ('EPIPE', 'ECONNRESET'), r
                else:
                    r = h('status h')
                    ok = r['ret'] == 0
                    if not ok:
                        h.release('t', leases[0])
                        r = h.wait('t')
                        assert r['ret'] == -errno.ECONNRESET, r
                    fast_kept += ok and h.fast
                if ok:
                    alive.append((h, leases))
                    kept += len(leases)
                else:
                    ended += len(leases)
            want = sum(len(leases) for _, leases in alive)
            probe.connect('admin')
            s = probe.status('admin')
            assert s['leases_held'] == want, (s, holders, d.log()[-3000:])
            if want:
                hp = probe.send('admin', 'offline', 1, 60000)
                for h, leases in alive:
                    s = probe.status('admin')
                    assert s['pending_hotplugs'] == 1 and sim.read_online(1) == '1', s
                    if isinstance(h, str):
                        for lease in leases:
                            probe.call(h, 'release', lease)
                    else:
                        h.unlease('t')
                r = probe.recv('admin')
                assert r['id'] == hp and r['results'][0]['ok'], r
        finally:
            for h, _ in holders:
                if not isinstance(h, str):
                    h.kill()
            probe.kill()
            d.stop()
            manager.close()
    row['injected'].append(f'{rounds} rounds, each on a cpuhpd of its own with --fd-store-max '
                           '3-9: 3-6 holders of socket leases (1-2) or a libcpuhp-client lease '
                           '(fast where granted), interleaved; cpuhpd SIGKILLed or SIGTERMed, '
                           'then started again with the store')
    row['checked'] += ['each holder is either still served with its leases counted, or sees '
                       'the end (EOF; its release ECONNRESET): never kept without its leases',
                       'leases_held equals the leases of the holders kept',
                       'a hotplug waits until the last kept lease is released']
    row['numbers']['leases kept'] = kept
    row['numbers']['of them fast'] = fast_kept
    row['numbers']['leases ended with their connection'] = ended
