# SPDX-License-Identifier: LGPL-2.1-or-later
"""A hotplug waits for the daemon's in-process readers of the hotplug lock,
not only for leases: up to its timeout, changing nothing if they stay.

The reader comes from inproc-reader.c, preloaded into cpuhpd: a thread that
holds cpuhp_get_online_cpus() from before main until the test says go."""
import os
import signal

import pytest

import fixture
from fixture import error_code

MODULE = fixture.BUILD / 'tests' / 'daemon' / 'libcpuhpd-test-reader.so'


class ReaderDaemon:
    def __init__(self, tmp, sim):
        held_r, held_w = os.pipe()
        go_r, go_w = os.pipe()
        self.daemon = fixture.Daemon(tmp, sim.root)
        self.daemon.start(pass_fds=(held_w, go_r),
                          env={'LD_PRELOAD': str(MODULE),
                               'CPUHPD_TEST_READER': f'{held_w},{go_r}'})
        os.close(held_w)
        os.close(go_r)
        assert os.read(held_r, 1) == b'R'  # the reader holds the lock
        os.close(held_r)
        self.go = go_w

    def release_reader(self):
        if self.go is not None:
            os.close(self.go)
            self.go = None


@pytest.fixture
def rd(tmp, sim):
    r = ReaderDaemon(tmp, sim)
    yield r
    r.release_reader()
    rc = r.daemon.stop()
    print(r.daemon.log())
    assert rc == 0


def test_hotplug_waits_for_an_in_process_reader_then_times_out_changing_nothing(rd, sim):
    p = fixture.Probe(rd.daemon.socket)
    try:
        p.connect('h')
        p.connect('b')
        hp = p.send('h', 'offline', 1, 300)
        s = p.status('h')
        # No lease is held: what it waits for is the reader inside the daemon.
        assert s['writer'] == 'WRITER_WAITING' and s['leases_held'] == 0, s
        b = p.send('b', 'acquire', 60000)
        assert p.status('b')['pending_leases'] == 1
        r = p.recv('h')
        assert r['id'] == hp and error_code(r) == 'ERR_ETIMEDOUT', r
        assert 'in-process readers' in r['message']
        g = p.recv('b')
        assert g['id'] == b and g['kind'] == 'lease_granted', g
        assert sim.read_online(1) == '1'
        assert p.status('b')['writer'] == 'WRITER_IDLE'
    finally:
        p.kill()


def test_hotplug_with_timeout_0_and_an_in_process_reader_is_eagain(rd, sim):
    p = fixture.Probe(rd.daemon.socket)
    try:
        p.connect('h')
        r = p.call('h', 'offline', 1, 0)
        assert error_code(r) == 'ERR_EAGAIN', r
        assert sim.read_online(1) == '1'
    finally:
        p.kill()


def test_hotplug_proceeds_when_the_in_process_reader_leaves(rd, sim):
    p = fixture.Probe(rd.daemon.socket)
    try:
        p.connect('h')
        hp = p.send('h', 'offline', 1, 60000)
        assert p.status('h')['writer'] == 'WRITER_WAITING'
        rd.release_reader()
        r = p.recv('h')
        assert r['id'] == hp and r['results'][0]['changed'], r
        assert sim.read_online(1) == '0'
    finally:
        p.kill()


def test_sigterm_cancels_a_hotplug_waiting_for_an_in_process_reader(rd, sim):
    p = fixture.Probe(rd.daemon.socket)
    try:
        p.connect('h')
        p.connect('w')
        hp = p.send('h', 'offline', 1, 60000)
        assert p.status('h')['writer'] == 'WRITER_WAITING'
        lw = p.send('w', 'acquire', 60000)
        p.status('w')
        rd.daemon.send_signal(signal.SIGTERM)
        r = p.recv('w')  # the stop has begun; the hotplug still waits for the reader
        assert r['id'] == lw and error_code(r) == 'ERR_ECANCELED', r
        rd.release_reader()
        r = p.recv('h')  # it got the lock, saw the stop, changed nothing
        assert r['id'] == hp and error_code(r) == 'ERR_ECANCELED', r
        assert rd.daemon.wait() == 0
        assert sim.read_online(1) == '1'
    finally:
        p.kill()
