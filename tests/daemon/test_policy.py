# SPDX-License-Identifier: LGPL-2.1-or-later
"""Limits an administrator can set and bypass detection:
--max-lease-ms revokes a socket lease held too long (its holder is told,
the log says so, its release is ETIME); --max-leases-per-uid caps the
leases of a uid that is neither root nor admin; both keep the fast path
from the connections they govern.  A CPU changed behind cpuhpd's back while
leases are held is a bypass: a warning naming the holders, a notice to each
holder, a count in Status, ESTALE on the release of a socket lease held.

Ordering without sleeps: a revocation is awaited as the holder's notice (a
probe recv), a bypass as the watcher's online_changed event; the daemon
answers one connection's requests in order."""
import errno
import os
import re
import shutil
import subprocess
import time

import pytest

import fixture
from fastlib import FastClient
from test_leases import ctl, ctl_json

GUARD_S = fixture.GUARD_S
NONROOT = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which('setpriv'),
                             reason='needs root and setpriv to run a client as nobody: skipped')


def start(tmp, sim, *args):
    os.chmod(tmp, 0o755)
    return fixture.Daemon(tmp, sim.root, args=['--socket-mode', '0666', *args]).start()


def test_a_lease_held_past_max_lease_ms_is_revoked_and_its_holder_told(tmp, sim4):
    d = start(tmp, sim4, '--max-lease-ms', '300')
    p = fixture.Probe(d.socket)
    try:
        hello = p.connect('a')
        assert hello['fast_path'] is False, hello       # fast leases cannot be revoked
        p.connect('b')
        assert p.call('a', 'identify', 'pools', 'sizing')['kind'] == 'identified'
        lease = p.lease('a')
        hp = p.send('b', 'offline', 2, 60000)             # waits behind the lease
        ev = p.recv('a')                                  # told it waits, id 0
        assert (ev['id'], ev['event'], ev['cpus']) == (0, 'hotplug_pending', '2'), ev
        ev = p.recv('a')                                  # the notice, id 0
        assert ev['id'] == 0 and ev['kind'] == 'event', ev
        assert (ev['event'], ev['lease_id'], ev['max_lease_ms']) == ('lease_revoked', lease, 300)
        assert ev['held_ms'] >= 300, ev
        r = p.recv('b')                                   # the hotplug no longer waits
        assert r['id'] == hp and r['kind'] == 'set_online', r
        assert sim4.read_online(2) == '0'
        s = p.status('a')
        assert (s['leases_held'], s['revocations']) == (0, 1), s
        r = p.call('a', 'release', lease)
        assert fixture.error_code(r) == 'ERR_ETIME', r
        assert 'revoked after' in r['message'] and '--max-lease-ms is 300' in r['message'], r
        assert fixture.error_code(p.call('a', 'release', lease)) == 'ERR_ESRCH'
        assert f"lease {lease} of client" in d.log() and "(pools) 'sizing', revoked" in d.log()
        # A lease released in time is just released.
        quick = p.lease('a')
        assert p.call('a', 'release', quick)['kind'] == 'lease_released'
    finally:
        p.kill()
        assert d.stop() == 0, d.log()


def test_without_limits_the_fast_path_is_offered_and_nothing_is_revoked(daemon4, probe):
    assert probe.connect('a')['fast_path'] is True
    lease = probe.lease('a')
    s = probe.status('a')
    assert (s['revocations'], s['bypasses'], s['leases_held']) == (0, 0, 1), s
    assert probe.call('a', 'release', lease)['kind'] == 'lease_released'


@NONROOT
def test_a_non_root_lease_is_revoked_too(tmp, sim4):
    d = start(tmp, sim4, '--max-lease-ms', '100')
    nobody = fixture.Probe(d.socket, fixture.NOBODY)
    try:
        nobody.connect('n')
        lease = nobody.lease('n')
        ev = nobody.recv('n')
        assert (ev['event'], ev['lease_id']) == ('lease_revoked', lease), ev
        assert fixture.error_code(nobody.call('n', 'release', lease)) == 'ERR_ETIME'
    finally:
        nobody.kill()
        assert d.stop() == 0, d.log()


@NONROOT
def test_max_leases_per_uid_caps_a_non_admin_uid_over_its_connections(tmp, sim4):
    d = start(tmp, sim4, '--max-leases-per-uid', '2')
    nobody = fixture.Probe(d.socket, fixture.NOBODY)
    root = fixture.Probe(d.socket)
    try:
        assert nobody.connect('n1')['fast_path'] is False, 'uncounted fast leases for a capped uid'
        nobody.connect('n2')
        first = nobody.lease('n1')
        nobody.lease('n2')
        r = nobody.call('n1', 'acquire', 0)
        assert fixture.error_code(r) == 'ERR_EDQUOT', r
        assert 'uid 65534 already holds or waits for 2 lease(s)' in r['message'], r
        assert '--max-leases-per-uid 2' in r['message'], r
        # Root is not capped, and keeps the fast path.
        assert root.connect('r')['fast_path'] is True
        for _ in range(3):
            root.lease('r')
        assert nobody.call('n1', 'release', first)['kind'] == 'lease_released'
        nobody.lease('n1')                                  # room again
        assert fixture.error_code(nobody.call('n2', 'acquire', 0)) == 'ERR_EDQUOT'
        nobody.close()
        # The leases ended with nobody's connections: a new one may lease again.
        again = fixture.Probe(d.socket, fixture.NOBODY)
        try:
            again.connect('x')
            # Until cpuhpd has seen the closes (a deadline only against a hang).
            deadline = time.monotonic() + GUARD_S
            r = again.call('x', 'acquire', 0)
            while r['kind'] != 'lease_granted' and time.monotonic() < deadline:
                assert fixture.error_code(r) == 'ERR_EDQUOT', r
                r = again.call('x', 'acquire', 0)
            assert r['kind'] == 'lease_granted', r
        finally:
            again.kill()
    finally:
        nobody.kill()
        root.kill()
        assert d.stop() == 0, d.log()


@pytest.mark.parametrize('args, words', [
    (['--max-lease-ms', 'soon'], "--max-lease-ms: invalid value 'soon'"),
    (['--max-lease-ms', '-1'], "--max-lease-ms: invalid value '-1'"),
    (['--max-leases-per-uid', 'x'], "--max-leases-per-uid: invalid value 'x'"),
])
def test_bad_limit_values_are_refused_at_start(tmp, sim4, args, words):
    d = fixture.Daemon(tmp, sim4.root, args=args)
    r = subprocess.run(d.argv(), capture_output=True, text=True, timeout=GUARD_S)
    assert r.returncode != 0 and words in r.stderr, r


def test_help_names_the_limits():
    r = subprocess.run([str(fixture.CPUHPD), '--help'], capture_output=True, text=True,
                       timeout=GUARD_S)
    assert '--max-lease-ms MS' in r.stdout and '--max-leases-per-uid N' in r.stdout, r


# ---- bypass detection ----

def change_behind_cpuhpd(daemon, sim, probe, watcher, cpu, value):
    """Write cpuN/online as chcpu would, send the uevent, and wait for the
    watcher to see the online set change."""
    sim.write_online(cpu, value)
    daemon.inject_uevent('offline' if value == 0 else 'online', f'/devices/system/cpu/cpu{cpu}')
    ev = probe.recv(watcher)
    assert ev['event'] == 'online_changed' and ev['external'] is True, ev
    return ev


def test_a_cpu_changed_behind_cpuhpd_while_leases_are_held_is_a_bypass(daemon4, sim4, probe):
    for name in ('w', 'holder', 'other', 'idle'):
        probe.connect(name)
    assert probe.call('w', 'watch')['kind'] == 'watch_started'
    assert probe.call('holder', 'identify', 'resize-pools', 'sizing')['kind'] == 'identified'
    lease = probe.lease('holder')
    other = probe.lease('other')
    change_behind_cpuhpd(daemon4, sim4, probe, 'w', 2, 0)
    for name in ('holder', 'other'):
        ev = probe.recv(name)
        assert ev['id'] == 0 and ev['event'] == 'lease_bypassed', ev
        assert (ev['online'], ev['was'], ev['leases']) == ('0-1,3', '0-3', 1), ev
    s = probe.status('idle')                 # the idle connection got no notice before this
    assert s['bypasses'] == 1 and s['leases_held'] == 2, s
    log = daemon4.log()
    assert "CPUs changed behind cpuhpd's back (online 0-1,3, was 0-3) while 2 lease(s)" in log
    assert "(resize-pools) 'sizing'" in log
    r = probe.call('holder', 'release', lease)
    assert fixture.error_code(r) == 'ERR_ESTALE', r
    assert 'is released' in r['message'] and 'behind cpuhpd' in r['message'], r
    assert probe.status('idle')['leases_held'] == 1    # released all the same
    assert fixture.error_code(probe.call('holder', 'release', lease)) == 'ERR_ESRCH'
    # A lease taken after the bypass is not stale.
    fresh = probe.lease('other')
    assert probe.call('other', 'release', fresh)['kind'] == 'lease_released'
    assert fixture.error_code(probe.call('other', 'release', other)) == 'ERR_ESTALE'


def test_a_fast_lease_held_across_a_bypass_is_stale_on_release(daemon4, sim4, probe):
    """A fast lease's release never reaches cpuhpd: before, its holder got
    the LeaseBypassed notice but a release that said 0, and the warning
    said "held 0.0 s" of a lease cpuhpd had only just seen."""
    c = FastClient(daemon4.socket)
    try:
        c.connect('a')
        c.thread('t', 'a')
        held = c.lease('t')
        probe.connect('w')
        assert probe.call('w', 'watch')['kind'] == 'watch_started'
        change_behind_cpuhpd(daemon4, sim4, probe, 'w', 2, 0)
        # The notice follows the mark, so the release below comes after it.
        ev = c(f'event a {GUARD_S * 1000}')
        assert ev['ret'] == 0 and ev['type'] == 6 and ev['leases'] == 1, ev
        assert re.search(r'1 fast lease, held at least \d+\.\d s', daemon4.log()), daemon4.log()
        c.release('t', held)
        r = c.wait('t')
        assert r['ret'] == -errno.ESTALE and "behind cpuhpd's back" in r['message'], r
        assert probe.status('w')['leases_held'] == 0   # released all the same
        # A lease taken after the bypass is not stale.
        fresh = c.lease('t')
        c.unlease('t', fresh)
    finally:
        c.kill()


def test_an_external_change_with_no_lease_held_is_no_bypass(daemon4, sim4, probe):
    probe.connect('w')
    assert probe.call('w', 'watch')['kind'] == 'watch_started'
    change_behind_cpuhpd(daemon4, sim4, probe, 'w', 3, 0)
    assert probe.status('w')['bypasses'] == 0
    assert "behind cpuhpd's back" not in daemon4.log()


def test_cpuhpctl_hold_warns_of_a_bypass_and_status_counts_it(daemon4, sim4, probe):
    probe.connect('w')
    assert probe.call('w', 'watch')['kind'] == 'watch_started'
    hold = subprocess.Popen(
        [str(fixture.CPUHPCTL), '--socket', daemon4.socket, 'hold', '--who', 'bench', '--',
         'sh', '-c', 'echo ready; read x || true'],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert hold.stdout.readline() == 'ready\n'
        change_behind_cpuhpd(daemon4, sim4, probe, 'w', 1, 0)
        rc, st = ctl_json(daemon4, 'status')
        assert rc == 0 and st['bypasses'] == 1 and st['revocations'] == 0, st
        assert '1 bypass(es)' in ctl(daemon4, 'status').stdout
    finally:
        hold.stdin.close()
        rc = hold.wait(timeout=GUARD_S)
    err = hold.stderr.read()
    assert rc == 0, err
    assert "warning: the online CPUs changed behind cpuhpd's back while the lease was held " \
           "(online now 0,2-3)" in err, err
    assert 'lost the connection' not in err, err


def test_cpuhpctl_hold_says_when_its_lease_is_revoked(tmp, sim4):
    d = start(tmp, sim4, '--max-lease-ms', '50')
    try:
        r = subprocess.run(
            [str(fixture.CPUHPCTL), '--socket', d.socket, 'hold', '--', 'sh', '-c',
             f'{fixture.CPUHPCTL} --socket {d.socket} offline --timeout 60000 2'],
            capture_output=True, text=True, timeout=GUARD_S)
        # The offline inside waits for hold's lease, which is revoked: then it runs.
        assert r.returncode == 0, r
        assert 'cpuhpd revoked the lease after' in r.stderr, r
        assert 'its --max-lease-ms is 50' in r.stderr, r
        assert sim4.read_online(2) == '0'
    finally:
        assert d.stop() == 0, d.log()
