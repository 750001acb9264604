# SPDX-License-Identifier: LGPL-2.1-or-later
"""Every request type of the protocol, its answers and its errors."""
import fixture
from fixture import error_code


def test_hello_reports_protocol_version_and_frame_limit(daemon, probe):
    r = probe.connect('a')
    assert r['version'] == 1
    assert r['max_frame'] == 65536
    assert r['daemon_version']


def test_newer_client_is_answered_with_the_version_the_daemon_speaks(daemon, probe):
    probe('rawconnect a')
    r = probe.call('a', 'hello', 7)
    assert r['kind'] == 'hello' and r['version'] == 1


def test_hello_version_0_is_refused_and_the_connection_closed(daemon, probe):
    probe('rawconnect a')
    r = probe.call('a', 'hello', 0)
    assert error_code(r) == 'ERR_EPROTONOSUPPORT', r
    assert probe('eof a')['end'] in ('eof', 'ECONNRESET')


def test_request_before_hello_is_refused_and_the_connection_closed(daemon, probe):
    probe('rawconnect a')
    r = probe.call('a', 'status')
    assert error_code(r) == 'ERR_EPROTO', r
    assert 'Hello' in r['message']
    assert probe('eof a')['end'] in ('eof', 'ECONNRESET')


def test_status_reports_cpu_sets_leases_writer_and_connections(daemon, sim, probe):
    probe.connect('a')
    probe.connect('b')
    probe.lease('a')
    s = probe.status('b')
    assert s['possible'] == s['present'] == s['online']
    assert s['offline'] == ''
    assert s['leases_held'] == 1
    assert s['writer'] == 'WRITER_IDLE'
    assert s['pending_leases'] == 0 and s['pending_hotplugs'] == 0
    assert s['connections'] == 2


def test_lease_acquire_and_release_round_trip_with_unique_ids(daemon, probe):
    probe.connect('a')
    ids = [probe.lease('a') for _ in range(3)]
    assert len(set(ids)) == 3
    assert probe.status('a')['leases_held'] == 3
    for i in ids:
        r = probe.call('a', 'release', i)
        assert r['kind'] == 'lease_released' and r['lease_id'] == i, r
    assert probe.status('a')['leases_held'] == 0


def test_releasing_an_unknown_lease_is_esrch(daemon, probe):
    probe.connect('a')
    r = probe.call('a', 'release', 12345)
    assert error_code(r) == 'ERR_ESRCH', r


def test_a_lease_cannot_be_released_by_another_connection(daemon, probe):
    probe.connect('a')
    probe.connect('b')
    lease = probe.lease('a')
    assert error_code(probe.call('b', 'release', lease)) == 'ERR_ESRCH'
    assert probe.status('b')['leases_held'] == 1


def test_offline_then_online_writes_the_tree_and_reports_each_cpu(daemon, sim, probe):
    probe.connect('h')
    r = probe.call('h', 'offline', 1, 1000)
    assert r['kind'] == 'set_online', r
    assert r['results'] == [{'cpu': 1, 'ok': True, 'changed': True, 'code': 'ERR_UNKNOWN',
                             'message': ''}]
    assert sim.read_online(1) == '0'
    s = probe.status('h')
    assert s['online'] == r['online'] and '1' in s['offline'].split(',')[-1]
    r = probe.call('h', 'online', 1, 1000)
    assert r['results'][0]['changed'] and sim.read_online(1) == '1'
    assert probe.status('h')['offline'] == ''


def test_cpu_already_in_the_asked_state_reports_changed_false(daemon, sim, probe):
    probe.connect('h')
    r = probe.call('h', 'online', 1, 1000)
    assert r['results'][0]['ok'] and not r['results'][0]['changed'], r


def test_cpu_without_online_file_is_reported_not_hotpluggable(daemon, sim, probe):
    probe.connect('h')
    r = probe.call('h', 'offline', 0, 1000)
    res = r['results'][0]
    assert not res['ok'] and res['code'] == 'ERR_ENOENT', r
    assert 'not hot pluggable' in res['message']


def test_cpu_that_does_not_exist_is_reported_per_cpu(daemon, sim, probe):
    probe.connect('h')
    r = probe.call('h', 'offline', '1,4000', 1000)
    assert [x['cpu'] for x in r['results']] == [1, 4000]
    assert r['results'][0]['ok']
    assert r['results'][1]['code'] == 'ERR_ENOENT'
    assert 'does not exist' in r['results'][1]['message']


def test_invalid_or_empty_cpu_lists_are_einval_and_change_nothing(daemon, sim, probe):
    probe.connect('h')
    for bad in ('x', '3-1', '1,,2', '-1'):
        r = probe.call('h', 'offline', bad, 1000)
        assert error_code(r) == 'ERR_EINVAL', (bad, r)
        assert 'range list' in r['message']
    assert error_code(probe.call('h', 'offline', '99999', 1000)) == 'ERR_EINVAL'
    assert sim.read_online(1) == '1'


def test_more_cpus_than_a_reply_can_carry_is_erange(daemon, probe):
    probe.connect('h')
    r = probe.call('h', 'offline', '0-2047', 1000)
    assert error_code(r) == 'ERR_ERANGE', r
    assert 'split' in r['message']


def test_unknown_request_is_eopnotsupp_and_the_connection_stays(daemon, probe):
    probe.connect('a')
    r = probe.call('a', 'empty')
    assert error_code(r) == 'ERR_EOPNOTSUPP', r
    assert probe.status('a')['connections'] == 1


def test_watch_is_started_once_per_connection(daemon, probe):
    probe.connect('w')
    assert probe.call('w', 'watch')['kind'] == 'watch_started'
    assert error_code(probe.call('w', 'watch')) == 'ERR_EALREADY'


def test_watch_reports_hotplug_started_finished_and_online_changed(daemon, sim, probe):
    probe.connect('w')
    probe.connect('h')
    watch_id = probe.send('w', 'watch')
    assert probe.recv('w')['kind'] == 'watch_started'
    probe.call('h', 'offline', 1, 1000)
    started, finished, changed = (probe.recv('w') for _ in range(3))
    for ev in (started, finished, changed):
        assert ev['kind'] == 'event' and ev['id'] == watch_id, ev
    assert started['event'] == 'hotplug_started' and started['cpus'] == '1'
    assert not started['online']
    assert finished['event'] == 'hotplug_finished' and finished['ok']
    assert finished['results'][0]['changed']
    assert changed['event'] == 'online_changed' and not changed['external']
    assert changed['online'] == probe.status('h')['online']


def test_lease_limit_per_connection_is_edquot(daemon, probe):
    probe.connect('a')
    for _ in range(64):
        probe.lease('a')
    r = probe.call('a', 'acquire', 0)
    assert error_code(r) == 'ERR_EDQUOT' and 'limit' in r['message'], r
    probe.connect('b')
    probe.lease('b')  # the limit is per connection


def test_waiting_request_limit_per_connection_is_edquot(daemon, probe):
    probe.connect('a')
    probe.connect('h')
    probe.lease('a')
    probe.send('h', 'offline', 1, 60000)
    probe.connect('w')
    for _ in range(16):
        probe.send('w', 'acquire', 60000)
    r = probe.call('w', 'acquire', 60000)
    assert error_code(r) == 'ERR_EDQUOT', r
    assert probe.status('w')['pending_leases'] == 16
    # Closing the connection ends its waits: the hotplug still waits only for a's lease.
    probe('close w')
    probe('close a')
    assert probe.recv('h')['kind'] == 'set_online'


def test_connection_limit_answers_eusers_and_closes(tmp, sim):
    d = fixture.Daemon(tmp, sim.root, args=['--max-connections', '2']).start()
    p = fixture.Probe(d.socket)
    try:
        p.connect('a')
        p.connect('b')
        r = p('connect c')
        assert error_code(r) == 'ERR_EUSERS' and r['id'] == 0, r
        assert '--max-connections' in r['message']
        p('close a')
        # A closed connection frees its slot; the daemon saw the close before
        # this connect only if b's status round trip says so.
        assert p.status('b')['connections'] == 1
        p.connect('c')
    finally:
        p.kill()
        assert d.stop() == 0, d.log()


def test_hotplug_with_timeout_0_behind_a_lease_is_eagain(daemon, sim, probe):
    probe.connect('a')
    probe.connect('h')
    probe.lease('a')
    r = probe.call('h', 'offline', 1, 0)
    assert error_code(r) == 'ERR_EAGAIN', r
    assert sim.read_online(1) == '1'
    assert probe.status('h')['writer'] == 'WRITER_IDLE'
