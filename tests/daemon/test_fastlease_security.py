# SPDX-License-Identifier: LGPL-2.1-or-later
"""What a client can and cannot do with the fast path's shared memory, and
that fast leases never outlive what counts them.

A client maps the daemon's header read-only (the kernel refuses every way
to write it) and its own region, which it cannot resize or reseal.  Any
count it writes into its own slots delays a hotplug at most until that
hotplug's timeout, and cannot cancel another client's lease.  When cpuhpd
closes the connection, stops or dies, the fast path refuses leases."""
import errno
import signal

import pytest

from fastlib import FAST_BIT, FastClient, Raw, fast_daemon
from fixture import error_code

LONG = 20000
SHORT = 300


@pytest.fixture
def raw(daemon):
    r = Raw(daemon.socket)
    assert r('hello')['fast_path']
    g = r('fastpath 4')
    assert g['kind'] == 'granted' and g['nfds'] == 2 and g['nslots'] == 4, g
    yield r
    r.kill()


def test_header_cannot_be_written_by_a_client_in_any_way(raw):
    r = raw('hdrwrite')
    # F_SEAL_FUTURE_WRITE: no new writable mapping, no write(), even through a new open.
    assert r['mmap'] == errno.EPERM and r['pwrite'] == errno.EPERM, r
    assert r['reopen'] == errno.EPERM, r
    assert r['mprotect'] == errno.EACCES, r
    s = raw('state')
    assert s['state'] == s['open'] == s['live'] != 0, s


def test_region_and_header_cannot_be_resized_or_resealed(raw):
    r = raw('resize')
    assert r == {'shrink': errno.EPERM, 'grow': errno.EPERM, 'seal': errno.EPERM,
                 'header_shrink': errno.EPERM}, r


def test_negative_counts_cannot_cancel_another_clients_lease(daemon, raw, client, probe):
    client.connect('a')
    client.thread('t', 'a')
    client.lease('t')
    # Exactly what would cancel the one lease in a sum over every client.
    assert raw('set 1 -1')['ok']
    probe.connect('h')
    r = probe.call('h', 'offline', 1, SHORT)
    assert error_code(r) == 'ERR_ETIMEDOUT', r


def test_a_count_never_released_delays_a_hotplug_only_until_its_timeout(daemon, sim, raw,
                                                                         client, probe):
    assert raw('set 1 5')['ok']
    assert raw('status')['fast_leases_held'] == 5
    for n in 'hb':
        probe.connect(n)
    hp = probe.send('h', 'offline', 1, SHORT)
    probe.status('h')
    b = probe.send('b', 'acquire', LONG)
    probe.status('b')
    # Wake-ups from the liar change nothing: its region still does not add up to zero.
    for _ in range(50):
        raw('wake')
    r = probe.recv('h')
    assert r['id'] == hp and error_code(r) == 'ERR_ETIMEDOUT', r
    assert 'behind 5 leases:' in r['message'] and sim.read_online(1) == '1', r
    g = probe.recv('b')
    assert g['id'] == b and g['kind'] == 'lease_granted', g
    probe.call('b', 'release', g['lease_id'])
    # Everyone else goes on: the gate and the fast path are open again.
    client.connect('a')
    client.thread('t', 'a')
    client.unlease('t', client.lease('t', 0))
    # Its count ends with its connection.
    raw.kill()
    r = probe.call('h', 'offline', 1, LONG)
    assert r['kind'] == 'set_online' and r['results'][0]['changed'], r


def test_second_fast_path_request_is_ealready_and_before_hello_eproto(daemon, raw):
    assert raw('fastpath 4') == {'kind': 'error', 'code': 'ERR_EALREADY'}
    early = Raw(daemon.socket)
    try:
        assert early('fastpath 4') == {'kind': 'error', 'code': 'ERR_EPROTO'}
    finally:
        early.kill()


def test_fast_wake_without_the_fast_path_is_ignored(daemon, probe):
    r = Raw(daemon.socket)
    try:
        r('hello')
        r('wake')
        assert r('status')['fast_connections'] == 0
    finally:
        r.kill()


def test_client_the_daemon_disconnects_gets_no_fast_lease_after(daemon, client, probe):
    client.connect('a')
    client.thread('t', 'a')
    client.unlease('t', client.lease('t'))
    client('badframe a')
    # The daemon has dropped us once a call on the handle sees the connection gone.
    assert client('status a')['ret'] < 0
    client.acquire('t', 0)
    r = client.wait('t')
    assert r['ret'] < 0 and not r['fast'], r
    probe.connect('p')
    assert probe.status('p')['leases_held'] == 0


@pytest.mark.parametrize('how', ['sigterm', 'sigkill'])
def test_no_fast_lease_from_a_daemon_that_stopped_or_died(tmp, sim, how):
    d = fast_daemon(tmp, sim.root)
    c = FastClient(d.socket)
    try:
        c.connect('a')
        c.thread('t', 'a')
        assert c.lease('t') & FAST_BIT
        if how == 'sigkill':
            # The kernel rewrites the robust state word as the daemon dies.
            d.proc.send_signal(signal.SIGKILL)
            d.wait()
        else:
            assert d.stop() == 0
        c.acquire('t', 0)
        r = c.wait('t')
        assert r['ret'] < 0 and not r['fast'], r
        # The lease held across it died with the connection: its release says
        # so (it used to return 0).
        c.release('t')
        r = c.wait('t')
        assert r['ret'] == -errno.ECONNRESET, r
    finally:
        c.kill()
        d.kill()
        print(d.log())
