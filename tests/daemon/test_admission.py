# SPDX-License-Identifier: LGPL-2.1-or-later
"""Unprivileged clients cannot starve root: a per-uid
connection cap, connections reserved for root and --admin-group, and a
request timeout that closes a stalled or dripping partial frame but never an
idle connection.  The clients that attack run as `nobody` (setpriv; root
needed: those tests skip, saying so, otherwise)."""
import os
import shutil
import subprocess
import time

import pytest

import fixture
from fixture import error_code

NOBODY = fixture.NOBODY

needs_nobody = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which('setpriv'),
    reason='needs root and setpriv to run a client as nobody: skipped')


def frame(payload):
    return len(payload).to_bytes(4, 'big') + payload


def start(tmp, sim, *args):
    # nobody must be able to reach the socket: a traversable directory, mode 0666.
    os.chmod(tmp, 0o755)
    return fixture.Daemon(tmp, sim.root, args=['--socket-mode', '0666', *args]).start()


def root_is_served(p, sim, name):
    """Root connects, reads status, and offlines and onlines CPU 1."""
    p.connect(name)
    assert p.status(name)['online']
    r = p.call(name, 'offline', 1, 10000)
    assert r['kind'] == 'set_online' and r['results'][0]['changed'], r
    assert sim.read_online(1) == '0'
    r = p.call(name, 'online', 1, 10000)
    assert r['kind'] == 'set_online' and r['results'][0]['changed'], r


@needs_nobody
def test_nobody_floods_its_per_uid_cap_and_root_still_gets_status_and_offline(tmp, sim):
    d = start(tmp, sim, '--max-connections-per-uid', '8')
    flood = fixture.Probe(d.socket, NOBODY)
    root = fixture.Probe(d.socket)
    try:
        for i in range(8):
            flood.connect(f'n{i}')
        for i in range(8, 12):
            r = flood(f'connect n{i}')
            assert error_code(r) == 'ERR_EUSERS' and r['id'] == 0, r
            assert 'uid 65534' in r['message'] and '--max-connections-per-uid' in r['message'], r
        root_is_served(root, sim, 'r')
        assert root.status('r')['connections'] == 9
        # A slot of nobody's that closes is nobody's again.
        flood('close n0')
        # Another process's close: round trips until cpuhpd has seen it.
        for _ in range(1000):
            if root.status('r')['connections'] == 8:
                break
        else:
            raise AssertionError('nobody closed a connection and cpuhpd never saw it')
        flood.connect('again')
    finally:
        flood.kill()
        root.kill()
        assert d.stop() == 0, d.log()
    assert 'connection refused (pid' in d.log() and '--max-connections-per-uid' in d.log()


@needs_nobody
def test_a_process_with_many_states_meets_the_per_uid_cap_and_is_told_why(tmp, sim):
    # libcpuhp-client gives each state a connection of its own, besides the client's.
    d = start(tmp, sim, '--max-connections-per-uid', '3', '--max-states-per-uid', '2')
    sc = fixture.BUILD / 'tests' / 'daemon' / 'state-client'
    a = fixture.Lines(NOBODY + [sc, d.socket, 'a', 5])
    flood = fixture.Probe(d.socket, NOBODY)
    try:
        line = a.proc.stdout.readline()
        while line.startswith('startup '):
            line = a.proc.stdout.readline()
        assert line.startswith('registered '), line
        # a: its client's connection and its state's, 2 of nobody's 3.  b's client
        # takes the third, so its state cannot have one: the library says why.
        b = subprocess.run(NOBODY + [str(sc), d.socket, 'b', '5'], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=fixture.GUARD_S)
        assert b.returncode == 1, b
        assert b.stdout.startswith('error -87 cannot connect to cpuhpd for the state'), b
        assert 'each state takes one of its own' in b.stdout, b
        assert '--max-connections-per-uid' in b.stdout, b
        # And cpuhpd's refusal counts the states that hold nobody's connections.
        flood.connect('n0')
        r = flood('connect n1')
        assert error_code(r) == 'ERR_EUSERS' and r['id'] == 0, r
        assert '--max-connections-per-uid' in r['message'], r
        assert 'its 1 hotplug state takes one each' in r['message'], r
        assert 'libcpuhp-client gives every state a connection of its own' in r['message'], r
    finally:
        a.kill()
        flood.kill()
        assert d.stop() == 0, d.log()


@needs_nobody
def test_the_last_connections_are_reserved_for_root(tmp, sim):
    d = start(tmp, sim, '--max-connections', '12', '--reserved-connections', '4',
              '--max-connections-per-uid', '100')
    flood = fixture.Probe(d.socket, NOBODY)
    root = fixture.Probe(d.socket)
    try:
        for i in range(8):
            flood.connect(f'n{i}')
        r = flood('connect n8')
        assert error_code(r) == 'ERR_EUSERS' and r['id'] == 0, r
        assert '--reserved-connections' in r['message'] and 'root' in r['message'], r
        # Root gets the four kept for it, hotplug included ...
        root_is_served(root, sim, 'r0')
        for i in range(1, 4):
            root.connect(f'r{i}')
        # ... and the reserve is no way past the limit itself, for root neither.
        r = root('connect r4')
        assert error_code(r) == 'ERR_EUSERS' and 'the limit is 12' in r['message'], r
        assert root.status('r0')['connections'] == 12
    finally:
        flood.kill()
        root.kill()
        assert d.stop() == 0, d.log()


def test_reserve_that_leaves_nothing_is_refused_at_start(tmp, sim):
    r = subprocess.run([str(fixture.CPUHPD), '--socket', str(tmp / 's'), '--sysfs-root',
                                str(sim.root), '--max-connections', '8',
                                '--reserved-connections', '8'],
                               capture_output=True, text=True, timeout=fixture.GUARD_S)
    assert r.returncode == 2 and '--reserved-connections' in r.stderr, r


TIMEOUT_MS = 300


def closed_by_timeout(probe, name):
    """The connection's end: its last message an id-0 ERR_ETIMEDOUT naming the option."""
    r = probe(f'eof {name}')
    assert r['end'] in ('eof', 'ECONNRESET'), r
    errors = [x for x in r['responses'] if x['kind'] == 'error']
    assert errors and errors[-1]['code'] == 'ERR_ETIMEDOUT' and errors[-1]['id'] == 0, r
    assert '--client-timeout-ms' in errors[-1]['message'], r
    return errors[-1]


@pytest.mark.parametrize('partial', ['000000', frame(bytes(40))[:20].hex()],
                         ids=['three-prefix-bytes', 'half-a-payload'])
def test_stalled_partial_frame_is_closed_after_the_timeout_idle_holder_stays(tmp, sim, partial):
    d = fixture.Daemon(tmp, sim.root, args=['--client-timeout-ms', str(TIMEOUT_MS)]).start()
    p = fixture.Probe(d.socket)
    try:
        p.connect('holder')
        lease = p.lease('holder')    # then idle: no byte until the end of the test
        p.connect('stall')
        t0 = time.monotonic()
        p(f'raw stall {partial}')
        closed_by_timeout(p, 'stall')
        took = time.monotonic() - t0
        print(f'stalled partial frame ({len(partial) // 2} bytes) closed after '
              f'{took * 1000:.0f} ms (--client-timeout-ms {TIMEOUT_MS})')
        # Not early: the daemon's clock counts whole milliseconds, hence the 2 ms.
        assert took * 1000 >= TIMEOUT_MS - 2, took
        # The holder has been idle for longer than the timeout: still there, lease held.
        s = p.status('holder')
        assert s['connections'] == 1 and s['leases_held'] == 1, s
        assert p.call('holder', 'release', lease)['kind'] == 'lease_released'
    finally:
        p.kill()
        assert d.stop() == 0, d.log()
    assert 'request incomplete' in d.log()


def test_slow_drip_is_closed_after_the_timeout_though_bytes_keep_coming(tmp, sim):
    d = fixture.Daemon(tmp, sim.root, args=['--client-timeout-ms', str(TIMEOUT_MS)]).start()
    p = fixture.Probe(d.socket)
    try:
        p.connect('drip')
        # A 200-byte request at a byte per 50 ms would take 10 s: each byte comes
        # well within the timeout, the frame never does.
        whole = frame(bytes(200)).hex()
        r = p(f'drip drip {whole} 50')
        assert r['answered'] and r['sent'] < r['of'], r
        closed_by_timeout(p, 'drip')
        print(f'slow drip closed after {r["ms"]} ms and {r["sent"]} of {r["of"]} bytes '
              f'(--client-timeout-ms {TIMEOUT_MS})')
        # Whole requests, however many, never trip it.
        p.connect('ok')
        for _ in range(3):
            p.status('ok')
    finally:
        p.kill()
        assert d.stop() == 0, d.log()


def test_bad_admission_options_are_refused_with_a_message(tmp, sim):
    for args, what in [(['--max-connections-per-uid', '0'], '--max-connections-per-uid'),
                       (['--max-buffered-bytes', '1K'], 'less than one request'),
                       (['--max-buffered-bytes-per-uid', '4X'], 'invalid size'),
                       (['--client-timeout-ms', '-1'], '--client-timeout-ms')]:
        r = subprocess.run([str(fixture.CPUHPD), '--socket', str(tmp / 's'),
                                    '--sysfs-root', str(sim.root), *args],
                                   capture_output=True, text=True, timeout=fixture.GUARD_S)
        assert r.returncode == 2 and what in r.stderr, (args, r)
