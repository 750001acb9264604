# SPDX-License-Identifier: LGPL-2.1-or-later
"""Who holds what: who/why on connections and leases, the daemon's
pid/uid/comm, ListLeases and `cpuhpctl leases`, hotplugs naming the holders
they time out behind, and the --json output of status, leases,
online/offline and watch, parsed with json.

Ordering without sleeps: a request on a connection is answered after every
earlier request on that connection, so a status call after a pipelined
offline proves the offline is queued; a command that must run while a
lease is held runs while `cpuhpctl hold` waits on a line of our stdin."""
import json
import os
import shutil
import subprocess
import time

import pytest

import fixture

GUARD_S = fixture.GUARD_S


def ctl(daemon, *args, **kw):
    return subprocess.run([str(fixture.CPUHPCTL), '--socket', daemon.socket,
                           *(str(a) for a in args)],
                          capture_output=True, text=True, timeout=GUARD_S, **kw)


def ctl_json(daemon, *args):
    r = ctl(daemon, '--json', *args)
    lines = r.stdout.splitlines()
    assert len(lines) == 1, r
    return r.returncode, json.loads(lines[0])


def listing(probe, name):
    r = probe.call(name, 'leases')
    assert r['kind'] == 'lease_list', r
    return r


class Hold:
    """`cpuhpctl hold ARGS -- sh -c 'echo ready; read x || true'`: holds its lease
    from the 'ready' line until end()."""

    def __init__(self, daemon, *args):
        self.p = subprocess.Popen(
            [str(fixture.CPUHPCTL), '--socket', daemon.socket, 'hold', *args, '--',
             'sh', '-c', 'echo ready; read x || true'],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.p.stdout.readline() == 'ready\n'

    def end(self):
        self.p.stdin.close()
        assert self.p.wait(timeout=GUARD_S) == 0


def test_a_socket_lease_is_listed_with_what_the_daemon_knows(daemon4, probe):
    probe.connect('a')
    lease = probe.lease('a')
    pid = probe('pid')['pid']
    r = listing(probe, 'a')
    assert r['hotplugs'] == [], r
    [row] = r['leases']
    assert row['lease_id'] == lease and not row['fast'] and row['count'] == 1, row
    assert (row['pid'], row['uid'], row['comm']) == (pid, os.getuid(), 'cpuhpd-probe'), row
    assert (row['who'], row['why']) == ('', ''), row
    assert row['held_ms'] >= 0 and row['connection'] > 0, row


def test_identify_names_a_connections_leases_and_a_lease_may_name_itself(daemon4, probe):
    probe.connect('a')
    before = probe.lease('a')                 # named by the Identify that follows
    assert probe.call('a', 'identify', 'pools', 'sizing')['kind'] == 'identified'
    after = probe.lease('a')
    own = probe.call('a', 'acquireas', 0, 'job2', 'own-reason')
    assert own['kind'] == 'lease_granted', own
    rows = {row['lease_id']: row for row in listing(probe, 'a')['leases']}
    assert set(rows) == {before, after, own['lease_id']}, rows
    for lease in (before, after):
        assert (rows[lease]['who'], rows[lease]['why']) == ('pools', 'sizing'), rows
    assert (rows[own['lease_id']]['who'], rows[own['lease_id']]['why']) == ('job2', 'own-reason')
    # Oldest first.
    assert [row['lease_id'] for row in listing(probe, 'a')['leases']] == \
        [before, after, own['lease_id']]
    # Identify again: empty means "unnamed" again, for the leases held too.
    assert probe.call('a', 'identify', '-', '-')['kind'] == 'identified'
    rows = {row['lease_id']: row for row in listing(probe, 'a')['leases']}
    assert (rows[before]['who'], rows[before]['why']) == ('', '')
    assert rows[own['lease_id']]['who'] == 'job2'


def test_a_name_over_the_limit_is_cut_not_refused(daemon4, probe):
    probe.connect('a')
    assert probe.call('a', 'identify', 'long', 'long')['kind'] == 'identified'
    probe.lease('a')
    [row] = listing(probe, 'a')['leases']
    assert row['who'] == 'x' * 255 and row['why'] == 'x' * 255, row


def test_released_and_dead_leases_leave_the_list(daemon4, probe):
    probe.connect('a')
    probe.connect('b')
    lease = probe.lease('a')
    probe.lease('b')
    assert len(listing(probe, 'a')['leases']) == 2
    assert probe.call('a', 'release', lease)['kind'] == 'lease_released'
    probe('close b')
    # The close reaches cpuhpd on b's socket, the listing on a's: ask until
    # it has seen the close (a deadline only against a hang).
    deadline = time.monotonic() + GUARD_S
    while probe.status('a')['connections'] > 1 and time.monotonic() < deadline:
        pass
    assert listing(probe, 'a')['leases'] == []


def test_a_waiting_hotplug_is_listed_with_who_asked(daemon4, sim4, probe):
    probe.connect('holder')
    probe.connect('asker')
    lease = probe.lease('holder')
    probe.send('asker', 'offline', 2, 60000)
    assert probe.status('asker')['pending_hotplugs'] == 1   # the offline is queued
    [h] = listing(probe, 'holder')['hotplugs']
    assert (h['cpus'], h['online'], h['state']) == ('2', False, 'WRITER_WAITING'), h
    assert (h['pid'], h['comm']) == (probe('pid')['pid'], 'cpuhpd-probe'), h
    assert h['timeout_ms'] == 60000 and 0 <= h['waited_ms'] <= 60000, h
    assert probe.call('holder', 'release', lease)['kind'] == 'lease_released'
    assert probe.recv('asker')['kind'] == 'set_online'
    assert sim4.read_online(2) == '0'
    assert listing(probe, 'holder')['hotplugs'] == []


def test_a_hotplug_that_times_out_names_the_holders_to_the_caller_and_the_log(daemon4, sim4,
                                                                              probe):
    probe.connect('a')
    assert probe.call('a', 'identify', 'resize-pools', 'sizing')['kind'] == 'identified'
    probe.lease('a')
    pid = probe('pid')['pid']
    r = ctl(daemon4, 'offline', '--timeout', 50, 2)
    assert r.returncode == 75, r
    words = f"CPU 2: timed out after 50 ms behind 1 lease: pid {pid} (resize-pools) 'sizing', held"
    assert words in r.stderr, r
    assert words in daemon4.log(), daemon4.log()
    assert sim4.read_online(2) == '1'


def test_a_status_look_starts_a_fast_leases_age(daemon4):
    """A Status sums the fast slots: from that look on, the lease's age is
    known to be at least the time since, and a later timeout says so (it
    said "held at least 0.0 s" when the first look was the hotplug's)."""
    import fastlib
    client = fastlib.FastClient(daemon4.socket)
    try:
        client.connect('h')
        client.thread('t', 'h')
        client.lease('t')
        rc, st = ctl_json(daemon4, 'status')
        assert rc == 0 and st['leases_held'] == 1, st
        looked = time.monotonic()
        # Not a synchronisation: the lease must age before the hotplug looks.
        time.sleep(0.4)
        r = ctl(daemon4, 'offline', '--timeout', 10, 2)
        aged = time.monotonic() - looked
        assert r.returncode == 75, r
        held = float(r.stderr.split(', held at least ')[1].split(' s')[0])
        assert 0.3 <= held <= aged + 0.1, (held, aged, r.stderr)
    finally:
        client.kill()


def test_a_fast_leases_age_is_said_to_be_a_lower_bound(daemon4):
    """cpuhpd sees a fast lease's count, not when it was taken: its age counts
    from cpuhpd's first look, and every word about it says "at least"."""
    import fastlib
    client = fastlib.FastClient(daemon4.socket)
    try:
        client.connect('h')
        client.thread('t', 'h')
        client.lease('t')
        r = ctl(daemon4, 'offline', '--timeout', 10, 2)
        assert r.returncode == 75, r
        assert ', 1 fast lease, held at least ' in r.stderr, r
        text = ctl(daemon4, 'leases')
        [row] = [line for line in text.stdout.splitlines() if ' fast ' in line]
        assert row.split()[5] == '1' and row.split()[6].startswith('>'), row
    finally:
        client.kill()


def test_an_unnamed_holder_is_named_by_its_command(daemon4, probe):
    probe.connect('a')
    probe.lease('a')
    r = ctl(daemon4, 'offline', '--timeout', 10, 2)
    assert r.returncode == 75, r
    assert f"pid {probe('pid')['pid']} (cpuhpd-probe), held" in r.stderr, r


def test_cpuhpctl_hold_names_its_lease_and_leases_lists_it(daemon4):
    hold = Hold(daemon4, '--who', 'nightly-bench', '--why', 'pinned to CPUs 1-3')
    try:
        rc, out = ctl_json(daemon4, 'leases')
        assert rc == 0, out
        [row] = out['leases']
        assert (row['who'], row['why'], row['comm']) == ('nightly-bench', 'pinned to CPUs 1-3',
                                                        'cpuhpctl'), row
        assert row['kind'] in ('fast', 'socket') and row['count'] == 1, row
        assert (row['lease_id'] is None) == (row['kind'] == 'fast'), row
        assert row['pid'] == hold.p.pid and row['uid'] == os.getuid(), row
        text = ctl(daemon4, 'leases')
        assert text.returncode == 0, text
        assert 'nightly-bench' in text.stdout and 'pinned to CPUs 1-3' in text.stdout, text
        assert '1 holder(s) listed.' in text.stdout, text
        r = ctl(daemon4, 'offline', '--timeout', 20, 3)
        assert "(nightly-bench) 'pinned to CPUs 1-3'" in r.stderr, r
    finally:
        hold.end()
    assert ctl_json(daemon4, 'leases') == (0, {'leases': [], 'hotplugs': [], 'freezes': [],
                                           'restart_grace_ms': 0})


def test_hold_names_its_lease_after_the_command_by_default(daemon4):
    hold = Hold(daemon4)
    try:
        [row] = ctl_json(daemon4, 'leases')[1]['leases']
        assert (row['who'], row['why']) == ('sh', ''), row
    finally:
        hold.end()


def test_hold_refuses_a_name_over_the_limit(daemon4):
    r = ctl(daemon4, 'hold', '--who', 'x' * 256, '--', 'true')
    assert r.returncode == 2 and '255 bytes' in r.stderr, r


def test_status_json(daemon4, probe):
    probe.connect('a')
    probe.lease('a')
    rc, s = ctl_json(daemon4, 'status')
    assert rc == 0
    assert (s['online'], s['offline'], s['possible'], s['present']) == \
        ([0, 1, 2, 3], [], [0, 1, 2, 3], [0, 1, 2, 3]), s
    assert s['leases_held'] == 1 and s['writer'] == 'idle' and s['connections'] >= 1, s
    assert {'daemon_version', 'fast_leases_held', 'fast_holders', 'fast_connections',
            'fast_path', 'pending_leases', 'pending_hotplugs'} <= set(s), s
    # --json after the command works the same.
    r = ctl(daemon4, 'status', '--json')
    assert json.loads(r.stdout)['online'] == [0, 1, 2, 3], r


def test_online_offline_json_per_cpu_and_errors(daemon4, sim4, probe):
    rc, out = ctl_json(daemon4, 'offline', '2-3')
    assert rc == 0, out
    assert out == {'action': 'offline', 'results': [
        {'cpu': 2, 'ok': True, 'changed': True, 'error': None, 'message': '', 'states': []},
        {'cpu': 3, 'ok': True, 'changed': True, 'error': None, 'message': '', 'states': []}]}, out
    rc, out = ctl_json(daemon4, 'online', '3,7')
    assert rc == 64, out
    assert out['action'] == 'online' and out['results'][0]['changed'] is True, out
    assert out['results'][1]['cpu'] == 7 and out['results'][1]['ok'] is False, out
    assert out['results'][1]['error'].startswith('E') and out['results'][1]['message'], out
    probe.connect('a')
    probe.lease('a')
    rc, out = ctl_json(daemon4, 'offline', '--timeout', 10, 3)
    assert rc == 75 and out['error'] == 'ETIMEDOUT', out
    assert 'behind 1 lease' in out['message'], out
    assert sim4.read_online(3) == '1'


def test_watch_json_one_object_per_event(daemon4):
    w = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon4.socket, 'watch', '--json',
                          '--count', '2'], stdout=subprocess.PIPE, text=True)
    try:
        assert json.loads(w.stdout.readline()) == {'event': 'watching'}
        assert ctl(daemon4, 'offline', 2).returncode == 0
        events = [json.loads(line) for line in w.stdout]
        assert w.wait(timeout=GUARD_S) == 0
    finally:
        w.kill()
    assert events == [
        {'event': 'hotplug_started', 'action': 'offline', 'cpus': [2]},
        {'event': 'hotplug_finished', 'action': 'offline', 'cpus': [2], 'ok': True, 'failed': []},
    ], events


def test_an_unreachable_daemon_still_gives_one_json_object(tmp):
    r = subprocess.run([str(fixture.CPUHPCTL), '--socket', str(tmp / 'none.sock'), '--json',
                        'leases'], capture_output=True, text=True, timeout=GUARD_S)
    assert r.returncode == 69, r
    assert r.stdout == '' or json.loads(r.stdout)['error'], r


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which('setpriv'),
                    reason='needs root and setpriv to run a client as nobody: skipped')
def test_a_non_root_client_may_name_its_leases_and_list_everyones(tmp, sim4):
    os.chmod(tmp, 0o755)
    d = fixture.Daemon(tmp, sim4.root, args=['--socket-mode', '0666']).start()
    root = fixture.Probe(d.socket)
    nobody = fixture.Probe(d.socket, fixture.NOBODY)
    try:
        root.connect('r')
        root.lease('r')
        nobody.connect('n')
        assert nobody.call('n', 'identify', 'user-job', 'caches')['kind'] == 'identified'
        nobody.lease('n')
        rows = listing(nobody, 'n')['leases']
        assert sorted(row['uid'] for row in rows) == [0, 65534], rows
        mine = [row for row in rows if row['uid'] == 65534]
        assert mine[0]['who'] == 'user-job', rows
    finally:
        root.kill()
        nobody.kill()
        assert d.stop() == 0, d.log()
