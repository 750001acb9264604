# SPDX-License-Identifier: LGPL-2.1-or-later
"""Real CPU hotplug through cpuhpd on this machine's /sys.

Opt-in: runs only with CPUHP_TEST_REAL_HOTPLUG=1 in the environment
(./run.sh test, and so CI, sets it), so that a package build running
`meson test` as root never takes a real CPU offline.  Then it runs when it
is root and some CPU other than 0 is online with a writable cpuN/online;
otherwise every test here skips, saying why (exit 77).  The
CPU's original state is restored whatever happens: in a finally, at exit,
and on SIGTERM (meson's timeout)."""
import atexit
import json
import os
import pathlib
import signal
import subprocess

import pytest

import fixture
from fixture import error_code

SYS = pathlib.Path('/sys')
CPU_DIR = SYS / 'devices' / 'system' / 'cpu'


OPT_IN = 'CPUHP_TEST_REAL_HOTPLUG'


def pick_cpu():
    if os.environ.get(OPT_IN) != '1':
        return None, f'set {OPT_IN}=1 to run real CPU hotplug'
    if os.geteuid() != 0:
        return None, 'not running as root'
    files = sorted(CPU_DIR.glob('cpu[0-9]*/online'), key=lambda p: int(p.parent.name[3:]))
    for f in files:
        n = int(f.parent.name[3:])
        if n != 0 and os.access(f, os.W_OK) and f.read_text().strip() == '1':
            return n, None
    return None, 'no online CPU other than 0 has a writable online file'


CPU, WHY = pick_cpu()
if CPU is None:
    print(f'skipped: {WHY}; nothing was hotplugged')
pytestmark = pytest.mark.skipif(CPU is None, reason=f'skipped: {WHY}')


def online_file():
    return CPU_DIR / f'cpu{CPU}' / 'online'


def restore():
    """Put the CPU back online if it is not (it was online when we started)."""
    if CPU is None:
        return
    try:
        if online_file().read_text().strip() != '1':
            online_file().write_text('1\n')
            print(f'restored CPU {CPU} online')
    except OSError as e:
        print(f'COULD NOT RESTORE CPU {CPU} online: {e}')


if CPU is not None:
    atexit.register(restore)
    # meson stops a test that runs too long with SIGTERM: exit through atexit.
    signal.signal(signal.SIGTERM, lambda *_: (restore(), os._exit(1)))


def nproc():
    return int(subprocess.run(['nproc'], capture_output=True, text=True, check=True).stdout)


def sys_online():
    return (CPU_DIR / 'online').read_text().strip()


def test_real_offline_waits_for_a_lease_then_takes_the_cpu_away_and_back(tmp):
    before_online, before_nproc = sys_online(), nproc()
    # A process confined away from CPU (taskset, cpuset) does not lose it.
    lost = 1 if CPU in os.sched_getaffinity(0) else 0
    d = fixture.Daemon(tmp, SYS, uevents=False).start()
    p = fixture.Probe(d.socket)
    try:
        for n in ('a', 'h', 'w'):
            p.connect(n)
        p.call('w', 'watch')
        lease = p.lease('a')
        hp = p.send('h', 'offline', CPU, 10000)
        s = p.status('h')
        assert s['writer'] == 'WRITER_WAITING' and s['leases_held'] == 1, s
        assert online_file().read_text().strip() == '1'  # the lease holds it
        assert p.call('a', 'release', lease)['kind'] == 'lease_released'
        r = p.recv('h')
        assert r['id'] == hp and r['results'][0] == {
            'cpu': CPU, 'ok': True, 'changed': True, 'code': 'ERR_UNKNOWN', 'message': ''}, r
        # The kernel agrees, and so does the scheduler.
        assert online_file().read_text().strip() == '0'
        assert r['online'] == sys_online() != before_online
        assert CPU not in os.sched_getaffinity(0)
        assert nproc() == before_nproc - lost
        # The hotplug announced itself before it waited for the lease.
        events = [p.recv('w')['event'] for _ in range(4)]
        assert events == ['hotplug_pending', 'hotplug_started', 'hotplug_finished',
                          'online_changed']

        # A lease asked for now is granted at once; the CPU comes back only after it goes.
        lease = p.lease('a')
        hp = p.send('h', 'online', CPU, 10000)
        assert p.status('h')['writer'] == 'WRITER_WAITING'
        p.call('a', 'release', lease)
        r = p.recv('h')
        assert r['id'] == hp and r['results'][0]['changed'], r
        assert online_file().read_text().strip() == '1'
        assert sys_online() == before_online == r['online']
    finally:
        p.kill()
        restore()
        assert d.stop() == 0, d.log()


def test_real_change_behind_the_daemon_is_noticed_from_kernel_uevents(tmp):
    d = fixture.Daemon(tmp, SYS, uevents=False).start()
    p = fixture.Probe(d.socket)
    try:
        p.connect('w')
        p.call('w', 'watch')
        online_file().write_text('0\n')  # what chcpu -d would do
        ev = p.recv('w')
        assert ev['event'] == 'online_changed' and ev['external'], ev
        assert ev['online'] == sys_online()
        online_file().write_text('1\n')
        ev = p.recv('w')
        assert ev['event'] == 'online_changed' and ev['external'], ev
        assert ev['online'] == sys_online()
    finally:
        p.kill()
        restore()
        assert d.stop() == 0, d.log()


def test_real_change_behind_the_daemon_while_a_lease_is_held_is_a_bypass(tmp):
    d = fixture.Daemon(tmp, SYS, uevents=False).start()
    p = fixture.Probe(d.socket)
    try:
        p.connect('w')
        p.connect('h')
        p.call('w', 'watch')
        lease = p.lease('h')
        online_file().write_text('0\n')  # behind the lease's back
        ev = p.recv('w')
        assert ev['event'] == 'online_changed' and ev['external'], ev
        ev = p.recv('h')
        assert ev['event'] == 'lease_bypassed' and ev['online'] == sys_online(), ev
        assert p.status('w')['bypasses'] == 1
        assert error_code(p.call('h', 'release', lease)) == 'ERR_ESTALE'
        assert "CPUs changed behind cpuhpd's back" in d.log()
    finally:
        p.kill()
        restore()
        assert d.stop() == 0, d.log()


def test_real_offline_is_refused_at_once_while_frozen(tmp):
    d = fixture.Daemon(tmp, SYS, uevents=False).start()
    p = fixture.Probe(d.socket)
    try:
        p.connect('f')
        p.connect('b')
        assert p.call('f', 'freeze', 'real', '-')['kind'] == 'frozen'
        r = p.call('b', 'offline', CPU, 60000)
        assert error_code(r) == 'ERR_EBUSY' and '(real)' in r['message'], r
        assert online_file().read_text().strip() == '1'
    finally:
        p.kill()
        restore()
        assert d.stop() == 0, d.log()


def test_real_last_online_cpu_error_is_reported_per_cpu(tmp):
    """Offlining every hotpluggable CPU but 0 works; CPU 0 itself is refused as not
    hotpluggable (or the kernel refuses the last one): a clear per-CPU error."""
    d = fixture.Daemon(tmp, SYS, uevents=False).start()
    p = fixture.Probe(d.socket)
    try:
        p.connect('h')
        r = p.call('h', 'offline', f'0,{CPU}', 10000)
        assert r['kind'] == 'set_online', r
        res = {x['cpu']: x for x in r['results']}
        assert res[CPU]['ok'] and res[CPU]['changed']
        assert not res[0]['ok'] and res[0]['code'] in ('ERR_ENOENT', 'ERR_EBUSY', 'ERR_EPERM')
        assert res[0]['message']
        r = p.call('h', 'online', CPU, 10000)
        assert r['results'][0]['changed']
        assert error_code(p.call('h', 'online', 'garbage', 0)) == 'ERR_EINVAL'
    finally:
        p.kill()
        restore()
        assert d.stop() == 0, d.log()


def test_real_percpu_pool_workers_never_run_on_an_offline_cpu_nor_lose_their_affinity(tmp):
    """examples/percpu-pool on the real /sys: its teardown stops the CPU's pinned worker
    before the CPU goes, so no worker is ever on an offline CPU and the kernel never
    breaks an affinity (each worker checks sched_getcpu() and its mask all along)."""
    if CPU not in os.sched_getaffinity(0):
        pytest.skip(f'skipped: CPU {CPU} is outside this process\'s affinity; nothing was '
                    'hotplugged')
    d = fixture.Daemon(tmp, SYS, uevents=False).start()
    pool = subprocess.Popen([str(fixture.BUILD / 'examples' / 'percpu-pool'), '--socket',
                             d.socket], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = ''
        while 'registered' not in line:
            line = pool.stdout.readline()
            assert line, f'percpu-pool ended (exit {pool.wait()})'
            assert 'unpinned' not in line, line
        ctl = [str(fixture.CPUHPCTL), '--socket', d.socket]
        for verb, want in (('offline', '0'), ('online', '1')) * 2:
            r = subprocess.run(ctl + [verb, str(CPU)], capture_output=True, text=True,
                               timeout=fixture.GUARD_S)
            assert r.returncode == 0 and online_file().read_text().strip() == want, r
            line = pool.stdout.readline()
            assert f'CPU {CPU};' in line and ('stopped' if verb == 'offline' else 'started') \
                in line, line
            assert f'{"teardown" if verb == "offline" else "startup"} of state percpu-pool' \
                in r.stdout, r.stdout
        out, _ = pool.communicate('', timeout=fixture.GUARD_S)
        assert pool.returncode == 0, out
        summary = out.splitlines()[-1]
        checks = int(summary.split('done; ')[1].split(' ')[0])
        assert checks > 0 and ', 0 on a wrong CPU, 0 with their affinity broken, 0 worker(s) ' \
            'unpinned' in summary, summary
    finally:
        pool.kill()
        pool.wait()
        restore()
        assert d.stop() == 0, d.log()


def test_real_smt_status_and_metrics_say_what_sysfs_says(tmp):
    """SMT and metrics on the real tree.  SMT is never changed here:
    `smt off` is tried only where the kernel cannot do it (notsupported,
    notimplemented, forceoff), and must then say so and change nothing."""
    control_file = CPU_DIR / 'smt' / 'control'
    control = control_file.read_text().strip() if control_file.exists() else None
    d = fixture.Daemon(tmp, SYS, uevents=False).start()
    ctl = [str(fixture.CPUHPCTL), '--socket', d.socket]
    try:
        st = json.loads(subprocess.run(ctl + ['--json', 'status'], capture_output=True,
                                       text=True, check=True).stdout)
        assert st['smt_control'] == control, st
        before = sys_online()
        r = subprocess.run(ctl + ['metrics'], capture_output=True, text=True)
        assert r.returncode == 0 and 'cpuhpd_cpus{state="online"}' in r.stdout, r
        if control in ('notsupported', 'notimplemented', 'forceoff'):
            r = subprocess.run(ctl + ['smt', 'off'], capture_output=True, text=True)
            assert r.returncode == 1 and control in r.stderr, r
            assert sys_online() == before
        else:
            print(f'smt/control says {control!r}: SMT is not changed by the tests')
    finally:
        restore()
        assert d.stop() == 0, d.log()
