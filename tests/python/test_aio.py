# SPDX-License-Identifier: LGPL-2.1-or-later
"""cpuhp.aio.Client against a private cpuhpd on a simulated tree (CPUs
0-3, cpu0 not hotpluggable), each test under asyncio.run: leases, hotplug
requests and events awaited in the loop, with no thread per call, and
cancellation giving a request up.

"A request is waiting" is observed through a second (blocking) connection's
status, never by sleeping; ``await asyncio.sleep(0)`` only lets a new task
run to its first wait, by which time its request is sent."""
import asyncio
import errno
import os
import signal
import threading

import pytest

from conftest import GUARD_S, wait_until


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, GUARD_S))


@pytest.fixture
def aio(cpuhp):
    import cpuhp.aio
    return cpuhp.aio


def writer_is(cpuhp, observer, state):
    return lambda: observer.status().writer == state


async def started(coro):
    """A task running @coro, once it waits (its request sent)."""
    task = asyncio.create_task(coro)
    await asyncio.sleep(0)
    return task


async def hotplug_waiting(cpuhp, observer, coro):
    """A task running the hotplug @coro, once the daemon has it waiting for leases."""
    task = await started(coro)
    wait_until('the hotplug waiting', writer_is(cpuhp, observer, cpuhp.WriterState.WAITING))
    return task


def test_async_with_lease_holds_and_releases(cpuhp, aio, daemon, observer):
    async def main():
        async with aio.Client(daemon.socket) as c:
            async with c.lease() as lease:
                assert isinstance(lease, cpuhp.Lease) and not lease.released
                assert observer.status().leases_held == 1
            assert lease.released and observer.status().leases_held == 0
            lease = await c.lease(timeout=0)
            assert observer.status().leases_held == 1
            lease.release()
            with pytest.raises(ZeroDivisionError):
                async with c.lease():
                    1 / 0
            assert observer.status().leases_held == 0
        assert c.closed and 'closed' in repr(c)
    run(main())


def test_waits_are_awaited_in_the_loop_with_no_thread_per_call(cpuhp, aio, daemon, observer):
    """A hotplug waiting for a lease and a lease waiting for that hotplug,
    both awaited by tasks of one loop, while this task keeps asking the
    daemon; the lease is granted after the hotplug (writer preference)."""
    async def main():
        held = observer.lease()
        threads = threading.active_count()
        async with aio.Client(daemon.socket) as admin, aio.Client(daemon.socket) as c:
            hotplug = await hotplug_waiting(cpuhp, observer, admin.set_online(1, False))

            async def lease_then_look():
                async with c.lease():
                    return (await c.status()).offline
            leased = await started(lease_then_look())
            wait_until('the lease queued', lambda: observer.status().pending_leases == 1)
            s = await c.status()  # the loop is free: this task still runs
            assert s.writer is cpuhp.WriterState.WAITING and s.pending_hotplugs == 1
            assert threading.active_count() == threads
            assert not hotplug.done() and not leased.done()
            held.release()
            assert (await hotplug).changed == {1}
            assert await leased == {1}
        assert observer.status().leases_held == 0
    run(main())


def test_a_lease_times_out_as_the_daemon_says(cpuhp, aio, daemon, observer):
    async def main():
        held = observer.lease()
        async with aio.Client(daemon.socket) as admin, aio.Client(daemon.socket) as c:
            hotplug = await hotplug_waiting(cpuhp, observer, admin.set_online(1, False))
            with pytest.raises(BlockingIOError):
                await c.lease(timeout=0)
            with pytest.raises(TimeoutError) as e:
                await c.lease(timeout=0.05)
            assert e.value.errno == errno.ETIMEDOUT and 'hotplug' in e.value.strerror
            held.release()
            await hotplug
    run(main())


def test_cancelling_a_waiting_lease_gives_the_request_up(cpuhp, aio, daemon, observer):
    async def main():
        held = observer.lease()
        async with aio.Client(daemon.socket) as admin, aio.Client(daemon.socket) as c:
            hotplug = await hotplug_waiting(cpuhp, observer, admin.set_online(1, False))
            waiting = await started(c.lease())
            wait_until('the lease queued', lambda: observer.status().pending_leases == 1)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            wait_until('the request dropped', lambda: observer.status().pending_leases == 0)
            held.release()
            assert (await hotplug).changed == {1}
            # c is still connected: had the request stayed, c would hold a lease.
            assert observer.status().leases_held == 0
    run(main())


def test_cancelling_a_waiting_hotplug_cancels_it(cpuhp, aio, daemon, sim, observer):
    async def main():
        held = observer.lease()
        async with aio.Client(daemon.socket) as c:
            hotplug = await hotplug_waiting(cpuhp, observer, c.set_online(2, False))
            hotplug.cancel()
            with pytest.raises(asyncio.CancelledError):
                await hotplug
            wait_until('the hotplug gone', writer_is(cpuhp, observer, cpuhp.WriterState.IDLE))
            assert observer.status().offline == set() and sim.read_online(2) == '1'
            held.release()
    run(main())


def test_set_online_gives_per_cpu_results_and_errors(cpuhp, aio, daemon, observer):
    async def main():
        async with aio.Client(daemon.socket) as c:
            result = await c.set_online('1-2', False)
            assert isinstance(result, cpuhp.HotplugResult) and result.changed == {1, 2}
            with pytest.raises(OSError) as e:
                await c.set_online('0-1', False)  # cpu0 is not hotpluggable
            assert e.value.result.failed == {0}
            assert (await c.set_online([0], False, check=False)).failed == {0}
            with observer.lease():
                with pytest.raises(BlockingIOError):
                    await c.set_online(3, False, timeout=0)
            with pytest.raises(TypeError):
                await c.set_online(3, 1)
            s = await c.status()
            assert s.offline == {1, 2} and s.connections == 3  # observer, c, the status's own
    run(main())


def test_async_for_watch_yields_the_events_of_a_hotplug(cpuhp, aio, daemon, observer):
    async def main():
        async with aio.Client(daemon.socket) as c:
            events = c.watch(timeout=GUARD_S)  # subscribed already
            observer.set_online('1-2', False)
            got = []
            async for ev in events:
                got.append(ev)
                if len(got) == 3:
                    break
            assert got == [
                cpuhp.HotplugStarted(cpus=frozenset({1, 2}), online=False),
                cpuhp.HotplugFinished(cpus=frozenset({1, 2}), online=False, ok=True,
                                      failed=frozenset()),
                cpuhp.OnlineChanged(online_cpus=frozenset({0, 3}), external=False)]
            assert [ev async for ev in c.watch(timeout=0)] == []
            assert await c.next_event(0.01) is None
        # Leaving the loop early left nothing in use: the Client closed.
    run(main())


def test_two_tasks_waiting_for_events_on_one_client_both_get_one(cpuhp, aio, daemon, observer):
    async def main():
        async with aio.Client(daemon.socket) as c:
            c.watch()
            a = await started(c.next_event())
            b = await started(c.next_event())
            observer.set_online(1, False)
            got = await asyncio.gather(a, b)
            # The first two events, one each, whichever task the loop resumed first.
            assert sorted(type(e).__name__ for e in got) == ['HotplugFinished',
                                                             'HotplugStarted']
    run(main())


def test_events_that_a_lease_read_off_the_socket_still_wake_the_watcher(cpuhp, aio, daemon,
                                                                       observer):
    """A Client's first lease asks for the fast path on its connection and
    reads what came before the answer, events too."""
    async def main():
        async with aio.Client(daemon.socket) as c:
            c.watch()
            watcher = await started(c.next_event())
            observer.set_online(1, False)
            async with c.lease():
                pass
            assert isinstance(await watcher, cpuhp.HotplugStarted)
    run(main())


class _Stopped:
    """The daemon stopped (SIGSTOP) for a block: it answers nothing until
    resumed.  A guard thread resumes it after GUARD_S if the test did not,
    so that a loop blocked in a call fails the test instead of hanging it."""

    def __init__(self, daemon) -> None:
        self._pid = daemon.proc.pid
        self._done = threading.Event()
        self.guard_fired = False

    def _guard(self) -> None:
        if not self._done.wait(GUARD_S):
            self.guard_fired = True
            os.kill(self._pid, signal.SIGCONT)

    def __enter__(self) -> '_Stopped':
        os.kill(self._pid, signal.SIGSTOP)
        self._thread = threading.Thread(target=self._guard, daemon=True)
        self._thread.start()
        return self

    def resume(self) -> None:
        self._done.set()
        os.kill(self._pid, signal.SIGCONT)

    def __exit__(self, *exc) -> None:
        self.resume()
        self._thread.join()


def test_leases_is_awaited_on_a_connection_of_its_own(cpuhp, aio, daemon, observer):
    """With the daemon stopped, a task awaiting leases() leaves the loop to
    this one; once resumed, the answer is the sync Client's."""
    async def main():
        held = observer.lease(who='listed')  # a socket lease: it has an id
        async with aio.Client(daemon.socket) as c:
            with _Stopped(daemon) as stopped:
                listing = await started(c.leases())
                assert not stopped.guard_fired and not listing.done()  # this task ran
                stopped.resume()
                got = await listing
            assert not stopped.guard_fired
            want = observer.leases()
            assert ([(li.id, li.who) for li in got.leases] ==
                    [(li.id, li.who) for li in want.leases] == [(held.id, 'listed')])
            assert got.hotplugs == [] and got.freezes == []
        held.release()
    run(main())


def freezes(observer):
    return [(f.granted, f.who, f.why) for f in observer.leases().freezes]


def test_freeze_waits_for_a_queued_hotplug_in_the_loop(cpuhp, aio, daemon, observer):
    """A freeze behind a hotplug that waits for a lease: its task waits in
    the loop while this task runs on, releases the lease (a blocked loop
    would wait for the hotplug's timeout); then new hotplugs are refused
    until the block's end thaws."""
    async def main():
        held = observer.lease()
        async with aio.Client(daemon.socket) as admin, aio.Client(daemon.socket) as c:
            hotplug = await hotplug_waiting(cpuhp, observer,
                                            admin.set_online(1, False, timeout=GUARD_S))

            async def frozen_then_refused():
                async with c.freeze(who='bench', why='a quiet window') as fz:
                    assert isinstance(fz, cpuhp.Freeze) and not fz.thawed
                    with pytest.raises(OSError) as e:
                        await admin.set_online(1, True, timeout=0)
                    assert e.value.errno == errno.EBUSY and 'bench' in e.value.strerror
                    return fz
            freezing = await started(frozen_then_refused())
            wait_until('the freeze waiting',
                       lambda: freezes(observer) == [(False, 'bench', 'a quiet window')])
            assert not freezing.done() and not hotplug.done()  # this task ran meanwhile
            assert (await c.leases()).freezes[0].who == 'bench'
            held.release()
            assert (await hotplug).changed == {1}
            fz = await freezing
            assert fz.thawed and freezes(observer) == []
            fz = await c.freeze()  # awaited: held until thawed
            assert freezes(observer) == [(True, '', '')]
            fz.thaw()
            assert freezes(observer) == []
            assert (await admin.set_online(1, True)).changed == {1}
    run(main())


def test_cancelling_a_waiting_freeze_gives_the_request_up(cpuhp, aio, daemon, observer):
    async def main():
        held = observer.lease()
        async with aio.Client(daemon.socket) as admin, aio.Client(daemon.socket) as c:
            hotplug = await hotplug_waiting(cpuhp, observer,
                                            admin.set_online(1, False, timeout=GUARD_S))
            freezing = await started(c.freeze())
            wait_until('the freeze waiting', lambda: len(freezes(observer)) == 1)
            freezing.cancel()
            with pytest.raises(asyncio.CancelledError):
                await freezing
            wait_until('the request dropped', lambda: freezes(observer) == [])
            held.release()
            assert (await hotplug).changed == {1}
            # A freeze left waiting would have been granted now and refuse this.
            assert (await admin.set_online(1, True, timeout=0)).changed == {1}
    run(main())


def test_close_wakes_a_waiting_freeze_with_ecanceled_and_drops_it(cpuhp, aio, daemon,
                                                                   observer):
    async def main():
        held = observer.lease()
        async with aio.Client(daemon.socket) as admin:
            c = aio.Client(daemon.socket)
            hotplug = await hotplug_waiting(cpuhp, observer,
                                            admin.set_online(1, False, timeout=GUARD_S))
            freezing = await started(c.freeze())
            wait_until('the freeze waiting', lambda: len(freezes(observer)) == 1)
            c.close()
            wait_until('the request dropped', lambda: freezes(observer) == [])
            with pytest.raises(OSError) as e:
                await freezing
            assert e.value.errno == errno.ECANCELED
            held.release()
            assert (await hotplug).changed == {1}
    run(main())


def test_freeze_checks_its_names_before_anything_is_awaited(aio, daemon):
    async def main():
        async with aio.Client(daemon.socket) as c:
            with pytest.raises(ValueError):
                c.freeze(who='x' * 256)
    run(main())


def test_register_state_waits_in_the_executor_and_callbacks_run_on_its_thread(
        cpuhp, aio, daemon, observer, sim):
    """The startup of CPU 0 holds the registration until this task, which
    keeps running in the loop meanwhile, lets it go; hotplugs run the
    callbacks on the State's thread; the block's end removes it."""
    log, in_startup, go = [], threading.Event(), threading.Event()

    def callback(tag):
        def fn(cpu):
            log.append((tag, cpu, threading.current_thread() is threading.main_thread()))
            if (tag, cpu) == ('up', 0) and not go.is_set():
                in_startup.set()
                go.wait(GUARD_S)  # a loop blocked here fails the test below
        return fn

    async def main():
        async with aio.Client(daemon.socket) as c:
            async def hold_state():
                async with c.register_state('aio-a', startup=callback('up'),
                                            teardown=callback('down')) as st:
                    assert isinstance(st, cpuhp.State) and st.id > 0 and not st.removed
                    assert log == [('up', cpu, False) for cpu in range(4)]
                    log.clear()
                    assert (await c.set_online(2, False)).changed == {2}
                    assert log == [('down', 2, False)] and sim.read_online(2) == '0'
                    log.clear()
                    assert (await c.set_online(2, True)).changed == {2}
                    assert log == [('up', 2, False)]
                    log.clear()
                return st
            holder = await started(hold_state())
            wait_until('the startup of CPU 0 running', in_startup.is_set)
            assert not holder.done()  # this task runs while the registration waits
            go.set()
            st = await holder
            assert st.removed and log == [('down', cpu, False) for cpu in (3, 2, 1, 0)]
            log.clear()
            st = await c.register_state('aio-b', teardown=callback('down'), nocalls=True)
            assert log == [] and not st.removed
            st.remove(nocalls=True)
            assert (await c.set_online(2, False)).changed == {2} and log == []
            with pytest.raises(ValueError):
                c.register_state('no spaces allowed')
    run(main())


def test_register_state_cancelled_while_registering_removes_the_state(cpuhp, aio, daemon,
                                                                        observer):
    """The removal runs from the loop once the registration ends: this task
    waits for the last teardown without blocking the loop."""
    in_startup, go, torn_down = threading.Event(), threading.Event(), threading.Event()
    log = []

    def startup(cpu):
        if cpu == 0:
            in_startup.set()
            go.wait(GUARD_S)

    def teardown(cpu):
        log.append(cpu)
        if cpu == 0:
            torn_down.set()

    async def main():
        async with aio.Client(daemon.socket) as c:
            registering = await started(c.register_state(
                'aio-c', startup=startup, teardown=teardown))
            wait_until('the startup of CPU 0 running', in_startup.is_set)
            registering.cancel()
            with pytest.raises(asyncio.CancelledError):
                await registering
            go.set()
            loop = asyncio.get_running_loop()
            assert await loop.run_in_executor(None, torn_down.wait, GUARD_S)
            assert log == [3, 2, 1, 0]
            assert (await c.set_online(2, False)).changed == {2} and log == [3, 2, 1, 0]
    run(main())


def test_close_ends_the_calls_tasks_await_and_they_raise_ecanceled(cpuhp, aio, daemon,
                                                                    observer):
    async def main():
        async with aio.Client(daemon.socket) as admin:
            c = aio.Client(daemon.socket)
            held = await c.lease()
            hotplug = await hotplug_waiting(cpuhp, observer,
                                            admin.set_online(1, False, timeout=GUARD_S))
            leaser = await started(c.lease())
            wait_until('the lease queued', lambda: observer.status().pending_leases == 1)
            c.watch()
            # The holder was told of the hotplug it holds up; then nothing more comes.
            assert isinstance(await c.next_event(GUARD_S), cpuhp.HotplugPending)
            watcher = await started(c.next_event())
            c.close()
            # The tasks have not run since: close() itself ended their requests.
            wait_until('the daemon seeing the close',
                       lambda: observer.status().connections == 3)
            s = observer.status()
            assert (s.leases_held, s.pending_leases) == (0, 0)
            for task in (leaser, watcher):
                with pytest.raises(OSError) as e:
                    await task
                assert e.value.errno == errno.ECANCELED
            assert (await hotplug).changed == {1}
            held.release()  # ended with its Client: nothing to do
            c.close()
            with pytest.raises(ValueError, match='closed'):
                await c.status()
    run(main())


def test_close_from_another_thread_wakes_a_task_in_the_loop(cpuhp, aio, daemon, observer):
    async def main():
        c = aio.Client(daemon.socket)
        c.watch()
        watcher = await started(c.next_event())
        closer = threading.Thread(target=c.close)
        closer.start()  # it waits for this loop to run the task out of its call
        with pytest.raises(OSError) as e:
            await watcher
        assert e.value.errno == errno.ECANCELED
        closer.join(GUARD_S)
        assert not closer.is_alive() and c.closed
        wait_until('the daemon seeing the close', lambda: observer.status().connections == 1)
    run(main())


def test_bad_arguments_raise_before_anything_is_awaited(aio, daemon):
    async def main():
        async with aio.Client(daemon.socket) as c:
            with pytest.raises(ValueError):
                c.lease(timeout=-1)
            with pytest.raises(ValueError):
                c.watch(timeout=float('nan'))
    run(main())


def test_the_module_shows_its_api_documented_and_typed(aio):
    import inspect
    assert aio.__all__ == ['Client'] and aio.__doc__
    for name, m in vars(aio.Client).items():
        if name.startswith('_') or not callable(m):
            continue
        assert inspect.getdoc(m), name
        sig = inspect.signature(m)
        assert sig.return_annotation is not inspect.Signature.empty, name


def test_cpus_is_the_sync_clients_listing(cpuhp, aio, daemon, observer):
    async def main():
        async with aio.Client(daemon.socket) as c:
            rows = await c.cpus()
        assert rows == observer.cpus()
        assert [(r.cpu, r.topology) for r in rows] == [(n, 'live') for n in range(4)]
    run(main())


def test_aio_add_instance_runs_its_startups_in_the_executor(cpuhp, aio, daemon, observer):
    log = []

    def up(cpu, inst):
        log.append((cpu, inst.name, threading.current_thread() is threading.main_thread()))

    async def main():
        async with aio.Client(daemon.socket) as c:
            async with c.register_state('aio-m', startup=up, multi=True,
                                        section='prepare') as st:
                inst = await c.add_instance(st, 'q', arg=7)
                assert isinstance(inst, cpuhp.Instance) and inst.arg == 7
                assert log == [(cpu, 'q', False) for cpu in range(4)]
                await c.remove_instance(inst)
                assert inst.removed
                with pytest.raises(ValueError):
                    await c.add_instance(st, 'bad name')
    run(main())
