# SPDX-License-Identifier: LGPL-2.1-or-later
"""Hotplug states against root (daemon/cpuhpd/README.md, "Hotplug states",
"Who may register"): a state can veto every hotplug or hold each one up, so
only root and the admin group register them freely; another uid only as
--max-states-per-uid and --max-state-deadline-ms allow, never into the
table's last places; a hotplug's timeout and a stop cut a state call that
does not come back, with the usual rollback.

Unprivileged clients run as nobody through setpriv (tests run as root)."""
import json
import os
import shutil
import signal
import subprocess

import pytest

import fdstore
import fixture
from fixture import NOBODY, error_code
from test_auth import admin_group
from test_states import expect_call, register, states

needs_nobody = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which('setpriv'),
                                  reason='needs root and setpriv to run a client as nobody: '
                                         'skipped')


def start(tmp, sim, *args):
    os.chmod(tmp, 0o755)
    return fixture.Daemon(tmp, sim.root,
                          args=['--socket-mode', '0666', *(str(a) for a in args)]).start()


def ctl(daemon, *args):
    return subprocess.run([str(fixture.CPUHPCTL), '--socket', daemon.socket, '--json',
                           *map(str, args)], capture_output=True, text=True,
                          timeout=fixture.GUARD_S)


@needs_nobody
def test_by_default_a_state_of_another_uid_is_refused_and_cannot_veto_root(tmp, sim4):
    d = start(tmp, sim4)
    nobody = fixture.Probe(d.socket, NOBODY)
    try:
        nobody.connect('n')
        r = nobody.call('n', 'register', 'veto', 0, 5000, 'nocalls')
        assert error_code(r) == 'ERR_EPERM', r
        assert 'for root only' in r['message'] and '--max-states-per-uid' in r['message'], r
        assert states(nobody, 'n') == []
        # Root's offline has nobody's state to ask: none.
        r = ctl(d, 'offline', '--timeout', 5000, 2)
        assert r.returncode == 0, r
        assert sim4.read_online(2) == '0'
    finally:
        nobody.kill()
        assert d.stop() == 0, d.log()


@needs_nobody
def test_the_refusal_names_the_admin_group_and_its_members_register_freely(tmp, sim4):
    g = admin_group()
    d = start(tmp, sim4, '--admin-group', g.gr_name)
    nobody = fixture.Probe(d.socket, NOBODY)
    admin = fixture.Probe(d.socket, ['setpriv', '--reuid=nobody', '--regid=nogroup',
                                     f'--groups={g.gr_gid}'])
    try:
        nobody.connect('n')
        r = nobody.call('n', 'register', 'x', 0, 0, 'nocalls')
        assert error_code(r) == 'ERR_EPERM', r
        assert f"members of group '{g.gr_name}'" in r['message'], r
        admin.connect('a')
        register(admin, 'a', 'long', deadline=600000, nocalls=True)
        assert [(s['name'], s['deadline_ms']) for s in states(admin, 'a')] == [('long', 600000)]
    finally:
        nobody.kill()
        admin.kill()
        assert d.stop() == 0, d.log()


@needs_nobody
def test_max_states_per_uid_caps_another_uid_over_its_connections_and_its_deadline(tmp, sim4):
    d = start(tmp, sim4, '--max-states-per-uid', 2, '--max-state-deadline-ms', 300)
    nobody = fixture.Probe(d.socket, NOBODY)
    root = fixture.Probe(d.socket)
    try:
        nobody.connect('n1')
        nobody.connect('n2')
        r = nobody.call('n1', 'register', 'slow', 0, 301, 'nocalls')
        assert error_code(r) == 'ERR_EPERM', r
        assert 'limit of 300 ms' in r['message'] and '--max-state-deadline-ms' in r['message'], r
        register(nobody, 'n1', 'a', nocalls=True, deadline=0)    # the default, capped
        register(nobody, 'n2', 'b', nocalls=True, deadline=300)
        r = nobody.call('n2', 'register', 'c', 0, 0, 'nocalls')
        assert error_code(r) == 'ERR_EDQUOT', r
        assert 'has 2 state(s)' in r['message'] and '--max-states-per-uid 2' in r['message'], r
        root.connect('r')
        register(root, 'r', 'root-long', deadline=600000, nocalls=True)
        got = {s['name']: s['deadline_ms'] for s in states(root, 'r')}
        assert got == {'a': 300, 'b': 300, 'root-long': 600000}, got
        nobody('close n1')                                        # its state goes with it
        register(nobody, 'n2', 'c', nocalls=True, deadline=0)
    finally:
        nobody.kill()
        root.kill()
        assert d.stop() == 0, d.log()


@needs_nobody
def test_a_table_filled_by_one_uid_leaves_root_room_to_register(tmp, sim4):
    d = start(tmp, sim4, '--max-states-per-uid', 1024)
    nobody = fixture.Probe(d.socket, NOBODY)
    root = fixture.Probe(d.socket)
    try:
        n = conn = 0
        while True:
            if n % 64 == 0:
                conn += 1
                nobody.connect(f'n{conn}')
            r = nobody.call(f'n{conn}', 'register', f's{n}', 0, 0, 'nocalls')
            if r['kind'] != 'state_registered':
                break
            n += 1
        assert error_code(r) == 'ERR_EDQUOT' and 'but for root and admins' in r['message'], r
        assert n == 1024 - 128, n
        root.connect('r')
        register(root, 'r', 'root-state', nocalls=True)
    finally:
        nobody.kill()
        root.kill()
        assert d.stop() == 0, d.log()


def test_a_silent_state_is_cut_at_the_hotplug_timeout_and_rolled_back(daemon4, sim4, probe):
    """A state that never answers, with a 10-minute deadline: root's
    `offline --timeout 1000` ends by its timeout; the call counts as a
    missed deadline, so the state gets its rollback (a startup again),
    sent without waiting, and the CPU stays online."""
    probe.connect('s')
    sid = register(probe, 's', 'silent', deadline=600000, nocalls=True)
    r = ctl(daemon4, 'offline', '--timeout', 1000, 2)
    assert r.returncode == 1, r
    res = json.loads(r.stdout)['results'][0]
    assert not res['ok'] and res['error'] == 'ETIMEDOUT', res
    assert "state 'silent'" in res['message'] and 'stays online' in res['message'], res
    runs = [(s['phase'], s['rollback'], s['ok'], s['timed_out'], s['message'])
            for s in res['states']]
    assert runs == [
        ('teardown', False, False, True, "cut at the hotplug's timeout of 1000 ms"),
        ('startup', True, True, False,
         "sent, not awaited (cut at the hotplug's timeout of 1000 ms)")], runs
    assert sim4.read_online(2) == '1'
    expect_call(probe, 's', state_id=sid, cpu=2, phase='teardown', rollback=False)
    late = expect_call(probe, 's', state_id=sid, cpu=2, phase='startup', rollback=True)
    # Its answers come late and are ignored; the state is as before, on every CPU.
    probe.send('s', 'answer', late['call_id'], 'ok')
    assert [s['cpus'] for s in states(probe, 's')] == ['0-3']


def test_after_the_timeout_the_other_cpus_states_are_not_called(daemon4, sim4, probe):
    probe.connect('s')
    sid = register(probe, 's', 'silent', deadline=600000, nocalls=True)
    r = ctl(daemon4, 'offline', '--timeout', 500, '2-3')
    assert r.returncode == 1, r
    res = json.loads(r.stdout)['results']
    assert [(x['cpu'], x['error']) for x in res] == [(2, 'ETIMEDOUT'), (3, 'ETIMEDOUT')], res
    assert 'was not called' in res[1]['message'], res
    assert [(s['ok'], s['message']) for s in res[1]['states']] == \
        [(False, "cut at the hotplug's timeout of 500 ms")], res
    assert sim4.read_online(2) == '1' and sim4.read_online(3) == '1'
    expect_call(probe, 's', state_id=sid, cpu=2, phase='teardown')
    expect_call(probe, 's', state_id=sid, cpu=2, phase='startup', rollback=True)


def test_sigterm_ends_while_a_startup_is_unanswered(tmp, sim4):
    """A stop waits CPUHPD_STATES_STOP_GRACE_MS (1 s) for a state call,
    then cuts it: the online's startup counts as failed (ECANCELED), its
    rollback (teardown) is sent, the CPU goes offline again, and cpuhpd
    exits 0 instead of waiting for the 10-minute deadline."""
    d = start(tmp, sim4)
    probe = fixture.Probe(d.socket)
    try:
        probe.connect('s')
        probe.connect('h')
        assert probe.call('h', 'offline', 2, 5000)['results'][0]['ok']
        sid = register(probe, 's', 'silent', deadline=600000, nocalls=True)
        hid = probe.send('h', 'online', 2, 600000)
        expect_call(probe, 's', state_id=sid, cpu=2, phase='startup')
        d.send_signal(signal.SIGTERM)
        assert d.wait() == 0, d.log()
        r = probe.recv('h')
        assert r['id'] == hid and r['kind'] == 'set_online', r
        res = r['results'][0]
        assert not res['ok'] and res['code'] == 'ERR_ECANCELED', res
        assert 'cut: cpuhpd is stopping' in res['message'], res
        assert sim4.read_online(2) == '0'
        expect_call(probe, 's', state_id=sid, cpu=2, phase='teardown', rollback=True)
        assert 'sent, not awaited' in d.log()
    finally:
        probe.kill()
        if d.proc.poll() is None:
            d.kill()


def test_a_restarts_sigterm_ends_while_a_registration_startup_is_unanswered(tmp, sim4):
    """With the fd store (a restart's stop), a registration whose startup
    never comes back is cut 1 s into the stop: the registration fails
    (ECANCELED), the state's started CPUs get their teardown, sent, and
    cpuhpd hands over and exits 0; the next one serves on."""
    manager = fdstore.Manager(tmp)
    d = manager.start(fixture.Daemon(tmp, sim4.root))
    probe = fixture.Probe(d.socket)
    try:
        probe.connect('s')
        rid = probe.send('s', 'register', 'silent', 0, 600000)
        call = expect_call(probe, 's', cpu=0, phase='startup')
        probe.send('s', 'answer', call['call_id'], 'ok')
        expect_call(probe, 's', cpu=1, phase='startup')     # never answered
        d.send_signal(signal.SIGTERM)
        assert d.wait() == 0, d.log()
        # CPU 1's startup was cut (a missed deadline: undone too), then CPU 0's.
        expect_call(probe, 's', cpu=1, phase='teardown', rollback=True)
        expect_call(probe, 's', cpu=0, phase='teardown', rollback=True)
        r = probe.recv('s')
        assert r['id'] == rid and error_code(r) == 'ERR_ECANCELED', r
        assert 'cut: cpuhpd is stopping' in r['message'], r
        manager.sync()
        d = manager.start(d)
        assert states(probe, 's') == []
    finally:
        probe.kill()
        d.stop()
        manager.close()
