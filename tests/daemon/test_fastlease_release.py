# SPDX-License-Identifier: LGPL-2.1-or-later
"""a double, unknown or foreign fast-lease release
cancels nobody's lease.

The client library keeps a table of its live fast leases: a release of an
id it does not hold is -ESRCH with a message and changes no count.  cpuhpd
judges each slot on its own (count - released, within 0 and the per-slot
limit): a connection whose slot says otherwise broke the protocol and is
closed, so a forged count can neither wedge a hotplug nor let one in."""
import errno

from fastlib import FAST_BIT, FastClient, Raw
from fixture import error_code

LONG = 20000
SHORT = 300
SLOT_MAX = 16   # CPUHP__FAST_SLOT_MAX_LEASES


def two_threads(client, handle='a'):
    client.connect(handle)
    client.thread('t0', handle)
    client.thread('t1', handle)


def test_double_release_is_esrch_and_the_other_threads_lease_still_holds(daemon, sim, client,
                                                                          probe):
    two_threads(client)
    held = client.lease('t0')
    mine = client.lease('t1')
    client.unlease('t1', mine)
    client.release('t1', mine)
    r = client.wait('t1')
    assert r['ret'] == -errno.ESRCH, r
    probe.connect('h')
    # Before the fix the second release cancelled t0's count: the hotplug ran.
    r = probe.call('h', 'offline', 1, SHORT)
    assert error_code(r) == 'ERR_ETIMEDOUT' and 'behind 1 lease:' in r['message'], r
    assert sim.read_online(1) == '1'
    client.unlease('t0', held)
    r = probe.call('h', 'offline', 1, LONG)
    assert r['kind'] == 'set_online' and r['results'][0]['changed'], r


def test_release_of_an_id_never_granted_is_esrch_and_wedges_nothing(daemon, sim, client, probe):
    two_threads(client)
    client.unlease('t0', client.lease('t0'))     # the handle has its fast path
    for forged in (FAST_BIT | 1, FAST_BIT | (5 << 42) | 12345, (1 << 64) - 1):
        client.release('t0', forged)
        r = client.wait('t0')
        assert r['ret'] == -errno.ESRCH, (forged, r)
    probe.connect('h')
    # Before the fix the slot stayed at -1: every hotplug timed out with
    # "0 lease(s) still held" for as long as the client lived.
    r = probe.call('h', 'offline', 1, SHORT)
    assert r['kind'] == 'set_online' and r['results'][0]['changed'], r
    assert probe.status('h')['connections'] == 2     # the client is still served


def test_release_on_another_handle_is_esrch_and_both_counts_stay_right(daemon, sim, client,
                                                                       probe):
    client.connect('a')
    client.connect('b')
    client.thread('ta', 'a')
    client.thread('tb', 'b')
    client.unlease('tb', client.lease('tb'))
    la = client.lease('ta')
    client.release('tb', la)
    r = client.wait('tb')
    assert r['ret'] == -errno.ESRCH, r
    probe.connect('h')
    r = probe.call('h', 'offline', 1, SHORT)
    assert error_code(r) == 'ERR_ETIMEDOUT', r
    client.unlease('ta', la)
    # Before the fix b's region was left at -1 and this timed out too.
    r = probe.call('h', 'offline', 1, SHORT)
    assert r['kind'] == 'set_online' and r['results'][0]['changed'], r


def test_a_slot_holds_at_most_its_limit_then_edquot(daemon, client):
    client.connect('a')
    client.thread('t', 'a')
    for _ in range(SLOT_MAX):
        client.lease('t')
    client.acquire('t', 0)
    r = client.wait('t')
    assert r['ret'] == -errno.EDQUOT and 'limit' in r['message'], r
    client.unlease('t')
    client.lease('t')


def raw_region(daemon):
    r = Raw(daemon.socket)
    assert r('hello')['fast_path']
    assert r('fastpath 4')['kind'] == 'granted'
    return r


def test_a_negative_slot_closes_its_connection_and_unblocks_a_waiting_hotplug(daemon, sim,
                                                                              probe):
    raw = raw_region(daemon)
    try:
        assert raw('set 2 1')['ok']
        probe.connect('h')
        hp = probe.send('h', 'offline', 1, LONG)
        probe.status('h')
        # Then it "releases" from another thread twice (released word +2): -1.
        assert raw('setrel 2 2')['ok']
        raw('wake')
        c = raw('closed')
        assert c['code'] == 'ERR_EPROTO' and 'protocol violation' in c['message'], c
        assert c['live'] == 0xfffffffe, c  # CPUHP__FAST_LIVE_CLOSED
        r = probe.recv('h')
        assert r['id'] == hp and r['results'][0]['changed'], r
        assert 'protocol violation: fast-path slot 2 says -1 leases' in daemon.log()
    finally:
        raw.kill()


def test_int32_max_in_a_slot_shows_capped_and_closes_the_connection(daemon, probe):
    raw = raw_region(daemon)
    try:
        assert raw('set 1 2147483647')['ok']
        probe.connect('s')
        s = probe.status('s')
        # Before the fix: 2147483647 leases held.
        assert s['leases_held'] <= SLOT_MAX, s
        c = raw('closed')
        assert c['code'] == 'ERR_EPROTO', c
        assert probe.status('s')['leases_held'] == 0
        assert 'slot 1 says 2147483647 leases' in daemon.log()
    finally:
        raw.kill()


def test_counts_within_the_rules_keep_the_connection(daemon):
    raw = raw_region(daemon)
    try:
        # count - released within 0..16: what honest cross-thread releases look like.
        for slot, count, rel in ((1, 16, 0), (2, 7, 7), (3, -5, -5), (0, 3, 2)):
            assert raw(f'set {slot} {count}')['ok'] and raw(f'setrel {slot} {rel}')['ok']
        s = raw('status')
        assert s['fast_leases_held'] == 17 and s['fast_connections'] == 1, s
        assert 'protocol violation' not in daemon.log()
    finally:
        raw.kill()
