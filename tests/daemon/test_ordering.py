# SPDX-License-Identifier: LGPL-2.1-or-later
"""The lock semantics across processes: writer preference, fairness,
timeouts that change nothing, one hotplug at a time in arrival order.

Ordering is proved, never timed: requests on one connection are handled in
order, so a status sent after a request on the same connection sees that
request queued; and what a client sees right after it was granted a lease
(the online set, the writer state) says whether a hotplug ran before it."""
from fixture import error_code


def test_lease_waits_behind_a_waiting_hotplug_and_is_granted_after_it(daemon, sim, probe):
    for n in 'ahb':
        probe.connect(n)
    lease = probe.lease('a')
    hp = probe.send('h', 'offline', 1, 60000)
    assert probe.status('h')['writer'] == 'WRITER_WAITING'
    waiting = probe.send('b', 'acquire', 60000)
    s = probe.status('b')
    assert s['pending_leases'] == 1 and s['leases_held'] == 1
    assert probe.call('a', 'release', lease)['kind'] == 'lease_released'
    r = probe.recv('h')
    assert r['id'] == hp and r['kind'] == 'set_online' and r['results'][0]['changed'], r
    g = probe.recv('b')
    assert g['id'] == waiting and g['kind'] == 'lease_granted', g
    # Granted after the hotplug, not before it: the CPU is already offline.
    s = probe.status('b')
    assert s['writer'] == 'WRITER_IDLE' and s['online'] == r['online']
    assert sim.read_online(1) == '0'


def test_try_lease_while_a_hotplug_waits_is_eagain(daemon, probe):
    for n in 'ahb':
        probe.connect(n)
    probe.lease('a')
    probe.send('h', 'offline', 1, 60000)
    probe.status('h')
    r = probe.call('b', 'acquire', 0)
    assert error_code(r) == 'ERR_EAGAIN', r


def test_leases_that_waited_on_a_hotplug_enter_before_the_next_hotplug(daemon, sim, probe):
    for n in ('a', 'h1', 'b', 'c', 'h2'):
        probe.connect(n)
    lease = probe.lease('a')
    h1 = probe.send('h1', 'offline', 1, 60000)
    probe.status('h1')
    b = probe.send('b', 'acquire', 60000)
    probe.status('b')
    h2 = probe.send('h2', 'online', 1, 60000)
    assert probe.status('h2')['pending_hotplugs'] == 2
    c = probe.send('c', 'acquire', 60000)
    assert probe.status('c')['pending_leases'] == 2
    probe.call('a', 'release', lease)
    assert probe.recv('h1')['id'] == h1
    # Both leases that waited on H1 are granted although H2 was queued first...
    gb, gc = probe.recv('b'), probe.recv('c')
    assert gb['id'] == b and gb['kind'] == 'lease_granted', gb
    assert gc['id'] == c and gc['kind'] == 'lease_granted', gc
    # ...and H2 now waits for them: it has not run.
    s = probe.status('h2')
    assert s['writer'] == 'WRITER_WAITING' and s['leases_held'] == 2
    assert s['pending_hotplugs'] == 1 and sim.read_online(1) == '0'
    # The next thing h2 hears is its status, not a hotplug reply.
    probe.call('b', 'release', gb['lease_id'])
    assert probe.status('h2')['writer'] == 'WRITER_WAITING'
    probe.call('c', 'release', gc['lease_id'])
    r = probe.recv('h2')
    assert r['id'] == h2 and r['results'][0]['changed'], r
    assert sim.read_online(1) == '1'


def test_hotplugs_run_one_at_a_time_in_arrival_order(daemon, sim, probe):
    for n in ('a', 'w', 'h1', 'h2', 'h3'):
        probe.connect(n)
    probe.call('w', 'watch')
    lease = probe.lease('a')
    probe.send('h1', 'offline', 1, 60000)
    probe.status('h1')
    probe.send('h2', 'online', 1, 60000)
    probe.status('h2')
    probe.send('h3', 'offline', 1, 60000)
    assert probe.status('h3')['pending_hotplugs'] == 3
    probe.call('a', 'release', lease)
    for name, changed in (('h1', True), ('h2', True), ('h3', True)):
        assert probe.recv(name)['results'][0]['changed'] == changed
    # The watcher saw three sections, each started and finished before the next;
    # only the first waited (for a's lease), so only it was announced pending.
    kinds = []
    while len(kinds) < 10:
        ev = probe.recv('w')
        kinds.append((ev['event'], ev.get('online')))
    assert kinds[0] == ('hotplug_pending', False), kinds
    assert [k for k, _ in kinds[1:]] == ['hotplug_started', 'hotplug_finished',
                                         'online_changed'] * 3
    assert [o for k, o in kinds if k == 'hotplug_started'] == [False, True, False]
    assert sim.read_online(1) == '0'


def test_several_cpus_are_one_writer_section(daemon4, sim4, probe):
    for n in ('a', 'w', 'h', 'b'):
        probe.connect(n)
    probe.call('w', 'watch')
    lease = probe.lease('a')
    probe.send('h', 'offline', '1-3', 60000)
    probe.status('h')
    probe.send('b', 'acquire', 60000)
    probe.status('b')
    probe.call('a', 'release', lease)
    r = probe.recv('h')
    assert [x['cpu'] for x in r['results']] == [1, 2, 3]
    assert all(x['changed'] for x in r['results'])
    assert r['online'] == '0'
    # One pending/started/finished for the three CPUs; the waiting lease came after all of them.
    pending = probe.recv('w')
    assert pending['event'] == 'hotplug_pending' and pending['cpus'] == '1-3', pending
    assert probe.recv('w')['event'] == 'hotplug_started'
    fin = probe.recv('w')
    assert fin['event'] == 'hotplug_finished' and len(fin['results']) == 3
    assert probe.recv('b')['kind'] == 'lease_granted'
    assert probe.status('b')['online'] == '0'


def test_hotplug_timeout_changes_nothing_and_lets_waiting_leases_in(daemon, sim, probe):
    for n in 'ahb':
        probe.connect(n)
    probe.lease('a')
    hp = probe.send('h', 'offline', 1, 300)
    probe.status('h')
    b = probe.send('b', 'acquire', 60000)
    probe.status('b')
    r = probe.recv('h')
    assert r['id'] == hp and error_code(r) == 'ERR_ETIMEDOUT', r
    assert 'nothing was changed' in r['message']
    g = probe.recv('b')
    assert g['id'] == b and g['kind'] == 'lease_granted', g
    s = probe.status('h')
    assert s['writer'] == 'WRITER_IDLE' and s['pending_hotplugs'] == 0
    assert s['leases_held'] == 2 and s['offline'] == ''
    assert sim.read_online(1) == '1'
    # The state is restored: leases are grantable without waiting.
    probe.lease('h', 0)


def test_lease_timeout_while_a_hotplug_waits_is_etimedout(daemon, sim, probe):
    for n in 'ahb':
        probe.connect(n)
    lease = probe.lease('a')
    probe.send('h', 'offline', 1, 60000)
    probe.status('h')
    b = probe.send('b', 'acquire', 200)
    r = probe.recv('b')
    assert r['id'] == b and error_code(r) == 'ERR_ETIMEDOUT', r
    s = probe.status('b')
    assert s['pending_leases'] == 0 and s['writer'] == 'WRITER_WAITING'
    probe.call('a', 'release', lease)
    assert probe.recv('h')['results'][0]['changed']


def test_queued_hotplug_times_out_behind_an_earlier_one(daemon, sim, probe):
    for n in ('a', 'h1', 'h2'):
        probe.connect(n)
    lease = probe.lease('a')
    probe.send('h1', 'offline', 1, 60000)
    probe.status('h1')
    h2 = probe.send('h2', 'online', 1, 200)
    r = probe.recv('h2')
    assert r['id'] == h2 and error_code(r) == 'ERR_ETIMEDOUT', r
    assert 'earlier' in r['message']
    probe.call('a', 'release', lease)
    assert probe.recv('h1')['results'][0]['changed']
    assert sim.read_online(1) == '0'


def test_hotplug_of_a_client_that_disconnects_while_waiting_is_dropped(daemon, sim, probe):
    for n in ('a', 'h', 'b'):
        probe.connect(n)
    lease = probe.lease('a')
    probe.send('h', 'offline', 1, 60000)
    probe.status('h')
    b = probe.send('b', 'acquire', 60000)
    probe.status('b')
    probe('close h')
    # The waiting lease goes through once the hotplug is gone, and nothing changed.
    g = probe.recv('b')
    assert g['id'] == b and g['kind'] == 'lease_granted'
    s = probe.status('b')
    assert s['pending_hotplugs'] == 0 and s['writer'] == 'WRITER_IDLE'
    probe.call('a', 'release', lease)
    assert sim.read_online(1) == '1'


def test_lease_release_and_new_connections_are_served_while_a_hotplug_waits(daemon, probe):
    for n in 'ahb':
        probe.connect(n)
    l1 = probe.lease('a')
    l2 = probe.lease('a')
    probe.send('h', 'offline', 1, 60000)
    probe.status('h')
    probe.connect('new')
    assert probe.status('new')['writer'] == 'WRITER_WAITING'
    assert probe.call('a', 'release', l1)['kind'] == 'lease_released'
    assert probe.status('new')['leases_held'] == 1
    probe.call('a', 'release', l2)
    assert probe.recv('h')['kind'] == 'set_online'
