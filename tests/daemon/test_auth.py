# SPDX-License-Identifier: LGPL-2.1-or-later
"""Authorization from SO_PEERCRED: hotplug for uid 0 and --admin-group only;
leases and status for anyone who can connect; the socket mode decides who
can.  Clients run as `nobody` through setpriv (root needed to switch)."""
import grp
import os
import shutil
import subprocess

import pytest

import fixture
from fixture import error_code

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which('setpriv'),
    reason='needs root and setpriv to run a client as nobody: skipped')

NOBODY = fixture.NOBODY


def start(tmp, sim, *args):
    # nobody must be able to reach the socket: a traversable directory.
    os.chmod(tmp, 0o755)
    return fixture.Daemon(tmp, sim.root, args=list(args)).start()


def admin_group():
    """A group nobody is not in, to make it the admin group."""
    for name in ('adm', 'users', 'staff', 'daemon'):
        try:
            return grp.getgrnam(name)
        except KeyError:
            pass
    pytest.skip('no suitable group on this machine')


def test_non_admin_uid_is_refused_hotplug_but_gets_leases_and_status(tmp, sim):
    d = start(tmp, sim, '--socket-mode', '0666')
    p = fixture.Probe(d.socket, NOBODY)
    try:
        p.connect('n')
        r = p.call('n', 'offline', 1, 1000)
        assert error_code(r) == 'ERR_EPERM', r
        assert 'root' in r['message'] and '65534' in r['message']
        assert sim.read_online(1) == '1'
        lease = p.lease('n')
        assert p.status('n')['leases_held'] == 1
        assert p.call('n', 'release', lease)['kind'] == 'lease_released'
    finally:
        p.kill()
        assert d.stop() == 0, d.log()


def test_member_of_the_admin_group_may_hotplug(tmp, sim):
    g = admin_group()
    d = start(tmp, sim, '--socket-mode', '0666', '--admin-group', g.gr_name)
    member = fixture.Probe(d.socket, ['setpriv', '--reuid=nobody', '--regid=nogroup',
                                      f'--groups={g.gr_gid}'])
    outsider = fixture.Probe(d.socket, NOBODY)
    try:
        outsider.connect('o')
        r = outsider.call('o', 'offline', 1, 1000)
        assert error_code(r) == 'ERR_EPERM' and g.gr_name in r['message'], r
        member.connect('m')
        r = member.call('m', 'offline', 1, 1000)
        assert r['kind'] == 'set_online' and r['results'][0]['changed'], r
        assert sim.read_online(1) == '0'
    finally:
        member.kill()
        outsider.kill()
        assert d.stop() == 0, d.log()


def test_default_socket_mode_0660_keeps_other_users_out(tmp, sim):
    d = start(tmp, sim)
    assert os.stat(d.socket).st_mode & 0o777 == 0o660
    p = fixture.Probe(d.socket, NOBODY)
    try:
        r = p('connect n')
        assert r['errno'] == 'EACCES', r
        # cpuhpctl names the group to join: the socket's (root's, here).
        group = grp.getgrgid(os.stat(d.socket).st_gid).gr_name
        r = subprocess.run(NOBODY + [str(fixture.CPUHPCTL), '--socket', d.socket, 'status'],
                           capture_output=True, text=True, timeout=fixture.GUARD_S)
        assert r.returncode == 69 and f"join its group '{group}'" in r.stderr, r.stderr
    finally:
        p.kill()
        assert d.stop() == 0, d.log()


def test_clients_do_not_trust_a_daemon_of_another_user(tmp, sim):
    """nobody, owning the socket's directory, served a fake
    daemon, and root's `cpuhpctl offline 1` printed "CPU 1 disabled".  Clients
    now check the serving process (SO_PEERCRED): root, themselves, or
    $CPUHP_DAEMON_UID.  Here a real cpuhpd runs as nobody, as a fake would."""
    d = fixture.daemon_as_nobody(tmp, sim.root, ['--socket-mode', '0666'])
    try:
        ctl = [str(fixture.CPUHPCTL), '--socket', d.socket, 'offline', '1']
        r = subprocess.run(ctl, capture_output=True, text=True, timeout=fixture.GUARD_S)
        assert r.returncode == 69, r
        assert 'neither root nor you' in r.stderr and 'CPUHP_DAEMON_UID' in r.stderr, r.stderr
        assert sim.read_online(1) == '1'
        # Trusted on purpose: the variable names that uid (which may not hotplug).
        status = [str(fixture.CPUHPCTL), '--socket', d.socket, 'status']
        env = dict(os.environ, CPUHP_DAEMON_UID='65534')
        r = subprocess.run(status, capture_output=True, text=True, timeout=fixture.GUARD_S,
                           env=env)
        assert r.returncode == 0, r
        # And nobody trusts a daemon of its own uid.
        r = subprocess.run(NOBODY + status, capture_output=True, text=True,
                           timeout=fixture.GUARD_S)
        assert r.returncode == 0, r
    finally:
        assert d.stop() == 0, d.log()
