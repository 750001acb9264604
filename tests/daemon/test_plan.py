# SPDX-License-Identifier: LGPL-2.1-or-later
"""cpuhpd's declared plan (cpuhpd.conf(5)): offline-cpus, smt and
online-new-cpus, from the main file and its drop-ins, kept by hotplugs in
cpuhpd's own name: at start before the first lease, after every change
behind its back (counted, logged, undone after a doubling backoff), and
changed by `cpuhpctl ... --persist` (a drop-in written by rename).  A
hot-added CPU comes online through cpuhpd's queue and the hotplug states.

Every wait is for an event (a lease granted behind the plan's hotplug, a
watcher's hotplug_finished, a state call); the only look that polls is for
a SIGHUP's reload, which answers nobody, and it is bounded by GUARD_S."""
import json
import os
import signal
import subprocess
import time

import pytest

import fixture
from test_states import expect_call, register


def cpuhpctl(d, *args):
    return subprocess.run([str(fixture.CPUHPCTL), '--socket', d.socket, *map(str, args)],
                          capture_output=True, text=True, timeout=fixture.GUARD_S)


def plan(d):
    r = cpuhpctl(d, '--json', 'plan')
    assert r.returncode == 0, r
    return json.loads(r.stdout)


def setting(p, key):
    return next(s for s in p['settings'] if s['key'] == key)


class Machine:
    """A simulated tree, the plan's files in the test's directory, a cpuhpd on them."""

    def __init__(self, tmp, cpus='0-3', conf='', dropins=None, extra=(), args=()):
        self.tmp = tmp
        self.sim = fixture.SimSysfs(tmp / 'sys', cpus=cpus, extra=extra)
        self.conf = tmp / 'cpuhpd.conf'
        self.dropdir = tmp / 'cpuhpd.conf.d'
        self.conf.write_text(conf)
        for name, text in (dropins or {}).items():
            self.dropdir.mkdir(exist_ok=True)
            (self.dropdir / name).write_text(text)
        self.args = ['--config', str(self.conf), *args]
        self.d = None
        self.probe = None

    def start(self):
        self.d = fixture.Daemon(self.tmp, self.sim.root, args=self.args).start()
        self.probe = fixture.Probe(self.d.socket)
        return self

    def settle(self):
        """A lease granted: every hotplug queued before it (the plan's at start) is done."""
        self.probe.connect('settle')
        lid = self.probe.lease('settle', 10000)
        r = self.probe.call('settle', 'release', lid)
        assert r['kind'] == 'lease_released', r
        self.probe.call('settle', 'close')

    def watch(self):
        self.probe.connect('w')
        self.probe.send('w', 'watch')
        assert self.probe.recv('w')['kind'] == 'watch_started'

    def next_finished(self):
        """The watcher's next hotplug_finished (what came before it: in the log)."""
        while True:
            ev = self.probe.recv('w')
            if ev.get('event') == 'hotplug_finished':
                return ev

    def behind_its_back(self, cpu, value):
        self.sim.write_online(cpu, value)
        self.d.inject_uevent('online' if value else 'offline', f'/devices/system/cpu/cpu{cpu}')

    def stop(self):
        if self.probe:
            self.probe.kill()
            self.probe = None
        if self.d:
            self.d.stop_clean()
            self.d = None


@pytest.fixture
def machines(tmp):
    made = []

    def make(**kw):
        m = Machine(tmp, **kw)
        made.append(m)
        return m
    yield make
    for m in made:
        m.stop()


def online(sim):
    return [n for n in range(len(list(sim.cpu.glob('cpu[0-9]*'))))
            if not sim.online_file(n).exists() or sim.read_online(n) == '1']


def test_the_plan_is_in_force_before_the_first_lease(machines):
    m = machines(conf='offline-cpus = 2-3\n').start()
    m.settle()
    assert online(m.sim) == [0, 1]
    p = plan(m.d)
    assert p['offline_cpus'] == [2, 3] and p['in_force'] and p['hotplugs'] == 1, p
    assert setting(p, 'offline-cpus')['source'] == f'{m.conf}:1'
    assert 'hotplug #1: cpuhpd itself (plan) asks CPUs 2-3 offline' in m.d.log()


def test_a_later_drop_in_wins_and_the_log_says_what_it_overrode(machines):
    m = machines(conf='offline-cpus = 2\nsmt =\n',
                 dropins={'10-a.conf': 'offline-cpus = 3\n', 'notes.txt': 'offline-cpus = 1\n'}
                 ).start()
    m.settle()
    assert online(m.sim) == [0, 1, 2]
    s = setting(plan(m.d), 'offline-cpus')
    assert s['value'] == '3' and s['source'] == f'{m.dropdir}/10-a.conf:1', s
    assert s['overridden'] == f'{m.conf}:1 (2)', s
    assert (f'plan: offline-cpus = 3 ({m.dropdir}/10-a.conf:1) overrides offline-cpus = 2 '
            f'({m.conf}:1)') in m.d.log()


def test_a_file_that_does_not_parse_is_left_out_whole_at_start(machines):
    m = machines(conf='offline-cpus = 3\n',
                 dropins={'20-bad.conf': 'offline-cpus = 1\nsmt = maybe\n'}).start()
    m.settle()
    assert online(m.sim) == [0, 1, 2]    # 20-bad.conf's offline-cpus = 1 did not count
    p = plan(m.d)
    assert f'{m.dropdir}/20-bad.conf:2' in p['errors'], p
    assert setting(p, 'offline-cpus')['value'] == '3'


def wait_plan(d, pred):
    """Poll GetPlan until @pred holds (a SIGHUP answers nobody); bounded by GUARD_S."""
    end = time.monotonic() + fixture.GUARD_S
    while time.monotonic() < end:
        p = plan(d)
        if pred(p):
            return p
    raise AssertionError(f'the plan never got there: {p}')


def test_a_reload_takes_a_good_change_and_keeps_the_plan_against_a_bad_one(machines):
    m = machines(conf='offline-cpus = 3\n').start()
    m.settle()
    m.watch()
    m.conf.write_text('offline-cpus = 2-3\n')
    m.d.send_signal(signal.SIGHUP)
    ev = m.next_finished()
    assert (ev['cpus'], ev['online'], ev['ok']) == ('2', False, True), ev
    m.conf.write_text('offline-cpus = 1-\n')
    m.d.send_signal(signal.SIGHUP)
    p = wait_plan(m.d, lambda p: p['reload_error'])
    assert f'{m.conf}:1' in p['reload_error'] and p['offline_cpus'] == [2, 3], p
    assert 'the plan in force stays' in m.d.log()


def test_a_change_behind_cpuhpds_back_is_counted_logged_and_undone(machines):
    m = machines(conf='offline-cpus = 2\n').start()
    m.settle()
    m.watch()
    m.behind_its_back(2, 1)
    ev = m.next_finished()
    assert (ev['cpus'], ev['online'], ev['ok']) == ('2', False, True), ev
    assert m.sim.read_online(2) == '0'
    p = plan(m.d)
    assert p['conflicts'] == 1 and p['hotplugs'] == 2 and p['in_force'], p
    assert 'CPU 2 came online, but the plan keeps it offline' in p['last_conflict']
    assert "warning: plan contradicted behind cpuhpd's back: CPU 2 came online" in m.d.log()
    metrics = cpuhpctl(m.d, 'metrics').stdout.splitlines()
    assert 'cpuhpd_plan_conflicts_total 1' in metrics and 'cpuhpd_plan_hotplugs_total 2' in metrics


def test_a_writer_fighting_the_plan_meets_a_doubling_backoff_not_a_spin(machines):
    m = machines(conf='offline-cpus = 2\n').start()
    m.settle()
    m.watch()
    for _ in range(5):
        m.behind_its_back(2, 1)
        assert m.next_finished()['cpus'] == '2'
    log = m.d.log()
    waits = [line.split('applies the plan again in ')[1].split(',')[0]
             for line in log.splitlines() if 'applies the plan again in ' in line]
    assert waits == ['100 ms', '200 ms', '400 ms', '800 ms'], waits
    p = plan(m.d)
    # One hotplug for each conflict, and the one at start: never more.
    assert p['conflicts'] == 5 and p['hotplugs'] == 6 and p['streak'] == 5, p
    assert p['backoff_ms'] == 1600, p


def test_a_request_against_the_plan_is_refused_unless_it_persists(machines):
    m = machines(conf='offline-cpus = 2-3\n').start()
    m.settle()
    r = cpuhpctl(m.d, 'online', '2')
    assert r.returncode == 1, r
    assert f'offline-cpus = 2-3 ({m.conf}:1)' in r.stderr and '--persist' in r.stderr, r
    assert m.sim.read_online(2) == '0'
    r = cpuhpctl(m.d, 'online', '--persist', '2')
    assert r.returncode == 0, r
    assert m.sim.read_online(2) == '1' and m.sim.read_online(3) == '0'
    dropin = m.dropdir / '50-cpuhpctl.conf'
    assert 'offline-cpus = 3' in dropin.read_text().splitlines()
    assert [f.name for f in m.dropdir.iterdir()] == ['50-cpuhpctl.conf']  # no temporary left
    r = cpuhpctl(m.d, 'offline', '--persist', '1')
    assert r.returncode == 0 and m.sim.read_online(1) == '0', r
    assert setting(plan(m.d), 'offline-cpus')['value'] == '1,3'
    # The next cpuhpd (a reboot) reads it: CPU 1 and 3 kept offline, 2 left online.
    m.stop()
    for n in (1, 2, 3):
        m.sim.write_online(n, 1)
    m.start().settle()
    assert online(m.sim) == [0, 2]


def test_smt_persist_sets_the_plans_smt(machines):
    m = machines(cpus='0-3', extra=('--smt', '2'), conf='smt = on\n').start()
    m.settle()
    r = cpuhpctl(m.d, 'smt', 'off')
    assert r.returncode == 1 and 'smt = on' in r.stderr, r
    r = cpuhpctl(m.d, 'smt', '--persist', 'off')
    assert r.returncode == 0, r
    assert (m.sim.cpu / 'smt' / 'control').read_text().strip() == 'off'
    p = plan(m.d)
    assert p['smt'] == 'off' and setting(p, 'smt')['source'].endswith('50-cpuhpctl.conf:5'), p
    assert p['in_force'], p


def test_a_cpu_that_does_not_exist_or_cannot_go_is_reported_not_retried(machines):
    m = machines(conf='offline-cpus = 0,9\n').start()
    m.settle()
    p = plan(m.d)
    assert p['unknown'] == [9], p
    assert [q['cpu'] for q in p['problems']] == [0] and p['hotplugs'] <= 1, p
    tried = p['hotplugs']
    m.watch()
    m.behind_its_back(1, 0)     # any change makes cpuhpd look again
    m.behind_its_back(1, 1)
    m.settle()
    p = plan(m.d)
    assert p['hotplugs'] == tried and [q['cpu'] for q in p['problems']] == [0], p
    assert m.d.log().count('which this machine does not have') == 1


def test_a_temporary_file_left_by_a_crash_is_never_read(machines):
    """A crash while cpuhpd writes its drop-in leaves ".50-cpuhpctl.conf.XXXXXX",
    perhaps half written, beside the old file: the old file counts, not it."""
    m = machines(conf='', dropins={'50-cpuhpctl.conf': 'offline-cpus = 3\n',
                                   '.50-cpuhpctl.conf.Ab12Cd': 'offline-cpus = 1-'}).start()
    m.settle()
    p = plan(m.d)
    assert p['errors'] == '' and p['offline_cpus'] == [3], p
    assert '.50-cpuhpctl' not in p['files'], p


def hot_add_tree(sim):
    """CPUs 0-3 present and online, 4-5 possible only."""
    for n in (4, 5):
        sim.write_online(n, 0)
    (sim.cpu / 'online').write_text('0-3\n')
    (sim.cpu / 'present').write_text('0-3\n')


def hot_add(m, cpu, present):
    (m.sim.cpu / 'present').write_text(present + '\n')
    m.d.inject_uevent('add', f'/devices/system/cpu/cpu{cpu}')


def test_a_hot_added_cpu_comes_online_through_cpuhpd_and_the_states(machines):
    m = machines(cpus='0-5', conf='online-new-cpus = yes\noffline-cpus = 5\n')
    hot_add_tree(m.sim)
    m.start()
    assert (m.tmp / 'online-new-cpus').exists()     # for the udev rule
    m.probe.connect('s')
    register(m.probe, 's', 'pool', 10)
    hot_add(m, 4, '0-4')
    call = expect_call(m.probe, 's', cpu=4, phase='startup', external=False)
    assert m.sim.read_online(4) == '1'        # a startup runs with the CPU up
    m.probe.send('s', 'answer', call['call_id'], 'ok')
    m.settle()
    assert 'cpuhpd itself (new CPU) asks CPUs 4 online' in m.d.log()
    r = cpuhpctl(m.d, 'new-cpu', '4')
    assert r.returncode == 0 and r.stdout == 'CPU 4 online\n', r
    # A new CPU the plan keeps offline stays so, and new-cpu says why.
    hot_add(m, 5, '0-5')
    r = cpuhpctl(m.d, 'new-cpu', '5')
    assert r.returncode == 1 and 'the plan keeps it offline' in r.stderr, r
    assert m.sim.read_online(5) == '0'
    m.stop()
    assert not (m.tmp / 'online-new-cpus').exists()


def test_without_online_new_cpus_a_hot_added_cpu_stays_offline(machines):
    m = machines(cpus='0-5')
    hot_add_tree(m.sim)
    m.start()
    assert not (m.tmp / 'online-new-cpus').exists()
    m.watch()
    hot_add(m, 4, '0-4')
    assert m.probe.recv('w')['event'] == 'present_changed'
    r = cpuhpctl(m.d, 'new-cpu', '4')
    assert r.returncode == 1 and 'online-new-cpus is not yes' in r.stderr, r
    assert m.sim.read_online(4) == '0' and plan(m.d)['hotplugs'] == 0


def test_a_drop_in_that_cannot_be_written_fails_the_request_and_changes_nothing(machines):
    m = machines(conf='offline-cpus = 2\n')
    m.dropdir.write_text('not a directory\n')   # no drop-in can go there
    m.start().settle()
    r = cpuhpctl(m.d, 'online', '--persist', '2')
    assert r.returncode == 1 and str(m.dropdir) in r.stderr, r
    assert 'Not a directory; nothing was changed' in r.stderr, r
    assert m.sim.read_online(2) == '0' and setting(plan(m.d), 'offline-cpus')['value'] == '2'


def test_an_smt_setting_the_tree_cannot_take_is_reported_for_what_it_is(machines):
    m = machines(conf='smt = off\n').start()    # a tree without smt/
    m.settle()
    p = plan(m.d)
    assert 'has no devices/system/cpu/smt/control' in p['smt_problem'], p
    assert p['hotplugs'] == 0, p
    r = cpuhpctl(m.d, 'plan')
    assert 'cannot apply smt: this sysfs tree has no' in r.stdout, r
    assert 'differs: no SMT control (the plan: off);' in r.stdout, r


def test_persisting_a_cpu_this_machine_cannot_have_is_refused_and_writes_nothing(machines):
    m = machines().start()
    m.settle()
    r = cpuhpctl(m.d, 'offline', '--persist', '2,9')
    assert r.returncode == 1, r
    assert 'CPU 9 does not exist on this machine (possible: 0-3)' in r.stderr, r
    assert not m.dropdir.exists() and m.sim.read_online(2) == '1'


def test_a_freeze_holds_the_plans_hotplug_until_the_thaw(machines):
    """A freeze promises that nothing changes: cpuhpd's own hotplug waits for
    its end too, and comes then without another change to prompt it."""
    m = machines(conf='offline-cpus = 2\n').start()
    m.settle()
    m.watch()
    m.probe.connect('f')
    fr = m.probe.call('f', 'freeze', 'bench', 'latency-run')
    assert fr['kind'] == 'frozen', fr
    m.behind_its_back(2, 1)
    while (ev := m.probe.recv('w')).get('event') != 'online_changed':
        pass
    assert ev['external'] and m.sim.read_online(2) == '1', ev
    assert m.probe.call('f', 'thaw', fr['freeze_id'])['kind'] == 'thawed'
    ev = m.next_finished()
    assert (ev['cpus'], ev['online'], ev['ok']) == ('2', False, True), ev
    p = plan(m.d)
    assert p['conflicts'] == 1 and p['hotplugs'] == 2 and p['in_force'], p
    assert 'CPU hotplug is frozen by' in m.d.log()


def test_the_plans_hotplug_waits_for_leases_and_is_listed_as_cpuhpds_own(machines):
    m = machines(conf='offline-cpus = 2\n').start()
    m.settle()
    m.watch()
    m.probe.connect('r')
    lid = m.probe.lease('r')
    m.behind_its_back(2, 1)
    while (ev := m.probe.recv('w')).get('event') != 'hotplug_pending':
        pass
    r = cpuhpctl(m.d, 'leases')
    assert r.returncode == 0, r
    line = next(ln for ln in r.stdout.splitlines() if ln.lstrip().startswith('#'))
    assert 'offline 2: waiting for leases, asked by cpuhpd itself, pid' in line, line
    assert 'for its plan (cpuhpctl plan)' in line, line
    [h] = json.loads(cpuhpctl(m.d, '--json', 'leases').stdout)['hotplugs']
    assert h['reason'] == 'plan' and h['comm'] == 'cpuhpd', h
    text = cpuhpctl(m.d, 'plan').stdout
    assert 'differs: CPU 2 online (kept offline by the plan);' in text, text
    assert f"cpuhpd applies it: hotplug #{ev['hotplug_id']}" in text, text
    # The echo bypassed this lease: its release says so (and releases it all the same).
    assert fixture.error_code(m.probe.call('r', 'release', lid)) == 'ERR_ESTALE'
    ev = m.next_finished()
    assert (ev['cpus'], ev['online'], ev['ok']) == ('2', False, True), ev
    assert 'in force' in cpuhpctl(m.d, 'plan').stdout.splitlines()
