# SPDX-License-Identifier: LGPL-2.1-or-later
"""cpuhp.Client and cpuhp.aio.Client getting ready for a hotplug: the
HotplugPending and HotplugCancelled events, a lease's on_pending callback
(sync: on the binding's thread; aio: in the loop), delay leases
(Client(delay=...)), forced hotplugs (set_online(force=...)).

Ordering without sleeps: a hotplug waits until the lease it waits for is
released; a callback's effect is awaited as the hotplug's answer."""
import asyncio
import errno
import threading

import pytest

import fixture
from conftest import GUARD_S


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, GUARD_S))


@pytest.fixture
def aio(cpuhp):
    import cpuhp.aio
    return cpuhp.aio


@pytest.fixture
def admin(cpuhp, daemon):
    with cpuhp.Client(daemon.socket) as c:
        yield c


def test_a_holder_hears_the_hotplug_it_holds_up_and_its_timeout(cpuhp, client, admin):
    with client.lease():
        with pytest.raises(TimeoutError):
            admin.set_online(2, False, timeout=0.2)
        pend = client.next_event(GUARD_S)
        assert isinstance(pend, cpuhp.HotplugPending), pend
        assert (pend.cpus, pend.online, pend.smt, pend.force) == ({2}, False, '', False)
        assert 0 < pend.timeout <= 0.2
        canc = client.next_event(GUARD_S)
        assert isinstance(canc, cpuhp.HotplugCancelled), canc
        assert (canc.id, canc.cpus, canc.errno) == (pend.id, {2}, errno.ETIMEDOUT), canc
        assert 'timed out after 200 ms' in canc.message


def test_on_pending_releases_the_lease_and_the_hotplug_runs_at_once(cpuhp, client, admin):
    seen = []
    done = threading.Event()

    def let_go(lease, ev):
        seen.append((threading.current_thread() is threading.main_thread(), ev))
        lease.release()
        done.set()

    with client.lease(on_pending=let_go) as lease:
        assert lease.on_pending is let_go
        # Holds until the callback lets go: without it, this would time out.
        result = admin.set_online(2, False, timeout=GUARD_S)
        assert result.changed == {2}
        assert done.wait(GUARD_S) and lease.released
    [(on_main, ev)] = seen
    assert not on_main and isinstance(ev, cpuhp.HotplugPending) and ev.cpus == {2}
    # The event is still news for next_event(): the callback does not take it away.
    assert isinstance(client.next_event(0), cpuhp.HotplugPending)


def test_on_pending_on_a_socket_lease_hears_it_through_the_clients_connection(
        cpuhp, daemon, admin, monkeypatch):
    monkeypatch.setenv('CPUHP_CLIENT_FAST_PATH', '0')
    with cpuhp.Client(daemon.socket) as c:
        with c.lease(on_pending=lambda lease, ev: lease.release()) as lease:
            assert lease.id < 1 << 63       # a socket lease, on a connection of its own
            assert admin.set_online(3, False, timeout=GUARD_S).changed == {3}


def test_a_callback_that_raises_is_reported_and_others_still_run(cpuhp, client, admin,
                                                                 capfd):
    def boom(lease, ev):
        raise RuntimeError('boom')

    first = client.lease(on_pending=boom)
    with client.lease(on_pending=lambda lease, ev: (lease.release(), first.release())):
        assert admin.set_online(1, False, timeout=GUARD_S).changed == {1}
    assert 'on_pending callback' in capfd.readouterr().err


def test_aio_on_pending_in_the_loop_sync_and_coroutine(cpuhp, aio, daemon):
    async def main():
        loop = asyncio.get_running_loop()
        async with aio.Client(daemon.socket) as c, aio.Client(daemon.socket) as admin:
            in_loop = []

            async def let_go(lease, ev):
                in_loop.append(asyncio.get_running_loop() is loop)
                lease.release()

            async with c.lease(on_pending=let_go):
                r = await admin.set_online(2, False, timeout=GUARD_S)
                assert r.changed == {2}
            lease = await c.lease(on_pending=lambda lease, ev: lease.release())
            assert (await admin.set_online(2, True, timeout=GUARD_S)).changed == {2}
            assert lease.released and in_loop == [True]
    run(main())


def test_a_delay_lease_is_revoked_and_its_release_says_so(cpuhp, tmp, sim):
    d = fixture.Daemon(tmp, sim.root, args=['--max-delay-ms', '300']).start()
    try:
        with cpuhp.Client(d.socket, delay=100) as c, cpuhp.Client(d.socket) as admin:
            assert c.lease_delay == 0.3       # cut to --max-delay-ms
            lease = c.lease()
            [row] = admin.leases().leases
            assert (row.mode, row.delay) == ('delay', 0.3), row
            assert admin.set_online(2, False, timeout=GUARD_S).changed == {2}
            assert isinstance(c.next_event(GUARD_S), cpuhp.HotplugPending)
            rv = c.next_event(GUARD_S)
            assert isinstance(rv, cpuhp.LeaseRevoked) and rv.reason == 'delay', rv
            assert rv.delay == 0.3
            with pytest.raises(OSError) as e:
                lease.release()
            assert e.value.errno == errno.ETIME
        with pytest.raises(ValueError, match='delay'):
            cpuhp.Client(d.socket, delay=0)
    finally:
        d.stop_clean()


def test_a_forced_hotplug_lists_what_it_revoked(cpuhp, client, admin):
    lease = client.lease(who='pools', why='sizing')
    r = admin.set_online(2, False, timeout=GUARD_S, force=0.05)
    assert r.changed == {2}
    [row] = r.revoked
    assert (row.who, row.why, row.mode) == ('pools', 'sizing', 'block'), row
    with pytest.raises(OSError) as e:
        lease.release()
    assert e.value.errno == errno.ETIME
    assert admin.set_online(2, True, force=True).revoked == ()


def test_aio_forced_hotplug(cpuhp, aio, daemon, client):
    async def main():
        async with aio.Client(daemon.socket) as admin:
            held = client.lease()
            r = await admin.set_online(1, False, timeout=GUARD_S, force=0)
            assert r.changed == {1} and len(r.revoked) == 1
            with pytest.raises(OSError):
                held.release()
    run(main())
