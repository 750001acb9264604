# SPDX-License-Identifier: LGPL-2.1-or-later
"""Who holds what, from Python: Client(who=, why=),
set_identity(), lease(who=, why=), Client.leases() and its dataclasses,
and the asyncio twins."""
import asyncio
import os
import threading

import pytest

from conftest import wait_until


def test_an_unnamed_lease_shows_what_the_daemon_knows(cpuhp, client, observer):
    with client.lease():
        [row] = observer.leases().leases
    assert isinstance(row, cpuhp.LeaseInfo)
    assert row.pid == os.getpid() and row.uid == os.getuid(), row
    assert (row.who, row.why, row.count) == ('', '', 1), row
    assert row.comm and row.held >= 0 and row.connection > 0, row
    assert row.fast == (row.id is None), row
    assert observer.leases() == cpuhp.LeaseList(leases=[], hotplugs=[])


def test_client_who_why_names_its_leases_fast_ones_too(cpuhp, daemon, observer):
    with cpuhp.Client(daemon.socket, who='resize-pools', why='sizing worker pools') as c:
        with c.lease(), c.lease():
            rows = observer.leases().leases
    assert sum(r.count for r in rows) == 2, rows
    assert {(r.who, r.why) for r in rows} == {('resize-pools', 'sizing worker pools')}, rows


def test_set_identity_renames_the_leases_held_and_a_lease_may_name_itself(client, observer):
    with client.lease():
        client.set_identity('first', 'one')
        assert [(r.who, r.why) for r in observer.leases().leases] == [('first', 'one')]
        with client.lease(who='own', why='its own') as own:
            rows = observer.leases().leases
            mine = [r for r in rows if r.id == own.id]
            assert [(r.who, r.why, r.fast) for r in mine] == [('own', 'its own', False)], rows
        client.set_identity()
        assert [(r.who, r.why) for r in observer.leases().leases] == [('', '')]


def test_a_named_lease_waits_for_a_hotplug_like_any_other(cpuhp, client, observer, sim):
    """Writer preference holds for named leases: queued behind the hotplug,
    granted when it is done."""
    got = []
    with observer.lease():
        setter = cpuhp.Client(observer.path)
        t = threading.Thread(target=lambda: got.append(setter.set_online(2, False, timeout=30)))
        t.start()
        wait_until('the offline queued', lambda: observer.status().pending_hotplugs == 1)
        hp = observer.leases().hotplugs
        assert len(hp) == 1 and isinstance(hp[0], cpuhp.HotplugInfo), hp
        assert (hp[0].cpus, hp[0].online, hp[0].state) == (frozenset({2}), False,
                                                            cpuhp.WriterState.WAITING), hp
        assert hp[0].pid == os.getpid() and hp[0].timeout == 30 and hp[0].waited >= 0, hp
        with pytest.raises(BlockingIOError):
            client.lease(timeout=0, who='late', why='behind the hotplug')
    t.join(timeout=30)
    setter.close()
    assert got and got[0].ok and sim.read_online(2) == '0'
    with client.lease(timeout=5, who='late', why='after it'):
        assert [r.who for r in observer.leases().leases] == ['late']


def test_a_timeout_names_the_holder(cpuhp, client, observer):
    with client.lease(who='bench', why='measuring'):
        with pytest.raises(TimeoutError) as e:
            observer.set_online(3, False, timeout=0.02)
    assert f"pid {os.getpid()} (bench) 'measuring', held" in e.value.strerror, e.value


@pytest.mark.parametrize('bad', ['x' * 256, 'a\0b', 'é' * 128])
def test_bad_names_are_refused_before_anything_is_sent(client, observer, bad):
    with pytest.raises(ValueError):
        client.set_identity(bad)
    with pytest.raises(ValueError):
        client.lease(why=bad)
    assert observer.leases().leases == []


def test_a_name_must_be_a_str(client):
    with pytest.raises(TypeError):
        client.set_identity(b'bytes')


def test_aio_names_and_lists(cpuhp, daemon):
    from cpuhp import aio

    async def main():
        async with aio.Client(daemon.socket, who='aio-job', why='async') as c:
            async with c.lease():
                rows = (await c.leases()).leases
            assert [(r.who, r.why) for r in rows] == [('aio-job', 'async')], rows
            async with c.lease(timeout=1, who='own', why='task'):
                rows = (await c.leases()).leases
            assert [(r.who, r.why, r.fast) for r in rows] == [('own', 'task', False)], rows
            c.set_identity('renamed')
            async with c.lease():
                assert [r.who for r in (await c.leases()).leases] == ['renamed']
    asyncio.run(main())


def test_a_listing_larger_than_a_frame_comes_whole_and_the_asker_keeps_its_fast_lease(
        cpuhp, client, observer):
    """128 leases named at the 255-byte limit do not fit one frame: the
    library asks for every page, on the lease-holding Client itself."""
    named = [observer.lease(who='w' * 255, why=f'{i:03d}' + 'y' * 252) for i in range(128)]
    try:
        with client.lease() as mine:
            rows = client.leases().leases
            assert len(rows) == 129, len(rows)
            assert sorted(r.why[:3] for r in rows if not r.fast) == [f'{i:03d}' for i in range(128)]
            assert [r.count for r in rows if r.fast] == [1]
            assert observer.status().fast_leases_held == 1 and not mine.released
    finally:
        for lease in named:
            lease.release()
