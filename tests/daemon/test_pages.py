# SPDX-License-Identifier: LGPL-2.1-or-later
"""Listings larger than one frame come in pages (ListLeases, ListStates):
each reply fits a frame, `more` counts the rows after it and `next` is
where the following page starts.  The asker's connection, and its leases,
stay; every row that lives from the first page to the last is listed
exactly once."""
import subprocess

import fixture
from fixture import error_code


def pages(probe, name, kind, limit=0):
    """Every page of a listing, asked in turn."""
    out, after = [], ''
    while True:
        r = probe.call(name, kind, limit, after) if after else probe.call(name, kind, limit)
        assert r['kind'] in ('lease_list', 'state_list'), r
        out.append(r)
        if not r['next']:
            assert r['more'] == 0, r
            return out
        assert r['more'] > 0, r
        after = r['next']


def long_leases(probe, conns, per_conn):
    """Leases named with who and why at the 255-byte limit (probe's "long")."""
    for k in range(conns):
        probe.connect(f'long{k}')
        for _ in range(per_conn):
            r = probe.call(f'long{k}', 'acquireas', 0, 'long', 'long')
            assert r['kind'] == 'lease_granted', r


def test_128_long_named_leases_come_in_pages_and_the_asker_keeps_its_lease(daemon, probe):
    long_leases(probe, 2, 64)
    probe.connect('asker')
    mine = probe.lease('asker')
    first = probe.call('asker', 'leases')
    # An older client stops here: a cut list that says how much is left.
    assert first['kind'] == 'lease_list' and first['more'] > 0 and first['next'], first
    got = [le for p in pages(probe, 'asker', 'leases') for le in p['leases']]
    ids = [le['lease_id'] for le in got]
    assert len(ids) == 129 and len(set(ids)) == 129 and mine in ids
    assert all(len(le['who']) == 255 for le in got if le['lease_id'] != mine)
    assert probe.status('asker')['leases_held'] == 129
    assert probe.call('asker', 'release', mine)['kind'] == 'lease_released'


def test_cpuhpctl_leases_lists_them_all(daemon, probe):
    long_leases(probe, 2, 64)
    r = subprocess.run([fixture.CPUHPCTL, '--socket', daemon.socket, '--json', 'leases'],
                       capture_output=True, text=True, timeout=fixture.GUARD_S)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count('"lease_id"') == 128, r.stdout[:300]


def test_rows_that_stay_are_listed_once_while_others_come_and_go(daemon, probe):
    probe.connect('a')
    held = [probe.lease('a') for _ in range(6)]
    probe.connect('asker')
    p1 = probe.call('asker', 'leases', 2)
    assert [le['lease_id'] for le in p1['leases']] == held[:2] and p1['more'] == 4, p1
    # Between pages: one listed lease and one not yet listed end, a new one comes.
    probe.call('a', 'release', held[0])
    probe.call('a', 'release', held[3])
    new = probe.lease('a')
    rest = []
    after = p1['next']
    while after:
        r = probe.call('asker', 'leases', 2, after)
        rest += [le['lease_id'] for le in r['leases']]
        after = r['next']
    assert rest == [held[2], held[4], held[5], new], rest


def test_a_page_is_cut_between_the_three_lists(daemon, probe):
    probe.connect('h')
    lease = probe.lease('h')
    probe.connect('admin')
    hp = probe.send('admin', 'offline', 1, 60000)   # waits behind the lease
    fr = probe.send('admin', 'freeze', 'me', 'test')  # pending behind the hotplug
    probe.connect('asker')
    got = pages(probe, 'asker', 'leases', 1)
    assert [len(p['leases']) + len(p['hotplugs']) + len(p['freezes']) for p in got] == [1, 1, 1]
    assert got[0]['leases'][0]['lease_id'] == lease and got[1]['hotplugs'] and got[2]['freezes']
    probe.call('h', 'release', lease)
    assert probe.recv('admin')['id'] == hp
    assert probe.recv('admin')['id'] == fr


def test_a_cursor_that_is_not_ours_is_refused(daemon, probe):
    probe.connect('c')
    for kind in ('leases', 'states'):
        r = probe.call('c', kind, 0, '00ff')
        assert error_code(r) == 'ERR_EINVAL' and 'not a cursor' in r['message'], r
    probe.lease('c')


def test_1024_states_come_in_pages_in_startup_order(daemon, probe):
    for k in range(16):
        probe.connect(f's{k}')
        for i in range(64):
            r = probe.call(f's{k}', 'register', f'st-{k}-{i}-' + 'n' * 40, (i * 7919) % 101 - 50,
                           1000, 'nocalls')
            assert r['kind'] == 'state_registered', r
    probe.connect('asker')
    lease = probe.lease('asker')
    got = pages(probe, 'asker', 'states')
    assert len(got) > 1
    states = [s for p in got for s in p['states']]
    assert len(states) == 1024 and len({s['state_id'] for s in states}) == 1024
    order = [(s['priority'], s['state_id']) for s in states]
    assert order == sorted(order)
    assert probe.call('asker', 'release', lease)['kind'] == 'lease_released'
