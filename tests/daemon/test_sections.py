# SPDX-License-Identifier: LGPL-2.1-or-later
"""Hotplug states in the PREPARE and ONLINE sections, and instances
(daemon/cpuhpd/README.md, "Hotplug states"; doc/design.md, "Hotplug states:
sections and instances"; tests/model/sections.pml models the same rules) on
a simulated tree of CPUs 0-3.

The probe answers every call itself; where a call comes relative to the
write of cpuN/online is read from the simulated file when the call arrives:
the daemon writes it only once the calls before the write are answered."""
import fixture
from fixture import error_code
from test_plan import hot_add, hot_add_tree, machines  # noqa: F401 (machines: a fixture)
from test_states import answer_in_order, expect_call, states


def register(probe, conn, name, prio=0, deadline=5000, *flags):
    """Register with `flags` ('prepare', 'multi', 'nocalls'); no calls awaited.  Return: its id."""
    r = probe.call(conn, 'register', name, prio, deadline, 'nocalls', *flags)
    assert r['kind'] == 'state_registered' and r['runs'] == [], r
    return r['state_id']


def answer(probe, conn, call, how='ok'):
    probe.send(conn, 'answer', call['call_id'], how)


def test_online_runs_prepare_startups_before_the_write_and_online_ones_after(daemon4, sim4,
                                                                            probe):
    probe.connect('s')
    # Priority orders each section; every PREPARE state comes before every ONLINE one.
    o = register(probe, 's', 'o', -5)
    p = register(probe, 's', 'p', 10, 5000, 'prepare')
    probe.connect('h')
    hid = probe.send('h', 'offline', 2, 5000)
    call = expect_call(probe, 's', state_id=o, cpu=2, phase='teardown', section='online')
    assert sim4.read_online(2) == '1'        # ONLINE teardown: the CPU still runs
    answer(probe, 's', call)
    call = expect_call(probe, 's', state_id=p, cpu=2, phase='teardown', section='prepare',
                       rollback=False)
    assert sim4.read_online(2) == '0'        # PREPARE teardown (DEAD): the CPU is gone
    answer(probe, 's', call)
    r = probe.recv('h')
    assert r['id'] == hid and r['results'][0]['ok'], r
    assert [(x['name'], x['phase'], x['section']) for x in r['results'][0]['states']] == \
        [('o', 'teardown', 'online'), ('p', 'teardown', 'prepare')], r
    hid = probe.send('h', 'online', 2, 5000)
    call = expect_call(probe, 's', state_id=p, cpu=2, phase='startup', section='prepare')
    assert sim4.read_online(2) == '0'        # PREPARE startup: before the CPU runs anything
    answer(probe, 's', call)
    call = expect_call(probe, 's', state_id=o, cpu=2, phase='startup', section='online')
    assert sim4.read_online(2) == '1'
    answer(probe, 's', call)
    r = probe.recv('h')
    assert r['results'][0]['ok'] and sim4.read_online(2) == '1', r
    assert [(s['name'], s['section'], s['cpus']) for s in states(probe, 'h')] == \
        [('p', 'prepare', '0-3'), ('o', 'online', '0-3')]


def test_a_prepare_startup_failure_writes_nothing_and_tears_down_in_reverse(daemon4, sim4,
                                                                           probe):
    probe.connect('s')
    p1, p2, p3 = (register(probe, 's', f'p{i}', i, 5000, 'prepare') for i in (1, 2, 3))
    o = register(probe, 's', 'o')
    probe.connect('h')
    probe.send('h', 'offline', 2, 5000)
    answer_in_order(probe, 's', [o], 'teardown', 2)
    answer_in_order(probe, 's', [p3, p2, p1], 'teardown', 2)
    assert probe.recv('h')['results'][0]['ok']
    probe.send('h', 'online', 2, 5000)
    answer_in_order(probe, 's', [p1, p2, p3], 'startup', 2, fail=p3)
    for sid in (p2, p1):
        call = expect_call(probe, 's', state_id=sid, cpu=2, phase='teardown', rollback=True)
        assert sim4.read_online(2) == '0'
        answer(probe, 's', call)
    res = probe.recv('h')['results'][0]
    assert not res['ok'] and not res['changed'] and res['failed_state'] == 'p3', res
    assert 'stays offline' in res['message'], res
    assert sim4.read_online(2) == '0'
    # o was never called; nobody is up on CPU 2.
    assert [x['name'] for x in res['states']] == ['p1', 'p2', 'p3', 'p2', 'p1'], res
    assert all(s['cpus'] == '0-1,3' for s in states(probe, 'h'))


def test_a_prepare_teardown_failure_is_logged_and_the_offline_succeeds(daemon4, sim4, probe):
    probe.connect('s')
    p1 = register(probe, 's', 'p1', 1, 5000, 'prepare')
    p2 = register(probe, 's', 'p2', 2, 5000, 'prepare')
    probe.connect('h')
    probe.send('h', 'offline', 2, 5000)
    # Highest first; p2's failure is not rolled back: p1 is still called.
    answer_in_order(probe, 's', [p2, p1], 'teardown', 2, fail=p2)
    res = probe.recv('h')['results'][0]
    assert res['ok'] and res['changed'] and sim4.read_online(2) == '0', res
    assert [(x['name'], x['ok']) for x in res['states']] == [('p2', False), ('p1', True)], res
    assert 'failed_state' not in res or not res['failed_state'], res
    # The CPU is gone for both: the next online calls both startups.
    assert all(s['cpus'] == '0-1,3' for s in states(probe, 'h'))
    assert "state 'p2'" in daemon4.log() and 'cannot fail' in daemon4.log()


def test_a_prepare_startup_that_never_answers_meets_its_deadline_and_rolls_back(daemon4, sim4,
                                                                               probe):
    probe.connect('s')
    p1 = register(probe, 's', 'p1', 1, 5000, 'prepare')
    p2 = register(probe, 's', 'p2', 2, 200, 'prepare')
    probe.connect('h')
    probe.send('h', 'offline', 2, 5000)
    answer_in_order(probe, 's', [p2, p1], 'teardown', 2)
    assert probe.recv('h')['results'][0]['ok']
    probe.send('h', 'online', 2, 5000)
    answer_in_order(probe, 's', [p1], 'startup', 2)
    expect_call(probe, 's', state_id=p2, phase='startup', cpu=2)   # never answered
    # The deadline: p2 itself is undone (it may end late), then p1; nothing was written.
    for sid in (p2, p1):
        call = expect_call(probe, 's', state_id=sid, cpu=2, phase='teardown', rollback=True)
        answer(probe, 's', call)
    res = probe.recv('h')['results'][0]
    assert not res['ok'] and res['code'] == 'ERR_ETIMEDOUT' and res['failed_state'] == 'p2', res
    assert sim4.read_online(2) == '0'


def test_an_online_startup_failure_goes_the_whole_way_back(daemon4, sim4, probe):
    probe.connect('s')
    p = register(probe, 's', 'p', 0, 5000, 'prepare')
    o1 = register(probe, 's', 'o1', 1)
    o2 = register(probe, 's', 'o2', 2)
    probe.connect('h')
    probe.send('h', 'offline', 2, 5000)
    answer_in_order(probe, 's', [o2, o1, p], 'teardown', 2)
    assert probe.recv('h')['results'][0]['ok']
    probe.send('h', 'online', 2, 5000)
    answer_in_order(probe, 's', [p, o1, o2], 'startup', 2, fail=o2)
    call = expect_call(probe, 's', state_id=o1, cpu=2, phase='teardown', rollback=True)
    assert sim4.read_online(2) == '1'
    answer(probe, 's', call)
    call = expect_call(probe, 's', state_id=p, cpu=2, phase='teardown', rollback=True,
                       section='prepare')
    assert sim4.read_online(2) == '0'        # after the write back
    answer(probe, 's', call)
    res = probe.recv('h')['results'][0]
    assert not res['ok'] and res['failed_state'] == 'o2', res
    assert 'goes offline again' in res['message'], res
    assert all(s['cpus'] == '0-1,3' for s in states(probe, 'h'))


def test_an_offline_teardown_failure_leaves_the_prepare_states_alone(daemon4, sim4, probe):
    probe.connect('s')
    p = register(probe, 's', 'p', 0, 5000, 'prepare')
    o1 = register(probe, 's', 'o1', 1)
    o2 = register(probe, 's', 'o2', 2)
    probe.connect('h')
    probe.send('h', 'offline', 2, 5000)
    answer_in_order(probe, 's', [o2, o1], 'teardown', 2, fail=o1)
    call = expect_call(probe, 's', state_id=o2, cpu=2, phase='startup', rollback=True)
    answer(probe, 's', call)
    res = probe.recv('h')['results'][0]
    assert not res['ok'] and sim4.read_online(2) == '1', res
    assert p not in [x.get('state_id') for x in res['states']]
    assert [x['name'] for x in res['states']] == ['o2', 'o1', 'o2'], res


def test_external_changes_call_both_sections_in_order(daemon4, sim4, probe):
    probe.connect('s')
    p = register(probe, 's', 'p', 5, 5000, 'prepare')
    o = register(probe, 's', 'o', -5)
    sim4.write_online(2, 0)
    daemon4.inject_uevent('offline', '/devices/system/cpu/cpu2')
    for sid in (o, p):
        call = expect_call(probe, 's', state_id=sid, cpu=2, phase='teardown', external=True)
        answer(probe, 's', call)
    sim4.write_online(2, 1)
    daemon4.inject_uevent('online', '/devices/system/cpu/cpu2')
    for sid in (p, o):
        call = expect_call(probe, 's', state_id=sid, cpu=2, phase='startup', external=True)
        answer(probe, 's', call)


def test_a_bad_section_or_flag_is_refused(daemon4, probe):
    probe.connect('s')
    r = probe.call('s', 'register', 'x', 0, 5000, 'section=7')
    assert error_code(r) == 'ERR_EINVAL' and 'section' in r['message'], r


# ---- instances ----

def add(probe, conn, sid, name, cpus=(0, 1, 2, 3), fail_cpu=None):
    """Add instance `name` to `sid`, answering its startups.  Return: the reply."""
    rid = probe.send(conn, 'instance_add', sid, name)
    iid = None
    for cpu in cpus:
        call = expect_call(probe, conn, state_id=sid, cpu=cpu, phase='startup')
        assert iid is None or call['instance_id'] == iid, call
        iid = call['instance_id']
        answer(probe, conn, call, 'ERR_ENOMEM' if cpu == fail_cpu else 'ok')
        if cpu == fail_cpu:
            break
    r = probe.recv(conn)
    assert r['id'] == rid, r
    return r


def test_instances_are_called_in_turn_one_connection_for_all(daemon4, sim4, probe):
    probe.connect('s')
    m = register(probe, 's', 'pools', 0, 5000, 'multi')   # no calls of its own
    a = add(probe, 's', m, 'a')
    assert a['kind'] == 'instance_added' and [x['cpu'] for x in a['runs']] == [0, 1, 2, 3], a
    assert all(x['instance'] == 'a' for x in a['runs']), a
    b = add(probe, 's', m, 'b')
    ia, ib = a['instance_id'], b['instance_id']
    assert ia != ib and ia and ib
    probe.connect('h')
    hid = probe.send('h', 'offline', 2, 5000)
    for iid in (ib, ia):                     # teardown: newest instance first
        call = expect_call(probe, 's', state_id=m, instance_id=iid, cpu=2, phase='teardown')
        answer(probe, 's', call)
    r = probe.recv('h')
    assert r['id'] == hid and [x['instance'] for x in r['results'][0]['states']] == ['b', 'a']
    probe.send('h', 'online', 2, 5000)
    for iid in (ia, ib):                     # startup: oldest first
        call = expect_call(probe, 's', state_id=m, instance_id=iid, cpu=2, phase='startup')
        answer(probe, 's', call)
    assert probe.recv('h')['results'][0]['ok']
    info = states(probe, 'h')
    assert [(s['name'], s['multi'], s['instances']) for s in info] == [('pools', True, 2)], info
    # Removal: its teardowns, last CPU first; the other instance stays.
    rid = probe.send('s', 'instance_remove', m, ia)
    for cpu in (3, 2, 1, 0):
        call = expect_call(probe, 's', state_id=m, instance_id=ia, cpu=cpu, phase='teardown')
        answer(probe, 's', call)
    r = probe.recv('s')
    assert r['kind'] == 'instance_removed' and r['id'] == rid and len(r['runs']) == 4, r
    assert states(probe, 'h')[0]['instances'] == 1


def test_a_failed_instance_startup_tears_it_down_and_it_does_not_exist(daemon4, probe):
    probe.connect('s')
    m = register(probe, 's', 'pools', 0, 5000, 'multi')
    rid = probe.send('s', 'instance_add', m, 'a')
    for cpu in (0, 1):
        call = expect_call(probe, 's', state_id=m, cpu=cpu, phase='startup')
        answer(probe, 's', call, 'ERR_ENOMEM' if cpu == 1 else 'ok')
    call = expect_call(probe, 's', state_id=m, cpu=0, phase='teardown', rollback=True)
    answer(probe, 's', call)
    r = probe.recv('s')
    assert r['id'] == rid and error_code(r) == 'ERR_ENOMEM', r
    assert states(probe, 's')[0]['instances'] == 0
    # The name is free again.
    assert add(probe, 's', m, 'a')['kind'] == 'instance_added'


def test_an_add_waits_for_a_queued_hotplug_and_gets_each_cpu_once(daemon4, sim4, probe):
    probe.connect('l')
    probe.connect('s')
    probe.connect('h')
    m = register(probe, 's', 'caches', 0, 5000, 'multi', 'prepare')
    first = add(probe, 's', m, 'first')
    lease = probe.lease('l')
    hid = probe.send('h', 'offline', 2, 5000)     # waits for the lease: the gate is closed
    rid = probe.send('s', 'instance_add', m, 'late')
    assert probe.status('s')['pending_hotplugs'] == 1   # no call came
    assert probe.call('l', 'release', lease)['kind'] == 'lease_released'
    # The hotplug first: it calls the instance that existed (its DEAD teardown) ...
    call = expect_call(probe, 's', state_id=m, instance_id=first['instance_id'], cpu=2,
                       phase='teardown')
    answer(probe, 's', call)
    assert probe.recv('h')['id'] == hid
    # ... then the add, on the CPUs the state is up on after it: 2 is not among them.
    for cpu in (0, 1, 3):
        call = expect_call(probe, 's', state_id=m, cpu=cpu, phase='startup')
        answer(probe, 's', call)
    r = probe.recv('s')
    assert r['id'] == rid and [x['cpu'] for x in r['runs']] == [0, 1, 3], r


def test_bad_instance_requests_get_clear_errors(daemon4, probe):
    probe.connect('s')
    probe.connect('t')
    plain = register(probe, 's', 'plain')
    m = register(probe, 's', 'pools', 0, 5000, 'multi')
    r = probe.call('s', 'instance_add', plain, 'a')
    assert error_code(r) == 'ERR_EINVAL' and 'not a multi' in r['message'], r
    r = probe.call('t', 'instance_add', m, 'a')         # another connection's state
    assert error_code(r) == 'ERR_ENOENT', r
    r = probe.call('s', 'instance_add', 999, 'a')
    assert error_code(r) == 'ERR_ENOENT', r
    r = probe.call('s', 'instance_add', m, 'x' * 64)           # too long
    assert error_code(r) == 'ERR_EINVAL', r
    add(probe, 's', m, 'a')
    r = probe.call('s', 'instance_add', m, 'a')
    assert error_code(r) == 'ERR_EEXIST', r
    r = probe.call('s', 'instance_remove', m, 12345)
    assert error_code(r) == 'ERR_ENOENT', r


def test_an_instance_limit_per_state_is_edquot_and_costs_no_connection(daemon4, probe):
    probe.connect('s')
    m = register(probe, 's', 'many', 0, 5000, 'multi')
    for i in range(256):
        r = probe.call('s', 'instance_add', m, f'i{i}', 'nocalls')
        assert r['kind'] == 'instance_added', r
    r = probe.call('s', 'instance_add', m, 'one-too-many', 'nocalls')
    assert error_code(r) == 'ERR_EDQUOT' and '256' in r['message'], r
    assert probe.status('s')['connections'] == 1


def test_removing_a_multi_state_tears_down_every_instance(daemon4, probe):
    probe.connect('s')
    m = register(probe, 's', 'pools', 0, 5000, 'multi')
    a = add(probe, 's', m, 'a')['instance_id']
    b = add(probe, 's', m, 'b')['instance_id']
    rid = probe.send('s', 'remove', m)
    for iid in (b, a):
        for cpu in (3, 2, 1, 0):
            call = expect_call(probe, 's', state_id=m, instance_id=iid, cpu=cpu,
                               phase='teardown')
            answer(probe, 's', call)
    r = probe.recv('s')
    assert r['kind'] == 'state_removed' and r['id'] == rid and len(r['runs']) == 8, r
    assert states(probe, 's') == []


def test_the_shell_hook_registers_in_the_prepare_section(daemon4, sim4, tmp_path):
    import json
    from test_states import Hook, ctl
    # Each call writes what the CPU's online file said when it ran.
    online = sim4.online_file(2)
    cmd = f'echo "$CPUHP_PHASE $CPUHP_SECTION $1 $(cat {online})" >> hook.log'
    hook = Hook(daemon4, tmp_path, 'prep', '--section', 'prepare', '--nocalls',
                '--teardown', cmd, '--startup', cmd)
    try:
        assert hook.line().startswith('state prep registered (id ')
        st = json.loads(ctl(daemon4, 'states', '--json').stdout)['states']
        assert [(s['name'], s['section']) for s in st] == [('prep', 'prepare')], st
        r = ctl(daemon4, '--json', 'offline', 2)
        assert r.returncode == 0, r
        [run] = json.loads(r.stdout)['results'][0]['states']
        assert (run['state'], run['section'], run['instance']) == ('prep', 'prepare', None), run
        assert hook.line().startswith('teardown CPU 2: ok')
        assert ctl(daemon4, 'online', 2).returncode == 0
        assert hook.line().startswith('startup CPU 2: ok')
        # The teardown after the CPU went, the startup before it came.
        assert (tmp_path / 'hook.log').read_text().splitlines() == \
            ['teardown prepare 2 0', 'startup prepare 2 0']
        r = ctl(daemon4, 'state', 'x', '--section', 'sideways', '--startup', 'true')
        assert r.returncode == 2 and '--section is prepare or online' in r.stderr, r
    finally:
        hook.kill()


def test_an_add_queued_behind_its_states_removal_is_refused(daemon4, probe):
    probe.connect('l')
    probe.connect('s')
    probe.connect('h')
    m = register(probe, 's', 'pools', 0, 5000, 'multi')
    lease = probe.lease('l')
    probe.send('h', 'offline', 2, 5000)          # closes the gate: both below wait
    rm = probe.send('s', 'remove', m)
    ad = probe.send('s', 'instance_add', m, 'late')
    assert probe.call('l', 'release', lease)['kind'] == 'lease_released'
    assert probe.recv('h')['results'][0]['ok']
    r = probe.recv('s')
    assert r['id'] == rm and r['kind'] == 'state_removed', r
    r = probe.recv('s')
    assert r['id'] == ad and error_code(r) == 'ERR_ECANCELED', r
    assert 'removed first' in r['message'], r
    assert states(probe, 'h') == []


def test_the_c_library_adds_and_removes_instances_while_its_thread_serves_hotplugs(
        daemon4, sim4, probe):
    """state-client's state (CPUHP_CLIENT_STATE_THREAD | MULTI, instances i0
    and i1): i1 removed and added back again and again on its main thread
    while hotplugs run, whose calls its library thread serves; each add or
    removal pauses that thread and waits for the gate.  Every instance ends
    up on exactly the online CPUs."""
    import subprocess
    import threading
    st = subprocess.Popen([str(fixture.BUILD / 'tests' / 'daemon' / 'state-client'),
                           daemon4.socket, 'multi', '0', '5000', 'm'],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    errors = []

    def hotplugs():
        try:
            probe.connect('h')
            for _ in range(6):
                for verb in ('offline', 'online'):
                    r = probe.call('h', verb, 2, 10000)
                    assert r['results'][0]['ok'], r
        except BaseException as e:  # noqa: B036 (reported by the main thread)
            errors.append(e)

    try:
        while not st.stdout.readline().startswith('registered '):
            pass
        t = threading.Thread(target=hotplugs)
        t.start()
        agains = 0
        while t.is_alive() or agains < 3:
            st.stdin.write('again\n')
            while not (line := st.stdout.readline().strip()).startswith('again '):
                assert line, f'state-client ended (exit {st.wait()})'
            assert line == 'again 0', line
            agains += 1
        t.join()
        assert not errors, errors
        st.stdin.write('view\n')
        while not (line := st.stdout.readline().strip()).startswith('view '):
            assert line
        assert line == 'view 0-3 busy=0', line
        assert [s['instances'] for s in states(probe, 'h')] == [2]
    finally:
        st.kill()
        st.wait()


def test_a_hot_added_cpus_prepare_startup_runs_before_it_runs_anything(machines):
    """The case PREPARE is for (per-CPU caches on vCPU hot-add): with
    online-new-cpus, cpuhpd brings a hot-added CPU online itself, and a
    PREPARE state's startup runs while the CPU is still offline, an ONLINE
    state's once it is up."""
    m = machines(cpus='0-5', conf='online-new-cpus = yes\noffline-cpus = 5\n')
    hot_add_tree(m.sim)
    m.start()
    m.probe.connect('s')
    p = register(m.probe, 's', 'slabs', 0, 5000, 'prepare')
    o = register(m.probe, 's', 'pool', 0, 5000)
    hot_add(m, 4, '0-4')
    call = expect_call(m.probe, 's', state_id=p, cpu=4, phase='startup', section='prepare')
    assert m.sim.read_online(4) == '0'     # the slab is there before the CPU runs
    answer(m.probe, 's', call)
    call = expect_call(m.probe, 's', state_id=o, cpu=4, phase='startup', section='online')
    assert m.sim.read_online(4) == '1'
    answer(m.probe, 's', call)
    m.settle()
    assert [s['cpus'] for s in states(m.probe, 's')] == ['0-4', '0-4']


def test_a_batch_clients_prepare_teardowns_come_one_at_a_time_and_all_run(daemon4, sim4,
                                                                          probe):
    """A client that runs batches skips the rest of a batch after a failure;
    PREPARE teardowns must each run whatever the one before did, so they
    are never batched: a failure of the first still leaves the others
    called."""
    r = probe.connect('s', batch=True)
    assert r['state_batch'] is True, r
    p1, p2, p3 = (register(probe, 's', f'p{i}', i, 5000, 'prepare') for i in (1, 2, 3))
    probe.connect('h')
    hid = probe.send('h', 'offline', 2, 5000)
    first = expect_call(probe, 's', state_id=p3, phase='teardown', cpu=2)
    assert first['batch'] == 0, first
    assert probe.call('s', 'states')['kind'] == 'state_list'
    assert probe('queued s') == {'queued': 0}      # nothing sent ahead of its answer
    probe.send('s', 'answer', first['call_id'], 'ERR_EIO')
    answer_in_order(probe, 's', [p2, p1], 'teardown', 2)
    r = probe.recv('h')
    assert r['id'] == hid and r['results'][0]['ok'] and sim4.read_online(2) == '0', r
