# SPDX-License-Identifier: LGPL-2.1-or-later
"""A user program of the cpuhp package, as one would write it with type
hints: test_typing.py checks it with ``mypy --strict`` (every public name
must be known and typed, with nothing left as Any where it matters) and
runs it against a cpuhpd on a simulated tree.

    typed_user.py SOCKET
"""
import asyncio
import sys
import threading

import cpuhp  # cpuhp.aio too: imported on first use
from cpuhp import Client, Event, HotplugFinished, format_cpulist, parse_cpulist


def in_process() -> list[str]:
    done: list[str] = []
    sem = cpuhp.RWSem(name='table')
    with sem.read(timeout=1.0):
        done.append('read')
    with sem.write(timeout=1.0):
        done.append('write')
    sem.acquire_read(timeout=None)
    sem.release_read()
    if sem.try_read():
        sem.release_read()
    with cpuhp.online_cpus_held():
        done.append('online_cpus_held')
    with cpuhp.hotplug_section(timeout=1.0):
        done.append('hotplug_section')
    cpus: frozenset[int] = parse_cpulist('0-3,8')
    assert format_cpulist(cpus) == '0-3,8' and cpuhp.CPUSET_MAX > 8
    many: cpuhp.CPUs = range(2)
    done.append(format_cpulist(many))
    return done


def describe(event: Event) -> str:
    if isinstance(event, HotplugFinished):
        return f'finished {format_cpulist(event.cpus)} ok={event.ok}'
    if isinstance(event, cpuhp.OnlineChanged):
        return f'online now {format_cpulist(event.online_cpus)}'
    if isinstance(event, cpuhp.HotplugStarted):
        return f'started {format_cpulist(event.cpus)} online={event.online}'
    return type(event).__name__


def across_processes(path: str) -> list[str]:
    done: list[str] = []
    assert cpuhp.HAVE_CLIENT and cpuhp.SOCKET_ENV and cpuhp.DEFAULT_SOCKET
    assert isinstance(cpuhp.socket_path(), str)
    with Client(path, who='typed', why='mypy --strict') as c:
        status: cpuhp.Status = c.status()
        assert status.writer is cpuhp.WriterState.IDLE
        events = c.watch(timeout=5.0)
        with c.lease(timeout=1.0) as lease:
            assert isinstance(lease, cpuhp.Lease) and lease.id > 0
            listing: cpuhp.LeaseList = c.leases()
            infos: list[cpuhp.LeaseInfo] = listing.leases
            done.append(f'{len(infos)} lease')
        rows: list[cpuhp.CpuInfo] = c.cpus()
        row: cpuhp.CpuInfo = rows[0]
        core: int | None = row.core
        names: tuple[str, ...] = row.states
        done.append(f'{len(rows)} cpus, {row.topology} {core} {len(names)}')
        result: cpuhp.HotplugResult = c.set_online('2', False, timeout=5.0)
        assert result.changed == {2} and result.ok
        per_cpu: tuple[cpuhp.CpuResult, ...] = result.results
        done.append(f'offline {per_cpu[0].cpu}')
        for event in events:
            done.append(describe(event))
            if isinstance(event, HotplugFinished):
                break
        c.set_online([2], True, timeout=5.0).check()
        with c.freeze(why='typed') as freeze:
            assert isinstance(freeze, cpuhp.Freeze)
        seen: list[int] = []
        with c.register_state('typed:state', startup=seen.append, nocalls=True) as state:
            assert isinstance(state, cpuhp.State) and not state.removed
        done.append('state')
    return done


async def asynchronously(path: str) -> list[str]:
    done: list[str] = []
    async with cpuhp.aio.Client(path) as c:
        async with c.lease(timeout=1.0) as lease:
            done.append(f'aio lease {lease.id > 0}')
        result = await c.set_online(3, False, timeout=5.0)
        done.append(f'aio offline {format_cpulist(result.changed)}')
        await c.set_online(3, True, timeout=5.0)
        status = await c.status()
        done.append(f'aio online {format_cpulist(status.online)}')
        rows = await c.cpus()
        done.append(f'aio {sum(r.online for r in rows)} cpus online')
    return done


def main(argv: list[str]) -> int:
    out = in_process()
    t = threading.Thread(target=in_process)
    t.start()
    t.join()
    out += across_processes(argv[1])
    out += asyncio.run(asynchronously(argv[1]))
    print('\n'.join(out))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
