# SPDX-License-Identifier: LGPL-2.1-or-later
"""Hotplug states (daemon/cpuhpd/README.md, "Hotplug states") on a simulated
tree of CPUs 0-3: the order of the calls, rollback on a failure and on a
deadline, dead clients, removal, nocalls, unique names, the EDEADLK rule for
leases inside callbacks, and external changes.

The probe answers every call itself, so each test decides, call by call,
what a client does; the order of the calls is the order in which they
arrive on one connection (a connection may register several states)."""
import json
import pathlib
import subprocess

import fixture
from fixture import error_code


def register(probe, conn, name, prio=0, deadline=5000, nocalls=False, cpus=(0, 1, 2, 3)):
    """Register a state and answer its startups for `cpus` with ok; Return: its id."""
    rid = probe.send(conn, 'register', name, prio, deadline, *(['nocalls'] if nocalls else []))
    if not nocalls:
        for cpu in cpus:
            call = expect_call(probe, conn, cpu=cpu, phase='startup')
            probe.send(conn, 'answer', call['call_id'], 'ok')
    r = probe.recv(conn)
    assert r['kind'] == 'state_registered' and r['id'] == rid, r
    assert [run['cpu'] for run in r['runs']] == ([] if nocalls else list(cpus)), r
    return r['state_id']


def expect_call(probe, conn, **want):
    call = probe.recv(conn)
    assert call['kind'] == 'state_call', call
    for k, v in want.items():
        assert call[k] == v, (k, call)
    return call


def answer_in_order(probe, conn, ids, phase, cpu, fail=None):
    """Expect calls of the states `ids`, in that order; answer ok, but ERR_EBUSY
    for the state `fail`.  Return: the calls."""
    calls = []
    for sid in ids:
        call = expect_call(probe, conn, state_id=sid, phase=phase, cpu=cpu, external=False)
        calls.append(call)
        if sid == fail:
            probe.send(conn, 'answer', call['call_id'], 'ERR_EBUSY', 'pool', 'is', 'busy')
        else:
            probe.send(conn, 'answer', call['call_id'], 'ok')
    return calls


def states(probe, conn):
    r = probe.call(conn, 'states')
    assert r['kind'] == 'state_list', r
    return r['states']


def three(probe):
    """States a (priority 10), b (20), c (5) on connection s, nocalls."""
    probe.connect('s')
    return (register(probe, 's', 'a', 10, nocalls=True),
            register(probe, 's', 'b', 20, nocalls=True),
            register(probe, 's', 'c', 5, nocalls=True))


def test_teardown_highest_priority_first_startup_lowest_first(daemon4, sim4, probe):
    a, b, c = three(probe)
    probe.connect('h')
    hid = probe.send('h', 'offline', 2, 5000)
    answer_in_order(probe, 's', [b, a, c], 'teardown', 2)
    r = probe.recv('h')
    assert r['id'] == hid and r['results'][0]['ok'] and r['results'][0]['changed'], r
    assert [(x['name'], x['phase'], x['ok']) for x in r['results'][0]['states']] == \
        [('b', 'teardown', True), ('a', 'teardown', True), ('c', 'teardown', True)], r
    assert sim4.read_online(2) == '0'
    assert all(s['cpus'] == '0-1,3' for s in states(probe, 'h'))
    hid = probe.send('h', 'online', 2, 5000)
    answer_in_order(probe, 's', [c, a, b], 'startup', 2)
    r = probe.recv('h')
    assert r['results'][0]['ok'] and sim4.read_online(2) == '1', r
    assert all(s['cpus'] == '0-3' for s in states(probe, 'h'))


def test_failed_teardown_starts_the_torn_down_states_again_and_cpu_stays(daemon4, sim4, probe):
    a, b, c = three(probe)
    probe.connect('h')
    probe.send('h', 'offline', 2, 5000)
    answer_in_order(probe, 's', [b, a], 'teardown', 2, fail=a)
    # Rollback: b only (a failed, so it changed nothing; c was never called).
    call = expect_call(probe, 's', state_id=b, phase='startup', cpu=2, rollback=True)
    probe.send('s', 'answer', call['call_id'], 'ok')
    r = probe.recv('h')
    res = r['results'][0]
    assert not res['ok'] and res['code'] == 'ERR_EBUSY' and res['failed_state'] == 'a', r
    pid = probe('pid')['pid']
    assert "state 'a'" in res['message'] and f'pid {pid}' in res['message'], res
    assert 'pool is busy' in res['message'] and 'stays online' in res['message'], res
    assert [(x['name'], x['phase'], x['rollback'], x['ok']) for x in res['states']] == \
        [('b', 'teardown', False, True), ('a', 'teardown', False, False),
         ('b', 'startup', True, True)], res
    assert sim4.read_online(2) == '1'
    assert all(s['cpus'] == '0-3' for s in states(probe, 'h'))


def test_failed_startup_tears_down_the_started_states_and_cpu_goes_offline(daemon4, sim4, probe):
    a, b, c = three(probe)
    probe.connect('h')
    probe.send('h', 'offline', 2, 5000)
    answer_in_order(probe, 's', [b, a, c], 'teardown', 2)
    assert probe.recv('h')['results'][0]['ok']
    probe.send('h', 'online', 2, 5000)
    answer_in_order(probe, 's', [c, a], 'startup', 2, fail=a)
    call = expect_call(probe, 's', state_id=c, phase='teardown', cpu=2, rollback=True)
    probe.send('s', 'answer', call['call_id'], 'ok')
    r = probe.recv('h')
    res = r['results'][0]
    assert not res['ok'] and res['failed_state'] == 'a' and not res['changed'], r
    assert 'goes offline again' in res['message'], res
    assert sim4.read_online(2) == '0'
    assert all(s['cpus'] == '0-1,3' for s in states(probe, 'h'))


def test_a_failure_on_one_cpu_leaves_the_others_going_partly_done(daemon4, sim4, probe):
    probe.connect('s')
    a = register(probe, 's', 'a', nocalls=True)
    ctl = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon4.socket, 'offline', '1-2'],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    call = expect_call(probe, 's', state_id=a, cpu=1, phase='teardown')
    probe.send('s', 'answer', call['call_id'], 'ERR_EBUSY', 'queue', 'not', 'empty')
    call = expect_call(probe, 's', state_id=a, cpu=2, phase='teardown')
    probe.send('s', 'answer', call['call_id'], 'ok')
    out, err = ctl.communicate(timeout=fixture.GUARD_S)
    assert ctl.returncode == 64, (out, err)     # partly done, as chcpu says it
    assert "state 'a'" in err and 'queue not empty' in err, err
    # Per CPU, per state: what ran and how long it took.
    assert 'teardown of state a (pid' in out and 'failed after' in out and ' ms\n' in out, out
    assert sim4.read_online(1) == '1' and sim4.read_online(2) == '0'


def test_a_missed_deadline_fails_and_rolls_back_that_state_too(daemon4, sim4, probe):
    probe.connect('s')
    b = register(probe, 's', 'b', 20, nocalls=True)
    a = register(probe, 's', 'a', 10, deadline=100, nocalls=True)
    probe.connect('h')
    probe.send('h', 'offline', 2, 5000)
    answer_in_order(probe, 's', [b], 'teardown', 2)
    late = expect_call(probe, 's', state_id=a, phase='teardown', cpu=2)
    # No answer: after 100 ms the rollback starts with a itself (it may have finished late).
    call = expect_call(probe, 's', state_id=a, phase='startup', cpu=2, rollback=True)
    probe.send('s', 'answer', late['call_id'], 'ok')        # late: ignored
    probe.send('s', 'answer', call['call_id'], 'ok')
    probe.send('s', 'answer', call['call_id'], 'ERR_EIO')   # answered twice: ignored
    call = expect_call(probe, 's', state_id=b, phase='startup', cpu=2, rollback=True)
    probe.send('s', 'answer', call['call_id'], 'ok')
    res = probe.recv('h')['results'][0]
    assert not res['ok'] and res['code'] == 'ERR_ETIMEDOUT' and res['failed_state'] == 'a', res
    assert 'deadline of 100 ms' in res['message'], res
    assert [x['timed_out'] for x in res['states']] == [False, True, False, False], res
    assert sim4.read_online(2) == '1'
    assert all(s['cpus'] == '0-3' for s in states(probe, 'h'))


def test_a_client_killed_inside_its_callback_counts_as_done(daemon4, sim4, probe):
    victim = fixture.Probe(daemon4.socket)
    try:
        victim.connect('v')
        register(victim, 'v', 'victim', 50, nocalls=True)
        probe.connect('s')
        a = register(probe, 's', 'a', 10, nocalls=True)
        probe.connect('h')
        probe.send('h', 'offline', 2, 5000)
        expect_call(victim, 'v', phase='teardown', cpu=2)
        victim.kill()   # inside its callback
        answer_in_order(probe, 's', [a], 'teardown', 2)
        res = probe.recv('h')['results'][0]
        assert res['ok'] and sim4.read_online(2) == '0', res
        assert [(x['name'], x['client_gone']) for x in res['states']] == \
            [('victim', True), ('a', False)], res
        assert [s['name'] for s in states(probe, 'h')] == ['a']
    finally:
        victim.kill()


def test_removal_tears_down_every_started_cpu_last_first(daemon4, probe):
    probe.connect('s')
    sid = register(probe, 's', 'pool')
    assert states(probe, 's')[0]['cpus'] == '0-3'
    rid = probe.send('s', 'remove', sid)
    for cpu in (3, 2, 1, 0):
        call = expect_call(probe, 's', state_id=sid, phase='teardown', cpu=cpu)
        probe.send('s', 'answer', call['call_id'], 'ERR_EIO' if cpu == 1 else 'ok')
    r = probe.recv('s')
    assert r['kind'] == 'state_removed' and r['id'] == rid, r
    # A failed teardown is reported and does not keep the state.
    assert [(x['cpu'], x['ok']) for x in r['runs']] == [(3, True), (2, True), (1, False),
                                                        (0, True)], r
    assert states(probe, 's') == []


def test_nocalls_registers_and_removes_without_calls(daemon4, probe):
    probe.connect('s')
    sid = register(probe, 's', 'quiet', nocalls=True)
    [st] = states(probe, 's')
    assert st['name'] == 'quiet' and st['cpus'] == '0-3' and st['deadline_ms'] == 5000, st
    r = probe.call('s', 'remove', sid, 'nocalls')
    assert r['kind'] == 'state_removed' and r['runs'] == [], r
    assert states(probe, 's') == []


def test_failed_registration_rolls_back_and_does_not_register(daemon4, probe):
    probe.connect('s')
    rid = probe.send('s', 'register', 'bad', 0, 5000)
    for cpu in (0, 1):
        probe.send('s', 'answer', expect_call(probe, 's', cpu=cpu)['call_id'], 'ok')
    probe.send('s', 'answer', expect_call(probe, 's', cpu=2)['call_id'], 'ERR_ENOMEM', 'no', 'room')
    for cpu in (1, 0):
        call = expect_call(probe, 's', cpu=cpu, phase='teardown', rollback=True)
        probe.send('s', 'answer', call['call_id'], 'ok')
    r = probe.recv('s')
    assert r['id'] == rid and error_code(r) == 'ERR_ENOMEM', r
    assert 'no room' in r['message'] and 'not registered' in r['message'], r
    assert states(probe, 's') == []


def test_names_are_unique_per_daemon_and_checked(daemon4, probe):
    probe.connect('s')
    probe.connect('t')
    register(probe, 's', 'x', nocalls=True)
    r = probe.call('t', 'register', 'x', 0, 100, 'nocalls')
    assert error_code(r) == 'ERR_EEXIST' and 'unique' in r['message'], r
    for bad in ('a\x01b', 'n' * 64):
        r = probe.call('t', 'register', bad, 0, 100)
        assert error_code(r) == 'ERR_EINVAL', r
    r = probe.call('t', 'register', 'y', 0, 600001)
    assert error_code(r) == 'ERR_EINVAL', r
    r = probe.call('t', 'remove', 1)
    assert error_code(r) == 'ERR_ENOENT', r   # another connection's state
    assert [s['name'] for s in states(probe, 't')] == ['x']


def test_a_lease_asked_inside_a_callback_is_edeadlk(daemon4, sim4, probe):
    other = fixture.Probe(daemon4.socket)
    try:
        probe.connect('s')
        probe.connect('s2')
        other.connect('o')
        a = register(probe, 's', 'a', nocalls=True)
        probe.connect('h')
        probe.send('h', 'offline', 2, 5000)
        call = expect_call(probe, 's', state_id=a, phase='teardown')
        for conn in ('s', 's2'):    # any connection of the process inside the callback
            r = probe.call(conn, 'acquire', 1000)
            assert error_code(r) == 'ERR_EDEADLK' and 'callback' in r['message'], r
        # Another process just meets a hotplug in the way, as always.
        assert error_code(other.call('o', 'acquire', 0)) == 'ERR_EAGAIN'
        probe.send('s', 'answer', call['call_id'], 'ok')
        assert probe.recv('h')['results'][0]['ok']
        assert probe.call('s', 'acquire', 0)['kind'] == 'lease_granted'
    finally:
        other.kill()


def test_external_changes_give_external_calls(daemon4, sim4, probe):
    probe.connect('s')
    a = register(probe, 's', 'a', 10)
    b = register(probe, 's', 'b', 20, nocalls=True)
    sim4.write_online(2, 0)
    daemon4.inject_uevent('offline', '/devices/system/cpu/cpu2')
    for sid in (b, a):
        call = expect_call(probe, 's', state_id=sid, cpu=2, phase='teardown', external=True)
        probe.send('s', 'answer', call['call_id'], 'ok')
    sim4.write_online(2, 1)
    daemon4.inject_uevent('online', '/devices/system/cpu/cpu2')
    for sid in (a, b):
        call = expect_call(probe, 's', state_id=sid, cpu=2, phase='startup', external=True)
        probe.send('s', 'answer', call['call_id'], 'ok')
    # Noticed by a hotplug's own re-read, without a uevent, works too.
    sim4.write_online(3, 0)
    probe.connect('h')
    r = probe.call('h', 'offline', 3, 5000)
    assert r['results'][0]['ok'] and not r['results'][0]['changed'], r
    for sid in (b, a):
        call = expect_call(probe, 's', state_id=sid, cpu=3, phase='teardown', external=True)
        probe.send('s', 'answer', call['call_id'], 'ok')
    assert all(s['cpus'] == '0-2' for s in states(probe, 'h'))


def test_registration_waits_for_a_queued_hotplug_and_holds_the_next(daemon4, sim4, probe):
    probe.connect('l')
    probe.connect('s')
    probe.connect('h')
    lease = probe.lease('l')
    hid = probe.send('h', 'offline', 2, 5000)   # waits for the lease: the gate is blocked
    assert probe.status('h')['writer'] == 'WRITER_WAITING'
    rid = probe.send('s', 'register', 'late', 0, 5000)
    assert probe.status('s')['pending_hotplugs'] == 1   # no call came: s is still served
    assert probe.call('l', 'release', lease)['kind'] == 'lease_released'
    r = probe.recv('h')
    assert r['id'] == hid and r['results'][0]['ok'] and 'states' not in r['results'][0], r
    # Now the registration runs, on the CPUs online after the hotplug; a hotplug waits for it.
    hid = probe.send('h', 'online', 2, 5000)
    for cpu in (0, 1, 3):
        call = expect_call(probe, 's', cpu=cpu, phase='startup')
        if cpu == 0:
            assert probe.status('h')['writer'] == 'WRITER_WAITING'
        probe.send('s', 'answer', call['call_id'], 'ok')
    assert probe.recv('s')['kind'] == 'state_registered'
    call = expect_call(probe, 's', cpu=2, phase='startup')
    probe.send('s', 'answer', call['call_id'], 'ok')
    assert probe.recv('h')['results'][0]['ok']


def test_closing_the_connection_loses_its_states(daemon4, sim4, probe):
    probe.connect('s')
    register(probe, 's', 'a', nocalls=True)
    register(probe, 's', 'b', nocalls=True)
    probe('close s')
    probe.connect('h')
    assert states(probe, 'h') == []
    r = probe.call('h', 'offline', 2, 5000)   # no call to wait for
    assert r['results'][0]['ok'] and 'states' not in r['results'][0], r


def test_the_c_library_runs_callbacks_on_its_own_thread(daemon4, sim4, probe):
    st = fixture.Lines([fixture.BUILD / 'tests' / 'daemon' / 'state-client', daemon4.socket,
                        'lib', 5])
    out = st.proc.stdout
    try:
        # Registration: the startups on the registering (main) thread, before it returns.
        assert [out.readline().strip() for _ in range(4)] == [f'startup {c}' for c in range(4)]
        assert out.readline().startswith('registered ')
        probe.connect('h')
        r = probe.call('h', 'offline', 2, 5000)
        assert r['results'][0]['ok'] and sim4.read_online(2) == '0', r
        # On the library's thread; a lease there is refused at once, EDEADLK (-35).
        assert out.readline().strip() == 'teardown 2 thread=lib lease=-35'
        st.proc.stdin.write('remove\n')
        st.proc.stdin.flush()
        assert [out.readline().strip() for _ in range(4)] == \
            [f'teardown {c} thread=main lease=0' for c in (3, 1, 0)] + ['removed 0']
        assert st.close() == 0
    finally:
        st.kill()



def test_no_teardown_is_called_before_the_held_leases_drain(daemon4, sim4, probe):
    probe.connect('s')
    a = register(probe, 's', 'a', nocalls=True)
    probe.connect('l')
    probe.connect('h')
    lease = probe.lease('l')
    hid = probe.send('h', 'offline', 2, 5000)
    assert probe.status('h')['writer'] == 'WRITER_WAITING'
    # A round trip on the state's connection: a call sent before its reply would be queued.
    states(probe, 's')
    assert probe('queued s') == {'queued': 0}
    assert probe.call('l', 'release', lease)['kind'] == 'lease_released'
    call = expect_call(probe, 's', state_id=a, cpu=2, phase='teardown')
    # The writer side is held while the callback runs: another process's new lease
    # waits (a try: EAGAIN); this one's would be EDEADLK, it is inside the callback.
    other = fixture.Probe(daemon4.socket)
    try:
        other.connect('o')
        assert error_code(other.call('o', 'acquire', 0)) == 'ERR_EAGAIN'
    finally:
        other.kill()
    assert sim4.read_online(2) == '1'       # teardown runs before the file is written
    probe.send('s', 'answer', call['call_id'], 'ok')
    r = probe.recv('h')
    assert r['id'] == hid and r['results'][0]['ok'] and sim4.read_online(2) == '0', r


def test_a_missed_startup_deadline_rolls_back_the_online_and_the_cpu_goes_offline(daemon4, sim4,
                                                                                   probe):
    probe.connect('s')
    c = register(probe, 's', 'c', 5, nocalls=True)
    a = register(probe, 's', 'a', 10, deadline=100, nocalls=True)
    probe.connect('h')
    probe.send('h', 'offline', 2, 5000)
    answer_in_order(probe, 's', [a, c], 'teardown', 2)
    assert probe.recv('h')['results'][0]['ok']
    probe.send('h', 'online', 2, 5000)
    answer_in_order(probe, 's', [c], 'startup', 2)
    expect_call(probe, 's', state_id=a, phase='startup', cpu=2)     # never answered
    # Past its deadline a is rolled back too (it may have finished late), then c.
    for sid in (a, c):
        call = expect_call(probe, 's', state_id=sid, phase='teardown', cpu=2, rollback=True)
        probe.send('s', 'answer', call['call_id'], 'ok')
    res = probe.recv('h')['results'][0]
    assert not res['ok'] and res['code'] == 'ERR_ETIMEDOUT' and res['failed_state'] == 'a', res
    pid = probe('pid')['pid']
    assert f'pid {pid}' in res['message'] and 'cpuhpd-probe' in res['message'], res
    assert sim4.read_online(2) == '0'
    assert all(s['cpus'] == '0-1,3' for s in states(probe, 'h'))


def test_a_client_killed_inside_a_startup_counts_as_done_and_the_online_goes_on(daemon4, sim4,
                                                                                probe):
    victim = fixture.Probe(daemon4.socket)
    try:
        victim.connect('v')
        register(victim, 'v', 'victim', 1, nocalls=True)
        probe.connect('s')
        a = register(probe, 's', 'a', 10, nocalls=True)
        probe.connect('h')
        probe.send('h', 'offline', 2, 5000)
        answer_in_order(probe, 's', [a], 'teardown', 2)
        call = expect_call(victim, 'v', phase='teardown', cpu=2)
        victim.send('v', 'answer', call['call_id'], 'ok')
        assert probe.recv('h')['results'][0]['ok']
        probe.send('h', 'online', 2, 5000)
        expect_call(victim, 'v', phase='startup', cpu=2)
        victim.kill()   # inside its startup
        answer_in_order(probe, 's', [a], 'startup', 2)
        res = probe.recv('h')['results'][0]
        assert res['ok'] and sim4.read_online(2) == '1', res
        assert [(x['name'], x['client_gone']) for x in res['states']] == \
            [('victim', True), ('a', False)], res
    finally:
        victim.kill()


def test_a_client_that_knows_no_states_is_served_as_before(daemon4, sim4, probe):
    """Old clients: a connection that sends no state request gets the same
    answers, with a state registered elsewhere, as without one: its leases
    hold hotplugs off, its SetOnline reply has the same fields (the state
    runs are in new fields, which an old parser skips), and it never gets a
    StateCall."""
    probe.connect('s')
    a = register(probe, 's', 'a', nocalls=True)
    probe.connect('old')
    lease = probe.lease('old')
    assert probe.call('old', 'release', lease)['kind'] == 'lease_released'
    hid = probe.send('old', 'offline', 2, 5000)
    call = expect_call(probe, 's', state_id=a, cpu=2, phase='teardown')
    probe.send('s', 'answer', call['call_id'], 'ok')
    r = probe.recv('old')
    assert r['id'] == hid and r['kind'] == 'set_online', r
    res = r['results'][0]
    assert {k: res[k] for k in ('cpu', 'ok', 'changed', 'code', 'message')} == \
        {'cpu': 2, 'ok': True, 'changed': True, 'code': 'ERR_UNKNOWN', 'message': ''}, r
    assert probe.status('old')['writer'] == 'WRITER_IDLE'
    states(probe, 'old')
    assert probe('queued old') == {'queued': 0}


# ---- cpuhpctl: states, status, --json, and the shell hook 'cpuhpctl state' ----

def ctl(daemon, *args, **kw):
    return subprocess.run([str(fixture.CPUHPCTL), '--socket', daemon.socket,
                           *(str(a) for a in args)],
                          capture_output=True, text=True, timeout=fixture.GUARD_S, **kw)


def test_cpuhpctl_states_lists_name_priority_deadline_owner_and_cpus(daemon4, sim4, probe):
    probe.connect('s')
    register(probe, 's', 'pool', 10, 2500)
    register(probe, 's', 'early', -3, nocalls=True)
    pid = probe('pid')['pid']
    r = ctl(daemon4, 'states')
    assert r.returncode == 0, r
    rows = [line.split() for line in r.stdout.splitlines()[1:3]]
    assert [row[1:5] for row in rows] == [['early', '-3', '5.0s', str(pid)],
                                          ['pool', '10', '2.5s', str(pid)]], r.stdout
    # Registered without calls, a state counts as started on the CPUs online, as in the kernel.
    assert rows[0][-1] == rows[1][-1] == '0-3', r.stdout
    assert '2 state(s) registered' in r.stdout, r.stdout
    r = ctl(daemon4, 'states', '--json')
    assert r.returncode == 0, r
    got = json.loads(r.stdout)['states']
    assert [(s['name'], s['priority'], s['deadline_ms'], s['pid'], s['cpus']) for s in got] == \
        [('early', -3, 5000, pid, [0, 1, 2, 3]), ('pool', 10, 2500, pid, [0, 1, 2, 3])], got
    assert got[0]['comm'] == 'cpuhpd-probe' and got[0]['id'] > 0, got
    r = ctl(daemon4, 'status')
    assert 'states:       2 (early, pool)' in r.stdout, r.stdout
    assert json.loads(ctl(daemon4, 'status', '--json').stdout)['states'] == 2
    r = ctl(daemon4, 'states', 'extra')
    assert r.returncode == 2 and "unexpected argument 'extra'" in r.stderr, r


def test_cpuhpctl_offline_json_carries_the_state_runs(daemon4, sim4, probe):
    probe.connect('s')
    a = register(probe, 's', 'a', 10, nocalls=True)
    c = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon4.socket, '--json',
                          'offline', '1-2'], stdout=subprocess.PIPE, text=True)
    call = expect_call(probe, 's', state_id=a, cpu=1, phase='teardown')
    probe.send('s', 'answer', call['call_id'], 'ERR_EBUSY', 'queue', 'not', 'empty')
    call = expect_call(probe, 's', state_id=a, cpu=2, phase='teardown')
    probe.send('s', 'answer', call['call_id'], 'ok')
    out, _ = c.communicate(timeout=fixture.GUARD_S)
    assert c.returncode == 64, out
    res = json.loads(out)['results']
    pid = probe('pid')['pid']
    assert res[0]['ok'] is False and "state 'a'" in res[0]['message'], res
    assert [(s['state'], s['phase'], s['rollback'], s['ok'], s['error'], s['pid'])
            for s in res[0]['states']] == [('a', 'teardown', False, False, 'EBUSY', pid)], res
    assert res[0]['states'][0]['message'] == 'queue not empty', res
    assert res[0]['states'][0]['comm'] == 'cpuhpd-probe' and res[0]['states'][0]['ms'] >= 0, res
    assert res[1]['ok'] and [s['ok'] for s in res[1]['states']] == [True], res


class Hook:
    """`cpuhpctl state` running on the test's daemon; its stdout read line by line."""

    def __init__(self, daemon, tmp, *args):
        self.log = tmp / 'hook.log'
        self.proc = subprocess.Popen(
            [str(fixture.CPUHPCTL), '--socket', daemon.socket, 'state', *map(str, args)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp)

    def line(self):
        return self.proc.stdout.readline().strip()

    def stop(self):
        self.proc.terminate()
        out, err = self.proc.communicate(timeout=fixture.GUARD_S)
        return self.proc.returncode, out, err

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


LOG = 'echo "$CPUHP_PHASE $1 cpu=$CPUHP_CPU state=$CPUHP_STATE ext=$CPUHP_EXTERNAL ' \
      'rb=$CPUHP_ROLLBACK" >> hook.log'


def test_the_shell_hook_runs_its_commands_with_the_cpu_and_removes_on_sigterm(daemon4, sim4,
                                                                                tmp_path):
    hook = Hook(daemon4, tmp_path, 'hook', '--priority', 7, '--deadline', 3000,
                '--teardown', LOG, '--startup', LOG)
    try:
        # Registration: startup for every online CPU, each line printed, then the banner.
        for cpu in range(4):
            assert hook.line().startswith(f'startup CPU {cpu}: ok ('), cpu
        assert hook.line().startswith('state hook registered (id ')
        r = ctl(daemon4, 'states', '--json')
        st = json.loads(r.stdout)['states']
        assert [(s['name'], s['priority'], s['deadline_ms'], s['pid'], s['comm']) for s in st] \
            == [('hook', 7, 3000, hook.proc.pid, 'cpuhpctl')], st
        r = ctl(daemon4, 'offline', 2)
        assert r.returncode == 0 and sim4.read_online(2) == '0', r
        assert hook.line().startswith('teardown CPU 2: ok'), r
        # cpuhpctl offline says per state what ran and how long it took.
        assert f'  teardown of state hook (pid {hook.proc.pid}, cpuhpctl): ' in r.stdout, r
        assert ctl(daemon4, 'online', 2).returncode == 0
        assert hook.line().startswith('startup CPU 2: ok')
        rc, out, err = hook.stop()
        assert rc == 0, (out, err)
        assert [x.split(':')[0] for x in out.splitlines()] == \
            [f'teardown CPU {c}' for c in (3, 2, 1, 0)] + ['state hook removed'], out
        log = (tmp_path / 'hook.log').read_text().splitlines()
        want = [f'startup {c} cpu={c} state=hook ext=0 rb=0' for c in range(4)] + \
            ['teardown 2 cpu=2 state=hook ext=0 rb=0', 'startup 2 cpu=2 state=hook ext=0 rb=0'] + \
            [f'teardown {c} cpu={c} state=hook ext=0 rb=0' for c in (3, 2, 1, 0)]
        assert log == want, log
        assert json.loads(ctl(daemon4, 'states', '--json').stdout)['states'] == []
    finally:
        hook.kill()


def test_a_failing_hook_command_fails_the_offline_and_the_cpu_stays(daemon4, sim4, tmp_path):
    hook = Hook(daemon4, tmp_path, 'picky', '--nocalls', '--teardown', 'exit 3')
    try:
        assert hook.line().startswith('state picky registered')
        r = ctl(daemon4, 'offline', 2)
        assert r.returncode == 1 and sim4.read_online(2) == '1', r
        assert "state 'picky'" in r.stderr and 'exited with status 3' in r.stderr, r
        assert hook.line().startswith('teardown CPU 2: teardown command exited with status 3')
        rc, out, _ = hook.stop()
        assert rc == 0 and out.splitlines() == ['state picky removed'], out   # nocalls
    finally:
        hook.kill()


def test_a_hook_command_past_the_deadline_is_killed_and_rolled_back(daemon4, sim4, tmp_path):
    # 600 ms: the kill at 900 ms leaves 300 ms on either side (cpuhpd gave up at
    # 600; the rollback's own deadline ends near 1200), room for a loaded ASan run.
    hook = Hook(daemon4, tmp_path, 'slow', '--nocalls', '--deadline', 600,
                '--teardown', 'echo $$ > slow.pid; exec sleep 600', '--startup', LOG)
    try:
        assert hook.line().startswith('state slow registered')
        r = ctl(daemon4, 'offline', 2)
        assert r.returncode == 1 and sim4.read_online(2) == '1', r
        assert 'deadline of 600 ms' in r.stderr, r
        # cpuhpd gave up at 600 ms; the hook kills its command at 900.
        line = hook.line()
        assert line.startswith('teardown CPU 2: teardown command still running at 1.5 times '
                               'the deadline of 600 ms: killed'), line
        # The state missed its deadline, so it is rolled back too: startup, flagged.
        assert hook.line().startswith('rollback startup CPU 2: ok')
        assert (tmp_path / 'hook.log').read_text() == 'startup 2 cpu=2 state=slow ext=0 rb=1\n'
        pid = int((tmp_path / 'slow.pid').read_text())
        assert not pathlib.Path(f'/proc/{pid}').exists() or \
            pathlib.Path(f'/proc/{pid}/stat').read_text().split()[2] == 'Z'
    finally:
        hook.kill()


def test_the_hook_refuses_bad_arguments_and_a_taken_name(daemon4, probe, tmp_path):
    for args, msg in [([], 'which state?'), (['x'], '--teardown CMD, --startup CMD or both'),
                      (['x', '--deadline', 0, '--startup', 'true'], "--deadline '0' is out of range"),
                      (['x', '--priority', 'high', '--startup', 'true'], '--priority must be'),
                      (['x', 'y', '--startup', 'true'], 'one NAME only')]:
        r = ctl(daemon4, 'state', *args)
        assert r.returncode == 2 and msg in r.stderr, (args, r)
    probe.connect('s')
    register(probe, 's', 'taken', nocalls=True)
    r = ctl(daemon4, 'state', 'taken', '--startup', 'true')
    assert r.returncode == 1 and "'taken' is registered already" in r.stderr, r
    assert ctl(daemon4, 'state', '--help').stdout.startswith('Usage: cpuhpctl state NAME')


# --- batches (Hello.state_batch, proto/FRAMING.md "Batches") ---------------------------------

def batch_three(probe):
    """States a (priority 10), b (20), c (5) on connection s, which runs batches."""
    r = probe.connect('s', batch=True)
    assert r['state_batch'] is True, r
    return three_on(probe)


def three_on(probe):
    return (register(probe, 's', 'a', 10, nocalls=True),
            register(probe, 's', 'b', 20, nocalls=True),
            register(probe, 's', 'c', 5, nocalls=True))


def test_a_client_that_runs_batches_gets_a_cpus_calls_in_one_write(daemon4, sim4, probe):
    a, b, c = batch_three(probe)
    probe.connect('h')
    hid = probe.send('h', 'offline', 2, 5000)
    first = expect_call(probe, 's', state_id=b, phase='teardown', cpu=2)
    # Its reply comes after every call the daemon sent before it: all three, unanswered.
    assert probe.call('s', 'states')['kind'] == 'state_list'
    assert probe('queued s') == {'queued': 2}
    calls = [first, expect_call(probe, 's', state_id=a), expect_call(probe, 's', state_id=c)]
    assert all(x['batch'] == first['call_id'] for x in calls), calls
    for x in calls:
        probe.send('s', 'answer', x['call_id'], 'ok')
    r = probe.recv('h')
    assert r['id'] == hid and r['results'][0]['ok'] and sim4.read_online(2) == '0', r
    assert [s['name'] for s in r['results'][0]['states']] == ['b', 'a', 'c'], r


def test_without_state_batch_calls_come_one_at_a_time(daemon4, sim4, probe):
    a, b, c = three(probe)
    probe.connect('h')
    probe.send('h', 'offline', 2, 5000)
    first = expect_call(probe, 's', state_id=b, phase='teardown', cpu=2)
    assert first['batch'] == 0, first
    assert probe.call('s', 'states')['kind'] == 'state_list'
    assert probe('queued s') == {'queued': 0}
    probe.send('s', 'answer', first['call_id'], 'ok')
    answer_in_order(probe, 's', [a, c], 'teardown', 2)
    assert probe.recv('h')['results'][0]['ok']


def test_a_failure_in_a_batch_skips_the_rest_and_rolls_back_only_what_ran(daemon4, sim4, probe):
    a, b, c = batch_three(probe)
    probe.connect('h')
    hid = probe.send('h', 'offline', 2, 5000)
    cb, ca, cc = (expect_call(probe, 's', state_id=x, phase='teardown') for x in (b, a, c))
    probe.send('s', 'answer', cb['call_id'], 'ok')
    probe.send('s', 'answer', ca['call_id'], 'ERR_EBUSY', 'busy')
    probe.send('s', 'answer', cc['call_id'], 'skipped')     # as the client must
    # b ran and is undone; c never ran and gets nothing; a failed, changed nothing.
    rb = expect_call(probe, 's', state_id=b, phase='startup', rollback=True)
    assert rb['batch'] == 0, rb                              # rollbacks are never batched
    probe.send('s', 'answer', rb['call_id'], 'ok')
    r = probe.recv('h')
    assert r['id'] == hid and r['results'][0]['code'] == 'ERR_EBUSY', r
    assert sim4.read_online(2) == '1'
    assert [(x['name'], x['phase'], x['rollback']) for x in r['results'][0]['states']] == \
        [('b', 'teardown', False), ('a', 'teardown', False), ('b', 'startup', True)], r


def test_a_missed_deadline_in_a_batch_undoes_the_calls_sent_after_it(daemon4, sim4, probe):
    """A call that misses its deadline may end late and well; its client then
    runs the calls sent after it in the batch: those are undone too, last
    first, before it and what ran before it."""
    r = probe.connect('s', batch=True)
    a = register(probe, 's', 'a', 10, deadline=200, nocalls=True)
    b = register(probe, 's', 'b', 20, nocalls=True)
    c = register(probe, 's', 'c', 5, nocalls=True)
    probe.connect('h')
    hid = probe.send('h', 'offline', 2, 5000)
    cb, ca, cc = (expect_call(probe, 's', state_id=x, phase='teardown') for x in (b, a, c))
    probe.send('s', 'answer', cb['call_id'], 'ok')
    # a is not answered: after 200 ms its call is a missed deadline.
    undo = [expect_call(probe, 's', rollback=True, phase='startup') for _ in range(3)]
    assert [x['state_id'] for x in undo] == [c, a, b], undo
    for x in undo:
        probe.send('s', 'answer', x['call_id'], 'ok')
    r = probe.recv('h')
    assert r['id'] == hid and r['results'][0]['code'] == 'ERR_ETIMEDOUT', r
    assert sim4.read_online(2) == '1'
    # The late answers to the batch are ignored.
    probe.send('s', 'answer', ca['call_id'], 'ok')
    probe.send('s', 'answer', cc['call_id'], 'ok')
    assert all(s['cpus'] == '0-3' for s in states(probe, 's'))


def test_a_registration_of_a_batch_client_sends_every_startup_at_once(daemon4, sim4, probe):
    probe.connect('s', batch=True)
    rid = probe.send('s', 'register', 'all', 0, 5000)
    first = expect_call(probe, 's', cpu=0, phase='startup')
    assert probe.call('s', 'states')['kind'] == 'state_list'
    assert probe('queued s') == {'queued': 3}
    calls = [first] + [expect_call(probe, 's', cpu=cpu, phase='startup') for cpu in (1, 2, 3)]
    assert {x['batch'] for x in calls} == {first['call_id']}, calls
    for x in calls:
        probe.send('s', 'answer', x['call_id'], 'ok')
    r = probe.recv('s')
    assert r['id'] == rid and r['kind'] == 'state_registered', r
    assert [run['cpu'] for run in r['runs']] == [0, 1, 2, 3], r


# --- shared states: one connection and thread for a process's states -------------------------

class Shared:
    """tests/daemon/shared-states: states NAME:PRIORITY[:fCPU] of one process, shared."""

    def __init__(self, daemon, *specs):
        self.proc = subprocess.Popen([str(fixture.BUILD / 'tests' / 'daemon' / 'shared-states'),
                                      daemon.socket, *specs], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)

    def lines_until(self, last):
        out = []
        while True:
            line = self.proc.stdout.readline().strip()
            assert line, f'shared-states ended (exit {self.proc.wait()}): {out}'
            out.append(line)
            if line.startswith(last):
                return out

    def command(self, line):
        self.proc.stdin.write(line + '\n')
        self.proc.stdin.flush()

    def finish(self):
        self.command('remove')
        out = self.proc.communicate(timeout=fixture.GUARD_S)[0].split('\n')
        assert self.proc.returncode == 0, out
        return [x for x in out if x]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def test_shared_states_take_one_connection_and_a_cpus_calls_come_in_one_batch(daemon4, sim4,
                                                                               probe):
    probe.connect('h')
    before = probe.status('h')['connections']
    sh = Shared(daemon4, 'a:1', 'b:2', 'c:3')
    try:
        out = sh.lines_until('ready')
        # Each registration's startups, on every online CPU, on the shared thread.
        assert out == [f'{n} startup {cpu} thread=1' for n in 'a' for cpu in range(4)] + \
            ['registered a 1'] + \
            [f'{n} startup {cpu} thread=1' for n in 'b' for cpu in range(4)] + \
            ['registered b 2'] + \
            [f'{n} startup {cpu} thread=1' for n in 'c' for cpu in range(4)] + \
            ['registered c 3', 'ready'], out
        # The handle's connection and the one the three states share.
        assert probe.status('h')['connections'] == before + 2
        r = probe.call('h', 'offline', 2, 5000)
        assert r['results'][0]['ok'] and sim4.read_online(2) == '0', r
        assert sh.lines_until('a teardown 2') == \
            ['c teardown 2 thread=1', 'b teardown 2 thread=1', 'a teardown 2 thread=1']
        assert 'call ' in daemon4.log() and '(batched)' in daemon4.log()
        r = probe.call('h', 'online', 2, 5000)
        assert r['results'][0]['ok'] and sim4.read_online(2) == '1', r
        assert sh.lines_until('c startup 2') == \
            ['a startup 2 thread=1', 'b startup 2 thread=1', 'c startup 2 thread=1']
        out = sh.finish()
        assert [x for x in out if x.startswith('removed')] == \
            ['removed c 0', 'removed b 0', 'removed a 0'], out
        assert states(probe, 'h') == []
    finally:
        sh.kill()


def test_a_failing_shared_state_skips_the_rest_of_the_batch_and_rolls_back(daemon4, sim4,
                                                                            probe):
    probe.connect('h')
    sh = Shared(daemon4, 'a:1', 'b:2:f2', 'c:3')
    try:
        sh.lines_until('ready')
        r = probe.call('h', 'offline', 2, 5000)
        res = r['results'][0]
        assert not res['ok'] and res['code'] == 'ERR_EBUSY' and "state 'b'" in res['message'], r
        assert sim4.read_online(2) == '1'
        # a is never called: its teardown was skipped; c, torn down, starts again.
        assert sh.lines_until('c startup 2') == \
            ['c teardown 2 thread=1', 'b teardown 2 failed thread=1',
             'c startup 2 rollback thread=1']
        assert [(x['name'], x['phase'], x['rollback']) for x in res['states']] == \
            [('c', 'teardown', False), ('b', 'teardown', False), ('c', 'startup', True)], r
        sh.finish()
    finally:
        sh.kill()


def test_shared_states_outlive_their_handle(daemon4, sim4, probe):
    probe.connect('h')
    sh = Shared(daemon4, 'a:1', 'b:2')
    try:
        sh.lines_until('ready')
        sh.command('close')
        assert sh.lines_until('closed') == ['closed']
        r = probe.call('h', 'offline', 3, 5000)
        assert r['results'][0]['ok'], r
        assert sh.lines_until('a teardown 3') == ['b teardown 3 thread=1', 'a teardown 3 thread=1']
        # Their removal's teardowns, last CPU first, on the shared thread still.
        assert sh.finish() == [f'b teardown {cpu} thread=1' for cpu in (2, 1, 0)] + \
            ['removed b 0'] + [f'a teardown {cpu} thread=1' for cpu in (2, 1, 0)] + \
            ['removed a 0']
        assert states(probe, 'h') == []
    finally:
        sh.kill()
