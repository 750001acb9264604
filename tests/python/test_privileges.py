# SPDX-License-Identifier: LGPL-2.1-or-later
"""PermissionError from the daemon (EPERM: not allowed to hotplug) and from
the socket (EACCES: not allowed to connect), for a Python client running as
`nobody` (through setpriv: root is needed to switch, else this skips)."""
import errno
import grp
import os
import shutil
import subprocess
import sys

import pytest

import fixture

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which('setpriv'),
    reason='needs root and setpriv to run a Python client as nobody: skipped')

NOBODY = fixture.NOBODY

CHILD = '''
import sys, cpuhp
try:
    with cpuhp.Client(sys.argv[1]) as c:
        if sys.argv[2] == 'hotplug':
            c.set_online(1, False, timeout=1)
        with c.lease():
            pass
except OSError as e:
    print(type(e).__name__, e.errno, e.strerror)
else:
    print('ok')
'''


def as_nobody(socket_path, what):
    r = subprocess.run(NOBODY + [sys.executable, '-c', CHILD, socket_path, what],
                       capture_output=True, text=True, timeout=fixture.GUARD_S)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.fixture
def open_tmp(tmp):
    os.chmod(tmp, 0o755)  # nobody must reach the socket
    return tmp


def test_hotplug_by_an_unprivileged_user_is_permissionerror_eperm(open_tmp, sim):
    d = fixture.Daemon(open_tmp, sim.root, args=['--socket-mode', '0666']).start()
    try:
        out = as_nobody(d.socket, 'hotplug')
        name, code, message = out.split(' ', 2)
        assert name == 'PermissionError' and int(code) == errno.EPERM, out
        assert 'root' in message  # the daemon's words
        assert sim.read_online(1) == '1'
        # Leases and status are anyone's.
        assert as_nobody(d.socket, 'lease') == 'ok'
    finally:
        assert d.stop() == 0, d.log()


def test_a_socket_the_user_may_not_open_is_permissionerror_eacces(open_tmp, sim):
    d = fixture.Daemon(open_tmp, sim.root).start()  # mode 0660, root's group
    try:
        out = as_nobody(d.socket, 'lease')
        assert out.startswith(f'PermissionError {errno.EACCES} '), out
        group = grp.getgrgid(os.stat(d.socket).st_gid).gr_name
        assert f"join its group '{group}'" in out, out
    finally:
        assert d.stop() == 0, d.log()


def test_a_daemon_of_another_user_is_not_trusted(tmp, sim, cpuhp):
    """the client checks who serves the socket (SO_PEERCRED)."""
    d = fixture.daemon_as_nobody(tmp, sim.root, ['--socket-mode', '0666'])
    try:
        with pytest.raises(PermissionError) as e:
            cpuhp.Client(d.socket)
        assert e.value.errno == errno.EPERM and 'CPUHP_DAEMON_UID' in str(e.value), e.value
        os.environ['CPUHP_DAEMON_UID'] = '65534'
        try:
            with cpuhp.Client(d.socket) as c:
                assert c.status().online
        finally:
            del os.environ['CPUHP_DAEMON_UID']
    finally:
        assert d.stop() == 0, d.log()
