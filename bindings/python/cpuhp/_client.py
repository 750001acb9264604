# SPDX-License-Identifier: LGPL-2.1-or-later
"""cpuhp.Client: the cpuhpd client that waits in poll() (libcpuhp-client,
<cpuhp/client.h>).

The request code is cpuhp._session's, shared with cpuhp.aio; what is
here is the waiting: in poll() on the sockets a Session names, so that a
signal ends any wait (Ctrl-C raises KeyboardInterrupt at once, and the
request is given up) and threads sharing a Client do not wait for each
other.
"""
from __future__ import annotations

import os
import select
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TypeVar

from ._cpuset import CPUs
from ._errors import INT_MS_MAX, UINT_MS_MAX, timeout_ms
from ._session import (DEFAULT_SOCKET, SOCKET_ENV, Call, Session, force_ms, identity,
                       lease_args, run_callbacks, set_online_args, socket_path)
from ._states import State
from ._types import (CpuInfo, CpuResult, Event, EventsLost, Freeze, FreezeInfo, HotplugCancelled,
                     HotplugFinished, HotplugInfo, HotplugPending, HotplugResult, HotplugStarted,
                     Lease, LeaseBypassed, LeaseInfo, LeaseList, LeaseRevoked, LeasesLost,
                     OnlineChanged, PresentChanged, Status, WriterState)

# The public names, importable as cpuhp._client.X too, as before.
__all__ = ['Client', 'DEFAULT_SOCKET', 'SOCKET_ENV', 'socket_path', 'CpuInfo', 'CpuResult', 'Event',
           'EventsLost', 'Freeze', 'FreezeInfo', 'HotplugCancelled', 'HotplugFinished',
           'HotplugInfo', 'HotplugPending', 'HotplugResult', 'HotplugStarted', 'Lease',
           'LeaseBypassed', 'LeaseInfo', 'LeaseList', 'LeaseRevoked', 'LeasesLost',
           'OnlineChanged', 'PresentChanged', 'Status', 'WriterState']

_R = TypeVar('_R')


def _wait_readable(fds: list[int], timeout: float | None = None) -> None:
    """Block until one of *fds* is readable or *timeout* seconds pass.  A
    signal whose handler raises (SIGINT: KeyboardInterrupt) ends the wait
    with that exception; poll() resumes after any other (PEP 475)."""
    p = select.poll()
    for fd in fds:
        p.register(fd, select.POLLIN)
    p.poll(None if timeout is None else max(0.0, timeout) * 1000)


def _run_notices(s: Session, owner: weakref.ref) -> None:
    """The runner thread of a cpuhp.Client (see Client._start_runner)."""
    while True:
        calls, fds = s.runner_step()  # drains the wake-up pipe first
        run_callbacks(calls)
        if fds is None:
            return
        # After the drain: a Client collected from here on writes the pipe
        # again (Session.owner_gone), so the wait below wakes; checked before
        # the drain, that write could be drained unseen and the wait last.
        if owner() is None:
            s.close()  # what its leases still held ends with the connection
            return
        _wait_readable(fds)


class Client:
    """A connection to cpuhpd, the daemon that owns CPU hotplug.

    *path*: the daemon's socket; None: $CPUHP_SOCKET if set and not empty,
    else DEFAULT_SOCKET.  *who*, *why*: name this Client's leases, as
    set_identity() does.  *delay*: seconds; this Client's leases are then
    delay leases, like logind's delay inhibitors: a hotplug that becomes
    pending waits for each at most that long after its notice
    (HotplugPending, and a lease's on_pending callback), then revokes it
    (LeaseRevoked; its release raises OSError ETIME).  At most cpuhpd's
    --max-delay-ms (a longer one is cut: see lease_delay).  None: block
    leases, which hold a hotplug up to its timeout.  Connects at once: FileNotFoundError,
    ConnectionRefusedError or PermissionError if the daemon cannot be
    reached.  A context manager that closes the connection, which ends its
    leases::

        with cpuhp.Client() as c:
            with c.lease():
                ...                          # no CPU comes or goes here
            c.set_online("2-3", False, timeout=5)

    Errors are OSError subclasses with the errno and the daemon's message
    (TimeoutError, PermissionError, BlockingIOError for "would wait" with
    timeout 0, ConnectionResetError...).  Arguments are checked before
    anything is sent: ValueError or TypeError.

    Threads may share a Client: a thread that waits (for a lease, a
    hotplug, an event) holds up no other, and any of them may close it
    (the others' calls then raise OSError ECANCELED; see close()).  A
    signal ends any wait: Ctrl-C raises KeyboardInterrupt, and the request
    is given up.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, who: str | None = None,
                 why: str | None = None, delay: float | None = None) -> None:
        self._s = Session(self, path, who, why, delay)
        # Weak: a runner holds the Session, which must not keep this Client.
        self._s.start_runner = weakref.WeakMethod(self._start_runner)

    @property
    def lease_delay(self) -> float:
        """The delay of this Client's leases in seconds (Client(delay=...),
        as cpuhpd's --max-delay-ms cut it); 0: block leases."""
        return self._s.lease_delay

    def _start_runner(self) -> None:
        """The first lease with an on_pending callback: a thread of ours
        reads the notices and calls them.  It holds the Session and only a
        weak reference to this Client, so that a Client dropped while the
        thread waits is collected, and its connection closed, at once."""
        s = self._s
        owner = weakref.ref(self, lambda _: s.owner_gone())
        threading.Thread(target=_run_notices, args=(s, owner), name='cpuhp-on-pending',
                         daemon=True).start()

    @property
    def path(self) -> str:
        """The daemon's socket."""
        return self._s.path

    def __repr__(self) -> str:
        state = 'closed' if self.closed else 'open'
        return f'<cpuhp.Client {state} path={self.path!r}>'

    def __enter__(self) -> Client:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """close() was called: every other call raises ValueError."""
        return self._s.closed

    def close(self) -> None:
        """Close the connection: every lease it holds ends (and each one's
        release does nothing).  Does nothing if already closed.

        Any thread may close, like a socket's: calls in progress on this
        Client in other threads (a lease or a hotplug waiting, next_event())
        are woken and raise OSError with errno ECANCELED ("closed while this
        call was in progress"), also when their answer came at the same
        time, and close() returns once they have left, the connection and
        their requests closed.  A call that starts later raises ValueError."""
        self._s.close()

    @property
    def _busy(self) -> int:
        """Calls in progress (for the tests: "a thread is inside a call")."""
        return self._s.busy

    def _call(self, begin: Callable[[object], Call], end: Callable[[Call], _R]) -> _R:
        """One asynchronous call of libcpuhp-client, counted as in progress
        on the Client (close() from another thread wakes it with
        ECANCELED): *begin* it on the handle, wait in poll() until it is
        done, read its result with *end*."""
        call = None
        try:
            with self._s.using() as use:
                call = begin(use.c)
                try:
                    while not call.done():
                        _wait_readable([call.fileno(), self._s.closed_fd])
                        self._s.check_open()  # before the call, which close() may have freed
                    return end(call)
                finally:
                    call.close()
        except BaseException:
            self._s.drop_call(call)  # what it got, if the result never got out
            raise

    def register_state(self, name: str, startup: Callable[[int], object] | None = None,
                       teardown: Callable[[int], object] | None = None, priority: int = 0,
                       deadline: float = 5.0, nocalls: bool = False, *,
                       section: str = 'online', multi: bool = False) -> State:
        """Register a hotplug state, the kernel's cpuhp_setup_state(): before a
        CPU goes offline cpuhpd calls ``teardown(cpu)`` (states from the
        highest *priority* down), after one came online ``startup(cpu)``
        (lowest first).  A callback that raises fails the call with the
        exception's text (and its errno for an OSError, else EIO), which
        rolls the hotplug back; so does one that takes longer than
        *deadline* seconds.  Callbacks run on a thread of the binding's, one
        per state, one call at a time; they must not take a lease (that
        raises OSError EDEADLK).

        Unless *nocalls*, startup runs for every CPU online now before this
        returns.  Returns a State, a context manager whose end removes it
        (teardown for every CPU it was started on).  FileExistsError if
        the name is taken (names are unique per daemon); the OSError of the
        first failed startup otherwise (those done are torn down again).

        *section* ``'prepare'`` puts the state in the PREPARE section: its
        startup runs before the CPU runs anything (before the write of
        cpuN/online), its teardown after the CPU is dead; such a teardown
        cannot fail (what it raises is logged, nothing is rolled back).
        *multi*: the callbacks run per instance (State.add_instance()), as
        ``startup(cpu, instance)``, never for the state itself.
        """
        return State(self._s, name, startup, teardown, priority, deadline, nocalls,
                     section=section, multi=multi)

    def fileno(self) -> int:
        """The socket, to poll for POLLIN in an event loop; then drain with
        next_event(timeout=0) until it returns None.  Do not read, write or
        close it."""
        return self._s.fileno()

    def set_identity(self, who: str | None = None, why: str | None = None) -> None:
        """Say who holds this Client's leases and why, for ``cpuhpctl leases``,
        leases(), and the message of a hotplug that times out behind them
        ("pid 4242 (resize-pools) 'sizing worker pools', held 4.1 s").
        Names every lease of this Client that has no name of its own, those
        held now included.  None or "": unnamed (the daemon shows the command
        name).  At most 255 bytes each in UTF-8 (ValueError)."""
        self._s.set_identity(who, why)

    def leases(self) -> LeaseList:
        """Every lease held, by any client, and every hotplug request waiting
        or running, with who holds or asked: like ``systemd-inhibit --list``.
        One round trip on this Client's connection."""
        return self._s.leases()

    def cpus(self) -> list[CpuInfo]:
        """Each possible CPU, ascending, like ``lscpu -e``: online, node,
        socket, core, SMT siblings, the hotplug states started on it and the
        hotplug requests that name it.  For an offline CPU, whose topology
        the kernel no longer shows, the one cpuhpd read when it was last
        online (``topology == 'remembered'``); 'unknown' if it was not seen
        online since boot.  A round trip per page of CPUs (a frame holds
        some thousands) and one for the states, on this Client's
        connection, each answered at once."""
        return self._s.cpus()

    def lease(self, timeout: float | None = None, *, who: str | None = None,
              why: str | None = None,
              on_pending: Callable[[Lease, HotplugPending], object] | None = None) -> Lease:
        """Take a reader lease and return it (a context manager).

        Waits while a hotplug is queued or running (writer preference).
        *timeout*: seconds; 0: do not wait (BlockingIOError if a hotplug is in
        the way); None: as long as it takes.  TimeoutError if the hotplug
        still is after *timeout*.  A signal ends the wait (Ctrl-C:
        KeyboardInterrupt) and gives the request up: no lease comes of it.
        *who*, *why*: a name for this lease alone (else the Client's, see
        set_identity()); such a lease is a socket lease on a connection of
        its own, since a fast lease has nowhere to carry a name.

        If the daemon goes away while the lease is held, the Client's socket
        becomes readable and next_event() gives LeasesLost; the lease's
        release (the end of its ``with`` block) raises ConnectionResetError.

        *on_pending*: called as ``on_pending(lease, event)`` when a hotplug
        this lease holds up becomes the next to run, on a thread of the
        binding's (see Lease.on_pending): release the lease there (or make
        the work that holds it end) and the hotplug runs now, instead of
        at the lease's natural end::

            with client.lease(on_pending=lambda lease, ev: lease.release()):
                ...                    # may end early: the lease is gone then

        No exception leaves the lease held (see Lease); keep the Lease for as
        long as you mean to hold it: dropped unreleased, it is released (with
        a ResourceWarning).
        """
        ms, ident = lease_args(timeout, who, why)
        lease = self._s.lease_now(ms, ident)
        if lease is None:
            lease = self._call(lambda c: self._s.lease_begin(c, ms, ident), self._s.lease_end)
        if on_pending is not None:
            try:
                lease.on_pending = on_pending
            except BaseException:
                lease._give_up()  # not returned: nobody else would end it
                raise
        return lease

    def freeze(self, *, who: str | None = None, why: str | None = None) -> Freeze:
        """Freeze CPU hotplug, as the kernel's cpu_hotplug_disable() does, and
        return the freeze (a context manager that thaws).  While any freeze
        is held, every new hotplug request fails at once (OSError, errno
        EBUSY) naming the holder; leases are still granted.  For
        a benchmark run or a latency-critical window.

        Hotplugs queued before it still run: this returns once none is
        queued or running (each is bounded by its own timeout), blocking
        meanwhile.  A signal ends that wait (Ctrl-C: KeyboardInterrupt), and
        close() from another thread ends it with OSError ECANCELED; either
        gives the request up: no freeze comes of it.  The freeze is held on
        a connection of its own, which ends with this Client (or with the
        Freeze, dropped unthawed).  Root or
        cpuhpd's admin group only (PermissionError).  *who*, *why*: as for
        lease(), for leases() and the refusals' message (else the Client's
        names)."""
        cwho, cwhy = identity(who, 'who'), identity(why, 'why')
        # Waits in poll(), as lease() does: one blocking C call here would
        # hold up close() and Ctrl-C until the hotplugs ahead were done.
        return self._call(lambda c: self._s.freeze_begin(c, cwho, cwhy), self._s.freeze_end)

    def status(self) -> Status:
        """The daemon's view: CPU sets, leases held, the writer's state.
        One round trip on this Client's connection, which the daemon
        answers at once (also while a hotplug waits or runs)."""
        return self._s.status()

    def set_online(self, cpus: CPUs, online: bool, timeout: float | None = None, *,
                   check: bool = True, force: bool | float | None = None) -> HotplugResult:
        """Bring *cpus* online (*online* True) or take them offline, in one
        writer section: no lease is granted in between.

        *cpus*: a CPU number, an iterable of them, or a range list ("2-3,5").
        *timeout*: seconds to wait for leases and in-process readers to go;
        0: do not wait (BlockingIOError if a lease is held); None: as long as
        it takes.  TimeoutError, PermissionError (not root or in cpuhpd's
        admin group) and the like mean nothing changed.  A signal ends the
        wait (Ctrl-C: KeyboardInterrupt) and gives the request up: a hotplug
        still waiting for leases is cancelled, one writing sysfs finishes.

        Returns what became of each CPU.  With *check* (the default), a CPU
        that did not get there raises its error (``e.result`` holds the
        HotplugResult); with check=False, look at ``result.failed``.

        *force*: do not wait for the leases beyond a grace: True (5 s) or
        seconds.  Their holders are told at once (HotplugPending), those
        still held after the grace are revoked (LeaseRevoked to each; their
        release raises OSError ETIME), and ``result.revoked`` lists them.
        For a CPU that must go now.  *timeout* still bounds the whole wait.
        """
        text = set_online_args(cpus, online)
        ms = timeout_ms(timeout, forever=UINT_MS_MAX)
        grace = force_ms(force)
        return self._call(lambda c: self._s.set_online_begin(c, text, online, ms, grace),
                          lambda call: self._s.set_online_end(call, online, check))

    def watch(self, timeout: float | None = None) -> Iterator[Event]:
        """Subscribe to events (at once, not at the first iteration) and
        return an iterator of them, oldest first: HotplugPending,
        HotplugCancelled, HotplugStarted, HotplugFinished, OnlineChanged,
        PresentChanged, EventsLost (and the notices to a lease holder,
        LeaseRevoked...).

        *timeout*: seconds to wait for each event; the iteration ends when
        none comes in time.  None: wait as long as it takes (a signal ends
        the wait: Ctrl-C raises KeyboardInterrupt).  Other calls on this
        Client keep working meanwhile, from other threads too; events that
        come during them are kept.
        """
        ms = timeout_ms(timeout, forever=-1, limit=INT_MS_MAX)
        self._s.subscribe()
        return self._events(ms)

    def _events(self, ms: int) -> Iterator[Event]:
        while True:
            ev = self._next_event(ms)
            if ev is None:
                return
            yield ev

    def next_event(self, timeout: float | None = None) -> Event | None:
        """The next event (subscribing first if watch() was not called), or
        None if none came within *timeout* seconds (0: only what already
        arrived; None: wait as long as it takes).  ConnectionResetError if
        the daemon went away, OSError with errno ECANCELED if it is shutting
        down; before either, a LeasesLost event if leases were held."""
        return self._next_event(timeout_ms(timeout, forever=-1, limit=INT_MS_MAX))

    def _next_event(self, ms: int) -> Event | None:
        deadline = None if ms < 0 else time.monotonic() + ms / 1000
        with self._s.using() as use:
            while True:
                ev, fds = self._s.try_event(use.c)
                if ev is not None:
                    return ev
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                _wait_readable(fds, left)
