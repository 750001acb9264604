# SPDX-License-Identifier: LGPL-2.1-or-later
"""Lease limits and bypasses from Python: a lease revoked at
cpuhpd's --max-lease-ms raises OSError(ETIME) on release; a CPU changed
behind cpuhpd's back while a lease is held comes as a LeaseBypassed event
and as OSError(ESTALE) on release, for a socket or a fast lease."""
import errno

import pytest

import fixture
from conftest import wait_until


def changed_behind(daemon, sim, cpu, value):
    sim.write_online(cpu, value)
    daemon.inject_uevent('offline' if value == 0 else 'online', f'/devices/system/cpu/cpu{cpu}')


@pytest.fixture
def limited(tmp, sim):
    d = fixture.Daemon(tmp, sim.root, args=['--max-lease-ms', '100']).start()
    yield d
    d.stop_clean()


def test_a_revoked_lease_raises_etime_on_release(cpuhp, limited):
    with cpuhp.Client(limited.socket) as c, cpuhp.Client(limited.socket) as observer:
        lease = c.lease(timeout=5)
        wait_until('the lease revoked', lambda: observer.status().revocations == 1)
        assert observer.status().leases_held == 0
        with pytest.raises(OSError) as e:
            lease.release()
        assert e.value.errno == errno.ETIME and '--max-lease-ms is 100' in e.value.strerror


def test_a_bypass_comes_as_an_event_to_a_fast_lease_holder_and_estale_on_release(
        cpuhp, daemon, sim):
    with cpuhp.Client(daemon.socket) as c:
        with pytest.raises(OSError) as e, c.lease() as lease:
            events = c.watch(timeout=30)
            changed_behind(daemon, sim, 2, 0)
            seen = []
            for ev in events:
                seen.append(ev)
                if isinstance(ev, cpuhp.LeaseBypassed):
                    break
        # The block's exit released the fast lease: stale, released all the same.
        assert e.value.errno == errno.ESTALE and lease.released, e.value
        assert c.status().fast_leases_held == 0
        assert any(isinstance(e, cpuhp.OnlineChanged) and e.external for e in seen), seen
        assert seen[-1] == cpuhp.LeaseBypassed(online_cpus=frozenset({0, 1, 3}), leases=1)
        assert c.status().bypasses == 1


def test_a_socket_lease_held_through_a_bypass_raises_estale_on_release(cpuhp, tmp, sim):
    d = fixture.Daemon(tmp, sim.root, args=['--fast-path', 'off']).start()
    try:
        with cpuhp.Client(d.socket) as c, cpuhp.Client(d.socket) as observer:
            lease = c.lease(timeout=5)
            changed_behind(d, sim, 3, 0)
            wait_until('the bypass seen', lambda: observer.status().bypasses == 1)
            with pytest.raises(OSError) as e:
                lease.release()
            assert e.value.errno == errno.ESTALE, e.value
            assert observer.status().leases_held == 0
    finally:
        d.stop_clean()
