# SPDX-License-Identifier: LGPL-2.1-or-later
"""Starting and stopping: signals, the socket file (stale, live, too long,
activated by systemd), options and --help, and the systemd units."""
import os
import shutil
import signal
import socket
import stat
import subprocess

import pytest

import fixture
from fixture import error_code


def run(*argv, env=None):
    return subprocess.run([str(fixture.CPUHPD), *argv], capture_output=True, text=True,
                          timeout=fixture.GUARD_S, env=env)


def test_sigterm_while_a_hotplug_waits_cancels_it_exits_0_and_removes_the_socket(tmp, sim):
    d = fixture.Daemon(tmp, sim.root).start()
    p = fixture.Probe(d.socket)
    try:
        for n in 'ahb':
            p.connect(n)
        p.lease('a')
        hp = p.send('h', 'offline', 1, 60000)
        p.status('h')
        lw = p.send('b', 'acquire', 60000)
        p.status('b')
        d.send_signal(signal.SIGTERM)
        r = p.recv('h')
        assert r['id'] == hp and error_code(r) == 'ERR_ECANCELED', r
        r = p.recv('b')
        assert r['id'] == lw and error_code(r) == 'ERR_ECANCELED', r
        # The holder was told the hotplug was pending, then that it was cancelled;
        # every client then hears the id-0 shutdown error, and the end of the stream.
        end = p('eof a')
        assert [(x['kind'], x.get('event'), x.get('code')) for x in end['responses']] == [
            ('event', 'hotplug_pending', None), ('event', 'hotplug_cancelled', 'ERR_ECANCELED'),
            ('error', None, 'ERR_ECANCELED')], end
        assert d.wait() == 0, d.log()
        assert not os.path.exists(d.socket)
        assert sim.read_online(1) == '1'
    finally:
        p.kill()
        d.kill()


def test_sigterm_lets_a_hotplug_already_writing_sysfs_finish(tmp, sim):
    d = fixture.Daemon(tmp, sim.root).start()
    p = fixture.Probe(d.socket)
    stall = fixture.StalledOnlineFile(sim, 1)
    try:
        p.connect('h')
        p.connect('w')
        hp = p.send('h', 'offline', 1, 60000)
        stall.wait_for_reader()  # the hotplug is writing sysfs
        lw = p.send('w', 'acquire', 60000)
        assert p.status('w')['pending_leases'] == 1
        d.send_signal(signal.SIGTERM)
        # The waiting lease is cancelled: the stop has begun...
        r = p.recv('w')
        assert r['id'] == lw and error_code(r) == 'ERR_ECANCELED', r
        # ...and clients are still served while the hotplug finishes.
        assert p.status('w')['writer'] == 'WRITER_RUNNING'
        stall.release()
        r = p.recv('h')  # it completes and is answered
        assert r['id'] == hp and r['results'][0]['changed'], r
        assert d.wait() == 0, d.log()
        assert sim.read_online(1) == '0'
        assert 'waiting for the hotplug in progress' in d.log()
    finally:
        stall.release()
        p.kill()
        d.kill()


def test_sigint_stops_cleanly(tmp, sim):
    d = fixture.Daemon(tmp, sim.root).start()
    assert d.stop(signal.SIGINT) == 0, d.log()
    assert not os.path.exists(d.socket)


def test_socket_directory_is_created_and_mode_applied(tmp, sim):
    path = tmp / 'run' / 'cpuhpd' / 's.sock'
    d = fixture.Daemon(tmp, sim.root, socket_path=path, args=['--socket-mode', '0600']).start()
    try:
        assert stat.S_ISSOCK(os.stat(path).st_mode)
        assert os.stat(path).st_mode & 0o777 == 0o600
    finally:
        assert d.stop() == 0


def test_stale_socket_file_is_replaced(tmp, sim):
    path = str(tmp / 'cpuhpd.sock')
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()  # the file stays, nobody listens: what a crashed daemon leaves
    d = fixture.Daemon(tmp, sim.root).start()
    try:
        assert 'removed the stale socket' in d.log()
        p = fixture.Probe(d.socket)
        p.connect('a')
        p.kill()
    finally:
        assert d.stop() == 0


def test_second_daemon_on_a_live_socket_refuses_to_start(tmp, sim):
    d = fixture.Daemon(tmp, sim.root).start()
    other = fixture.SimSysfs(tmp / 'other-sys', cpus='0-1')   # not the first one's tree
    try:
        r = run('--socket', d.socket, '--sysfs-root', str(other.root), '--no-netlink')
        assert r.returncode == 1
        assert 'already listening' in r.stderr
        assert os.path.exists(d.socket)
    finally:
        assert d.stop() == 0


def test_second_daemon_on_the_same_sysfs_tree_names_the_first(tmp, sim):
    """before, the second started on its own socket and offlined
    a CPU while the first held a lease.  The flock() dies with its holder."""
    d = fixture.Daemon(tmp, sim.root).start()
    try:
        p = fixture.Probe(d.socket)
        p.connect('a')
        p.lease('a')
        for extra in ([], ['--runtime-dir', str(tmp)]):
            r = run('--socket', str(tmp / 'second.sock'), '--sysfs-root', str(sim.root),
                    '--no-netlink', *extra)
            assert r.returncode == 1, r
            assert f'another cpuhpd (pid {d.proc.pid}) already serves' in r.stderr, r.stderr
            assert not os.path.exists(tmp / 'second.sock')
        assert sim.read_online(1) == '1'
        p.kill()
    finally:
        d.kill()
    # The holder died (SIGKILL): the next daemon gets the tree.
    d2 = fixture.Daemon(tmp, sim.root, socket_path=tmp / 'third.sock').start()
    assert d2.stop() == 0, d2.log()


def test_socket_directory_writable_by_others_is_refused(tmp, sim):
    """a directory nobody made 0777 let nobody rename the socket
    away and serve a fake daemon.  Not writable by others, or sticky (/tmp)."""
    bad = tmp / 'open'
    bad.mkdir()
    os.chmod(bad, 0o777)
    r = run('--socket', str(bad / 's.sock'), '--sysfs-root', str(sim.root), '--no-netlink',
            '--runtime-dir', str(tmp))
    assert r.returncode == 1, r
    assert 'lets others rename or replace' in r.stderr and 'chmod go-w' in r.stderr, r.stderr
    assert not os.path.exists(bad / 's.sock')
    os.chmod(bad, 0o1777)   # sticky: only the owner may rename or remove its entries
    d = fixture.Daemon(tmp, sim.root, socket_path=bad / 's.sock',
                       args=['--runtime-dir', str(tmp)]).start()
    assert d.stop() == 0, d.log()


@pytest.mark.skipif(os.geteuid() != 0, reason='needs root to chown a directory: skipped')
def test_socket_directory_of_another_user_is_refused(tmp, sim):
    theirs = tmp / 'theirs'
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 65534, 65534)
    r = run('--socket', str(theirs / 's.sock'), '--sysfs-root', str(sim.root), '--no-netlink',
            '--runtime-dir', str(tmp))
    assert r.returncode == 1, r
    assert 'belongs to uid 65534' in r.stderr, r.stderr


def test_socket_mode_is_set_at_bind_not_by_following_the_path(tmp, sim):
    """chmod(path) after bind() followed a symlink swapped in
    between (bind-swap.c does the swap) and made a root-owned 0600 file 0666.
    Now the mode comes from the umask at bind(), and a path that is no longer
    our socket stops the daemon."""
    victim = tmp / 'victim'
    victim.write_text('secret')
    os.chmod(victim, 0o600)
    env = dict(os.environ, CPUHP_TEST_BIND_SWAP=str(victim),
               LD_PRELOAD=str(fixture.BUILD / 'tests' / 'daemon' / 'libcpuhpd-test-bindswap.so'))
    r = run('--socket', str(tmp / 's.sock'), '--socket-mode', '0666', '--sysfs-root',
            str(sim.root), '--no-netlink', env=env)
    assert os.stat(victim).st_mode & 0o777 == 0o600
    assert r.returncode == 1, r
    assert 'something replaced it' in r.stderr, r.stderr
    # Without the attacker the mode is exact.
    d = fixture.Daemon(tmp, sim.root, args=['--socket-mode', '0666']).start()
    try:
        assert os.stat(d.socket).st_mode & 0o777 == 0o666
    finally:
        assert d.stop() == 0

def test_non_socket_file_at_the_socket_path_is_left_alone(tmp, sim):
    path = tmp / 'notasocket'
    path.write_text('precious')
    r = run('--socket', str(path), '--sysfs-root', str(sim.root), '--no-netlink')
    assert r.returncode == 1 and 'is not a socket' in r.stderr
    assert path.read_text() == 'precious'


def test_socket_path_over_107_bytes_is_refused_with_a_hint(tmp, sim):
    r = run('--socket', '/tmp/' + 'x' * 120, '--sysfs-root', str(sim.root), '--no-netlink')
    assert r.returncode == 1 and 'too long' in r.stderr and '--socket' in r.stderr


def test_wrong_sysfs_root_fails_with_a_hint(tmp):
    r = run('--socket', str(tmp / 's'), '--sysfs-root', str(tmp / 'nothing'), '--no-netlink')
    assert r.returncode == 1 and '--sysfs-root' in r.stderr
    assert not os.path.exists(tmp / 's')


def test_help_version_and_bad_options():
    r = run('--help')
    assert r.returncode == 0
    for opt in ('--socket', '--sysfs-root', '--admin-group', '--socket-mode',
                '--max-connections', '--uevent-socket', '--verbose', '--version'):
        assert opt in r.stdout
    r = run('--version')
    assert r.returncode == 0 and r.stdout.startswith('cpuhpd ')
    r = run('--no-such-option')
    assert r.returncode == 2 and '--help' in r.stderr
    r = run('--socket-mode', '999')
    assert r.returncode == 2 and '--socket-mode' in r.stderr
    r = run('--admin-group', 'no-such-group-here')
    assert r.returncode == 2 and 'no-such-group-here' in r.stderr


def test_socket_activation_uses_the_passed_socket_and_leaves_its_file(tmp, sim):
    path = str(tmp / 'activated.sock')
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    d = fixture.Daemon(tmp, sim.root, socket_path=tmp / 'unused.sock')
    # What systemd does: the socket on fd 3, LISTEN_FDS=1, LISTEN_PID=the daemon's pid
    # (known only after fork, hence the exec from a tiny wrapper).
    wrapper = ('import os, sys\n'
               'os.dup2(int(sys.argv[1]), 3)\n'
               'os.environ.update(LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))\n'
               'os.execv(sys.argv[2], sys.argv[2:])\n')
    argv = ['/usr/bin/python3', '-c', wrapper, str(listener.fileno())] + d.argv()
    d.start(argv=argv, pass_fds=[listener.fileno()])
    listener.close()
    try:
        assert f'listening on {path} (socket activation)' in d.log(), d.log()
        p = fixture.Probe(path)
        p.connect('a')
        assert p.status('a')['connections'] == 1
        p.kill()
        assert not os.path.exists(tmp / 'unused.sock')
    finally:
        assert d.stop() == 0, d.log()
    # systemd owns the file: the daemon must not remove it.
    assert os.path.exists(path)


def test_systemd_units_pass_systemd_analyze_verify(tmp):
    tool = shutil.which('systemd-analyze')
    if not tool:
        pytest.skip('systemd-analyze is not installed: the units were not linted')
    units = fixture.BUILD / 'daemon' / 'cpuhpd'
    for name in ('cpuhpd.service', 'cpuhpd.socket'):
        text = (units / name).read_text()
        # Point ExecStart at the built binary: verify checks that it exists.
        lines = [f'ExecStart={fixture.CPUHPD}' if ln.startswith('ExecStart=') else ln
                 for ln in text.splitlines()]
        (tmp / name).write_text('\n'.join(lines) + '\n')
    # Documentation=man:... is checked with man(1): the built pages, laid out as installed.
    env = dict(os.environ)
    pages = sorted((fixture.BUILD / 'doc').glob('*.[0-9]'))
    if pages:
        for page in pages:
            section = tmp / 'man' / f'man{page.suffix[1:]}'
            section.mkdir(parents=True, exist_ok=True)
            (section / page.name).symlink_to(page)
        env['MANPATH'] = str(tmp / 'man')
    r = subprocess.run([tool, 'verify', str(tmp / 'cpuhpd.socket'), str(tmp / 'cpuhpd.service')],
                       capture_output=True, text=True, timeout=60, env=env)
    ours = [ln for ln in (r.stdout + r.stderr).splitlines() if 'cpuhpd' in ln]
    assert r.returncode == 0 and not ours, r.stdout + r.stderr
