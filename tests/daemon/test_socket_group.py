# SPDX-License-Identifier: LGPL-2.1-or-later
"""cpuhpd --socket-group GROUP: without systemd (a container, runit,
sysvinit) nothing else gives the socket a group, so under the default mode
0660 only root could connect.  The group is given to the very socket file
cpuhpd bound, never through a path that may have been swapped since."""
import grp
import os
import subprocess

import pytest

import fixture

NOGROUP = grp.getgrnam('nogroup').gr_gid
needs_root = pytest.mark.skipif(os.geteuid() != 0,
                                reason='needs root to run a client as nobody: skipped')


def run(*argv, env=None):
    return subprocess.run([str(fixture.CPUHPD), '--config', '/dev/null', *argv],
                          capture_output=True, text=True, timeout=fixture.GUARD_S, env=env)


@needs_root
def test_members_of_the_socket_group_may_connect(tmp, sim):
    os.chmod(tmp, 0o755)  # nobody must reach the socket
    d = fixture.Daemon(tmp, sim.root, args=['--socket-group', 'nogroup']).start()
    try:
        st = os.stat(d.socket)
        assert st.st_gid == NOGROUP and st.st_mode & 0o777 == 0o660, st
        # nobody, in the group nogroup (fixture.NOBODY), takes a lease.
        p = fixture.Probe(d.socket, fixture.NOBODY)
        try:
            p.connect('n')
            assert p.lease('n')
        finally:
            p.kill()
    finally:
        assert d.stop() == 0, d.log()


def test_a_group_given_by_number_and_the_default_group(tmp, sim):
    d = fixture.Daemon(tmp, sim.root, args=['--socket-group', str(NOGROUP)]).start()
    try:
        assert os.stat(d.socket).st_gid == NOGROUP
    finally:
        assert d.stop() == 0, d.log()
    d = fixture.Daemon(tmp, sim.root).start()
    try:
        assert os.stat(d.socket).st_gid == os.getegid()
    finally:
        assert d.stop() == 0, d.log()


def test_an_unknown_group_is_refused_saying_how_to_make_it(tmp, sim):
    r = run('--socket-group', 'cpuhp-no-such-group', '--socket', str(tmp / 's'),
            '--sysfs-root', str(sim.root))
    assert r.returncode == 2, r
    assert "--socket-group: no group 'cpuhp-no-such-group'" in r.stderr, r.stderr
    assert 'groupadd --system cpuhp-no-such-group' in r.stderr
    assert not (tmp / 's').exists()


def test_the_group_is_not_given_through_a_path_swapped_after_bind(tmp, sim):
    """bind-swap.c replaces the new socket with a symlink to a file right
    after bind(): a chown(path) would give that file the group."""
    victim = tmp / 'victim'
    victim.write_text('secret')
    before = os.stat(victim)
    env = dict(os.environ, CPUHP_TEST_BIND_SWAP=str(victim),
               LD_PRELOAD=str(fixture.BUILD / 'tests' / 'daemon' / 'libcpuhpd-test-bindswap.so'))
    r = run('--socket', str(tmp / 's.sock'), '--socket-group', 'nogroup', '--sysfs-root',
            str(sim.root), '--no-netlink', env=env)
    assert r.returncode == 1, r
    assert 'it is no longer the socket we bound' in r.stderr, r.stderr
    assert os.stat(victim).st_gid == before.st_gid


@needs_root
def test_a_cpuhpd_that_is_not_root_gives_only_a_group_it_is_in(tmp, sim):
    os.chmod(tmp, 0o755)
    home = tmp / 'nobody'
    home.mkdir(mode=0o755)
    os.chown(home, 65534, 65534)
    r = subprocess.run(fixture.NOBODY + [str(fixture.CPUHPD), '--config', '/dev/null',
                                         '--socket', str(home / 's.sock'), '--socket-group',
                                         'root', '--sysfs-root', str(sim.root), '--no-netlink',
                                         '--runtime-dir', str(home)],
                       capture_output=True, text=True, timeout=fixture.GUARD_S)
    assert r.returncode == 1, r
    assert 'cpuhpd is not root and not a member of it' in r.stderr, r.stderr
