# SPDX-License-Identifier: LGPL-2.1-or-later
"""A restart of cpuhpd keeps every lease (issue 17 §1).

The test plays systemd: fdstore.Manager owns the NOTIFY_SOCKET, keeps what
cpuhpd puts in its file-descriptor store (FDSTORE=1, FDNAME=), and starts
the next cpuhpd with those descriptors in LISTEN_FDS/LISTEN_FDNAMES.  Each
test then proves that a hotplug still waits for the leases taken before the
restart: the offline is answered only after the last of them is released,
on the very connection that took it before the restart.

Ordering, not sleeps: a request on a connection is answered after every
earlier one on it, so a status after a pipelined offline shows it queued."""
import signal

import pytest

import fdstore
import fixture


@pytest.fixture
def manager(tmp):
    m = fdstore.Manager(tmp)
    yield m
    m.close()


def start(manager, tmp, sim, args=()):
    d = fixture.Daemon(tmp, sim.root, args=list(args))
    return manager.start(d)


def restart(manager, d, sig):
    """Stop d with sig, then start the next cpuhpd on the same store."""
    d.send_signal(sig)
    rc = d.wait()
    assert rc == (0 if sig == signal.SIGTERM else -signal.SIGKILL), d.log()
    manager.sync()
    return manager.start(d)


def offline_waits_for(probe, daemon, sim, held):
    """Pipeline an offline of CPU 1 on a new connection; it must wait for the
    leases in held ([(connection, lease id)]), released one by one."""
    probe.connect('admin')
    hp = probe.send('admin', 'offline', 1, 60000)
    for conn, lease in held:
        s = probe.status('admin')
        assert s['pending_hotplugs'] == 1 and s['writer'] == 'WRITER_WAITING', s
        assert sim.read_online(1) == '1'
        r = probe.call(conn, 'release', lease)
        assert r['kind'] == 'lease_released', r
    r = probe.recv('admin')
    assert r['id'] == hp and r['kind'] == 'set_online', r
    assert r['results'][0]['ok'] and r['results'][0]['changed'], r
    assert sim.read_online(1) == '0'


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGKILL], ids=['sigterm', 'sigkill'])
def test_socket_leases_survive_a_restart(tmp, sim, manager, sig):
    d = start(manager, tmp, sim)
    probe = fixture.Probe(d.socket)
    try:
        probe.connect('a')
        probe.connect('b')
        la = probe.lease('a')
        lb = probe.lease('b')
        assert {'state', 'listen', 'conn-1', 'conn-2'} <= set(manager.names())
        d = restart(manager, d, sig)
        assert 'took over 2 client(s) holding 2 lease(s)' in d.log(), d.log()
        s = probe.status('a')
        assert s['leases_held'] == 2, s
        # A new lease on an old connection gets a new id, above the old ones.
        lc = probe.lease('a')
        assert lc > max(la, lb)
        offline_waits_for(probe, d, sim, [('a', la), ('b', lb), ('a', lc)])
    finally:
        probe.kill()
        d.stop()
