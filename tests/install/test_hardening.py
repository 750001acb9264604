# SPDX-License-Identifier: LGPL-2.1-or-later
"""cpuhpd still works under the restrictions of cpuhpd.service that can be
emulated without systemd as PID 1, each alone and all at once:

- the empty capability bounding set (CapabilityBoundingSet=), with setpriv;
- a read-only file system but for the cpu directory and the socket's
  directory (ProtectSystem=strict, ReadWritePaths=): a private mount
  namespace (unshare -m) where every mount is remounted read-only, the
  simulated tree's devices/system/cpu standing in for /sys/devices/system/cpu;
- the system-call filter (SystemCallFilter=, SystemCallArchitectures=native)
  built from the unit's own lines (units.py expands the groups with
  systemd-analyze), applied by seccomp-exec (libseccomp); any other call
  kills the daemon with SIGSYS.

Under each: the daemon starts (READY=1), serves a socket lease and a fast
lease (membarrier, sealed memfd), takes a CPU of the simulated tree offline
behind a lease and back online, and stops cleanly (exit 0)."""
import os
import shutil
import subprocess

import pytest

import fixture
from units import ANALYZE, syscall_allow_set

SECCOMP_EXEC = fixture.BUILD / 'tests' / 'install' / 'seccomp-exec'
SETPRIV, UNSHARE = shutil.which('setpriv'), shutil.which('unshare')

# Run as: sh -c SCRIPT sh CPU_DIR RUN_DIR PROBE PROGRAM [ARGS...]
READ_ONLY = r'''
set -eu
cpu=$1 run=$2 probe=$3
shift 3
mount --make-rprivate /
for d in "$cpu" "$run"; do mount --bind "$d" "$d"; done
while read -r _ _ _ _ mp _; do
	case $mp in
	"$cpu" | "$run" | *\\*) continue ;;
	esac
	mount -o remount,bind,ro "$mp" 2>/dev/null ||
		echo "read-only emulation: $mp stays writable" >&2
done </proc/self/mountinfo
if touch "$probe" 2>/dev/null; then
	echo "read-only emulation: $probe could be created: not read-only" >&2
	exit 99
fi
exec "$@"
'''


def need(kind):
    if kind in ('bounding-set', 'all') and not SETPRIV:
        pytest.skip('skipped: no setpriv (util-linux) to empty the bounding set')
    if kind in ('read-only', 'all') and not UNSHARE:
        pytest.skip('skipped: no unshare (util-linux) for a mount namespace')
    if kind in ('seccomp', 'all'):
        if not SECCOMP_EXEC.exists():
            pytest.skip('skipped: seccomp-exec was not built (apt-get install libseccomp-dev)')
        if not ANALYZE:
            pytest.skip('skipped: no systemd-analyze to expand the unit\'s system-call groups')
    if os.geteuid() != 0:
        pytest.skip('skipped: the service runs as root; so must this emulation')


def wrapper(kind, tmp, sim, run):
    """The argv prefix that puts the daemon under @kind."""
    argv = []
    if kind in ('read-only', 'all'):
        argv += [UNSHARE, '-m', 'sh', '-c', READ_ONLY, 'sh', str(sim.cpu), str(run),
                 str(tmp / 'must-not-exist')]
    if kind in ('bounding-set', 'all'):
        argv += [SETPRIV, '--bounding-set=-all', '--inh-caps=-all', '--ambient-caps=-all',
                 '--no-new-privs']
    if kind in ('seccomp', 'all'):
        names = tmp / 'syscalls'
        names.write_text('\n'.join(sorted(syscall_allow_set())) + '\n')
        argv += [str(SECCOMP_EXEC), str(names)]
    return argv


def proc_status(pid):
    return dict(ln.split(':\t', 1) for ln in open(f'/proc/{pid}/status').read().splitlines()
                if ':\t' in ln)


@pytest.mark.parametrize('kind', ['bounding-set', 'read-only', 'seccomp', 'all'])
def test_cpuhpd_serves_leases_and_hotplugs_under(kind, tmp, sim):
    need(kind)
    run = tmp / 'run'      # stands for /run/cpuhpd (ReadWritePaths=-/run/cpuhpd)
    run.mkdir()
    d = fixture.Daemon(tmp, sim.root, socket_path=run / 'cpuhpd.sock')
    d.uevent_socket = str(run / 'uevent.sock')
    d.start(argv=wrapper(kind, tmp, sim, run) + d.argv())
    p = None
    try:
        st = proc_status(d.proc.pid)
        assert st['Name'].strip() == 'cpuhpd', st
        if kind in ('bounding-set', 'all'):
            assert int(st['CapBnd'], 16) == 0 and int(st['CapEff'], 16) == 0, st
        if kind in ('seccomp', 'all'):
            assert st['Seccomp'].strip() == '2', st   # filter mode
        p = fixture.Probe(d.socket)
        for n in ('a', 'h'):
            p.connect(n)
        lease = p.lease('a')
        hp = p.send('h', 'offline', 1, 10000)
        assert p.status('h')['writer'] == 'WRITER_WAITING'
        assert sim.read_online(1) == '1'
        assert p.call('a', 'release', lease)['kind'] == 'lease_released'
        r = p.recv('h')
        assert r['id'] == hp and r['results'][0]['changed'], r
        assert sim.read_online(1) == '0'
        # A fast lease (shared memory: the sealed memfd, membarrier) through cpuhpctl hold.
        h = subprocess.run([str(fixture.CPUHPCTL), '--socket', d.socket, 'hold', '--',
                            str(fixture.CPUHPCTL), '--socket', d.socket, 'status'],
                           capture_output=True, text=True, timeout=fixture.GUARD_S)
        assert h.returncode == 0, h
        assert 'fast path off' not in d.log(), d.log()
        r = p.call('h', 'online', 1, 10000)
        assert r['results'][0]['changed'], r
        assert sim.read_online(1) == '1'
    finally:
        if p:
            p.kill()
        d.stop_clean()
