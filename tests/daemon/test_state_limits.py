# SPDX-License-Identifier: LGPL-2.1-or-later
"""Hotplug states against root (daemon/cpuhpd/README.md, "Hotplug states",
"Who may register"): a state can veto every hotplug or hold each one up, so
only root and the admin group register them freely; another uid only as
--max-states-per-uid and --max-state-deadline-ms allow, never into the
table's last places.

Unprivileged clients run as nobody through setpriv (tests run as root)."""
import os
import shutil
import subprocess

import pytest

import fixture
from fixture import NOBODY, error_code
from test_auth import admin_group
from test_states import register, states

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
