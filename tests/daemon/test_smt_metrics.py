# SPDX-License-Identifier: LGPL-2.1-or-later
"""SMT control, metrics and STATUS= lines.

`cpuhpctl smt` on simulated trees with sibling threads (cpuhpd-simsysfs
--smt 2: CPUs 0-3, cores {0,2} and {1,3}), its refusals (notsupported,
forceoff, no smt/), its wait for leases; `cpuhpctl metrics` and
--metrics-file parsed with prometheus_client's text parser; the STATUS=
lines cpuhpd sends to $NOTIFY_SOCKET.  Ordering without sleeps: each
command returns after its answer, the metrics file is written before a
hotplug's answer goes out, and STATUS= datagrams are waited for."""
import json
import os
import select
import shutil
import signal
import socket
import subprocess

import pytest

import fixture

GUARD_S = fixture.GUARD_S

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # pragma: no cover - run.sh installs python3-prometheus-client
    text_string_to_metric_families = None

needs_prometheus = pytest.mark.skipif(
    text_string_to_metric_families is None,
    reason='python3-prometheus-client is not installed (apt-get install '
           'python3-prometheus-client): the metrics tests are skipped')


def ctl(daemon, *args, **kw):
    return subprocess.run([str(fixture.CPUHPCTL), '--socket', daemon.socket,
                           *(str(a) for a in args)],
                          capture_output=True, text=True, timeout=GUARD_S, **kw)


def sim_smt(tmp, *extra):
    return fixture.SimSysfs(tmp / 'sys', cpus='0-3', extra=extra)


def online_files(sim):
    return {n: sim.read_online(n) for n in (1, 2, 3)}


@pytest.fixture
def smt_daemon(tmp):
    sim = sim_smt(tmp, '--smt', '2')
    d = fixture.Daemon(tmp, sim.root, ['--metrics-file', str(tmp / 'cpuhpd.prom')]).start()
    d.sim = sim
    yield d
    d.stop_clean()


def test_simsysfs_writes_siblings_and_smt_files(tmp):
    sim = sim_smt(tmp, '--smt', '2')
    sib = {n: (sim.cpu / f'cpu{n}' / 'topology' / 'thread_siblings_list').read_text().strip()
           for n in range(4)}
    assert sib == {0: '0,2', 1: '1,3', 2: '0,2', 3: '1,3'}
    assert (sim.cpu / 'smt' / 'control').read_text() == 'on\n'
    assert (sim.cpu / 'smt' / 'active').read_text() == '1\n'
    r = subprocess.run([str(fixture.SIMSYSFS), '--cpus', '0-2', '--smt', '2',
                        str(tmp / 'odd')], capture_output=True, text=True)
    assert r.returncode == 2 and 'do not split into cores' in r.stderr


def test_smt_off_takes_the_siblings_offline_and_on_brings_them_back(smt_daemon):
    d, sim = smt_daemon, smt_daemon.sim
    r = ctl(d, 'smt', 'off')
    assert r.returncode == 0, r
    assert r.stdout.splitlines() == ['CPU 2 disabled', 'CPU 3 disabled', 'SMT control: off']
    assert online_files(sim) == {1: '1', 2: '0', 3: '0'}
    assert (sim.cpu / 'smt' / 'control').read_text().strip() == 'off'
    st = json.loads(ctl(d, '--json', 'status').stdout)
    assert st['smt_control'] == 'off' and st['online'] == [0, 1]
    assert 'smt:          control off' in ctl(d, 'status').stdout

    r = ctl(d, '--json', 'smt', 'on')
    assert r.returncode == 0, r
    out = json.loads(r.stdout)
    assert out['smt_control'] == 'on' and out['action'] == 'online'
    assert [(x['cpu'], x['ok'], x['changed']) for x in out['results']] == \
        [(2, True, True), (3, True, True)]
    assert online_files(sim) == {1: '1', 2: '1', 3: '1'}
    # Again: already there, nothing changed.
    r = ctl(d, 'smt', 'on')
    assert r.returncode == 0 and r.stdout.splitlines()[:2] == \
        ['CPU 2 is already enabled', 'CPU 3 is already enabled'], r


def test_smt_off_waits_for_leases_and_names_their_holders(smt_daemon):
    d, sim = smt_daemon, smt_daemon.sim
    hold = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', d.socket, 'hold',
                             '--who', 'sizer', '--why', 'sizing pools', '--',
                             'sh', '-c', 'echo ready; read x || true'],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert hold.stdout.readline() == 'ready\n'
        r = ctl(d, 'smt', '--timeout', '0', 'off')
        assert r.returncode == 75, r
        r = ctl(d, 'smt', '--timeout', '200', 'off')
        assert r.returncode == 75, r
        assert 'SMT off: timed out after 200 ms behind 1 lease' in r.stderr, r
        assert "sizer" in r.stderr and "'sizing pools'" in r.stderr, r
        assert online_files(sim) == {1: '1', 2: '1', 3: '1'}
        assert (sim.cpu / 'smt' / 'control').read_text().strip() == 'on'
    finally:
        hold.stdin.close()
        assert hold.wait(timeout=GUARD_S) == 0
    assert ctl(d, 'smt', 'off').returncode == 0
    assert online_files(sim) == {1: '1', 2: '0', 3: '0'}


@pytest.mark.parametrize('control,words', [
    ('notsupported', 'no SMT to control (smt/control says notsupported'),
    ('notimplemented', 'says notimplemented'),
    ('forceoff', 'forced off (smt/control says forceoff)'),
])
def test_smt_refused_by_the_machine_says_why_and_exits_1(tmp, control, words):
    sim = sim_smt(tmp, '--smt', '2', '--smt-control', control)
    d = fixture.Daemon(tmp, sim.root).start()
    try:
        for word in ('on', 'off'):
            r = ctl(d, 'smt', word)
            assert r.returncode == 1, r
            assert words in r.stderr and 'nothing was changed' in r.stderr, r
            assert 'admin group' not in r.stderr, r
        r = ctl(d, '--json', 'smt', 'off')
        out = json.loads(r.stdout)
        assert r.returncode == 1 and out['error'] == ('EPERM' if control == 'forceoff'
                                                      else 'ENODEV'), r
        assert json.loads(ctl(d, '--json', 'status').stdout)['smt_control'] == control
        assert online_files(sim) == {1: '1', 2: '1', 3: '1'}
        assert (sim.cpu / 'smt' / 'control').read_text().strip() == control
    finally:
        d.stop_clean()


def test_smt_on_a_tree_without_smt_control(daemon4):
    r = ctl(daemon4, 'smt', 'off')
    assert r.returncode == 1 and 'no devices/system/cpu/smt/control' in r.stderr, r
    st = json.loads(ctl(daemon4, '--json', 'status').stdout)
    assert st['smt_control'] is None and st['smt_active'] is False
    assert '(no smt/control' in ctl(daemon4, 'status').stdout


def test_smt_prints_the_state_callbacks_under_each_cpu_as_offline_does(smt_daemon):
    d = smt_daemon
    hook = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', d.socket, 'state', 'pool',
                             '--teardown', 'true', '--startup', 'true'],
                            stdout=subprocess.PIPE, text=True)
    try:
        # The startups for CPUs 0-3 at registration, then the line saying it is registered.
        # The startups' lines, then the registration's.
        fixture.read_until(hook.stdout, 'state pool registered')
        for word, verb, phase in (('off', 'disabled', 'teardown'), ('on', 'enabled', 'startup')):
            r = ctl(d, 'smt', word)
            assert r.returncode == 0, r
            lines = r.stdout.splitlines()
            assert [x for x in lines if not x.startswith('  ')] == \
                [f'CPU 2 {verb}', f'CPU 3 {verb}', f'SMT control: {word}'], r.stdout
            # Each CPU's line is followed by its callback's, as offline and online print them.
            for cpu in (2, 3):
                at = lines.index(f'CPU {cpu} {verb}')
                assert lines[at + 1].startswith(
                    f'  {phase} of state pool (pid {hook.pid}, cpuhpctl): '), r.stdout
    finally:
        hook.send_signal(signal.SIGTERM)
        hook.communicate(timeout=GUARD_S)


def test_smt_bad_command_lines(smt_daemon):
    d = smt_daemon
    for args, words in ((['forceoff'], 'add --force'), (['sideways'], 'none of on, off'),
                        ([], 'on, off or forceoff?'), (['on', 'off'], 'give one word'),
                        (['--timeout', 'x', 'on'], '--timeout wants a time such as 500ms')):
        r = ctl(d, 'smt', *args)
        assert r.returncode == 2 and words in r.stderr, (args, r)
    assert online_files(d.sim) == {1: '1', 2: '1', 3: '1'}
    assert 'forceoff' in ctl(d, 'smt', '--help').stdout


def test_smt_forceoff_with_force_then_every_change_is_refused(smt_daemon):
    d, sim = smt_daemon, smt_daemon.sim
    r = ctl(d, 'smt', '--force', 'forceoff')
    assert r.returncode == 0 and 'SMT control: forceoff' in r.stdout, r
    assert online_files(sim) == {1: '1', 2: '0', 3: '0'}
    r = ctl(d, 'smt', 'on')
    assert r.returncode == 1 and 'until reboot' in r.stderr, r
    assert online_files(sim) == {1: '1', 2: '0', 3: '0'}


def nobody_ok():
    return os.geteuid() == 0 and shutil.which('setpriv')


@pytest.mark.skipif(not nobody_ok(),
                    reason='needs root and setpriv to run cpuhpctl as nobody: skipped')
def test_smt_from_a_non_root_caller_is_refused_but_metrics_are_served(tmp):
    os.chmod(tmp, 0o755)
    sim = sim_smt(tmp, '--smt', '2')
    d = fixture.Daemon(tmp, sim.root, ['--socket-mode', '0666']).start()
    try:
        r = subprocess.run(fixture.NOBODY + [str(fixture.CPUHPCTL), '--socket', d.socket,
                                             'smt', 'off'],
                           capture_output=True, text=True, timeout=GUARD_S)
        assert r.returncode == 1 and 'not allowed' in r.stderr, r
        assert online_files(sim) == {1: '1', 2: '1', 3: '1'}
        r = subprocess.run(fixture.NOBODY + [str(fixture.CPUHPCTL), '--socket', d.socket,
                                             'metrics'],
                           capture_output=True, text=True, timeout=GUARD_S)
        assert r.returncode == 0 and 'cpuhpd_errors_total{code="EPERM"} 1' in r.stdout, r
    finally:
        d.stop_clean()


def families(text):
    """name -> {frozenset(labels.items()): value} for every sample, through prometheus_client."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[frozenset(s.labels.items())] = s.value
    return out


def sample(fams, name, **labels):
    return fams[name][frozenset(labels.items())]


@needs_prometheus
def test_metrics_parse_and_count_what_happened(smt_daemon, tmp):
    d = smt_daemon
    prom = tmp / 'cpuhpd.prom'
    first = families(prom.read_text())          # written at start
    assert sample(first, 'cpuhpd_hotplugs_total', kind='cpus', result='ok') == 0
    assert sample(first, 'cpuhpd_cpus', state='online') == 4

    assert ctl(d, 'offline', '1').returncode == 0
    # Written before the answer: the file already counts it.
    f = families(prom.read_text())
    assert sample(f, 'cpuhpd_hotplugs_total', kind='cpus', result='ok') == 1
    assert ctl(d, 'smt', 'off').returncode == 0
    assert ctl(d, 'online', '1').returncode == 0
    hold = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', d.socket, 'hold', '--',
                             'sh', '-c', 'echo ready; read x || true'],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert hold.stdout.readline() == 'ready\n'
        r = ctl(d, 'offline', '--timeout', '50', '1')
        assert r.returncode == 75 and 'timed out after 50 ms' in r.stderr, r
        assert ctl(d, 'offline', '--timeout', '0', '1').returncode == 75
        f = families(ctl(d, 'metrics').stdout)
        assert sample(f, 'cpuhpd_leases_held', kind='fast') + \
            sample(f, 'cpuhpd_leases_held', kind='socket') == 1
    finally:
        hold.stdin.close()
        assert hold.wait(timeout=GUARD_S) == 0

    r = ctl(d, 'metrics')
    assert r.returncode == 0, r
    # The file too: every hotplug's end rewrote it, timeouts included.
    for text in (r.stdout, prom.read_text()):
        f = families(text)
        assert sample(f, 'cpuhpd_hotplugs_total', kind='cpus', result='ok') == 2
        assert sample(f, 'cpuhpd_hotplugs_total', kind='smt', result='ok') == 1
        assert sample(f, 'cpuhpd_hotplugs_total', kind='cpus', result='timeout') == 1
        assert sample(f, 'cpuhpd_hotplugs_total', kind='cpus', result='busy') == 1
        assert sample(f, 'cpuhpd_timeouts_total', request='hotplug') == 1
        assert sample(f, 'cpuhpd_errors_total', code='ETIMEDOUT') == 1
        # offline 1, smt off (2, 3), online 1: four CPUs changed.
        assert sample(f, 'cpuhpd_cpu_results_total', result='changed') == 4
        assert sample(f, 'cpuhpd_hotplug_duration_seconds_count') == 5
        assert sample(f, 'cpuhpd_writer_hold_seconds_count') == 3
        assert sample(f, 'cpuhpd_hotplug_duration_seconds_bucket', le='+Inf') == 5
        assert sample(f, 'cpuhpd_cpus', state='online') == 2
        assert sample(f, 'cpuhpd_smt_control', control='off') == 1
        assert sample(f, 'cpuhpd_leases_held', kind='socket') == 0
        assert sample(f, 'cpuhpd_freezes_held') == 0
        assert sample(f, 'cpuhpd_external_changes_total') == 0
    f = families(r.stdout)
    # The file was written before the last answer (an error) went out; the request sees it.
    assert sample(f, 'cpuhpd_errors_total', code='EAGAIN') == 1
    # cpuhpctl hold's lease (fast or socket) and cpuhpctl's own: the wait histogram
    # counts socket leases only; its buckets are cumulative.
    buckets = [v for k, v in sorted(f['cpuhpd_lease_wait_seconds_bucket'].items(),
                                    key=lambda kv: float(dict(kv[0])['le']))]
    assert buckets == sorted(buckets)
    assert buckets[-1] == sample(f, 'cpuhpd_lease_wait_seconds_count')
    assert 'process_start_time_seconds' in f and 'cpuhpd_uptime_seconds' not in f


@needs_prometheus
def test_metrics_count_external_changes(smt_daemon):
    d = smt_daemon
    probe = fixture.Probe(d.socket)
    try:
        probe.connect('w')
        probe.send('w', 'watch')
        assert probe.recv('w')['kind'] == 'watch_started'
        d.sim.write_online(1, 0)
        d.inject_uevent('offline', '/devices/system/cpu/cpu1')
        ev = probe.recv('w')
        assert ev['event'] == 'online_changed' and ev['external'], ev
    finally:
        probe.kill()
    f = families(ctl(d, 'metrics').stdout)
    assert sample(f, 'cpuhpd_external_changes_total') == 1
    assert sample(f, 'cpuhpd_cpus', state='online') == 3


def test_metrics_bad_command_line_and_unwritable_file(tmp, sim4):
    d = fixture.Daemon(tmp, sim4.root, ['--metrics-file', str(tmp / 'no' / 'such' / 'x.prom')]
                       ).start()
    try:
        r = ctl(d, 'metrics', 'extra')
        assert r.returncode == 2 and "unexpected argument 'extra'" in r.stderr, r
        assert ctl(d, 'metrics').returncode == 0
    finally:
        d.stop_clean()
    assert 'cannot write --metrics-file' in d.log()
    r = subprocess.run([str(fixture.CPUHPD), '--metrics-interval', 'soon'],
                       capture_output=True, text=True, timeout=GUARD_S)
    assert r.returncode != 0 and "--metrics-interval: invalid value 'soon'" in r.stderr, r


def test_status_lines_go_to_notify_socket(tmp, sim4):
    """STATUS= tells what the daemon is doing: leases held, a hotplug waiting."""
    notify_path = str(tmp / 'status.sock')
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    d = fixture.Daemon(tmp, sim4.root)
    log = open(d.logpath, 'ab')
    d.proc = subprocess.Popen(d.argv(), stderr=log, env=dict(os.environ, NOTIFY_SOCKET=notify_path))
    log.close()

    def until(pred):
        while True:
            ready, _, _ = select.select([notify], [], [], GUARD_S)
            assert ready, f'no STATUS= line matched in {GUARD_S} s:\n{d.log()}'
            msg = notify.recv(4096).decode()
            if msg.startswith('STATUS=') and pred(msg[7:]):
                return msg[7:]

    hold = offline = None
    try:
        until(lambda s: s.startswith('0 leases held; no hotplug pending'))
        hold = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', d.socket, 'hold',
                                 '--', 'sh', '-c', 'echo ready; read x || true'],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                env=dict(os.environ, CPUHP_CLIENT_FAST_PATH='0'))
        assert hold.stdout.readline() == 'ready\n'
        until(lambda s: s.startswith('1 lease held'))
        offline = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', d.socket, 'offline',
                                    '--timeout', str(GUARD_S * 1000), '1'],
                                   stdout=subprocess.PIPE, text=True)
        assert until(lambda s: 'waiting' in s) == '1 lease held; hotplug #1 waiting for them'
        hold.stdin.close()
        assert hold.wait(timeout=GUARD_S) == 0
        assert offline.wait(timeout=GUARD_S) == 0
        until(lambda s: s.startswith('0 leases held; no hotplug pending'))
    finally:
        for p in (hold, offline):
            if p and p.poll() is None:
                p.kill()
        notify.close()
        d.stop_clean()


def test_set_smt_bad_input_and_refusals_on_the_wire(smt_daemon):
    """What the daemon itself answers, whatever a client sends."""
    d, sim = smt_daemon, smt_daemon.sim
    p = fixture.Probe(d.socket)
    try:
        p.connect('a')
        for word in ('-', 'sideways', 'ON', 'offf', 'long'):
            r = p.call('a', 'smt', word, 0)
            assert fixture.error_code(r) == 'ERR_EINVAL' and 'none of on, off, forceoff' in \
                r['message'], (word, r)
        r = p.call('a', 'smt', 'off', 1000)
        assert r['kind'] == 'smt' and r['control'] == 'off' and r['online'] == '0-1', r
        assert [(x['cpu'], x['ok'], x['changed']) for x in r['results']] == \
            [(2, True, True), (3, True, True)], r
        # A "try" behind our own lease: EAGAIN, nothing changed.
        lease = p.lease('a')
        r = p.call('a', 'smt', 'on', 0)
        assert fixture.error_code(r) == 'ERR_EAGAIN', r
        assert p.call('a', 'release', lease)['kind'] == 'lease_released'
        assert online_files(sim) == {1: '1', 2: '0', 3: '0'}
        r = p.call('a', 'metrics')
        assert r['kind'] == 'metrics' and r['text'].startswith('# HELP '), r
        assert 'cpuhpd_hotplugs_total{kind="smt",result="busy"} 1' in r['text']
        assert 'cpuhpd_errors_total{code="EINVAL"} 5' in r['text']
    finally:
        p.kill()


@pytest.mark.skipif(not nobody_ok(),
                    reason='needs root and setpriv to run a client as nobody: skipped')
def test_set_smt_from_nobody_on_the_wire_is_eperm(tmp):
    os.chmod(tmp, 0o755)
    sim = sim_smt(tmp, '--smt', '2')
    d = fixture.Daemon(tmp, sim.root, ['--socket-mode', '0666']).start()
    p = fixture.Probe(d.socket, fixture.NOBODY)
    try:
        p.connect('n')
        r = p.call('n', 'smt', 'off', 1000)
        assert fixture.error_code(r) == 'ERR_EPERM' and 'not allowed' in r['message'], r
        assert p.call('n', 'metrics')['kind'] == 'metrics'
        assert online_files(sim) == {1: '1', 2: '1', 3: '1'}
    finally:
        p.kill()
        d.stop_clean()
