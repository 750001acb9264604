# SPDX-License-Identifier: LGPL-2.1-or-later
"""The cpuhpd client: leases, status, hotplug requests and events
(libcpuhp-client, <cpuhp/client.h>).

Every call that waits (for the daemon's answer, a lease, a hotplug, an
event) runs without the GIL, so other Python threads keep running.  A
Client may be shared by threads, but its calls run one at a time: give a
thread that blocks (a watcher, a waiting lease) its own Client.
"""
from __future__ import annotations

import enum
import errno
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType

from ._cpuhp import lib as _locklib
from ._cpuhp_client import ffi, lib
from ._cpuset import CPUs, format_cset, from_cset, to_cset
from ._errors import INT_MS_MAX, UINT_MS_MAX, error, timeout_ms

#: Where cpuhpd listens unless $CPUHP_SOCKET or Client(path=...) says otherwise.
DEFAULT_SOCKET: str = ffi.string(lib.CPUHP_CLIENT_DEFAULT_SOCKET).decode()
#: The environment variable naming the daemon's socket.
SOCKET_ENV: str = ffi.string(lib.CPUHP_CLIENT_SOCKET_ENV).decode()



def socket_path() -> str:
    """The socket Client() connects to when given no path: $CPUHP_SOCKET if
    it is set and not empty, else DEFAULT_SOCKET.  Read at each call
    (libcpuhp-client's cpuhp_client_socket_path(), the one resolver)."""
    return os.fsdecode(ffi.string(lib.cpuhp_client_socket_path()))


_CONNECT_HINTS = {
    errno.ENOENT: 'no socket there; is cpuhpd running? Or pass path=, or set {env}',
    errno.ECONNREFUSED: 'nobody listens on that socket: start cpuhpd',
    errno.EACCES: 'no permission to use the socket: ask for cpuhpd\'s group',
    errno.EPROTONOSUPPORT: 'cpuhpd speaks another protocol version: update one of them',
    errno.EUSERS: 'cpuhpd has too many connections: try again later',
}


class WriterState(enum.IntEnum):
    """What cpuhpd's hotplug writer is doing.  ``str()`` is the name
    (``IDLE``), as for a plain Enum; ``int()`` the C value."""
    #: No hotplug queued: leases are granted at once.
    IDLE = lib.CPUHP_CLIENT_WRITER_IDLE
    #: A hotplug waits for the leases held (and in-process readers) to go.
    WAITING = lib.CPUHP_CLIENT_WRITER_WAITING
    #: A hotplug is writing sysfs.
    RUNNING = lib.CPUHP_CLIENT_WRITER_RUNNING

    # An IntEnum's str() is its number since Python 3.11: say the name.
    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Status:
    """cpuhpd's view of the machine, from Client.status()."""
    online: frozenset[int]
    offline: frozenset[int]
    possible: frozenset[int]
    present: frozenset[int]
    #: Leases held by every client of the daemon.
    leases_held: int
    writer: WriterState
    #: Lease requests waiting behind a hotplug.
    pending_leases: int
    #: Hotplug requests waiting, the running one included.
    pending_hotplugs: int
    connections: int
    daemon_version: str
    #: Fast leases held (counted in leases_held too): a snapshot of the shared counters.
    fast_leases_held: int
    #: Connections holding fast leases.
    fast_holders: int
    #: Connections with the fast path.
    fast_connections: int
    #: How the daemon orders fast leases: "membarrier-global-expedited",
    #: "membarrier-global", "fence", or "off".
    fast_path: str


@dataclass(frozen=True)
class CpuResult:
    """What one CPU of a hotplug request came to."""
    cpu: int
    #: 0 if the CPU is in the state asked for, else the error (an errno value).
    errno: int
    #: False if it already was in that state (or on error).
    changed: bool
    #: The daemon's words when errno is not 0.
    message: str = ''

    @property
    def ok(self) -> bool:
        """The CPU is in the state asked for."""
        return self.errno == 0


@dataclass(frozen=True)
class HotplugResult:
    """What Client.set_online() did, CPU by CPU (in ascending order)."""
    online: bool
    results: tuple[CpuResult, ...]

    @property
    def ok(self) -> bool:
        """Every CPU named is now in the state asked for."""
        return all(r.ok for r in self.results)

    @property
    def changed(self) -> frozenset[int]:
        """The CPUs this request brought online or took offline."""
        return frozenset(r.cpu for r in self.results if r.changed)

    @property
    def failed(self) -> frozenset[int]:
        """The CPUs that did not get to the state asked for."""
        return frozenset(r.cpu for r in self.results if not r.ok)

    def check(self) -> HotplugResult:
        """Raise the error of the first CPU that failed, if any: an OSError
        subclass whose ``result`` attribute is this HotplugResult."""
        for r in self.results:
            if not r.ok:
                e = error(-r.errno, r.message or f'CPU {r.cpu}: {os.strerror(r.errno)}')
                e.result = self  # type: ignore[attr-defined]
                raise e
        return self


class Event:
    """Base class of what Client.watch() yields."""
    __slots__ = ()


@dataclass(frozen=True)
class HotplugStarted(Event):
    """cpuhpd began changing *cpus* (it holds the writer side now)."""
    cpus: frozenset[int]
    online: bool


@dataclass(frozen=True)
class HotplugFinished(Event):
    """A hotplug of *cpus* ended; *failed* did not reach the state asked for."""
    cpus: frozenset[int]
    online: bool
    ok: bool
    failed: frozenset[int]


@dataclass(frozen=True)
class OnlineChanged(Event):
    """The set of online CPUs is now *online_cpus*; *external*: the change was
    not made by cpuhpd (chcpu, SMT control, suspend...)."""
    online_cpus: frozenset[int]
    external: bool


@dataclass(frozen=True)
class EventsLost(Event):
    """*lost* events were dropped while a call waited for its answer: read
    Client.status() again."""
    lost: int


def _event(ev) -> Event:
    t = ev.type
    if t == lib.CPUHP_CLIENT_EVENT_HOTPLUG_STARTED:
        return HotplugStarted(from_cset(ffi.addressof(ev, 'cpus')), bool(ev.online))
    if t == lib.CPUHP_CLIENT_EVENT_HOTPLUG_FINISHED:
        return HotplugFinished(from_cset(ffi.addressof(ev, 'cpus')), bool(ev.online),
                               bool(ev.ok), from_cset(ffi.addressof(ev, 'failed')))
    if t == lib.CPUHP_CLIENT_EVENT_ONLINE_CHANGED:
        return OnlineChanged(from_cset(ffi.addressof(ev, 'online_cpus')), bool(ev.external))
    if t == lib.CPUHP_CLIENT_EVENT_LOST:
        return EventsLost(int(ev.lost))
    raise error(-errno.EPROTO, f'libcpuhp-client returned an event of unknown type {t}')


def _text(chars) -> str:
    return ffi.string(chars).decode('utf-8', 'replace')


class Lease:
    """A reader lease from cpuhpd: the set of online CPUs does not change
    until it is released, or its Client is closed, or its process dies.

    A context manager: ``with client.lease(): ...`` releases it on the way
    out, exceptions included.
    """

    def __init__(self, client: Client, lease_id: int) -> None:
        self.client = client
        #: The daemon's number for this lease.
        self.id = lease_id
        self.released = False

    def __repr__(self) -> str:
        return f'<cpuhp.Lease id={self.id} {"released" if self.released else "held"}>'

    def release(self) -> None:
        """End the lease.  Does nothing if it already ended (released, or
        its Client closed)."""
        if self.released:
            return
        self.released = True
        self.client._release(self.id)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self.release()
        except OSError:
            # The connection failed: the lease died with it.  Report that
            # only if nothing else is on its way out.
            if exc_type is None:
                raise


class Client:
    """A connection to cpuhpd, the daemon that owns CPU hotplug.

    *path*: the daemon's socket; None: $CPUHP_SOCKET if set and not empty,
    else DEFAULT_SOCKET.  Connects at once: FileNotFoundError,
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
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._c = None
        self._lock = threading.Lock()
        self._watching = False
        if path is None:
            # Resolved once, by the C client's one resolver (os.environ
            # writes through to C's environment), and connected to as shown.
            self.path = socket_path()
            cpath = os.fsencode(self.path)
        else:
            self.path = os.fspath(path)
            if not isinstance(self.path, str):
                raise TypeError(f'path must be a str or os.PathLike[str], '
                                f'not {type(self.path).__name__}')
            cpath = os.fsencode(self.path)
            if b'\0' in cpath:
                raise ValueError('path contains a NUL character')
        out = ffi.new('struct cpuhp_client **')
        rc = lib.cpuhp_client_connect(cpath, out)
        if rc < 0:
            hint = _CONNECT_HINTS.get(-rc, '').format(env=SOCKET_ENV)
            raise error(rc, f'cannot connect to cpuhpd ({os.strerror(-rc)})'
                        + (f': {hint}' if hint else ''), self.path)
        self._c = ffi.gc(out[0], lib.cpuhp_client_close)

    def __repr__(self) -> str:
        state = 'closed' if self._c is None else 'open'
        return f'<cpuhp.Client {state} path={self.path!r}>'

    def __enter__(self) -> Client:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """close() was called: every other call raises ValueError."""
        return self._c is None

    def close(self) -> None:
        """Close the connection: every lease it holds ends.  Does nothing if
        already closed; RuntimeError if another thread is inside a call on
        this Client (closing under it would free what it uses)."""
        if not self._lock.acquire(blocking=False):
            raise RuntimeError('another thread is inside a call on this cpuhp.Client: '
                               'close it when that call has returned')
        try:
            c, self._c = self._c, None
            if c is not None:
                ffi.release(c)  # runs cpuhp_client_close() now
        finally:
            self._lock.release()

    # Each call holds self._lock around the C call and the reading of its
    # message, so that the message is this call's even with threads sharing
    # the Client (the C library's own mutex covers only the call).
    def _handle(self):
        if self._c is None:
            raise ValueError('operation on a closed cpuhp.Client')
        return self._c

    def _error(self, c, rc: int) -> OSError:
        return error(rc, _text(lib.cpuhp_client_last_message(c)) or None)

    def fileno(self) -> int:
        """The socket, to poll for POLLIN in an event loop; then drain with
        next_event(timeout=0) until it returns None.  Do not read, write or
        close it."""
        with self._lock:
            return lib.cpuhp_client_fd(self._handle())

    def lease(self, timeout: float | None = None) -> Lease:
        """Take a reader lease and return it (a context manager).

        Waits while a hotplug is queued or running (writer preference).
        *timeout*: seconds; 0: do not wait (BlockingIOError if a hotplug is in
        the way); None: as long as it takes.  TimeoutError if the hotplug
        still is after *timeout*.
        """
        ms = timeout_ms(timeout, forever=UINT_MS_MAX)
        out = ffi.new('uint64_t *')
        with self._lock:
            c = self._handle()
            rc = lib.cpuhp_client_lease_acquire(c, ms, out)
            if rc < 0:
                raise self._error(c, rc)
        return Lease(self, int(out[0]))

    def _release(self, lease_id: int) -> None:
        with self._lock:
            if self._c is None:
                return  # closed: the lease ended with the connection
            rc = lib.cpuhp_client_lease_release(self._c, lease_id)
            if rc < 0:
                raise self._error(self._c, rc)

    def status(self) -> Status:
        """The daemon's view: CPU sets, leases held, the writer's state."""
        out = ffi.new('struct cpuhp_client_status *')
        with self._lock:
            c = self._handle()
            rc = lib.cpuhp_client_status(c, out)
            if rc < 0:
                raise self._error(c, rc)
        return Status(
            online=from_cset(ffi.addressof(out[0], 'online')),
            offline=from_cset(ffi.addressof(out[0], 'offline')),
            possible=from_cset(ffi.addressof(out[0], 'possible')),
            present=from_cset(ffi.addressof(out[0], 'present')),
            leases_held=int(out.leases_held),
            writer=WriterState(out.writer),
            pending_leases=int(out.pending_leases),
            pending_hotplugs=int(out.pending_hotplugs),
            connections=int(out.connections),
            daemon_version=_text(out.daemon_version),
            fast_leases_held=int(out.fast_leases_held),
            fast_holders=int(out.fast_holders),
            fast_connections=int(out.fast_connections),
            fast_path=_text(out.fast_path))

    def set_online(self, cpus: CPUs, online: bool, timeout: float | None = None, *,
                   check: bool = True) -> HotplugResult:
        """Bring *cpus* online (*online* True) or take them offline, in one
        writer section: no lease is granted in between.

        *cpus*: a CPU number, an iterable of them, or a range list ("2-3,5").
        *timeout*: seconds to wait for leases and in-process readers to go;
        0: do not wait (BlockingIOError if a lease is held); None: as long as
        it takes.  TimeoutError, PermissionError (not root or in cpuhpd's
        admin group) and the like mean nothing changed.

        Returns what became of each CPU.  With *check* (the default), a CPU
        that did not get there raises its error (``e.result`` holds the
        HotplugResult); with check=False, look at ``result.failed``.
        """
        if not isinstance(online, bool):
            raise TypeError(f'online must be True or False, not {online!r}')
        cset = to_cset(cpus)
        if _locklib.cpuhp_cpuset_count(cset) == 0:
            raise ValueError(f'no CPUs named in {cpus!r}')
        text = format_cset(cset).encode('ascii')
        ms = timeout_ms(timeout, forever=UINT_MS_MAX)
        res = ffi.new('struct cpuhp_client_cpu_result **')
        n = ffi.new('size_t *')
        with self._lock:
            c = self._handle()
            rc = lib.cpuhp_client_set_online_results(c, text, online, ms, res, n)
            if rc < 0:
                raise self._error(c, rc)
        try:
            results = tuple(CpuResult(cpu=int(r.cpu), errno=-int(r.error),
                                      changed=bool(r.changed),
                                      message=_text(r.message) if r.error else '')
                            for r in res[0][0:n[0]])
        finally:
            lib.cpuhp_client_results_free(res[0])
        result = HotplugResult(online=online, results=results)
        return result.check() if check else result

    def _subscribe(self, c) -> None:
        if self._watching:
            return
        rc = lib.cpuhp_client_watch(c)
        if rc < 0 and rc != -errno.EALREADY:
            raise self._error(c, rc)
        self._watching = True

    def watch(self, timeout: float | None = None) -> Iterator[Event]:
        """Subscribe to events (at once, not at the first iteration) and
        return an iterator of them, oldest first: HotplugStarted,
        HotplugFinished, OnlineChanged, EventsLost.

        *timeout*: seconds to wait for each event; the iteration ends when
        none comes in time.  None: wait as long as it takes.  Other calls on
        this Client keep working; events that come meanwhile are kept.
        """
        ms = timeout_ms(timeout, forever=-1, limit=INT_MS_MAX)
        with self._lock:
            self._subscribe(self._handle())
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
        down."""
        return self._next_event(timeout_ms(timeout, forever=-1, limit=INT_MS_MAX))

    def _next_event(self, ms: int) -> Event | None:
        out = ffi.new('struct cpuhp_client_event *')
        with self._lock:
            c = self._handle()
            self._subscribe(c)
            rc = lib.cpuhp_client_next_event(c, ms, out)
            if rc in (-errno.EAGAIN, -errno.ETIMEDOUT):
                return None
            if rc < 0:
                raise self._error(c, rc)
        return _event(out[0])
