# SPDX-License-Identifier: LGPL-2.1-or-later
"""cpuhpctl against a private cpuhpd on a simulated tree of CPUs 0-3 (CPU 0
not hotpluggable): chcpu-like lines and exit codes (0 done, 1 failed, 64
partly, 69 unreachable, 75 timed out, 2 usage), hold's lease and exit
status, watch's lines.

Nothing sleeps: a command that must run while a lease is held runs inside
`cpuhpctl hold`, or behind a lease a probe holds; a hotplug that must wait
for a lease to vanish is given a long timeout and simply finishes once the
lease goes."""
import ctypes
import json
import os
import select
import signal
import subprocess

import pytest

import fixture

GUARD_S = fixture.GUARD_S


def ctl(daemon, *args, **kw):
    """Run cpuhpctl on the test's daemon; Return: the CompletedProcess."""
    return subprocess.run([str(fixture.CPUHPCTL), '--socket', daemon.socket,
                           *(str(a) for a in args)],
                          capture_output=True, text=True, timeout=GUARD_S, **kw)


def status(daemon):
    r = ctl(daemon, 'status')
    assert r.returncode == 0, r
    return dict((k.strip(), v.strip()) for k, v in
                (line.split(':', 1) for line in r.stdout.splitlines()))


def test_status_prints_masks_leases_and_writer(daemon4, probe):
    probe.connect('a')
    probe.lease('a')
    s = status(daemon4)
    assert s['online'] == '0-3' and s['offline'] == '(none)', s
    assert s['possible'] == '0-3' and s['present'] == '0-3', s
    assert s['leases held'] == '1' and s['writer'] == 'idle', s


def test_offline_and_online_print_one_line_per_cpu_and_exit_0(daemon4, sim4):
    r = ctl(daemon4, 'offline', '2-3')
    assert (r.returncode, r.stdout) == (0, 'CPU 2 disabled\nCPU 3 disabled\n'), r
    assert sim4.read_online(2) == '0' and sim4.read_online(3) == '0'
    r = ctl(daemon4, 'offline', '2')
    assert (r.returncode, r.stdout) == (0, 'CPU 2 is already disabled\n'), r
    r = ctl(daemon4, 'online', '1-3')
    assert r.returncode == 0, r
    assert r.stdout == 'CPU 1 is already enabled\nCPU 2 enabled\nCPU 3 enabled\n', r
    assert status(daemon4)['online'] == '0-3'


@pytest.mark.parametrize('stride', ['1-3:2', '1-3:1/2'])
def test_a_stride_list_is_read_by_libcpuhps_parser(daemon4, sim4, stride):
    r = ctl(daemon4, 'offline', stride)
    assert (r.returncode, r.stdout) == (0, 'CPU 1 disabled\nCPU 3 disabled\n'), r
    assert [sim4.read_online(n) for n in (1, 2, 3)] == ['0', '1', '0']


def test_some_cpus_failing_exits_64_and_says_which(daemon4, sim4):
    r = ctl(daemon4, 'offline', '3,7')
    assert r.returncode == 64, r
    assert r.stdout == 'CPU 3 disabled\n', r
    assert r.stderr == 'cpuhpctl: CPU 7 does not exist\n', r
    assert sim4.read_online(3) == '0'


def test_every_cpu_failing_exits_1(daemon4):
    r = ctl(daemon4, 'offline', '0')
    assert r.returncode == 1, r
    assert r.stderr == 'cpuhpctl: CPU 0 is not hot pluggable\n', r


def test_timeout_behind_a_lease_exits_75_and_changes_nothing(daemon4, sim4, probe):
    probe.connect('a')
    probe.lease('a')
    for timeout in ('0', '50'):
        r = ctl(daemon4, 'offline', '--timeout', timeout, '2')
        assert r.returncode == 75, r
        assert '--timeout' in r.stderr, r
        assert sim4.read_online(2) == '1'
    assert status(daemon4)['writer'] == 'idle'


def test_unreachable_daemon_exits_69_and_says_what_to_check(tmp):
    missing = tmp / 'no-such.sock'
    r = subprocess.run([str(fixture.CPUHPCTL), '--socket', str(missing), 'status'],
                       capture_output=True, text=True, timeout=GUARD_S)
    assert r.returncode == 69, r
    assert str(missing) in r.stderr and 'is cpuhpd running' in r.stderr, r
    # CPUHP_SOCKET is the default's override.
    r = subprocess.run([str(fixture.CPUHPCTL), 'hold', '--', 'true'],
                       capture_output=True, text=True, timeout=GUARD_S,
                       env=dict(os.environ, CPUHP_SOCKET=str(missing)))
    assert r.returncode == 69 and str(missing) in r.stderr, r


def test_cpuhp_socket_env_selects_the_daemon(daemon4):
    r = subprocess.run([str(fixture.CPUHPCTL), 'status'], capture_output=True, text=True,
                       timeout=GUARD_S, env=dict(os.environ, CPUHP_SOCKET=daemon4.socket))
    assert r.returncode == 0 and 'online:' in r.stdout, r


@pytest.mark.parametrize('args', [
    [], ['frobnicate'], ['online'], ['online', '2-'], ['offline', '3-1'], ['offline', '1', '2'],
    ['offline', '0-7:0'], ['offline', '0-7:3/2'], ['offline', ':2'],
    ['online', '--timeout', 'soon', '1'], ['online', '--timeout', '-1', '1'], ['hold'],
    ['watch', '--count', '0'], ['status', 'extra'], ['--bogus', 'status'],
])
def test_bad_command_lines_exit_2_before_connecting(tmp, args):
    # The socket does not exist: exit 2, not 69, proves nothing connected.
    r = subprocess.run([str(fixture.CPUHPCTL), '--socket', str(tmp / 'none'), *args],
                       capture_output=True, text=True, timeout=GUARD_S)
    assert r.returncode == 2, r
    assert r.stderr, r


@pytest.mark.parametrize('args, message', [
    (['--bogus', 'status'], "cpuhpctl: unrecognized option '--bogus'"),
    (['-x'], "cpuhpctl: invalid option -- 'x'"),
    (['--help=1'], "cpuhpctl: option '--help' takes no value"),
    (['offline', '--bogus', '1'], "cpuhpctl offline: unrecognized option '--bogus'"),
    (['online', '-q', '1'], "cpuhpctl online: invalid option -- 'q'"),
    (['online', '--timeout=5', '-qt', '5', '1'], "cpuhpctl online: invalid option -- 'q'"),
    (['--sysfs-root'], "cpuhpctl: option '--sysfs-root' needs an argument"),
    (['offline', '--timeout'], "cpuhpctl offline: option '--timeout' needs an argument"),
    (['hold', '-t'], 'cpuhpctl hold: option -t needs an argument'),
    (['watch', '--count'], "cpuhpctl watch: option '--count' needs an argument"),
    (['status', '-z'], "cpuhpctl status: invalid option -- 'z'"),
    ([], 'cpuhpctl: which command? (status, leases, cpus, states, state, online, offline, smt, watch, hold, freeze, metrics)'),
    (['frobnicate'], "cpuhpctl: unknown command 'frobnicate'"),
])
def test_a_bad_option_is_named_with_the_program_and_a_one_line_hint(tmp, args, message):
    r = subprocess.run([str(fixture.CPUHPCTL), '--socket', str(tmp / 'none'), *args],
                       capture_output=True, text=True, timeout=GUARD_S)
    cmd = ' ' + args[0] if args and args[0] in ('offline', 'online', 'hold', 'watch',
                                                'status') else ''
    assert r.returncode == 2, r
    # Not getopt's message under argv[0] (a path here), and not the whole usage.
    assert r.stderr.splitlines() == [message, f"Try 'cpuhpctl{cmd} --help'."], r.stderr


@pytest.mark.parametrize('cmd', ['offline', 'online'])
def test_a_cpu_beyond_the_limit_is_out_of_range_not_a_bad_list(tmp, cmd):
    r = subprocess.run([str(fixture.CPUHPCTL), '--socket', str(tmp / 'none'), cmd, '9999'],
                       capture_output=True, text=True, timeout=GUARD_S)
    assert r.returncode == 2, r
    # As Python's parse_cpulist() says it.
    assert r.stderr == (f"cpuhpctl {cmd}: CPU list '9999' is out of range: CPU numbers and "
                        'strides are below 8192\n'), r.stderr


def test_timeout_0_is_accepted_and_fails_at_once_only_if_something_is_in_the_way(daemon4, sim4,
                                                                               probe):
    r = ctl(daemon4, 'offline', '--timeout', '0', '2')
    assert (r.returncode, r.stdout) == (0, 'CPU 2 disabled\n'), r
    r = ctl(daemon4, 'hold', '--timeout', '0', '--', 'true')
    assert r.returncode == 0, r
    probe.connect('a')
    probe.lease('a')
    r = ctl(daemon4, 'online', '-t', '0', '2')
    assert r.returncode == 75 and sim4.read_online(2) == '0', r
    assert r.stderr.startswith('cpuhpctl: online 2: '), r.stderr


@pytest.mark.parametrize('args', [
    ['--help'], ['help'], ['status', '--help'], ['online', '--help'], ['offline', '-h'],
    ['watch', '--help'], ['hold', '--help'], ['freeze', '--help'], ['leases', '--help'],
])
def test_help_on_the_program_and_every_command(tmp, args):
    r = subprocess.run([str(fixture.CPUHPCTL), '--socket', str(tmp / 'none'), *args],
                       capture_output=True, text=True, timeout=GUARD_S)
    assert r.returncode == 0 and r.stdout.startswith('Usage: cpuhpctl'), r


def project_version():
    import json
    info = json.loads((fixture.BUILD / 'meson-info' / 'intro-projectinfo.json').read_text())
    return info['version']


@pytest.mark.parametrize('opt', ['--version', '-V'])
def test_version_prints_the_project_version_and_needs_no_daemon(tmp, opt):
    r = subprocess.run([str(fixture.CPUHPCTL), '--socket', str(tmp / 'none'), opt],
                       capture_output=True, text=True, timeout=GUARD_S)
    assert r.returncode == 0 and r.stdout == f'cpuhpctl {project_version()}\n', r
    assert r.stderr == '', r


def test_hold_keeps_a_lease_while_cmd_runs_and_exits_with_its_status(daemon4, sim4):
    # Inside the hold: one lease, and a try-offline is refused (75).
    script = (f'"{fixture.CPUHPCTL}" --socket "{daemon4.socket}" status | grep "leases held" '
              f'&& "{fixture.CPUHPCTL}" --socket "{daemon4.socket}" offline --timeout 0 2; '
              'echo "offline=$?"; exit 3')
    r = ctl(daemon4, 'hold', '--', 'sh', '-c', script)
    assert r.returncode == 3, r
    assert 'leases held:  1' in r.stdout and 'offline=75' in r.stdout, r
    assert sim4.read_online(2) == '1'
    assert status(daemon4)['leases held'] == '0'


def test_hold_reports_a_killed_or_missing_cmd_like_a_shell(daemon4):
    r = ctl(daemon4, 'hold', '--', 'sh', '-c', 'kill -TERM $$')
    assert r.returncode == 128 + signal.SIGTERM, r
    r = ctl(daemon4, 'hold', '--', str(fixture.SOURCE / 'no-such-command'))
    assert r.returncode == 127 and 'cannot run' in r.stderr, r
    assert status(daemon4)['leases held'] == '0'


def test_hold_behind_a_waiting_hotplug_times_out_with_75(daemon4, probe):
    for n in 'ah':
        probe.connect(n)
    lease = probe.lease('a')
    probe.send('h', 'offline', 2, 60000)
    assert probe.status('h')['writer'] == 'WRITER_WAITING'
    r = ctl(daemon4, 'hold', '--timeout', '0', '--', 'true')
    assert r.returncode == 75, r
    probe.call('a', 'release', lease)
    assert probe.recv('h')['kind'] == 'set_online'


def test_hold_lease_ends_when_cpuhpctl_is_killed(daemon4, sim4):
    # CMD waits on its stdin; "held" on its stdout says the lease is taken.
    p = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon4.socket, 'hold', '--',
                          'sh', '-c', 'echo held; read x'],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == 'held\n'
        assert status(daemon4)['leases held'] == '1'
        p.kill()
        p.wait(timeout=GUARD_S)
        # The hotplug waits for the lease, which dies with cpuhpctl's connection.
        r = ctl(daemon4, 'offline', '--timeout', '60000', '2')
        assert r.returncode == 0 and r.stdout == 'CPU 2 disabled\n', r
    finally:
        p.stdin.close()  # lets the orphaned sh exit
        p.stdout.close()
        if p.poll() is None:
            p.kill()
            p.wait()


def test_hold_cmd_gets_sigterm_when_cpuhpctl_is_sigkilled(daemon4):
    # The test process becomes the orphaned CMD's parent (a subreaper), so
    # that it can wait for CMD and see which signal ended it.
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_CHILD_SUBREAPER = 36
    assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0, os.strerror(ctypes.get_errno())
    p = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon4.socket, 'hold', '--',
                          'sh', '-c', 'echo $$; exec cat'],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        cmd = int(p.stdout.readline())   # cat's pid, once the lease is held
        assert status(daemon4)['leases held'] == '1'
        pidfd = os.pidfd_open(cmd)
        p.kill()
        p.wait(timeout=GUARD_S)
        # Without PR_SET_PDEATHSIG, cat would read its open stdin for ever.
        ready, _, _ = select.select([pidfd], [], [], GUARD_S)
        os.close(pidfd)
        assert ready, 'CMD ran on after cpuhpctl, and its lease, died'
        _, st = os.waitpid(cmd, 0)
        assert os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGTERM, st
        assert status(daemon4)['leases held'] == '0'
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        p.stdin.close()
        p.stdout.close()
        if p.poll() is None:
            p.kill()
            p.wait()


def test_watch_prints_the_events_of_a_hotplug(daemon4):
    p = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon4.socket, 'watch',
                          '--count', '3'], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == 'watching cpuhpd events\n'
        r = ctl(daemon4, 'offline', '3')
        assert r.returncode == 0, r
        lines = {p.stdout.readline() for _ in range(3)}
        assert lines == {'hotplug started: offline 3\n', 'hotplug finished: offline 3: ok\n',
                         'online changed: 0-2\n'}, lines
        assert p.wait(timeout=GUARD_S) == 0
    finally:
        p.stdout.close()
        if p.poll() is None:
            p.kill()
            p.wait()


# --- options: anywhere on the line, one meaning per letter, times with units ---


def test_options_may_follow_the_cpu_list_as_getopt_long_programs_take_them(daemon4, sim4,
                                                                           probe):
    r = ctl(daemon4, 'offline', '3', '--timeout', '2000')
    assert (r.returncode, r.stdout) == (0, 'CPU 3 disabled\n'), r
    r = ctl(daemon4, 'online', '3', '-t', '2s', '--json')
    assert r.returncode == 0 and json.loads(r.stdout)['action'] == 'online', r
    probe.connect('a')
    probe.lease('a')
    r = ctl(daemon4, 'offline', '2', '-t', '0')
    assert r.returncode == 75 and sim4.read_online(2) == '1', r
    # hold's options end at CMD: what follows is CMD's.
    r = ctl(daemon4, 'hold', '--timeout', '0', 'sh', '-c', 'echo "$0 $1"', '--timeout', '5')
    assert (r.returncode, r.stdout) == (0, '--timeout 5\n'), r


@pytest.mark.parametrize('timeout, ms', [('50', 50), ('50ms', 50), ('0.05s', 50),
                                         ('.05s', 50), ('1s', 1000), ('0.5s', 500)])
def test_a_timeout_takes_a_unit_and_a_bare_number_is_milliseconds(daemon4, probe, timeout, ms):
    probe.connect('a')
    probe.lease('a')
    r = ctl(daemon4, 'offline', '--timeout', timeout, '2')
    assert r.returncode == 75, r
    assert f'timed out after {ms} ms behind 1 lease' in r.stderr, r


@pytest.mark.parametrize('args, words', [
    (['offline', '--timeout', '5x', '1'], "--timeout wants a time such as 500ms, 5s or 2m"),
    (['offline', '--timeout', '0.5ms', '1'], "--timeout '0.5ms' is not a whole number of ms"),
    (['offline', '--timeout', '50d', '1'], "--timeout wants a time"),
    (['offline', '--timeout', '2000h', '1'], "--timeout '2000h' is out of range"),
    (['hold', '--grace', '-1', '--', 'true'], "--grace wants a time"),
    (['state', 'x', '--deadline', '11m', '--startup', 'true'],
     "--deadline '11m' is out of range: 1ms to 10m00s"),
])
def test_a_bad_time_is_a_usage_error(tmp, args, words):
    r = subprocess.run([str(fixture.CPUHPCTL), '--socket', str(tmp / 'none'), *args],
                       capture_output=True, text=True, timeout=GUARD_S)
    assert r.returncode == 2 and words.replace(' of ms', ' of milliseconds') in r.stderr, r


def test_times_with_units_reach_every_option_that_takes_one(daemon4, sim4):
    # --deadline 1.5s: the state lists 1500 ms; --grace and hold's --timeout parse too.
    hook = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon4.socket, 'state', 'pool',
                             '-N', '--deadline', '1.5s', '-T', 'true'],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert hook.stdout.readline().startswith('state pool registered')
        [s] = json.loads(ctl(daemon4, 'states', '-J').stdout)['states']
        assert s['deadline_ms'] == 1500, s
    finally:
        hook.send_signal(signal.SIGINT)
        hook.communicate(timeout=GUARD_S)
    r = ctl(daemon4, 'hold', '--timeout', '2s', '--strict', '--grace', '100ms', '--', 'true')
    assert r.returncode == 0, r


def test_each_letter_means_one_thing_and_the_old_spellings_still_work(daemon4, sim4, probe):
    # -n is --noheadings for the listings; watch's --count is -c, state's --nocalls -N,
    # state's --teardown -T (-t is --timeout wherever it is taken).
    for cmd in ('leases', 'states'):
        r = ctl(daemon4, cmd, '-n')
        assert (r.returncode, r.stdout) == (0, ''), r   # no heading, no row
    for count, nocalls, teardown in (('-c', '-N', '-T'), ('-n', '-n', '-t')):
        w = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon4.socket, 'watch',
                              count, '1'], stdout=subprocess.PIPE, text=True)
        hook = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon4.socket, 'state',
                                 'pool', nocalls, teardown, 'echo torn down $1'],
                                stdout=subprocess.PIPE, text=True)
        try:
            assert w.stdout.readline() == 'watching cpuhpd events\n'
            # --nocalls: no startup line before the registration's.
            assert hook.stdout.readline().startswith('state pool registered'), count
            assert ctl(daemon4, 'offline', 3).returncode == 0
            assert hook.stdout.readline() == 'torn down 3\n'
            assert w.wait(timeout=GUARD_S) == 0 and len(w.stdout.read().splitlines()) == 1
            assert ctl(daemon4, 'online', 3).returncode == 0
        finally:
            hook.send_signal(signal.SIGINT)
            hook.communicate(timeout=GUARD_S)
            w.stdout.close()
    for cmd in ('leases', 'states'):
        assert json.loads(ctl(daemon4, cmd, '-J').stdout) == \
            json.loads(ctl(daemon4, cmd, '-j').stdout)


# --- --json: an object whatever happens, or a clear refusal ---


@pytest.mark.parametrize('args', [
    ['--json', 'offline'], ['offline', '--bogus', '1', '--json'], ['-J', 'frobnicate'],
    ['--json', 'online', '--timeout', 'soon', '1'], ['leases', '-o', 'NOPE', '-J'],
    ['--json', 'metrics'], ['metrics', '-J'], ['--json', 'hold', '--', 'true'],
    ['freeze', '-J', '--', 'true'], ['--json', 'state', 'x', '-T', 'true'],
    ['--json', 'smt', 'forceoff'],
])
def test_a_json_usage_error_is_an_error_object_on_stdout(tmp, args):
    r = subprocess.run([str(fixture.CPUHPCTL), '--socket', str(tmp / 'none'), *args],
                       capture_output=True, text=True, timeout=GUARD_S)
    assert r.returncode == 2, r
    out = json.loads(r.stdout)
    assert out['error'] == 'EINVAL' and out['message'] and r.stderr, r
    assert out['message'] in r.stderr, r   # the same words for a person


@pytest.mark.parametrize('cmd', [['status'], ['leases'], ['states'], ['offline', '1'],
                                 ['smt', 'off'], ['watch']])
def test_an_unreachable_daemon_is_an_error_object_on_stdout(tmp, cmd):
    r = subprocess.run([str(fixture.CPUHPCTL), '--socket', str(tmp / 'none.sock'), *cmd,
                        '--json'], capture_output=True, text=True, timeout=GUARD_S)
    assert r.returncode == 69, r
    out = json.loads(r.stdout)
    assert out['error'] == 'ENOENT' and str(tmp / 'none.sock') in out['message'], out


def test_json_refused_by_commands_without_it_says_what_to_use(tmp):
    for cmd, words in ((['metrics'], 'Prometheus text'), (['hold', '--', 'true'], "CMD's output"),
                       (['freeze', '--', 'true'], "CMD's output"),
                       (['state', 'x', '-T', 'true'], 'one line per call')):
        r = subprocess.run([str(fixture.CPUHPCTL), '--socket', str(tmp / 'none'), '--json',
                            *cmd], capture_output=True, text=True, timeout=GUARD_S)
        assert r.returncode == 2 and words in r.stderr, r


def test_online_is_the_online_cpus_in_every_json_output(daemon4):
    w = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon4.socket, 'watch', '--json',
                          '--count', '3'], stdout=subprocess.PIPE, text=True)
    try:
        assert json.loads(w.stdout.readline()) == {'event': 'watching'}
        r = ctl(daemon4, '--json', 'offline', '2')
        events = [json.loads(line) for line in w.stdout]
        assert w.wait(timeout=GUARD_S) == 0
    finally:
        w.kill()
        w.stdout.close()
    res = json.loads(r.stdout)
    assert res['action'] == 'offline' and 'online' not in res, res
    assert [e.get('action') for e in events] == ['offline', 'offline', None], events
    assert events[2] == {'event': 'online_changed', 'online': [0, 1, 3], 'external': False}
    assert json.loads(ctl(daemon4, '--json', 'status').stdout)['online'] == [0, 1, 3]
