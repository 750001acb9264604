# SPDX-License-Identifier: LGPL-2.1-or-later
"""A restart of cpuhpd keeps every lease.

The test plays systemd: fdstore.Manager owns the NOTIFY_SOCKET, keeps what
cpuhpd puts in its file-descriptor store (FDSTORE=1, FDNAME=), and starts
the next cpuhpd with those descriptors in LISTEN_FDS/LISTEN_FDNAMES.  Each
test then proves that a hotplug still waits for the leases taken before the
restart: the offline is answered only after the last of them is released,
on the very connection that took it before the restart.

Ordering, not sleeps: a request on a connection is answered after every
earlier one on it, so a status after a pipelined offline shows it queued."""
import json
import os
import signal
import subprocess

import pytest

import fastlib
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


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGKILL], ids=['sigterm', 'sigkill'])
def test_fast_leases_survive_a_restart(tmp, sim, manager, sig):
    """A fast lease counted in a region before the restart holds the next
    cpuhpd's hotplug; its release (no FastWake: the client's header is the
    dead daemon's) lets it go on.  A new handle gets fast leases from the
    new daemon."""
    d = start(manager, tmp, sim)
    client = fastlib.FastClient(d.socket)
    probe = fixture.Probe(d.socket)
    try:
        client.connect('h')
        client.thread('t', 'h')
        client.lease('t')
        assert 'region-1' in manager.names()
        d = restart(manager, d, sig)
        probe.connect('admin')
        s = probe.status('admin')
        assert s['leases_held'] == 1 and s['fast_leases_held'] == 1, s
        hp = probe.send('admin', 'offline', 1, 60000)
        s = probe.status('admin')
        assert s['pending_hotplugs'] == 1 and s['writer'] == 'WRITER_WAITING', s
        assert sim.read_online(1) == '1'
        client.unlease('t')
        r = probe.recv('admin')
        assert r['id'] == hp and r['results'][0]['ok'] and r['results'][0]['changed'], r
        assert sim.read_online(1) == '0'
        # The old handle's connection is still there: its next lease is a socket one
        # (its header is the dead daemon's: asked with a timeout, since at 0 the
        # library cannot tell a restart that is over from one in progress).
        lease = client.lease('t', 5000, fast=False)
        hp = probe.send('admin', 'online', 1, 60000)
        s = probe.status('admin')
        assert s['leases_held'] == 1 and s['writer'] == 'WRITER_WAITING', s
        client.unlease('t', lease)
        r = probe.recv('admin')
        assert r['id'] == hp and r['results'][0]['ok'] and sim.read_online(1) == '1', r
        hp = probe.send('admin', 'offline', 1, 60000)
        assert probe.recv('admin')['id'] == hp and sim.read_online(1) == '0'
        # A new handle gets the new daemon's fast path, whose leases hold as well.
        client.connect('h2')
        client.thread('t2', 'h2')
        client.lease('t2')
        hp = probe.send('admin', 'online', 1, 60000)
        s = probe.status('admin')
        assert s['leases_held'] == 1 and s['writer'] == 'WRITER_WAITING', s
        client.unlease('t2')
        r = probe.recv('admin')
        assert r['id'] == hp and r['results'][0]['ok'] and sim.read_online(1) == '1', r
    finally:
        client.kill()
        probe.kill()
        d.stop()


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGKILL], ids=['sigterm', 'sigkill'])
def test_a_full_fd_store_keeps_a_lease_or_ends_its_connection_never_half(tmp, sim, manager, sig):
    """--fd-store-max 3: the state memfd, the socket cpuhpd bound and one
    connection fill it.  That connection's fast-lease region would not fit:
    it gets no fast path, so its lease is a socket lease the next cpuhpd
    keeps.  A connection the store cannot take sees EOF at the restart, so
    that its client knows its lease is gone."""
    d = start(manager, tmp, sim, ['--fd-store-max', '3'])
    client = fastlib.FastClient(d.socket)
    probe = fixture.Probe(d.socket)
    try:
        r = client('connect h')
        assert r['ret'] == 0 and not r['fast'], r
        client.thread('t', 'h')
        client.lease('t', fast=False)
        assert sorted(manager.names()) == ['conn-1', 'listen', 'state']
        probe.connect('lost')
        probe.lease('lost')
        assert 'fd store full' in d.log() and 'conn-2' in d.log(), d.log()
        # Said at start: the default --max-connections 4096 needs 2 x 4096 + 2.
        assert 'but --max-connections 4096 needs 8194' in d.log(), d.log()
        d = restart(manager, d, sig)
        assert 'took over 1 client(s) holding 1 lease(s)' in d.log(), d.log()
        r = probe('eof lost')
        assert r['end'] == 'eof' and r['responses'] == [], r
        probe.connect('admin')
        hp = probe.send('admin', 'offline', 1, 60000)
        s = probe.status('admin')
        assert s['leases_held'] == 1 and s['writer'] == 'WRITER_WAITING', s
        assert sim.read_online(1) == '1'
        client.unlease('t')
        r = probe.recv('admin')
        assert r['id'] == hp and r['results'][0]['ok'] and sim.read_online(1) == '0', r
    finally:
        client.kill()
        probe.kill()
        d.stop()


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGKILL], ids=['sigterm', 'sigkill'])
def test_a_hotplug_state_still_gets_its_teardown_after_a_restart(tmp, sim, manager, sig):
    d = start(manager, tmp, sim)
    st = fixture.Lines([fixture.BUILD / 'tests' / 'daemon' / 'state-client', d.socket,
                        'pool', 5])
    out = st.proc.stdout
    probe = fixture.Probe(d.socket)
    try:
        cpus = [int(x) for x in sim.cpu.joinpath('online').read_text().strip()
                .replace('-', ' ').split()]
        online = list(range(cpus[0], cpus[-1] + 1))
        assert [out.readline().strip() for _ in online] == [f'startup {c}' for c in online]
        assert out.readline().startswith('registered ')
        d = restart(manager, d, sig)
        assert "state 'pool'" in d.log() and 'kept' in d.log(), d.log()
        probe.connect('h')
        r = probe.call('h', 'states')
        assert [s['name'] for s in r['states']] == ['pool'], r
        r = probe.call('h', 'offline', 1, 60000)
        assert r['results'][0]['ok'] and sim.read_online(1) == '0', r
        assert [run['name'] for run in r['results'][0]['states']] == ['pool'], r
        assert out.readline().strip() == 'teardown 1 thread=lib lease=-35'
        r = probe.call('h', 'online', 1, 60000)
        assert r['results'][0]['ok'], r
        assert out.readline().strip() == 'startup 1'
    finally:
        st.kill()
        probe.kill()
        d.stop()


def test_sigterm_lets_a_running_hotplug_finish_and_keeps_what_arrives_meanwhile(tmp, sim,
                                                                               manager):
    d = start(manager, tmp, sim)
    p = fixture.Probe(d.socket)
    stall = fixture.StalledOnlineFile(sim, 1)
    try:
        for n in ('h', 'w', 's'):
            p.connect(n)
        hp = p.send('h', 'offline', 1, 60000)
        stall.wait_for_reader()              # the hotplug is writing sysfs
        lw = p.send('w', 'acquire', 60000)   # waits behind it
        assert p.status('s')['pending_leases'] == 1
        d.send_signal(signal.SIGTERM)
        manager.wait_for('STOPPING=1')
        # Kept for the next cpuhpd, unanswered meanwhile; the others are still served.
        ls = p.send('s', 'acquire', 0)
        s = p.status('w')
        assert s['writer'] == 'WRITER_RUNNING' and s['connections'] == 3, s
        stall.release()
        r = p.recv('h')                      # it finishes and is answered
        assert r['id'] == hp and r['results'][0]['changed'], r
        r = p.recv('w')                      # the gate opened behind it
        assert r['id'] == lw and r['kind'] == 'lease_granted', r
        assert d.wait() == 0, d.log()
        assert 'stopping' in d.log() and sim.read_online(1) == '0'
        d = manager.start(d)
        r = p.recv('s')                      # answered by the next cpuhpd
        assert r['id'] == ls and r['kind'] == 'lease_granted', r
        s = p.status('h')
        assert s['leases_held'] == 2 and s['connections'] == 3, s
        r = p.call('h', 'online', 1, 50)     # both leases still hold it off
        assert fixture.error_code(r) == 'ERR_ETIMEDOUT' and sim.read_online(1) == '0', r
    finally:
        stall.release()
        p.kill()
        d.stop()


PYCLIENT = r'''
import json, sys
import cpuhp
c = cpuhp.Client(sys.argv[1])
calls = []
held = {}
for line in sys.stdin:
    cmd = line.split()
    if cmd[0] == 'lease':
        held[cmd[1]] = c.lease()
        print(json.dumps({'id': held[cmd[1]].id}), flush=True)
    elif cmd[0] == 'release':
        held.pop(cmd[1]).release()
        print(json.dumps({'released': True}), flush=True)
    elif cmd[0] == 'state':
        st = c.register_state(cmd[1], startup=lambda cpu: calls.append(['startup', cpu]),
                              teardown=lambda cpu: calls.append(['teardown', cpu]))
        print(json.dumps({'state': st.id}), flush=True)
    elif cmd[0] == 'calls':
        print(json.dumps({'calls': calls}), flush=True)
        calls.clear()
'''


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGKILL], ids=['sigterm', 'sigkill'])
def test_python_lease_and_state_survive_a_restart(tmp, sim, manager, sig):
    pypath = fixture.BUILD / 'bindings' / 'python'
    if not (pypath / 'cpuhp').exists():
        pytest.skip('the Python binding is not built (-Dpython=disabled)')
    d = start(manager, tmp, sim)
    py = fixture.Lines(['/usr/bin/python3', '-c', PYCLIENT, d.socket],
                       env={'PYTHONPATH': str(pypath)}, name='python client')
    probe = fixture.Probe(d.socket)
    try:
        py('lease a')
        py('state pypool')
        assert py('calls')['calls'][0][0] == 'startup'
        d = restart(manager, d, sig)
        probe.connect('admin')
        hp = probe.send('admin', 'offline', 1, 60000)
        s = probe.status('admin')
        assert s['leases_held'] == 1 and s['writer'] == 'WRITER_WAITING', s
        assert sim.read_online(1) == '1'
        assert py('release a') == {'released': True}
        r = probe.recv('admin')
        assert r['id'] == hp and r['results'][0]['ok'] and sim.read_online(1) == '0', r
        assert py('calls')['calls'] == [['teardown', 1]]
    finally:
        py.kill()
        probe.kill()
        d.stop()


# --- a stop, not a restart, with the fd store on -----------------------------------------

def test_a_stop_with_nothing_held_costs_the_next_start_no_grace(tmp, sim, manager):
    """SIGTERM with the store on, a client connected but nothing held, then
    what systemd does at `systemctl stop` (the store is emptied): the next
    socket-activated cpuhpd adopts nothing and must not hold hotplugs."""
    d = start(manager, tmp, sim, ['--restart-grace-ms', '3600000'])
    probe = fixture.Probe(d.socket)
    try:
        probe.connect('idle')
        d.send_signal(signal.SIGTERM)
        assert d.wait() == 0, d.log()
        log = d.log()
        # Said as it is: which of the two happens is the service manager's choice.
        assert 'a restart hands them to the next cpuhpd' in log and 'a stop' in log, log
        assert 'stopping for a restart' not in log, log
        manager.discard()
        assert probe('eof idle')['end'] == 'eof'
        d = manager.start(d)
        probe.connect('h')
        assert probe.status('h')['restart_grace_ms'] == 0, d.log()
        assert 'without handing its clients over' not in d.log(), d.log()
    finally:
        probe.kill()
        d.stop()


def test_a_stop_with_a_lease_held_is_told_and_the_next_start_waits_the_grace(tmp, sim,
                                                                            manager):
    """The same with a lease held: its holder sees EOF when the store is
    emptied, and the next cpuhpd, given nothing back, holds hotplugs for the
    grace and says why."""
    d = start(manager, tmp, sim, ['--restart-grace-ms', '3600000'])
    probe = fixture.Probe(d.socket)
    try:
        probe.connect('a')
        probe.lease('a')
        d.send_signal(signal.SIGTERM)
        assert d.wait() == 0, d.log()
        manager.discard()
        assert probe('eof a')['end'] == 'eof'
        d = manager.start(d)
        probe.connect('h')
        assert probe.status('h')['restart_grace_ms'] > 0
        log = d.log()
        assert 'left 1 client(s) holding 1 lease(s) in the fd store' in log, log
        assert 'got none of them back' in log, log
    finally:
        probe.kill()
        d.stop()


# --- without the fd store: the restart grace (restart.h) ---------------------------------

def ctl_json(d, *args):
    r = subprocess.run([str(fixture.CPUHPCTL), '--socket', d.socket, '--json', *args],
                       capture_output=True, text=True, timeout=fixture.GUARD_S)
    return r.returncode, json.loads(r.stdout)


def killed_with_a_lease(tmp, sim):
    """A cpuhpd without a store, SIGKILLed while a lease is held."""
    d = fixture.Daemon(tmp, sim.root).start()
    probe = fixture.Probe(d.socket)
    probe.connect('a')
    probe.lease('a')
    d.kill()
    probe.kill()
    return d


def test_after_a_crash_without_a_store_hotplugs_wait_the_grace(tmp, sim):
    killed_with_a_lease(tmp, sim)
    d = fixture.Daemon(tmp, sim.root, args=['--restart-grace-ms', '2000']).start()
    probe = fixture.Probe(d.socket)
    try:
        assert 'holding every hotplug for 2000 ms' in d.log(), d.log()
        probe.connect('h')
        # Leases are granted meanwhile.
        probe.call('h', 'release', probe.lease('h'))
        hp = probe.send('h', 'offline', 1, 60000)
        s = probe.status('h')     # answered after the offline was queued
        r = probe.recv('h')
        assert r['id'] == hp and r['results'][0]['ok'] and sim.read_online(1) == '0', r
        # Answered only after the grace ended: its line is in the log before the answer.
        log = d.log()
        assert 'restart grace over' in log, log
        if s['restart_grace_ms']:
            # Queued within the grace (the usual case): it waited for it, and said so.
            assert s['pending_hotplugs'] == 1 and s['writer'] == 'WRITER_WAITING', s
            assert log.index('waits for the restart grace') < log.index('restart grace over')
    finally:
        probe.kill()
        d.stop_clean()


def test_status_and_leases_show_the_grace_and_a_hotplug_times_out_naming_it(tmp, sim):
    killed_with_a_lease(tmp, sim)
    d = fixture.Daemon(tmp, sim.root, args=['--restart-grace-ms', '3600000']).start()
    probe = fixture.Probe(d.socket)
    try:
        probe.connect('h')
        s = probe.status('h')
        assert 0 < s['restart_grace_ms'] <= 3600000, s
        rc, st = ctl_json(d, 'status')
        assert rc == 0 and 0 < st['restart_grace_ms'] <= 3600000, st
        rc, ls = ctl_json(d, 'leases')
        assert rc == 0 and 0 < ls['restart_grace_ms'] <= 3600000, ls
        pypath = fixture.BUILD / 'bindings' / 'python'
        if (pypath / 'cpuhp').exists():   # Python's Status and LeaseList say it too
            r = subprocess.run(['/usr/bin/python3', '-c',
                                'import sys, cpuhp; c = cpuhp.Client(sys.argv[1]); '
                                'print(c.status().restart_grace_ms, c.leases().restart_grace_ms)',
                                d.socket], env=dict(os.environ, PYTHONPATH=str(pypath)),
                               capture_output=True, text=True, timeout=fixture.GUARD_S)
            assert r.returncode == 0 and all(0 < int(x) <= 3600000 for x in r.stdout.split()), r
        text = subprocess.run([str(fixture.CPUHPCTL), '--socket', d.socket, 'status'],
                              capture_output=True, text=True, timeout=fixture.GUARD_S).stdout
        assert 'restart:' in text and 'hotplugs held' in text, text
        r = probe.call('h', 'offline', 1, 50)
        assert fixture.error_code(r) == 'ERR_ETIMEDOUT', r
        assert 'restart-grace-ms' in r['message'] and sim.read_online(1) == '1', r
    finally:
        probe.kill()
        d.stop_clean()


def test_a_clean_stop_leaves_no_grace_and_a_stop_with_leases_does(tmp, sim):
    d = fixture.Daemon(tmp, sim.root, args=['--restart-grace-ms', '3600000']).start()
    d.stop_clean()
    d.start()
    probe = fixture.Probe(d.socket)
    try:
        assert probe.connect('a') and probe.status('a')['restart_grace_ms'] == 0
        probe.lease('a')
        d.stop_clean()        # SIGTERM with a lease held, and no store to keep it
        d.start()
        probe.connect('b')
        assert probe.status('b')['restart_grace_ms'] > 0
    finally:
        probe.kill()
        d.stop_clean()


def test_the_grace_shows_in_the_status_line_systemctl_shows(tmp, sim, manager):
    killed_with_a_lease(tmp, sim)
    d = manager.start(fixture.Daemon(tmp, sim.root, args=['--restart-grace-ms', '3600000']))
    try:
        line = manager.wait_for('hotplugs held for the restart grace')
        assert line.startswith('STATUS='), line
    finally:
        d.stop_clean()


def test_the_status_line_counts_connections_as_they_come_and_go(tmp, sim, manager):
    """`systemctl show -p StatusText` must not say "2 connections" after both left."""
    d = manager.start(fixture.Daemon(tmp, sim.root))
    probe = fixture.Probe(d.socket)
    try:
        manager.wait_for('no hotplug pending; 0 connections')
        probe.connect('a')
        probe.connect('b')
        manager.wait_for('no hotplug pending; 2 connections')
        probe('close a')
        probe('close b')
        probe.connect('c')
        probe.status('c')      # cpuhpd has seen a and b go: it read c after them
        manager.wait_for('no hotplug pending; 1 connection')
    finally:
        probe.kill()
        d.stop()
