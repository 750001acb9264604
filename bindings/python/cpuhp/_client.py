# SPDX-License-Identifier: LGPL-2.1-or-later
"""The cpuhpd client: leases, status, hotplug requests and events
(libcpuhp-client, <cpuhp/client.h>).

Waits happen here, in poll() on a socket, not inside a C call: a lease or
a hotplug that may wait is an asynchronous call of libcpuhp-client on a
connection of its own (cpuhp_client_*_begin), events are read without
waiting (cpuhp_client_next_event(c, 0)) after poll() says the handle's
socket is readable.  So a signal ends any wait (Ctrl-C raises
KeyboardInterrupt at once; giving up a call closes its connection, and the
daemon forgets it), threads sharing a Client do not wait for each other,
and cpuhp.aio waits on the same sockets in an event loop.  The C calls
that remain run without the GIL and are answered by the daemon at once.
"""
from __future__ import annotations

import contextlib
import enum
import errno
import os
import select
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import TracebackType

from ._cpuhp import lib as _locklib
from ._cpuhp_client import ffi, lib
from ._cpuset import CPUs, format_cset, from_cset, to_cset
from ._errors import INT_MS_MAX, UINT_MS_MAX, error, timeout_ms

#: Where cpuhpd listens unless $CPUHP_SOCKET or Client(path=...) says otherwise.
DEFAULT_SOCKET: str = ffi.string(lib.CPUHP_CLIENT_DEFAULT_SOCKET).decode()
#: The environment variable naming the daemon's socket.
SOCKET_ENV: str = ffi.string(lib.CPUHP_CLIENT_SOCKET_ENV).decode()
_DAEMON_UID_ENV = ffi.string(lib.CPUHP_CLIENT_DAEMON_UID_ENV).decode()



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
    errno.EPERM: 'the process serving it is neither root nor you, so it is not trusted; '
                 'set {daemon_env}=UID to trust that uid',
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
    #: Hotplug freezes held or pending (Client.freeze()): while not 0, hotplug fails at once.
    freezes: int = 0
    #: Times the online set changed behind cpuhpd while leases were held (LeaseBypassed).
    bypasses: int = 0
    #: Leases revoked at cpuhpd's --max-lease-ms (LeaseRevoked).
    revocations: int = 0
    #: smt/control as the kernel words it ("on", "off", "forceoff",
    #: "notsupported", ...); "" when the daemon's tree has no SMT control.
    smt_control: str = ''
    #: smt/active: some core runs more than one hardware thread now.
    smt_active: bool = False
    #: Milliseconds left of cpuhpd's restart grace (its --restart-grace-ms):
    #: the daemon before it ended without handing its clients over, and every
    #: hotplug waits until their holders could have noticed.  0: none.
    restart_grace_ms: int = 0


@dataclass(frozen=True)
class LeaseInfo:
    """One row of Client.leases(): a socket lease, or one connection's fast
    leases (counted in shared memory, so listed once with their count)."""
    #: The daemon's number for a socket lease; None for fast leases.
    id: int | None
    fast: bool
    #: 1 for a socket lease.
    count: int
    #: From the holder's socket credentials, when it connected.
    pid: int
    uid: int
    #: The holder's command name then ("?" if unknown).
    comm: str
    #: As the holder named itself (Client(who=...), lease(who=...)); "" if it did not.
    who: str
    why: str
    #: Seconds held; for fast leases since the daemon first saw them, so possibly less.
    held: float
    #: The connection's number in cpuhpd's log.
    connection: int


@dataclass(frozen=True)
class HotplugInfo:
    """A hotplug request in cpuhpd's queue, from Client.leases()."""
    #: "hotplug #N" in cpuhpd's log.
    seq: int
    cpus: frozenset[int]
    online: bool
    #: WAITING: first in line, for leases; RUNNING: writing sysfs; IDLE: queued behind.
    state: WriterState
    pid: int
    uid: int
    comm: str
    #: Seconds since it arrived.
    waited: float
    #: Its timeout, in seconds.
    timeout: float


@dataclass(frozen=True)
class FreezeInfo:
    """A hotplug freeze (Client.freeze(), ``cpuhpctl freeze``), from Client.leases()."""
    #: The daemon's number for it.
    id: int
    #: False: it waits for the hotplugs queued before it (and refuses new ones already).
    granted: bool
    pid: int
    uid: int
    comm: str
    who: str
    why: str
    #: Seconds since it was asked for.
    held: float
    connection: int


@dataclass(frozen=True)
class LeaseList:
    """Who holds what, from Client.leases(): like ``systemd-inhibit --list``."""
    #: Oldest first.
    leases: list[LeaseInfo]
    #: In queue order.
    hotplugs: list[HotplugInfo]
    #: Oldest first.
    freezes: list[FreezeInfo] = field(default_factory=list)
    #: As Status.restart_grace_ms.
    restart_grace_ms: int = 0


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


@dataclass(frozen=True)
class LeaseRevoked(Event):
    """A notice (watching or not): socket lease *lease_id* of this Client was
    held *held* seconds, past cpuhpd's ``--max-lease-ms`` (*max_lease*
    seconds), and is no longer held; its release raises OSError(ETIME)."""
    lease_id: int
    held: float
    max_lease: float


@dataclass(frozen=True)
class LeaseBypassed(Event):
    """A notice (watching or not): the online set changed behind cpuhpd's back
    (sysfs written directly, chcpu, firmware) while *leases* leases of this
    Client were held, and is now *online_cpus*.  What they protected may be
    stale; the release of a socket lease held then raises OSError(ESTALE)
    (it is released all the same)."""
    online_cpus: frozenset[int]
    leases: int


@dataclass(frozen=True)
class LeasesLost(Event):
    """A notice (watching or not): the connection to cpuhpd ended (the
    daemon was stopped, died, or closed it) while *leases* leases of this
    Client were held, socket and fast ones.  They are no longer held and
    CPUs may change: the release of each raises ConnectionResetError, so a
    ``with client.lease():`` block raises it on its way out.  The Client's
    socket (fileno()) becomes readable when the daemon's end goes; this
    comes after the events that arrived before, and then every call raises
    ConnectionResetError (or the daemon's last word, OSError ECANCELED
    while it shuts down).  Not sent when no lease was held."""
    leases: int


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
    if t == lib.CPUHP_CLIENT_EVENT_LEASE_REVOKED:
        return LeaseRevoked(int(ev.lease_id), int(ev.held_ms) / 1000, int(ev.max_lease_ms) / 1000)
    if t == lib.CPUHP_CLIENT_EVENT_LEASE_BYPASSED:
        return LeaseBypassed(from_cset(ffi.addressof(ev, 'online_cpus')), int(ev.leases))
    if t == lib.CPUHP_CLIENT_EVENT_LEASES_LOST:
        return LeasesLost(int(ev.leases))
    raise error(-errno.EPROTO, f'libcpuhp-client returned an event of unknown type {t}')


def _text(chars) -> str:
    return ffi.string(chars).decode('utf-8', 'replace')


def _wait_readable(fds: list[int], timeout: float | None = None) -> None:
    """Block until one of *fds* is readable or *timeout* seconds pass.  A
    signal whose handler raises (SIGINT: KeyboardInterrupt) ends the wait
    with that exception; poll() resumes after any other (PEP 475)."""
    p = select.poll()
    for fd in fds:
        p.register(fd, select.POLLIN)
    p.poll(None if timeout is None else max(0.0, timeout) * 1000)


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


def _call_error(call_p, rc: int) -> OSError:
    return error(rc, _text(lib.cpuhp_client_call_message(call_p)) or None)


class _Call:
    """One asynchronous call of libcpuhp-client: begun (its request sent on
    a connection of its own), then polled until done.  Closing it before
    it is done gives the request up: the daemon drops a waiting lease
    acquire and cancels a hotplug that is not running yet."""

    __slots__ = ('_p', '_owner')

    def __init__(self, p, owner) -> None:
        self._p = ffi.gc(p, lib.cpuhp_client_call_free)
        # The handle it was begun on: it must outlive the call (a lease
        # the call gets joins that handle's table).
        self._owner = owner

    def fileno(self) -> int:
        """The socket to wait on while done() says False."""
        return lib.cpuhp_client_call_fd(self._p)

    def done(self) -> bool:
        """Read what arrived, without waiting: False while the answer is to
        come; True when it is in; its error raised when it failed."""
        rc = lib.cpuhp_client_call_done(self._p)
        if rc == -errno.EINPROGRESS:
            return False
        if rc < 0:
            raise _call_error(self._p, rc)
        return True

    def wait(self, client: Client) -> None:
        """Wait (in poll, so a signal can end it) until done(), or until
        *client* is closed (its call's OSError ECANCELED)."""
        while not self.done():
            _wait_readable([self.fileno(), client._closed_r])
            client._check_open()

    def result(self, ctype: str, get: Callable[[object, object], int]):
        """A done call's result: a new *ctype* that ``get(call, out)``, one of
        the cpuhp_client_call_*() getters, filled; its error raised."""
        out = ffi.new(ctype)
        rc = get(self._p, out)
        if rc < 0:
            raise _call_error(self._p, rc)
        return out

    def close(self) -> None:
        if self._p is not None:
            ffi.release(self._p)  # cpuhp_client_call_free() now
            self._p = None


class _Use:
    """A call in progress on a Client, from Client._using(): its handle
    stays open (close() waits, or leaves the closing to it) until it ends."""

    __slots__ = ('c', 'thread', 'cancel')

    def __init__(self, c) -> None:
        self.c = c
        self.thread = threading.get_ident()
        # Set by cpuhp.aio: ends the call's waits and frees its _Call at
        # once, for close() on the thread whose event loop runs the task
        # (a suspended task cannot be waited for there).  Its next step
        # must then be Client._check_open().
        self.cancel: Callable[[], None] | None = None


def _end_on_exit(end: Callable[[], None], exc_type: type[BaseException] | None) -> None:
    """A with block's end for a lease or a freeze: *end* it.  If the
    connection failed, what it held died with it: say so only if nothing
    else is on its way out."""
    try:
        end()
    except OSError:
        if exc_type is None:
            raise


class Lease:
    """A reader lease from cpuhpd: the set of online CPUs does not change
    until it is released, or its Client is closed, or its process dies.

    A context manager: ``with client.lease(): ...`` releases it on the way
    out, exceptions included.  If the lease did not hold for the whole
    block (its daemon went away: ConnectionResetError; revoked: ETIME;
    bypassed: ESTALE), the exit raises that error, unless the block is
    already raising an exception of its own.
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
        its Client closed).  ConnectionResetError if it died with the
        connection (the daemon stopped, died or closed it; see LeasesLost):
        CPUs may have changed while it was believed held.  OSError ETIME
        (revoked) and ESTALE (bypassed) say the same of a lease that cpuhpd
        ended or could not protect."""
        if self.released:
            return
        self.released = True
        self.client._release(self.id)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        _end_on_exit(self.release, exc_type)


class Freeze:
    """A hotplug freeze from Client.freeze(): until it is thawed, or its
    Client is closed, or its process dies, every new hotplug fails at once
    (OSError with errno EBUSY) with a message naming its holder; leases are
    still granted.

    A context manager: ``with client.freeze(): ...`` thaws on the way out,
    exceptions included.
    """

    def __init__(self, client: Client, freeze_id: int) -> None:
        self.client = client
        #: The daemon's number for this freeze.
        self.id = freeze_id
        self.thawed = False

    def __repr__(self) -> str:
        return f'<cpuhp.Freeze id={self.id} {"thawed" if self.thawed else "held"}>'

    def thaw(self) -> None:
        """End the freeze.  Does nothing if it already ended (thawed, or its
        Client closed)."""
        if self.thawed:
            return
        self.thawed = True
        self.client._thaw(self.id)

    def __enter__(self) -> Freeze:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        _end_on_exit(self.thaw, exc_type)


class Client:
    """A connection to cpuhpd, the daemon that owns CPU hotplug.

    *path*: the daemon's socket; None: $CPUHP_SOCKET if set and not empty,
    else DEFAULT_SOCKET.  *who*, *why*: name this Client's leases, as
    set_identity() does.  Connects at once: FileNotFoundError,
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
                 why: str | None = None) -> None:
        self._c = None
        # Held only around C calls that do not wait (and the reading of
        # their message), never across a wait: waits happen in poll().
        self._lock = threading.Lock()
        self._watching = False
        # Calls in progress (under _lock); close() wakes them, and the last
        # one out of a closed Client closes its handle (_closing).
        self._uses: set[_Use] = set()
        self._left = threading.Condition(self._lock)
        self._closing = None
        # Readable once close() began: every wait inside a call polls it too.
        self._closed_r = self._closed_w = -1
        self._fast = False  # the handle takes fast leases (known after its first lease)
        # The watchers' wake-up: written when a call on the handle may have
        # read their events off the socket (so poll() would not see them).
        self._wake_r = self._wake_w = -1
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
            hint = _CONNECT_HINTS.get(-rc, '').format(env=SOCKET_ENV,
                                                      daemon_env=_DAEMON_UID_ENV)
            raise error(rc, f'cannot connect to cpuhpd ({os.strerror(-rc)})'
                        + (f': {hint}' if hint else ''), self.path)
        self._c = ffi.gc(out[0], lib.cpuhp_client_close)
        if who is not None or why is not None:
            try:
                self.set_identity(who, why)
            except BaseException:
                self.close()
                raise

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
        """Close the connection: every lease it holds ends (and each one's
        release does nothing).  Does nothing if already closed.

        Any thread may close, like a socket's: calls in progress on this
        Client in other threads (a lease or a hotplug waiting, next_event())
        are woken and raise OSError with errno ECANCELED ("closed while this
        call was in progress"), also when their answer came at the same
        time, and close() returns once they have left, the connection and
        their requests closed.  Calls of cpuhp.aio tasks waiting in this
        thread's event loop are ended at once; the tasks raise the same
        error when they next run.  A call that starts later raises
        ValueError."""
        with self._lock:
            c = self._c
            if c is None:
                return
            self._c = None
            self._closing = c
            if self._closed_w >= 0:
                os.write(self._closed_w, b'!')  # never drained: wakes every wait from now on
            me = threading.get_ident()
            for use in [u for u in self._uses if u.thread == me and u.cancel is not None]:
                self._uses.discard(use)
                use.cancel()
            # A call of this thread without cancel (a signal handler closing
            # under it) cannot be waited for: the last one out closes.
            while any(u.thread != me for u in self._uses):
                self._left.wait()
            if self._closing is not None and not self._uses:  # else the last one out did
                self._finish()

    def _finish(self) -> None:
        """Under self._lock, once closing and no call is in progress."""
        c, self._closing = self._closing, None
        ffi.release(c)  # runs cpuhp_client_close() now, once: the ffi.gc finalizer is off
        for fd in (self._wake_r, self._wake_w, self._closed_r, self._closed_w):
            if fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = self._closed_r = self._closed_w = -1

    # Short C calls hold self._lock around the call and the reading of its
    # message, so that the message is this call's even with threads sharing
    # the Client (the C library's own mutex covers only the call).
    def _handle(self):
        if self._c is None:
            raise ValueError('operation on a closed cpuhp.Client')
        return self._c

    def _error(self, c, rc: int) -> OSError:
        return error(rc, _text(lib.cpuhp_client_last_message(c)) or None)

    def _closed_error(self) -> OSError:
        return error(-errno.ECANCELED, 'the cpuhp.Client was closed while this call was '
                     'in progress')

    def _check_open(self) -> None:
        """Inside a call, after each wait: its ECANCELED if close() came."""
        if self._c is None:
            raise self._closed_error()

    @property
    def _busy(self) -> int:
        """Calls in progress (for the tests: "a thread is inside a call")."""
        with self._lock:
            return len(self._uses)

    @contextlib.contextmanager
    def _using(self) -> Iterator[_Use]:
        """A call in progress, for a block that waits outside the lock: its
        handle (use.c) stays valid until the block ends, and if close()
        comes meanwhile the block raises ECANCELED."""
        with self._lock:
            use = _Use(self._handle())
            if self._closed_r < 0:
                self._closed_r, self._closed_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
            self._uses.add(use)
        try:
            yield use
            self._check_open()  # an answer that came with close() is not one
        except OSError as e:
            # What close() did to the call (its wait ended) is its error, not the cause.
            if self._c is None and e.errno != errno.ECANCELED:
                raise self._closed_error() from e
            raise
        finally:
            with self._lock:
                if use in self._uses:  # else close() cancelled it
                    self._uses.remove(use)
                    self._left.notify_all()
                    if self._closing is not None and not self._uses:
                        self._finish()

    def _kick(self) -> None:
        """After a call on the handle's connection (under self._lock): it may
        have read events off the socket, so a watcher in poll() must look."""
        if self._wake_w >= 0:
            try:
                os.write(self._wake_w, b'!')
            except BlockingIOError:
                pass  # full: readable already

    def _begin(self, c, begin: Callable[[object], int]) -> _Call:
        out = ffi.new('struct cpuhp_client_call **')
        with self._lock:
            self._check_open()
            rc = begin(out)
            self._kick()  # a first lease asks for the fast path on the handle's connection
            if rc < 0:
                raise self._error(c, rc)
        return _Call(out[0], c)

    def register_state(self, name: str, startup: Callable[[int], object] | None = None,
                       teardown: Callable[[int], object] | None = None, priority: int = 0,
                       deadline: float = 5.0, nocalls: bool = False) -> State:
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
        """
        from ._states import State
        return State(self, name, startup, teardown, priority, deadline, nocalls)

    def fileno(self) -> int:
        """The socket, to poll for POLLIN in an event loop; then drain with
        next_event(timeout=0) until it returns None.  Do not read, write or
        close it."""
        with self._lock:
            return lib.cpuhp_client_fd(self._handle())

    def set_identity(self, who: str | None = None, why: str | None = None) -> None:
        """Say who holds this Client's leases and why, for ``cpuhpctl leases``,
        leases(), and the message of a hotplug that times out behind them
        ("pid 4242 (resize-pools) 'sizing worker pools', held 4.1 s").
        Names every lease of this Client that has no name of its own, those
        held now included.  None or "": unnamed (the daemon shows the command
        name).  At most 255 bytes each in UTF-8 (ValueError)."""
        cwho, cwhy = _identity(who, 'who'), _identity(why, 'why')
        with self._lock:
            c = self._handle()
            rc = lib.cpuhp_client_set_identity(c, cwho, cwhy)
            self._kick()
            if rc < 0:
                raise self._error(c, rc)

    def leases(self) -> LeaseList:
        """Every lease held, by any client, and every hotplug request waiting
        or running, with who holds or asked: like ``systemd-inhibit --list``.
        One round trip on this Client's connection."""
        out = ffi.new('struct cpuhp_client_lease_list **')
        with self._lock:
            c = self._handle()
            rc = lib.cpuhp_client_list_leases(c, out)
            self._kick()
            if rc < 0:
                raise self._error(c, rc)
        return _lease_list_freed(out[0])

    def _leases_begin(self, c) -> _Call:
        return self._begin(c, lambda out: lib.cpuhp_client_list_leases_begin(c, out))

    @staticmethod
    def _leases_end(call: _Call) -> LeaseList:
        return _lease_list_freed(call.result('struct cpuhp_client_lease_list **',
                                             lib.cpuhp_client_call_list_leases)[0])

    def lease(self, timeout: float | None = None, *, who: str | None = None,
              why: str | None = None) -> Lease:
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
        """
        ms = timeout_ms(timeout, forever=UINT_MS_MAX)
        named = who is not None or why is not None
        if named:
            ident = (_identity(who, 'who'), _identity(why, 'why'))
        lease = None if named else self._lease_now(ms)
        if lease is not None:
            return lease
        with self._using() as use:
            call = (self._lease_as_begin(use.c, ms, *ident) if named else
                    self._lease_begin(use.c, ms))
            try:
                call.wait(self)
                return self._lease_end(call)
            finally:
                call.close()

    def _lease_now(self, ms: int) -> Lease | None:
        """A fast lease taken at once, or None: a socket lease is needed
        (no fast path), or a wait (a hotplug in the way and *ms* not 0).
        The common case, without the asynchronous call's allocations."""
        out = ffi.new('uint64_t *')
        with self._lock:
            c = self._handle()
            if not self._fast:
                rc = lib.cpuhp_client_fast_path(c)  # the first time, a round trip on c
                self._kick()
                if rc < 0:
                    raise self._error(c, rc)
                self._fast = rc == 1  # once granted, for the handle's life
                if not self._fast:
                    return None
            rc = lib.cpuhp_client_lease_acquire(c, 0, out)  # never waits
            if rc == -errno.EAGAIN and ms:
                return None
            if rc < 0:
                raise self._error(c, rc)
        return Lease(self, int(out[0]))

    def _lease_begin(self, c, ms: int) -> _Call:
        return self._begin(c, lambda out: lib.cpuhp_client_lease_acquire_begin(c, ms, out))

    def _lease_as_begin(self, c, ms: int, who, why) -> _Call:
        return self._begin(c, lambda out: lib.cpuhp_client_lease_acquire_as_begin(c, ms, who,
                                                                                  why, out))

    def _lease_end(self, call: _Call) -> Lease:
        return Lease(self, int(call.result('uint64_t *', lib.cpuhp_client_call_lease_acquire)[0]))

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
        a connection of its own, which ends with this Client.  Root or
        cpuhpd's admin group only (PermissionError).  *who*, *why*: as for
        lease(), for leases() and the refusals' message (else the Client's
        names)."""
        cwho, cwhy = _identity(who, 'who'), _identity(why, 'why')
        # Waits in poll(), as lease() does: one blocking C call here would
        # hold up close() and Ctrl-C until the hotplugs ahead were done.
        with self._using() as use:
            call = self._freeze_begin(use.c, cwho, cwhy)
            try:
                call.wait(self)
                return self._freeze_end(call)
            finally:
                call.close()

    def _freeze_begin(self, c, who, why) -> _Call:
        return self._begin(c, lambda out: lib.cpuhp_client_freeze_begin(c, who, why, out))

    def _freeze_end(self, call: _Call) -> Freeze:
        return Freeze(self, int(call.result('uint64_t *', lib.cpuhp_client_call_freeze)[0]))

    def _thaw(self, freeze_id: int) -> None:
        with self._lock:
            if self._c is None:
                return  # closed: the freeze ended with the connection
            rc = lib.cpuhp_client_thaw(self._c, freeze_id)
            self._kick()
            if rc < 0:
                raise self._error(self._c, rc)

    def _release(self, lease_id: int) -> None:
        with self._lock:
            if self._c is None:
                return  # closed: the lease ended with the connection
            rc = lib.cpuhp_client_lease_release(self._c, lease_id)
            if rc < 0:
                raise self._error(self._c, rc)

    def status(self) -> Status:
        """The daemon's view: CPU sets, leases held, the writer's state.
        One round trip on this Client's connection, which the daemon
        answers at once (also while a hotplug waits or runs)."""
        out = ffi.new('struct cpuhp_client_status *')
        with self._lock:
            c = self._handle()
            rc = lib.cpuhp_client_status(c, out)
            self._kick()
            if rc < 0:
                raise self._error(c, rc)
        return _status(out)

    def _status_begin(self, c) -> _Call:
        return self._begin(c, lambda out: lib.cpuhp_client_status_begin(c, out))

    @staticmethod
    def _status_end(call: _Call) -> Status:
        return _status(call.result('struct cpuhp_client_status *', lib.cpuhp_client_call_status))

    def set_online(self, cpus: CPUs, online: bool, timeout: float | None = None, *,
                   check: bool = True) -> HotplugResult:
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
        """
        text = self._set_online_args(cpus, online)
        ms = timeout_ms(timeout, forever=UINT_MS_MAX)
        with self._using() as use:
            call = self._set_online_begin(use.c, text, online, ms)
            try:
                call.wait(self)
                return self._set_online_end(call, online, check)
            finally:
                call.close()

    @staticmethod
    def _set_online_args(cpus: CPUs, online: bool) -> bytes:
        if not isinstance(online, bool):
            raise TypeError(f'online must be True or False, not {online!r}')
        cset = to_cset(cpus)
        if _locklib.cpuhp_cpuset_count(cset) == 0:
            raise ValueError(f'no CPUs named in {cpus!r}')
        return format_cset(cset).encode('ascii')

    def _set_online_begin(self, c, text: bytes, online: bool, ms: int) -> _Call:
        return self._begin(c, lambda out: lib.cpuhp_client_set_online_results_begin(c, text, online, ms,
                                                                            out))

    @staticmethod
    def _set_online_end(call: _Call, online: bool, check: bool) -> HotplugResult:
        res = ffi.new('struct cpuhp_client_cpu_result **')
        n = ffi.new('size_t *')
        rc = lib.cpuhp_client_call_set_online_results(call._p, res, n)
        if rc < 0:
            raise _call_error(call._p, rc)
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
        """Under self._lock."""
        if self._watching:
            return
        if self._wake_r < 0:
            self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        rc = lib.cpuhp_client_watch(c)
        if rc < 0 and rc != -errno.EALREADY:
            raise self._error(c, rc)
        self._watching = True

    def watch(self, timeout: float | None = None) -> Iterator[Event]:
        """Subscribe to events (at once, not at the first iteration) and
        return an iterator of them, oldest first: HotplugStarted,
        HotplugFinished, OnlineChanged, EventsLost.

        *timeout*: seconds to wait for each event; the iteration ends when
        none comes in time.  None: wait as long as it takes (a signal ends
        the wait: Ctrl-C raises KeyboardInterrupt).  Other calls on this
        Client keep working meanwhile, from other threads too; events that
        come during them are kept.
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
        down; before either, a LeasesLost event if leases were held."""
        return self._next_event(timeout_ms(timeout, forever=-1, limit=INT_MS_MAX))

    def _try_event(self, c) -> tuple[Event | None, list[int]]:
        """An event that already arrived; or None, and the descriptors to
        wait on for the next one: the socket, the watchers' wake-up and
        the close's.  Inside a call (self._using())."""
        out = ffi.new('struct cpuhp_client_event *')
        with self._lock:
            self._check_open()  # c is still valid, but closed: no more events
            try:
                self._subscribe(c)
            except OSError:
                # The daemon went away first: its notice (LeasesLost) is still news.
                if lib.cpuhp_client_next_event(c, 0, out) == 0:
                    return _event(out[0]), []
                raise
            # Emptied before looking, so that a kick from now on is news.
            _drain(self._wake_r)
            rc = lib.cpuhp_client_next_event(c, 0, out)
            if rc == -errno.EAGAIN:
                return None, [lib.cpuhp_client_fd(c), self._wake_r, self._closed_r]
            if rc < 0:
                raise self._error(c, rc)
        return _event(out[0]), []

    def _next_event(self, ms: int) -> Event | None:
        deadline = None if ms < 0 else time.monotonic() + ms / 1000
        with self._using() as use:
            while True:
                ev, fds = self._try_event(use.c)
                if ev is not None:
                    return ev
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                _wait_readable(fds, left)


def _identity(s: str | None, what: str):
    """*s* for the C calls: NULL for None, else its UTF-8 bytes, checked."""
    if s is None:
        return ffi.NULL
    if not isinstance(s, str):
        raise TypeError(f'{what} must be a str or None, not {type(s).__name__}')
    b = s.encode()
    if len(b) > lib.CPUHP_CLIENT_IDENTITY_MAX or b'\0' in b:
        raise ValueError(f'{what} must be at most {lib.CPUHP_CLIENT_IDENTITY_MAX} bytes in '
                         'UTF-8, without NUL characters')
    return b


def _lease_list(p) -> LeaseList:
    leases = [LeaseInfo(id=None if li.fast else int(li.lease_id), fast=bool(li.fast),
                        count=int(li.count), pid=int(li.pid), uid=int(li.uid),
                        comm=_text(li.comm), who=_text(li.who), why=_text(li.why),
                        held=int(li.held_ms) / 1000, connection=int(li.connection))
              for li in (p.leases[i] for i in range(p.n_leases))]
    hotplugs = [HotplugInfo(seq=int(h.seq), cpus=from_cset(ffi.addressof(h, 'cpus')),
                            online=bool(h.online), state=WriterState(h.state), pid=int(h.pid),
                            uid=int(h.uid), comm=_text(h.comm), waited=int(h.waited_ms) / 1000,
                            timeout=int(h.timeout_ms) / 1000)
                for h in (p.hotplugs[i] for i in range(p.n_hotplugs))]
    freezes = [FreezeInfo(id=int(f.freeze_id), granted=bool(f.granted), pid=int(f.pid),
                          uid=int(f.uid), comm=_text(f.comm), who=_text(f.who),
                          why=_text(f.why), held=int(f.held_ms) / 1000,
                          connection=int(f.connection))
               for f in (p.freezes[i] for i in range(p.n_freezes))]
    return LeaseList(leases=leases, hotplugs=hotplugs, freezes=freezes,
                     restart_grace_ms=int(p.restart_grace_ms))


def _lease_list_freed(p) -> LeaseList:
    """_lease_list() of what libcpuhp-client allocated, which it then frees."""
    try:
        return _lease_list(p)
    finally:
        lib.cpuhp_client_lease_list_free(p)


def _status(out) -> Status:
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
        fast_path=_text(out.fast_path),
        freezes=int(out.freezes),
        bypasses=int(out.bypasses),
        revocations=int(out.revocations),
        smt_control=_text(out.smt_control),
        smt_active=bool(out.smt_active),
        restart_grace_ms=int(out.restart_grace_ms))
