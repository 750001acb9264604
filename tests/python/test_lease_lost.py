# SPDX-License-Identifier: LGPL-2.1-or-later
"""A lease that died with its daemon, from Python: cpuhpd is
SIGKILLed or SIGTERMed (and waited for, so its sockets are closed: no sleep)
while a fast or a socket lease is held.  The ``with client.lease()`` block
raises ConnectionResetError on its way out, next_event() gives LeasesLost
first, and cpuhp.aio's lease does the same.  Before: the block ended
quietly for a fast lease, and no event came."""
import asyncio
import errno
import signal

import pytest

import fixture

MODES = {'fast': [], 'socket': ['--fast-path', 'off']}


def stopped(d, sig):
    d.send_signal(sig)
    assert d.wait() in (0, -sig)


@pytest.fixture(params=sorted(MODES))
def mode(request):
    return request.param


@pytest.mark.parametrize('sig', [signal.SIGKILL, signal.SIGTERM])
def test_with_lease_raises_connection_reset_on_exit(cpuhp, tmp, sim, mode, sig):
    d = fixture.Daemon(tmp, sim.root, args=MODES[mode]).start()
    try:
        with cpuhp.Client(d.socket) as c:
            with pytest.raises(ConnectionResetError) as e:
                with c.lease(timeout=5) as lease:
                    assert (lease.id >= 1 << 63) == (mode == 'fast')
                    stopped(d, sig)
            assert 'died with the connection to cpuhpd' in e.value.strerror
            assert e.value.errno == errno.ECONNRESET
    finally:
        d.kill()


@pytest.mark.parametrize('sig', [signal.SIGKILL, signal.SIGTERM])
def test_leases_lost_event_then_release_raises(cpuhp, tmp, sim, mode, sig):
    d = fixture.Daemon(tmp, sim.root, args=MODES[mode]).start()
    try:
        with cpuhp.Client(d.socket) as c:
            leases = [c.lease(timeout=5), c.lease(timeout=5)]
            stopped(d, sig)
            assert c.next_event(timeout=fixture.GUARD_S) == cpuhp.LeasesLost(leases=2)
            for lease in leases:
                with pytest.raises(ConnectionResetError):
                    lease.release()
            with pytest.raises(OSError) as e:
                c.next_event(timeout=0)
            assert e.value.errno == (errno.ECONNRESET if sig == signal.SIGKILL
                                     else errno.ECANCELED)
    finally:
        d.kill()


def test_an_exception_in_the_block_wins_over_the_lost_lease(cpuhp, tmp, sim):
    d = fixture.Daemon(tmp, sim.root).start()
    try:
        with cpuhp.Client(d.socket) as c:
            with pytest.raises(KeyError):
                with c.lease(timeout=5):
                    stopped(d, signal.SIGKILL)
                    raise KeyError('the block failed')
    finally:
        d.kill()


def test_aio_lease_raises_connection_reset_on_exit(cpuhp, tmp, sim, mode):
    import cpuhp.aio

    d = fixture.Daemon(tmp, sim.root, args=MODES[mode]).start()

    async def main():
        async with cpuhp.aio.Client(d.socket) as c:
            with pytest.raises(ConnectionResetError):
                async with c.lease(timeout=5):
                    stopped(d, signal.SIGKILL)

    try:
        asyncio.run(main())
    finally:
        d.kill()
