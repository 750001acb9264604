# SPDX-License-Identifier: LGPL-2.1-or-later
"""Hotplug states and SMT control on a tree that acts like the kernel.

On a real kernel a write of smt/control takes the sibling threads offline
("off") or brings them back ("on") within the write itself, before any
per-CPU write of cpuhpd's.  A plain simulated tree does nothing on that
write, so cpuhpd's own per-CPU writes do the work there and the states got
their calls; on a real kernel they found the siblings already gone.  Here
cpuhpd runs with the sysfs fault shim preloaded (tests/fault/sysfs-fault.c;
this file is registered in tests/fault/meson.build, beside the shim), whose
rule "smt/control write kernel" makes the control write move the siblings
as the kernel does.

The tree: CPUs 0-3, two threads a core (cores {0,2} and {1,3}): SMT off
takes CPUs 2 and 3.  The probe answers every state call itself."""
import subprocess

import pytest

import fixture
from test_states import expect_call, register

SHIM = fixture.BUILD / 'tests' / 'fault' / 'libsysfs-fault.so'


@pytest.fixture
def ksim(tmp):
    return fixture.SimSysfs(tmp / 'sys', cpus='0-3', extra=('--smt', '2'))


@pytest.fixture
def kdaemon(tmp, ksim):
    (tmp / 'faults').write_text('smt/control write kernel\n')
    d = fixture.Daemon(tmp, ksim.root).start(env={
        'LD_PRELOAD': str(SHIM), 'CPUHP_FAULT_FILE': str(tmp / 'faults'),
        'CPUHP_FAULT_LOG': str(tmp / 'fault.log')})
    d.fault_log = tmp / 'fault.log'
    yield d
    d.stop_clean()


@pytest.fixture
def kprobe(kdaemon):
    p = fixture.Probe(kdaemon.socket)
    yield p
    p.kill()


def control(sim):
    return (sim.cpu / 'smt' / 'control').read_text().strip()


def kernel_writes(d):
    """How many control writes the shim acted on, as the kernel would."""
    if not d.fault_log.exists():
        return 0
    return sum(1 for line in d.fault_log.read_text().splitlines()
               if line.startswith('smt/control write kernel '))


def state_cpus(probe):
    """Each state's CPUs, asked on the states' own connection s: a call sent
    to s before this answer (an external one after the fact) is queued by
    then, which `queued s` shows."""
    r = probe.call('s', 'states')
    assert r['kind'] == 'state_list', r
    return {s['name']: s['cpus'] for s in r['states']}


def answer_ok(probe, order, phase, check=None, **want):
    """Expect on s the calls of `order`, (cpu, state id) pairs, in `phase`
    and with the fields `want`; check(cpu) before each answer; answer ok."""
    for cpu, sid in order:
        call = expect_call(probe, 's', state_id=sid, cpu=cpu, phase=phase, **want)
        if check:
            check(cpu)
        probe.send('s', 'answer', call['call_id'], 'ok')


def two_states(probe):
    """States a (priority 10) and b (20) on connection s, started on CPUs 0-3."""
    probe.connect('s')
    probe.connect('h')
    return register(probe, 's', 'a', 10), register(probe, 's', 'b', 20)


def test_the_shim_moves_the_siblings_within_the_control_write(kdaemon, ksim, kprobe):
    # No states: what the tests below rely on, the shim acting on the write.
    kprobe.connect('h')
    r = kprobe.call('h', 'smt', 'off', 5000)
    assert r['kind'] == 'smt' and r['control'] == 'off' and r['online'] == '0-1', r
    assert kernel_writes(kdaemon) == 1
    assert [ksim.read_online(n) for n in (1, 2, 3)] == ['1', '0', '0']
    assert (ksim.cpu / 'smt' / 'active').read_text() == '0\n'


def test_smt_off_tears_the_siblings_down_before_the_control_write(kdaemon, ksim, kprobe):
    a, b = two_states(kprobe)
    def online_under_on(cpu):
        # Teardown comes before the write of "off": nothing has moved yet.  Startup
        # comes after the write of "on": the kernel brought the CPU back first.
        assert control(ksim) == 'on' and ksim.read_online(cpu) == '1'

    hid = kprobe.send('h', 'smt', 'off', 5000)
    answer_ok(kprobe, [(cpu, sid) for cpu in (2, 3) for sid in (b, a)], 'teardown',
              online_under_on, external=False, rollback=False)
    r = kprobe.recv('h')
    assert r['id'] == hid and r['kind'] == 'smt' and r['control'] == 'off', r
    assert [(x['cpu'], x['ok'], x['changed']) for x in r['results']] == \
        [(2, True, True), (3, True, True)], r
    assert [(x['name'], x['phase']) for x in r['results'][0]['states']] == \
        [('b', 'teardown'), ('a', 'teardown')], r
    assert kernel_writes(kdaemon) == 1
    assert state_cpus(kprobe) == {'a': '0-1', 'b': '0-1'}
    # Nothing came after the fact (an external teardown of what went before).
    assert kprobe('queued s')['queued'] == 0

    hid = kprobe.send('h', 'smt', 'on', 5000)
    answer_ok(kprobe, [(cpu, sid) for cpu in (2, 3) for sid in (a, b)], 'startup',
              online_under_on, external=False, rollback=False)
    r = kprobe.recv('h')
    assert r['id'] == hid and r['control'] == 'on', r
    assert [(x['cpu'], x['ok'], x['changed']) for x in r['results']] == \
        [(2, True, True), (3, True, True)], r
    assert state_cpus(kprobe) == {'a': '0-3', 'b': '0-3'}
    assert kprobe('queued s')['queued'] == 0


def test_a_failed_sibling_teardown_rolls_back_and_makes_no_control_write(kdaemon, ksim, kprobe):
    a, b = two_states(kprobe)
    kprobe.send('h', 'smt', 'off', 5000)
    answer_ok(kprobe, [(2, b), (2, a)], 'teardown')
    call = expect_call(kprobe, 's', state_id=b, cpu=3, phase='teardown')
    kprobe.send('s', 'answer', call['call_id'], 'ERR_EBUSY', 'queue', 'not', 'empty')
    # CPU 3: nothing was torn down (b failed first).  CPU 2: both start again, lowest first.
    answer_ok(kprobe, [(2, a), (2, b)], 'startup', rollback=True)
    r = kprobe.recv('h')
    assert r['kind'] == 'smt' and r['control'] == 'on' and r['online'] == '0-3', r
    res = {x['cpu']: x for x in r['results']}
    assert sorted(res) == [2, 3] and not any(x['ok'] or x['changed'] for x in res.values()), r
    assert res[3]['code'] == 'ERR_EBUSY' and res[3]['failed_state'] == 'b', r
    pid = kprobe('pid')['pid']
    assert "state 'b'" in res[3]['message'] and f'pid {pid}' in res[3]['message'], res[3]
    assert 'queue not empty' in res[3]['message'], res[3]
    assert res[2]['code'] == 'ERR_ECANCELED' and 'CPU 3' in res[2]['message'], res[2]
    assert [(x['name'], x['phase'], x['rollback']) for x in res[2]['states']] == \
        [('b', 'teardown', False), ('a', 'teardown', False),
         ('a', 'startup', True), ('b', 'startup', True)], res[2]
    # The control write was not made: the kernel moved nothing.
    assert control(ksim) == 'on' and kernel_writes(kdaemon) == 0
    assert [ksim.read_online(n) for n in (1, 2, 3)] == ['1', '1', '1']
    assert state_cpus(kprobe) == {'a': '0-3', 'b': '0-3'}
    assert kprobe('queued s')['queued'] == 0


def test_a_failed_startup_after_smt_on_takes_that_cpu_offline_again(kdaemon, ksim, kprobe):
    a, b = two_states(kprobe)
    kprobe.send('h', 'smt', 'off', 5000)
    answer_ok(kprobe, [(cpu, sid) for cpu in (2, 3) for sid in (b, a)], 'teardown')
    assert kprobe.recv('h')['control'] == 'off'
    kprobe.send('h', 'smt', 'on', 5000)
    answer_ok(kprobe, [(2, a), (2, b)], 'startup')
    call = expect_call(kprobe, 's', state_id=a, cpu=3, phase='startup')
    kprobe.send('s', 'answer', call['call_id'], 'ERR_ENOMEM', 'no', 'room')
    r = kprobe.recv('h')
    assert r['control'] == 'on' and r['online'] == '0-2', r
    res = {x['cpu']: x for x in r['results']}
    assert res[2]['ok'] and res[2]['changed'], r
    assert not res[3]['ok'] and res[3]['failed_state'] == 'a', r
    assert 'goes offline again' in res[3]['message'], res[3]
    assert [ksim.read_online(n) for n in (1, 2, 3)] == ['1', '1', '0']
    assert state_cpus(kprobe) == {'a': '0-2', 'b': '0-2'}
    assert kprobe('queued s')['queued'] == 0


def test_the_kernels_ecanceled_for_a_parked_sibling_is_explained(tmp, kdaemon, ksim, kprobe):
    """The kernel answers the first online of an SMT sibling that never ran,
    while SMT is off, with ECANCELED (it boots it once, then parks it).
    Before, cpuhpd said a bare "Operation canceled" and the wire's errno
    text called ECANCELED "the daemon is shutting down"."""
    kprobe.connect('h')
    assert kprobe.call('h', 'smt', 'off', 5000)['control'] == 'off'
    with open(tmp / 'faults', 'a') as f:
        f.write('cpu2/online write ECANCELED\n')
    r = kprobe.call('h', 'online', 2, 5000)
    [res] = r['results']
    assert not res['ok'] and res['code'] == 'ERR_ECANCELED', r
    assert 'SMT sibling that never ran is booted once and parked' in res['message'], res
    assert 'cpuhpctl smt on' in res['message'] and 'shutting down' not in res['message']
    r = subprocess.run([str(fixture.CPUHPCTL), '--socket', kdaemon.socket, 'online', '2'],
                       capture_output=True, text=True, timeout=fixture.GUARD_S)
    assert r.returncode == 1, r   # a failed CPU, not "cpuhpd unreachable" (69)
    assert 'parked again' in r.stderr and 'shutting down' not in r.stderr, r.stderr


def test_smt_calls_prepare_states_on_the_far_side_of_the_control_write(kdaemon, ksim, kprobe):
    """PREPARE teardowns after "off" moved the siblings, PREPARE startups before "on"
    brings them (doc/design.md, "Hotplug states: sections and instances")."""
    kprobe.connect('s')
    kprobe.connect('h')
    p = kprobe.call('s', 'register', 'p', 0, 5000, 'nocalls', 'prepare')['state_id']
    o = kprobe.call('s', 'register', 'o', 0, 5000, 'nocalls')['state_id']

    def gone(cpu):
        assert ksim.read_online(cpu) == '0'

    def still_on(cpu):
        assert control(ksim) == 'on' and ksim.read_online(cpu) == '1'

    def still_off(cpu):
        assert control(ksim) == 'off' and ksim.read_online(cpu) == '0'

    hid = kprobe.send('h', 'smt', 'off', 5000)
    answer_ok(kprobe, [(2, o), (3, o)], 'teardown', still_on, section='online')
    answer_ok(kprobe, [(2, p), (3, p)], 'teardown', gone, section='prepare', rollback=False)
    r = kprobe.recv('h')
    assert r['id'] == hid and r['control'] == 'off' and kernel_writes(kdaemon) == 1, r
    assert state_cpus(kprobe) == {'p': '0-1', 'o': '0-1'}
    hid = kprobe.send('h', 'smt', 'on', 5000)
    answer_ok(kprobe, [(2, p), (3, p)], 'startup', still_off, section='prepare')
    answer_ok(kprobe, [(2, o), (3, o)], 'startup', still_on, section='online')
    r = kprobe.recv('h')
    assert r['id'] == hid and r['control'] == 'on', r
    assert state_cpus(kprobe) == {'p': '0-3', 'o': '0-3'}
    assert kprobe('queued s')['queued'] == 0


def test_a_failed_prepare_startup_before_smt_on_makes_no_control_write(kdaemon, ksim, kprobe):
    kprobe.connect('s')
    kprobe.connect('h')
    p = kprobe.call('s', 'register', 'p', 0, 5000, 'nocalls', 'prepare')['state_id']
    kprobe.send('h', 'smt', 'off', 5000)
    answer_ok(kprobe, [(2, p), (3, p)], 'teardown')
    assert kprobe.recv('h')['control'] == 'off'
    kprobe.send('h', 'smt', 'on', 5000)
    answer_ok(kprobe, [(2, p)], 'startup')
    call = expect_call(kprobe, 's', state_id=p, cpu=3, phase='startup')
    kprobe.send('s', 'answer', call['call_id'], 'ERR_ENOMEM', 'no', 'room')
    # CPU 2's PREPARE startup is undone; the control write is not made.
    answer_ok(kprobe, [(2, p)], 'teardown', rollback=True)
    r = kprobe.recv('h')
    assert r['control'] == 'off' and kernel_writes(kdaemon) == 1, r
    res = {x['cpu']: x for x in r['results']}
    assert res[3]['failed_state'] == 'p' and res[2]['code'] == 'ERR_ECANCELED', r
    assert [ksim.read_online(n) for n in (2, 3)] == ['0', '0']
    assert state_cpus(kprobe) == {'p': '0-1'}
