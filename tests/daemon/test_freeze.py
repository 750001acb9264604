# SPDX-License-Identifier: LGPL-2.1-or-later
"""Hotplug freezes: Freeze/Thaw and `cpuhpctl freeze`.  While a
freeze is held or pending, every new hotplug request fails at once with
EBUSY naming the holder, and leases are still granted; hotplugs queued
before the freeze run first; a freeze ends with Thaw or its connection.

Ordering without sleeps, as in test_leases.py: a request on a connection is
answered after every earlier one on it, and a command run under `cpuhpctl
freeze` waits on a line of our stdin.  Where a test waits for the daemon to
see a process die, it polls Status (a deadline only against a hang)."""
import json
import os
import select
import shutil
import signal
import subprocess
import time

import pytest

import fixture
from test_leases import ctl, ctl_json, listing

GUARD_S = fixture.GUARD_S


def freezes_until(probe, name, n):
    """Status on @name until it counts @n freezes (the daemon saw a close)."""
    deadline = time.monotonic() + GUARD_S
    s = probe.status(name)
    while s['freezes'] != n and time.monotonic() < deadline:
        s = probe.status(name)
    return s


class Freeze:
    """`cpuhpctl freeze ARGS -- sh -c 'echo ready; read x || true'`: holds its
    freeze from the 'ready' line until end()."""

    def __init__(self, daemon, *args):
        self.p = subprocess.Popen(
            [str(fixture.CPUHPCTL), '--socket', daemon.socket, 'freeze', *args, '--',
             'sh', '-c', 'echo ready; read x || true'],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        assert line == 'ready\n', (line, self.p.stderr.read())

    def end(self):
        self.p.stdin.close()
        assert self.p.wait(timeout=GUARD_S) == 0


def test_a_frozen_hotplug_fails_at_once_naming_the_holder_and_leases_stay_grantable(
        daemon4, sim4, probe):
    probe.connect('f')
    probe.connect('b')
    fr = probe.call('f', 'freeze', 'bench', 'latency-run')
    assert fr['kind'] == 'frozen' and fr['freeze_id'] > 0, fr
    pid = probe('pid')['pid']
    # A timeout of a minute: it must not wait at all.
    r = probe.call('b', 'offline', 2, 60000)
    assert fixture.error_code(r) == 'ERR_EBUSY', r
    assert f"frozen by pid {pid} (bench) 'latency-run', frozen" in r['message'], r
    assert 'cpuhpctl freeze' in r['message'], r
    assert sim4.read_online(2) == '1'
    s = probe.status('b')
    assert s['freezes'] == 1 and s['pending_hotplugs'] == 0, s
    lease = probe.lease('b')                         # leases are not frozen
    assert probe.call('b', 'release', lease)['kind'] == 'lease_released'
    [row] = listing(probe, 'b')['freezes']
    assert (row['freeze_id'], row['granted'], row['who'], row['why']) == \
        (fr['freeze_id'], True, 'bench', 'latency-run'), row
    assert (row['pid'], row['uid'], row['comm']) == (pid, os.getuid(), 'cpuhpd-probe'), row
    assert 'hotplug frozen by client' in daemon4.log()
    th = probe.call('f', 'thaw', fr['freeze_id'])
    assert th == {'id': th['id'], 'kind': 'thawed', 'freeze_id': fr['freeze_id']}, th
    assert probe.status('b')['freezes'] == 0
    assert probe.call('b', 'offline', 2, 1000)['kind'] == 'set_online'
    assert sim4.read_online(2) == '0'


def test_every_freeze_must_be_thawed_before_hotplug_works_again(daemon4, probe):
    probe.connect('a')
    probe.connect('b')
    first = probe.call('a', 'freeze', '-', '-')['freeze_id']
    second = probe.call('b', 'freeze', 'two', '-')['freeze_id']
    assert first != second
    r = probe.call('a', 'offline', 2, 0)
    assert fixture.error_code(r) == 'ERR_EBUSY' and 'and others' in r['message'], r
    assert probe.call('a', 'thaw', first)['kind'] == 'thawed'
    r = probe.call('a', 'offline', 2, 0)
    assert fixture.error_code(r) == 'ERR_EBUSY' and '(two)' in r['message'], r
    assert probe.call('b', 'thaw', second)['kind'] == 'thawed'
    assert probe.call('a', 'offline', 2, 0)['kind'] == 'set_online'


def test_a_freeze_ends_when_its_holder_dies(daemon4, sim4, probe):
    holder = fixture.Probe(daemon4.socket)
    try:
        holder.connect('f')
        assert holder.call('f', 'freeze', 'doomed', '-')['kind'] == 'frozen'
        probe.connect('b')
        assert probe.status('b')['freezes'] == 1
        holder.proc.kill()
        holder.proc.wait()
        s = freezes_until(probe, 'b', 0)
        assert s['freezes'] == 0, s
    finally:
        holder.kill()
    assert listing(probe, 'b')['freezes'] == []
    assert probe.call('b', 'offline', 2, 1000)['kind'] == 'set_online'
    assert sim4.read_online(2) == '0'
    assert 'ended with its client' in daemon4.log()


def test_a_freeze_waits_for_the_hotplugs_queued_before_it_and_refuses_new_ones(
        daemon4, sim4, probe):
    for name in ('holder', 'asker', 'freezer', 'late'):
        probe.connect(name)
    lease = probe.lease('holder')
    probe.send('asker', 'offline', 2, 60000)
    assert probe.status('asker')['pending_hotplugs'] == 1      # queued behind the lease
    probe.send('freezer', 'freeze', 'bench', '-')
    s = probe.status('freezer')                                 # the freeze is pending
    assert s['freezes'] == 1 and s['pending_hotplugs'] == 1, s
    [row] = listing(probe, 'late')['freezes']
    assert row['granted'] is False, row
    r = probe.call('late', 'offline', 3, 60000)                 # a pending freeze refuses too
    assert fixture.error_code(r) == 'ERR_EBUSY', r
    assert probe.call('holder', 'release', lease)['kind'] == 'lease_released'
    assert probe.recv('asker')['kind'] == 'set_online'          # the earlier one ran
    fr = probe.recv('freezer')
    assert fr['kind'] == 'frozen', fr
    assert (sim4.read_online(2), sim4.read_online(3)) == ('0', '1')
    assert listing(probe, 'late')['freezes'][0]['granted'] is True


def test_thaw_of_a_freeze_not_held_on_the_connection_is_esrch(daemon4, probe):
    probe.connect('a')
    probe.connect('b')
    fid = probe.call('a', 'freeze', '-', '-')['freeze_id']
    for name, ident in (('b', fid), ('a', fid + 100)):
        r = probe.call(name, 'thaw', ident)
        assert fixture.error_code(r) == 'ERR_ESRCH', r
        assert 'belongs to the connection that took it' in r['message'], r
    assert probe.status('a')['freezes'] == 1
    assert probe.call('a', 'thaw', fid)['kind'] == 'thawed'
    assert fixture.error_code(probe.call('a', 'thaw', fid)) == 'ERR_ESRCH'


def test_daemon_stop_cancels_a_pending_freeze(tmp, sim4):
    d = fixture.Daemon(tmp, sim4.root).start()
    p = fixture.Probe(d.socket)
    try:
        for name in ('holder', 'asker', 'freezer'):
            p.connect(name)
        p.lease('holder')
        p.send('asker', 'offline', 2, 60000)
        p.send('freezer', 'freeze', '-', '-')
        assert p.status('freezer')['freezes'] == 1
        d.send_signal(signal.SIGTERM)
        r = p.recv('freezer')
        assert fixture.error_code(r) == 'ERR_ECANCELED', r
        assert d.wait() == 0, d.log()
    finally:
        p.kill()
        d.kill()


def test_cpuhpctl_freeze_runs_its_command_frozen(daemon4, sim4):
    f = Freeze(daemon4, '--who', 'nightly-bench', '--why', 'latency window')
    try:
        r = ctl(daemon4, 'offline', 2)
        assert r.returncode == 1, r
        assert f"frozen by pid {f.p.pid} (nightly-bench) 'latency window'" in r.stderr, r
        rc, out = ctl_json(daemon4, 'offline', 2)
        assert rc == 1 and out['error'] == 'EBUSY' and 'frozen by' in out['message'], out
        rc, out = ctl_json(daemon4, 'leases')
        assert rc == 0, out
        [row] = out['freezes']
        assert (row['who'], row['why'], row['state'], row['comm'], row['pid']) == \
            ('nightly-bench', 'latency window', 'held', 'cpuhpctl', f.p.pid), row
        assert row['uid'] == os.getuid() and row['held_ms'] >= 0 and row['freeze_id'] > 0, row
        text = ctl(daemon4, 'leases')
        assert 'Hotplug frozen' in text.stdout and 'nightly-bench' in text.stdout, text
        assert "'latency window'" in text.stdout, text
        rc, st = ctl_json(daemon4, 'status')
        assert rc == 0 and st['freezes'] == 1, st
        assert 'freezes:      1' in ctl(daemon4, 'status').stdout
        # Leases are still granted while frozen.
        h = ctl(daemon4, 'hold', '--timeout', 0, '--', 'true')
        assert h.returncode == 0, h
    finally:
        f.end()
    assert ctl_json(daemon4, 'leases')[1]['freezes'] == []
    assert ctl(daemon4, 'offline', 2).returncode == 0
    assert sim4.read_online(2) == '0'


def test_cpuhpctl_freeze_exits_with_its_commands_status(daemon4):
    r = ctl(daemon4, 'freeze', '--', 'sh', '-c', 'exit 7')
    assert r.returncode == 7, r
    r = ctl(daemon4, 'freeze', '--', 'no-such-command-here')
    assert r.returncode == 127 and 'cpuhpctl freeze: cannot run' in r.stderr, r
    assert ctl_json(daemon4, 'status')[1]['freezes'] == 0


def test_cpuhpctl_freeze_killed_ends_the_freeze_and_its_command(daemon4, probe, tmp):
    pidfile = tmp / 'cmd.pid'
    p = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon4.socket, 'freeze', '--',
                          'sh', '-c', f'echo $$ > {pidfile}; echo ready; exec sleep 600'],
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == 'ready\n'
        cmd = int(pidfile.read_text())
        probe.connect('b')
        assert probe.status('b')['freezes'] == 1
        p.kill()
        p.wait()
        s = freezes_until(probe, 'b', 0)
        assert s['freezes'] == 0, s
        # PR_SET_PDEATHSIG: the command got SIGTERM when cpuhpctl died (a
        # pidfd is readable once its process has exited).
        pidfd = os.pidfd_open(cmd)
        try:
            assert select.select([pidfd], [], [], GUARD_S)[0], 'the command outlived cpuhpctl'
        finally:
            os.close(pidfd)
    finally:
        p.kill()


@pytest.mark.parametrize('args, words', [
    ([], 'which command?'),
    (['--timeout', '5', '--', 'true'], "unrecognized option '--timeout'"),
    (['--who', 'x' * 256, '--', 'true'], '255 bytes'),
])
def test_cpuhpctl_freeze_bad_command_lines(daemon4, args, words):
    r = ctl(daemon4, 'freeze', *args)
    assert r.returncode == 2 and words in r.stderr, r
    assert ctl_json(daemon4, 'status')[1]['freezes'] == 0


def test_cpuhpctl_freeze_help(daemon4):
    r = ctl(daemon4, 'freeze', '--help')
    assert r.returncode == 0 and '--who NAME' in r.stdout and 'EBUSY' in r.stdout, r


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which('setpriv'),
                    reason='needs root and setpriv to run a client as nobody: skipped')
def test_a_non_admin_may_not_freeze_but_sees_freezes(tmp, sim4):
    os.chmod(tmp, 0o755)
    d = fixture.Daemon(tmp, sim4.root, args=['--socket-mode', '0666']).start()
    root = fixture.Probe(d.socket)
    nobody = fixture.Probe(d.socket, fixture.NOBODY)
    try:
        nobody.connect('n')
        r = nobody.call('n', 'freeze', '-', '-')
        assert fixture.error_code(r) == 'ERR_EPERM', r
        assert 'admin group' in r['message'] and 'uid 65534' in r['message'], r
        root.connect('r')
        assert root.call('r', 'freeze', 'admin', 'window')['kind'] == 'frozen'
        [row] = listing(nobody, 'n')['freezes']
        assert (row['uid'], row['who']) == (0, 'admin'), row
        assert nobody.status('n')['freezes'] == 1
        nobody.lease('n')                              # still grantable, for anyone
        r = subprocess.run(fixture.NOBODY + [str(fixture.CPUHPCTL), '--socket', d.socket,
                                             'freeze', '--', 'true'],
                           capture_output=True, text=True, timeout=GUARD_S)
        assert r.returncode == 1 and 'admin group' in r.stderr, r
    finally:
        root.kill()
        nobody.kill()
        assert d.stop() == 0, d.log()


def test_freeze_json_round_trips(daemon4):
    f = Freeze(daemon4, '--why', 'q"uote\\')
    try:
        r = ctl(daemon4, '--json', 'leases')
        row = json.loads(r.stdout)['freezes'][0]
        assert (row['who'], row['why']) == ('sh', 'q"uote\\'), row
    finally:
        f.end()
