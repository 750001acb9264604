# SPDX-License-Identifier: LGPL-2.1-or-later
"""Fast leases (shared memory, no round trip) keep every rule of socket
leases: a hotplug waits for them and times out behind them changing
nothing, leases asked while it waits wait (writer preference) and enter
before the next hotplug (fairness), a holder's death ends its leases, many
processes and threads count exactly.  Most tests run with each barrier the
daemon can use (membarrier GLOBAL_EXPEDITED, GLOBAL, client fences).

Proofs, not timings: that a hotplug waits for a fast lease is proved by its
timeout failing with the lease counted in its message; that a release
wakes it, by a hotplug with a long timeout succeeding once the lease goes
(a lost wake-up would make it fail with ETIMEDOUT)."""
import errno
import os
import signal
import subprocess

import pytest

import fixture
from fastlib import FAST_BIT, MODES, FastClient, fast_daemon
from fixture import error_code

LONG = 20000  # ms: "wait until it happens"; a failure shows as ETIMEDOUT, not as a hang
SHORT = 300   # ms: a hotplug that must time out behind a lease


@pytest.fixture(params=MODES)
def mdaemon(request, tmp, sim):
    d = fast_daemon(tmp, sim.root, request.param)
    yield d
    d.stop_clean()


@pytest.fixture
def mprobe(mdaemon):
    p = fixture.Probe(mdaemon.socket)
    yield p
    p.kill()


@pytest.fixture
def mclient(mdaemon):
    c = FastClient(mdaemon.socket)
    yield c
    c.kill()


def hold(c, handle='a', thread='t'):
    c.connect(handle)
    c.thread(thread, handle)
    return c.lease(thread)


def test_library_leases_are_fast_and_counted_in_status(daemon, client, probe):
    lease = hold(client)
    assert lease & FAST_BIT
    s = client.status('a')
    assert (s['leases_held'], s['fast_leases_held'], s['fast_holders'],
            s['fast_connections']) == (1, 1, 1, 1), s
    assert s['fast_path'] != 'off', s
    probe.connect('p')
    assert probe.status('p')['leases_held'] == 1
    client.unlease('t', lease)
    s = client.status('a')
    assert (s['leases_held'], s['fast_leases_held'], s['fast_holders']) == (0, 0, 0), s
    assert s['fast_connections'] == 1


def test_hotplug_times_out_behind_a_fast_lease_changes_nothing_and_reopens(mdaemon, sim,
                                                                           mclient, mprobe):
    hold(mclient)
    for n in 'hb':
        mprobe.connect(n)
    hp = mprobe.send('h', 'offline', 1, SHORT)
    mprobe.status('h')
    b = mprobe.send('b', 'acquire', LONG)
    assert mprobe.status('b')['pending_leases'] == 1
    r = mprobe.recv('h')
    assert r['id'] == hp and error_code(r) == 'ERR_ETIMEDOUT', r
    assert 'behind 1 lease:' in r['message'] and 'nothing was changed' in r['message'], r
    assert sim.read_online(1) == '1'
    g = mprobe.recv('b')
    assert g['id'] == b and g['kind'] == 'lease_granted', g
    # The gate is open again, and so is the fast path.
    mclient.thread('t2', 'a')
    assert mclient.lease('t2') & FAST_BIT
    assert mprobe.status('h')['writer'] == 'WRITER_IDLE'


def test_hotplug_proceeds_once_the_fast_lease_is_released(mdaemon, sim, mclient, mprobe):
    lease = hold(mclient)
    mprobe.connect('h')
    hp = mprobe.send('h', 'offline', 1, LONG)
    assert mprobe.status('h')['writer'] == 'WRITER_WAITING'
    mclient.unlease('t', lease)
    r = mprobe.recv('h')
    assert r['id'] == hp and r['kind'] == 'set_online' and r['results'][0]['changed'], r
    assert sim.read_online(1) == '0'


def test_fast_acquire_while_a_hotplug_waits_falls_back_and_waits_behind_it(mdaemon, sim,
                                                                          mclient, mprobe):
    lease = hold(mclient)
    mclient.connect('b')
    mclient.thread('tb', 'b')
    mprobe.connect('h')
    hp = mprobe.send('h', 'offline', 1, LONG)
    mprobe.status('h')
    # Writer preference: no lease while the hotplug waits, fast or not.
    mclient.acquire('tb', 0)
    r = mclient.wait('tb')
    assert r['ret'] == -11, r  # -EAGAIN
    mclient.acquire('tb', 200)
    r = mclient.wait('tb')
    assert r['ret'] == -110, r  # -ETIMEDOUT
    mclient.unlease('t', lease)
    assert mprobe.recv('h')['id'] == hp
    assert sim.read_online(1) == '0'
    # After the hotplug the fast path is open again.
    assert mclient.lease('tb', 0) & FAST_BIT


def test_leases_that_waited_on_a_hotplug_enter_before_the_next_hotplug(mdaemon, sim, mclient,
                                                                       mprobe):
    lease = hold(mclient)
    for n in ('h1', 'b', 'c', 'h2'):
        mprobe.connect(n)
    h1 = mprobe.send('h1', 'offline', 1, LONG)
    mprobe.status('h1')
    b = mprobe.send('b', 'acquire', LONG)
    mprobe.status('b')
    h2 = mprobe.send('h2', 'online', 1, LONG)
    assert mprobe.status('h2')['pending_hotplugs'] == 2
    c = mprobe.send('c', 'acquire', LONG)
    assert mprobe.status('c')['pending_leases'] == 2
    mclient.unlease('t', lease)
    assert mprobe.recv('h1')['id'] == h1
    gb, gc = mprobe.recv('b'), mprobe.recv('c')
    assert gb['id'] == b and gb['kind'] == 'lease_granted', gb
    assert gc['id'] == c and gc['kind'] == 'lease_granted', gc
    # H2 now waits for them, and blocks the fast path again.
    s = mprobe.status('h2')
    assert s['writer'] == 'WRITER_WAITING' and s['leases_held'] == 2, s
    mclient.acquire('t', 0)
    assert mclient.wait('t')['ret'] == -11
    mprobe.call('b', 'release', gb['lease_id'])
    mprobe.call('c', 'release', gc['lease_id'])
    r = mprobe.recv('h2')
    assert r['id'] == h2 and r['results'][0]['changed'], r
    assert sim.read_online(1) == '1'


def test_holder_killed_in_its_section_lets_the_waiting_hotplug_proceed(mdaemon, sim, mclient,
                                                                       mprobe):
    hold(mclient)
    mclient.thread('t2', 'a')
    mclient.lease('t2')
    mprobe.connect('h')
    hp = mprobe.send('h', 'offline', 1, LONG)
    s = mprobe.status('h')
    assert s['writer'] == 'WRITER_WAITING' and s['leases_held'] == 2, s
    os.kill(mclient.pid, signal.SIGKILL)
    r = mprobe.recv('h')
    assert r['id'] == hp and r['results'][0]['changed'], r
    assert mprobe.status('h')['leases_held'] == 0
    assert sim.read_online(1) == '0'


def test_many_processes_and_threads_are_each_counted_until_the_last_goes(mdaemon, sim, mprobe):
    clients = [FastClient(mdaemon.socket) for _ in range(3)]
    try:
        leases = []
        for c in clients:
            c.connect('a')
            for t in range(4):
                c.thread(f't{t}', 'a')
                leases.append((c, f't{t}', c.lease(f't{t}')))
        mprobe.connect('h')
        assert mprobe.status('h')['leases_held'] == 12
        r = mprobe.call('h', 'offline', 1, SHORT)
        assert error_code(r) == 'ERR_ETIMEDOUT' and 'behind 12 leases:' in r['message'], r
        # Released by another thread of the same process than the one that took it.
        last = leases.pop()
        for c, t, lease in leases:
            other = 't0' if t != 't0' else 't1'
            c.unlease(other, lease)
        r = mprobe.call('h', 'offline', 1, SHORT)
        assert error_code(r) == 'ERR_ETIMEDOUT' and 'behind 1 lease:' in r['message'], r
        hp = mprobe.send('h', 'offline', 1, LONG)
        mprobe.status('h')
        last[0].unlease(last[1], last[2])
        r = mprobe.recv('h')
        assert r['id'] == hp and r['results'][0]['changed'], r
    finally:
        for c in clients:
            c.kill()


def test_threads_beyond_the_slots_share_one_and_still_count(daemon, sim, probe):
    c = FastClient(daemon.socket, env={'CPUHP_CLIENT_FAST_SLOTS': '2'})
    try:
        c.connect('a')
        leases = []
        for t in range(5):
            c.thread(f't{t}', 'a')
            leases.append(c.lease(f't{t}'))
        # Slot 1 is one thread's; the four others share slot 0.
        assert {lease >> 42 & 0x3f for lease in leases} == {0, 1}, leases
        probe.connect('h')
        r = probe.call('h', 'offline', 1, SHORT)
        assert error_code(r) == 'ERR_ETIMEDOUT' and 'behind 5 leases:' in r['message'], r
        hp = probe.send('h', 'offline', 1, LONG)
        probe.status('h')
        for t, lease in enumerate(leases):
            c.unlease(f't{t}', lease)
        assert probe.recv('h')['id'] == hp
        assert sim.read_online(1) == '0'
    finally:
        c.kill()


def test_fast_path_off_in_the_daemon_or_the_client_gives_socket_leases(tmp, sim):
    d = fast_daemon(tmp, sim.root, 'off')
    try:
        c = FastClient(d.socket)
        c.connect('a', fast=False)
        c.thread('t', 'a')
        assert not c.lease('t', fast=False) & FAST_BIT
        s = c.status('a')
        assert s['fast_path'] == 'off' and s['fast_connections'] == 0 and s['leases_held'] == 1
        c.kill()
    finally:
        d.stop_clean()
    d = fast_daemon(tmp, sim.root)
    try:
        c = FastClient(d.socket, env={'CPUHP_CLIENT_FAST_PATH': '0'})
        c.connect('a', fast=False)
        c.thread('t', 'a')
        c.lease('t', fast=False)
        assert c.status('a')['fast_connections'] == 0
        c.kill()
    finally:
        d.stop_clean()


def test_cpuhpctl_status_shows_the_fast_lease_hold_takes(daemon):
    ctl = [str(fixture.CPUHPCTL), '--socket', daemon.socket]
    r = subprocess.run(ctl + ['hold', '--'] + ctl + ['status'], capture_output=True, text=True,
                       timeout=fixture.GUARD_S)
    assert r.returncode == 0, r
    lines = dict(line.split(':', 1) for line in r.stdout.splitlines())
    assert lines['leases held'].strip() == '1', r.stdout
    assert lines['fast leases'].strip().startswith('1 held by 1 client(s); 1 connection(s)'), \
        r.stdout


def test_fork_child_cannot_use_or_end_its_parents_leases(daemon, sim, client, probe):
    # The child must not write its parent's slots, nor end or add leases on the
    # parent's connection: every call fails and touches nothing.
    lease = hold(client)
    r = client(f'forklease a {lease}')
    assert r['acquire'] == -errno.ECHILD and 'fork' in r['message'], r
    assert r['release'] == -errno.ESRCH and r['status'] == -errno.ECHILD and r['fd'] == -1, r
    client.thread('t2', 'a')
    assert client.lease('t2') & FAST_BIT
    probe.connect('p')
    assert probe.status('p')['leases_held'] == 2
    r = probe.call('p', 'offline', 1, SHORT)
    assert error_code(r) == 'ERR_ETIMEDOUT' and sim.read_online(1) == '1', r
