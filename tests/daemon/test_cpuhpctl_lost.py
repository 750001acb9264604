# SPDX-License-Identifier: LGPL-2.1-or-later
"""cpuhpctl online/offline when cpuhpd dies in the middle of the hotplug
: cpuhpctl reads the cpuN/online files itself
(--sysfs-root) and says per CPU what changed, exiting 64 when some did,
69 when none did.

cpuhpd runs with the sysfs fault shim preloaded (tests/fault/sysfs-fault.c;
this file is registered in tests/fault/meson.build, beside the shim), whose
"open stall" rule makes its worker's open() of one CPU's online file for
writing never return.  The worker writes CPUs in ascending order, so when
the shim reports the stall (a line on a FIFO the test reads: no sleep) the
CPUs below it are written and those above it are not; then SIGKILL."""
import os
import select
import signal
import subprocess

import pytest

import fixture

GUARD_S = fixture.GUARD_S
SHIM = fixture.BUILD / 'tests' / 'fault' / 'libsysfs-fault.so'


@pytest.fixture
def sim8(tmp):
    return fixture.SimSysfs(tmp / 'sys', cpus='0-7')


def stalled_daemon(tmp, sim, cpu):
    """A cpuhpd whose write of cpu@cpu/online never returns, and the read
    end of the FIFO the shim reports it on."""
    (tmp / 'faults').write_text(f'/cpu{cpu}/online open stall\n')
    log = tmp / 'fault.fifo'
    os.mkfifo(log)
    # Non-blocking, so opening needs no writer yet; select() waits for the line.
    logfd = os.open(log, os.O_RDONLY | os.O_NONBLOCK)
    d = fixture.Daemon(tmp, sim.root).start(env={
        'LD_PRELOAD': str(SHIM), 'CPUHP_FAULT_FILE': str(tmp / 'faults'),
        'CPUHP_FAULT_LOG': str(log)})
    return d, logfd


def wait_for_stall(logfd, cpu):
    line = b''
    while not line.endswith(b'\n'):
        ready, _, _ = select.select([logfd], [], [], GUARD_S)
        assert ready, f'cpuhpd never reached cpu{cpu}/online in {GUARD_S} s'
        line += os.read(logfd, 4096)
    assert line.startswith(f'/cpu{cpu}/online open stall '.encode()), line


def killed_mid_hotplug(tmp, sim, stall_cpu, *args):
    """Run cpuhpctl @args, SIGKILL cpuhpd once its worker is stuck at
    @stall_cpu; Return: cpuhpctl's (exit code, stdout, stderr) and the
    online files of CPUs 1-7 as they were at the stall."""
    d, logfd = stalled_daemon(tmp, sim, stall_cpu)
    try:
        p = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', d.socket,
                              '--sysfs-root', str(sim.root), *args],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for_stall(logfd, stall_cpu)
        at_stall = [sim.read_online(n) for n in range(1, 8)]
        d.proc.send_signal(signal.SIGKILL)
        assert d.wait() == -signal.SIGKILL
        out, err = p.communicate(timeout=GUARD_S)
    finally:
        d.kill()
        os.close(logfd)
    return p.returncode, out, err, at_stall


def test_cpuhpd_killed_mid_offline_cpuhpctl_says_what_changed_and_exits_64(tmp, sim8):
    sim8.write_online(2, '0')          # already offline: neither "changed" nor failed
    rc, out, err, at_stall = killed_mid_hotplug(tmp, sim8, 5, 'offline', '--timeout',
                                                str(GUARD_S * 1000), '1-7')
    assert at_stall == ['0'] * 4 + ['1'] * 3
    assert rc == 64, (out, err)
    assert out == 'CPU 1 disabled\nCPU 2 is already disabled\nCPU 3 disabled\nCPU 4 disabled\n'
    lines = err.splitlines()
    assert lines[-4:] == [
        f'cpuhpctl: cpuhpd went away during the hotplug; what {sim8.root}/devices/system/cpu/'
        'cpuN/online say now:',
        'cpuhpctl: CPU 5 not disabled', 'cpuhpctl: CPU 6 not disabled',
        'cpuhpctl: CPU 7 not disabled'], err
    assert all(line.startswith('cpuhpctl: ') for line in lines), err


def test_cpuhpd_killed_before_changing_anything_exits_69_saying_so(tmp, sim8):
    rc, out, err, _ = killed_mid_hotplug(tmp, sim8, 1, 'offline', '1-3')
    assert (rc, out) == (69, ''), (out, err)
    assert 'cpuhpctl: CPU 1 not disabled\ncpuhpctl: CPU 2 not disabled\n' in err, err
    assert 'nothing changed' in err, err
    assert [sim8.read_online(n) for n in (1, 2, 3)] == ['1'] * 3


def test_online_lost_mid_way_reports_enabled_cpus_too(tmp, sim8):
    for n in range(1, 8):
        sim8.write_online(n, '0')
    rc, out, err, _ = killed_mid_hotplug(tmp, sim8, 3, 'online', '1-4')
    assert (rc, out) == (64, 'CPU 1 enabled\nCPU 2 enabled\n'), (out, err)
    assert err.endswith('cpuhpctl: CPU 3 not enabled\ncpuhpctl: CPU 4 not enabled\n'), err
