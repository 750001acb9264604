# SPDX-License-Identifier: LGPL-2.1-or-later
"""The restart state's cost and its half-read frames (daemon/cpuhpd/README.md,
"Restart"; base/journal.h): with the fd store on, a change writes what
changed, not the whole state, so one client's crowd of connections or
half-sent frames does not slow everyone's leases; half-read frames are saved
only at a restart's stop, and the next cpuhpd finishes them.

Cost is counted in bytes, not time: /proc/PID/io's wchar is every byte the
daemon passed to write(2) and its kin (its replies and the state memfd)."""
import pathlib
import signal

import pytest

import fdstore
import fixture

# What one acquire+release pair may write: its two replies and what changed
# (a lease line, the ids), with room to spare; the whole state is 100 times more.
PAIR_BYTES = 4096


@pytest.fixture
def manager(tmp):
    m = fdstore.Manager(tmp, store_max=4096)
    yield m
    m.close()


def wchar(d):
    for line in pathlib.Path(f'/proc/{d.proc.pid}/io').read_text().splitlines():
        if line.startswith('wchar:'):
            return int(line.split()[1])
    raise AssertionError('no wchar in /proc/PID/io')


def bytes_per_pair(probe, d, conn, pairs=20):
    probe.call(conn, 'release', probe.lease(conn))      # the first change's record is made
    before = wchar(d)
    for _ in range(pairs):
        r = probe.call(conn, 'release', probe.lease(conn))
        assert r['kind'] == 'lease_released', r
    return (wchar(d) - before) / pairs


def test_a_change_among_many_lease_holders_writes_what_changed(tmp, sim, manager):
    d = manager.start(fixture.Daemon(tmp, sim.root))
    probe = fixture.Probe(d.socket)
    try:
        assert probe('many h 300 0')['granted'] == 300
        probe.connect('m')
        per_pair = bytes_per_pair(probe, d, 'm')
        assert per_pair < PAIR_BYTES, f'{per_pair:.0f} bytes written per acquire+release'
    finally:
        probe.kill()
        d.stop()


def test_half_sent_frames_cost_others_nothing_and_are_saved_at_a_stop(tmp, sim, manager):
    """Eight connections with a 64 KiB frame half sent: a lease pair of someone
    else writes none of their bytes.  At SIGTERM the half frame of a Status
    request is saved, and the next cpuhpd answers it once it is whole."""
    d = manager.start(fixture.Daemon(tmp, sim.root))
    probe = fixture.Probe(d.socket)
    try:
        assert probe('halfmany f 8 65536 32768')['ok']
        assert probe('readmany f 8')['ok']
        probe.connect('m')
        per_pair = bytes_per_pair(probe, d, 'm')
        assert per_pair < PAIR_BYTES, f'{per_pair:.0f} bytes written per acquire+release'
        # Request{id 77, status {}}: its prefix and half its payload before the stop.
        payload = bytes([0x08, 77, 0x32, 0x00])
        frame = len(payload).to_bytes(4, 'big') + payload
        probe.connect('s0')
        probe.lease('s0')               # held: the stop must hand the client over
        assert probe(f'raw s0 {frame[:6].hex()}')['ok']
        assert probe('readmany s 1')['ok']
        d.send_signal(signal.SIGTERM)
        assert d.wait() == 0, d.log()
        d = manager.start(d)
        assert probe(f'raw s0 {frame[6:].hex()}')['ok']
        r = probe.recv('s0')
        assert r['id'] == 77 and r['kind'] == 'status' and r['leases_held'] == 1, r
    finally:
        probe.kill()
        d.stop()
