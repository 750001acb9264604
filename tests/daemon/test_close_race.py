# SPDX-License-Identifier: LGPL-2.1-or-later
"""cpuhp_client_close() while another thread waits.

A fast-path handle whose acquire waits behind a hotplug waits on a
connection of its own (fastpath.c); before the fix, closing the handle
then freed it under the waiter, which later added its lease to the freed
handle's table (fallback_add: a heap-use-after-free under ASan, a lease
"granted" on a freed handle in the plain build).  Now close wakes it with
-ECANCELED and frees the handle after.  The cases on the handle's own
socket are in tests/unit/test-client.c (client_close_wakes_*)."""
import errno
import time

import fixture
from fastlib import FastClient

LONG = fixture.GUARD_S * 1000


def until(probe, pred):
    deadline = time.monotonic() + fixture.GUARD_S
    s = probe.status('p')
    while not pred(s) and time.monotonic() < deadline:
        s = probe.status('p')
    assert pred(s), s


def test_close_wakes_a_fast_acquire_waiting_behind_a_hotplug(daemon, sim, probe):
    c = FastClient(daemon.socket)
    try:
        c.connect('a')
        c.thread('t', 'a')
        c.thread('u', 'a')
        c.lease('t')
        probe.connect('h')
        probe.connect('p')
        hp = probe.send('h', 'offline', 1, LONG)
        # Ask the daemon until each step is seen (a deadline only against a
        # hang): the hotplug waits (fast leases closed), then the waiter's
        # request on its connection of its own.
        until(probe, lambda s: s['writer'] == 'WRITER_WAITING')
        c.acquire('u', LONG)
        until(probe, lambda s: s['pending_leases'] == 1)
        assert c('close a')['ok']
        r = c.wait('u')
        assert r['ret'] == -errno.ECANCELED, r
        # Both leases ended with the handle: the hotplug ran.
        r = probe.recv('h')
        assert r['id'] == hp and r['kind'] == 'set_online', r
        assert sim.read_online(1) == '0'
        assert probe.status('p')['leases_held'] == 0
    finally:
        c.kill()
