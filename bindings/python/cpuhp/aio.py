# SPDX-License-Identifier: LGPL-2.1-or-later
"""cpuhp.aio: cpuhp.Client for asyncio.

::

    import asyncio
    import cpuhp.aio

    async def main():
        async with cpuhp.aio.Client() as c:
            async with c.lease(timeout=5):
                ...                              # no CPU comes or goes here
            result = await c.set_online("2-3", False, timeout=5)
            async for event in c.watch():
                print(event)

    asyncio.run(main())

No thread per call: every wait is the event loop watching a socket
(``loop.add_reader``).  A lease, a hotplug request, a freeze or a leases()
listing is one of libcpuhp-client's asynchronous calls, on a connection of
its own; events come on the Client's connection.  The exception is
register_state(): a State has a thread of its own, as in cpuhp.Client,
and the wait for its registration runs in the loop's default executor.
Cancelling a task that awaits a call (``asyncio.wait_for``, a TaskGroup,
Ctrl-C under ``asyncio.run``) gives the request up: the daemon drops a
lease or freeze request still waiting and cancels a hotplug that is not
writing sysfs yet.

Run in the loop, without waiting: a fast lease and its release (ns).  Run
in the loop as one round trip that cpuhpd answers at once: connecting
(``Client()``), a Client's first lease (it asks for the fast path),
subscribing (``watch()``), releasing a lease that waited behind a hotplug,
thawing a freeze (``Freeze.thaw()``, the end of ``async with freeze()``);
and as a few such round trips, listing the CPUs (``cpus()``).

The results, events and errors are cpuhp's (``cpuhp.Lease``,
``cpuhp.HotplugResult``, ``cpuhp.Status``, ``cpuhp.HotplugStarted``...,
OSError subclasses), and the arguments are those of ``cpuhp.Client``.
"""
from __future__ import annotations

import asyncio
import os
import time
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Generator
from types import TracebackType
from typing import TypeVar

from . import HAVE_CLIENT

if not HAVE_CLIENT:
    raise ImportError('cpuhp.aio is not in this build: the cpuhp package was built without '
                      'libcpuhp-client (meson -Dclient=disabled, or protobuf-c missing); '
                      'rebuild with -Dclient=enabled to talk to cpuhpd', name=__name__)

# After the check above.
from ._cpuset import CPUs  # noqa: E402
from ._errors import INT_MS_MAX, UINT_MS_MAX, timeout_ms  # noqa: E402
from ._session import (Call, Session, force_ms, identity, lease_args,  # noqa: E402
                       run_callbacks, set_online_args)
from ._states import Instance, State  # noqa: E402
from ._types import (CpuInfo, Event, Freeze, HotplugPending, HotplugResult,  # noqa: E402
                     Lease, LeaseList, Status)

__all__ = ['Client']

_T = TypeVar('_T', Lease, Freeze, State)
_R = TypeVar('_R')


async def _run_notices(s: Session, owner: weakref.ref, readers: _Readers) -> None:
    """The runner task of a cpuhp.aio.Client (see Client._start_runner)."""
    loop = asyncio.get_running_loop()
    while True:
        calls, fds = s.runner_step()  # drains the wake-up pipe first
        for awaitable in run_callbacks(calls):
            loop.create_task(awaitable)
        if fds is None:
            return
        # After the drain, as in cpuhp.Client's runner thread.
        if owner() is None:
            s.close()  # what its leases still held ends with the connection
            return
        await readers.wait(fds)


class _Readers:
    """Tasks waiting for descriptors to become readable: one loop reader
    per descriptor, however many tasks wait on it (two watchers of one
    Client wait on one socket)."""

    def __init__(self) -> None:
        self._waiting: dict[int, set[asyncio.Future[bool]]] = {}
        self._loops: dict[int, asyncio.AbstractEventLoop] = {}

    def _ready(self, fd: int) -> None:
        for fut in self._waiting.get(fd, ()):
            if not fut.done():
                fut.set_result(True)

    async def wait(self, fds: list[int], timeout: float | None = None) -> bool:
        """True when one of *fds* is readable; False after *timeout* seconds."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        timer = None
        try:
            for fd in fds:
                if fd not in self._waiting:
                    loop.add_reader(fd, self._ready, fd)
                    self._waiting[fd] = set()
                    self._loops[fd] = loop
                self._waiting[fd].add(fut)
            if timeout is not None:
                timer = loop.call_later(max(0.0, timeout),
                                        lambda: fut.done() or fut.set_result(False))
            return await fut
        finally:
            if timer is not None:
                timer.cancel()
            for fd in fds:
                waiters = self._waiting.get(fd)
                if waiters is not None:
                    waiters.discard(fut)
                    if not waiters:
                        del self._waiting[fd]
                        del self._loops[fd]
                        loop.remove_reader(fd)

    def abort(self) -> None:
        """End every wait now, as if its descriptors were readable, and stop
        watching them: they are about to be closed (the Client is)."""
        for fd, waiters in self._waiting.items():
            for fut in waiters:
                if not fut.done():
                    fut.set_result(True)
            self._loops[fd].remove_reader(fd)
        self._waiting.clear()
        self._loops.clear()


class _Request(Coroutine[object, None, _T]):
    """What Client.lease(), freeze() and register_state() return: ``await``
    it (or make it a task) for the cpuhp.Lease, cpuhp.Freeze or
    cpuhp.State, or ``async with`` it to hold that for the block (released,
    thawed or removed on the way out)."""

    def __init__(self, start: Callable[[], Coroutine[object, None, _T]],
                 end: Callable[[_T], Coroutine[object, None, None]] | None = None) -> None:
        self._start = start
        self._end = end  # the async end of ``async with``; None: the held thing's __exit__
        self._held: _T | None = None
        # Made when awaited: used only by ``async with``, it never is.
        self._coro: Coroutine[object, None, _T] | None = None

    def _inner(self) -> Coroutine[object, None, _T]:
        if self._coro is None:
            self._coro = self._start()
        return self._coro

    def __await__(self) -> Generator[object, None, _T]:
        return self._inner().__await__()

    def send(self, value: None) -> object:
        return self._inner().send(value)

    def throw(self, *args: object) -> object:
        return self._inner().throw(*args)  # type: ignore[arg-type]

    def close(self) -> None:
        if self._coro is not None:
            self._coro.close()

    async def __aenter__(self) -> _T:
        self._held = await self._start()
        return self._held

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        assert self._held is not None
        if self._end is None:
            self._held.__exit__(exc_type, exc, tb)
        else:
            await self._end(self._held)


class Client:
    """A connection to cpuhpd whose waits are awaited (see the module).

    *path*, *who*, *why* and *delay* as for cpuhp.Client.  Connects at
    once (a round trip the daemon answers at once).  An async context
    manager that closes the connection, which ends its leases.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, who: str | None = None,
                 why: str | None = None, delay: float | None = None) -> None:
        self._s = Session(self, path, who, why, delay)
        self._readers = _Readers()
        # Weak: a runner holds the Session, which must not keep this Client.
        self._s.start_runner = weakref.WeakMethod(self._start_runner)
        self._pump: asyncio.Task[None] | None = None

    @property
    def lease_delay(self) -> float:
        """As cpuhp.Client.lease_delay."""
        return self._s.lease_delay

    def _start_runner(self) -> None:
        """The first lease with an on_pending callback: a task in the loop
        reads the notices and calls them (set on_pending in the loop)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._s.runner_on = False
            raise RuntimeError('a cpuhp.aio lease\'s on_pending is set in its event loop') \
                from None
        # The task holds the Session and only a weak reference to this
        # Client: a Client dropped while the task waits is collected, and
        # its connection closed, at once (the loop holds the waiting task).
        s = self._s
        owner = weakref.ref(self, lambda _: s.owner_gone())
        self._pump = loop.create_task(_run_notices(s, owner, self._readers))

    @property
    def path(self) -> str:
        """The daemon's socket."""
        return self._s.path

    @property
    def closed(self) -> bool:
        """close() was called: every other call raises ValueError."""
        return self._s.closed

    def __repr__(self) -> str:
        return f'<cpuhp.aio.Client {"closed" if self.closed else "open"} path={self.path!r}>'

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection: every lease it holds ends (and each one's
        release does nothing).  Does nothing if already closed.  Tasks
        awaiting a call of this Client raise OSError with errno ECANCELED
        ("closed while this call was in progress") when they next run;
        their requests end here, before close() returns (the daemon drops
        a lease request and cancels a hotplug not writing sysfs yet).  From
        another thread than the loop's, as cpuhp.Client.close(): it waits
        for the loop to wake those tasks."""
        self._s.close()

    def _cancel(self, call: Call | None = None) -> None:
        """A call's Use.cancel: close() on the loop's thread, while the task
        waits in the loop.  Its next step is Session.check_open()."""
        self._readers.abort()
        if call is not None:
            call.close()

    def fileno(self) -> int:
        """The Client's socket (events come on it).  Do not read, write or close it."""
        return self._s.fileno()

    async def _done(self, call: Call) -> None:
        while not call.done():
            await self._readers.wait([call.fileno(), self._s.closed_fd])
            self._s.check_open()  # before the call, which close() may have freed

    async def _call(self, begin: Callable[[object], Call], end: Callable[[Call], _R]) -> _R:
        """One asynchronous call of libcpuhp-client, counted as in progress
        on the Client (close() from anywhere wakes it with ECANCELED):
        *begin* it on the handle, await it, read its result with *end*."""
        call = None
        try:
            with self._s.using() as use:
                call = begin(use.c)
                use.cancel = lambda: self._cancel(call)
                try:
                    await self._done(call)
                    return end(call)
                finally:
                    call.close()
        except BaseException:
            self._s.drop_call(call)  # what it got, if the result never got out
            raise

    def lease(self, timeout: float | None = None, *, who: str | None = None,
              why: str | None = None,
              on_pending: Callable[[Lease, HotplugPending], object] | None = None
              ) -> _Request[Lease]:
        """A reader lease, as cpuhp.Client.lease(): ``async with
        client.lease(): ...`` holds it for the block, ``lease = await
        client.lease()`` returns it (release it with ``lease.release()``).
        A lease that died with the daemon's connection raises
        ConnectionResetError from the block's exit (a LeasesLost event
        comes first, to a watcher).  *on_pending*: as cpuhp.Client.lease()'s,
        called in the loop (a coroutine function's result runs as a task).
        Bad arguments raise here, before anything is awaited."""
        ms, ident = lease_args(timeout, who, why)
        if on_pending is not None and not callable(on_pending):
            raise TypeError(f'on_pending must be callable, not {type(on_pending).__name__}')
        return _Request(lambda: self._lease(ms, ident, on_pending))

    def set_identity(self, who: str | None = None, why: str | None = None) -> None:
        """As cpuhp.Client.set_identity(): one round trip, run in the loop
        (the daemon answers it at once)."""
        self._s.set_identity(who, why)

    async def leases(self) -> LeaseList:
        """Every lease, hotplug request and freeze, as cpuhp.Client.leases()
        (asked on a connection of its own, counted in ``connections``)."""
        return await self._call(self._s.leases_begin, self._s.leases_end)

    async def cpus(self) -> list[CpuInfo]:
        """Each possible CPU, as cpuhp.Client.cpus(): run in the loop, a
        round trip per page of CPUs and one for the states, on the
        Client's connection, each of which cpuhpd answers at once."""
        return self._s.cpus()

    async def _lease(self, ms: int, ident: tuple | None,
                     on_pending: Callable[..., object] | None = None) -> Lease:
        lease = self._s.lease_now(ms, ident)
        if lease is None:
            lease = await self._call(lambda c: self._s.lease_begin(c, ms, ident),
                                     self._s.lease_end)
        if on_pending is not None:
            try:
                lease.on_pending = on_pending
            except BaseException:
                lease._give_up()  # not returned: nobody else would end it
                raise
        return lease

    def freeze(self, *, who: str | None = None,
               why: str | None = None) -> _Request[Freeze]:
        """Freeze CPU hotplug, as cpuhp.Client.freeze(): ``async with
        client.freeze(): ...`` holds it for the block (thawed on the way
        out), ``freeze = await client.freeze()`` returns it (end it with
        ``freeze.thaw()``, a round trip the daemon answers at once).  The
        wait for the hotplugs queued before it is awaited, on a connection
        of its own; cancelled before the daemon answers, the freeze request
        is given up.  Bad arguments raise here, before anything is awaited."""
        ident = (identity(who, 'who'), identity(why, 'why'))
        return _Request(lambda: self._freeze(*ident))

    async def _freeze(self, who, why) -> Freeze:
        return await self._call(lambda c: self._s.freeze_begin(c, who, why), self._s.freeze_end)

    def register_state(self, name: str, startup: Callable[[int], object] | None = None,
                       teardown: Callable[[int], object] | None = None, priority: int = 0,
                       deadline: float = 5.0, nocalls: bool = False, *,
                       section: str = 'online', multi: bool = False) -> _Request[State]:
        """Register a hotplug state, as cpuhp.Client.register_state(), and
        return the cpuhp.State: ``state = await client.register_state(...)``,
        or ``async with client.register_state(...) as state: ...``, whose end
        removes it (``await`` the loop's executor for the teardowns).  The
        callbacks run on the State's own thread, as in cpuhp.Client, not in
        the loop: they must not touch the loop's objects but through
        ``loop.call_soon_threadsafe``.  The wait for the registration (and
        the startups for the CPUs online) runs in the loop's default
        executor, not in the loop.  A task cancelled during that wait
        removes the state once it is registered.  Bad arguments raise here,
        before anything is awaited.  *section* and *multi* as there; add
        instances with ``await client.add_instance(state, name, arg)``."""
        st = State(self._s, name, startup, teardown, priority, deadline, nocalls, start=False,
                   section=section, multi=multi)
        return _Request(lambda: self._registered(st), self._remove_state)

    @staticmethod
    async def _registered(st: State) -> State:
        loop = asyncio.get_running_loop()
        st._start()  # its thread registers it; only the wait for that is blocking
        done = loop.run_in_executor(None, st._wait_registered)
        try:
            await asyncio.shield(done)
        except asyncio.CancelledError:
            # Nobody will hold it: remove it once its thread registered it.
            done.add_done_callback(
                lambda f: f.cancelled() or f.exception() or
                loop.run_in_executor(None, st.remove))
            raise
        return st

    @staticmethod
    async def _remove_state(st: State) -> None:
        await asyncio.get_running_loop().run_in_executor(None, st.remove)

    @staticmethod
    async def add_instance(state: State, name: str, arg: object = None,
                           nocalls: bool = False) -> Instance:
        """Add an instance to a multi *state*, as State.add_instance(): its
        startups run on the State's thread, the wait for them in the loop's
        default executor.  Bad arguments raise here."""
        state._check_instance(name)
        return await asyncio.get_running_loop().run_in_executor(
            None, lambda: state.add_instance(name, arg, nocalls))

    @staticmethod
    async def remove_instance(instance: Instance, nocalls: bool = False) -> None:
        """Remove *instance*, as Instance.remove(), waiting in the executor."""
        await asyncio.get_running_loop().run_in_executor(None, lambda: instance.remove(nocalls))

    async def set_online(self, cpus: CPUs, online: bool, timeout: float | None = None, *,
                         check: bool = True, force: bool | float | None = None
                         ) -> HotplugResult:
        """Bring *cpus* online or take them offline, as
        cpuhp.Client.set_online() (*force* too).  Cancelled before the
        daemon answers: a hotplug still waiting for leases is cancelled,
        one writing sysfs finishes."""
        text = set_online_args(cpus, online)
        ms = timeout_ms(timeout, forever=UINT_MS_MAX)
        grace = force_ms(force)
        return await self._call(lambda c: self._s.set_online_begin(c, text, online, ms, grace),
                                lambda call: self._s.set_online_end(call, online, check))

    async def status(self) -> Status:
        """The daemon's view, as cpuhp.Client.status() (asked on a
        connection of its own, counted in ``connections``)."""
        return await self._call(self._s.status_begin, self._s.status_end)

    def watch(self, timeout: float | None = None) -> AsyncIterator[Event]:
        """Subscribe to events (at once) and return an async iterator of
        them, as cpuhp.Client.watch(): ``async for event in
        client.watch(): ...``.  *timeout*: seconds to wait for each event;
        the iteration ends when none comes in time; None: as long as it
        takes."""
        ms = timeout_ms(timeout, forever=-1, limit=INT_MS_MAX)
        self._s.subscribe()
        return self._events(ms)

    async def _events(self, ms: int) -> AsyncIterator[Event]:
        # Nothing held across a yield: a loop that breaks out leaves the
        # Client free to close before this generator is finalised.
        while True:
            ev = await self._next_event(ms)
            if ev is None:
                return
            yield ev

    async def next_event(self, timeout: float | None = None) -> Event | None:
        """The next event (subscribing first if watch() was not called), or
        None if none came within *timeout* seconds, as
        cpuhp.Client.next_event()."""
        return await self._next_event(timeout_ms(timeout, forever=-1, limit=INT_MS_MAX))

    async def _next_event(self, ms: int) -> Event | None:
        deadline = None if ms < 0 else time.monotonic() + ms / 1000
        with self._s.using() as use:
            use.cancel = self._cancel
            while True:
                ev, fds = self._s.try_event(use.c)
                if ev is not None:
                    return ev
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                await self._readers.wait(fds, left)
