# SPDX-License-Identifier: LGPL-2.1-or-later
"""One connection to cpuhpd and the request code of both clients.

cpuhp.Client and cpuhp.aio.Client each keep a Session and differ only in
how they wait: in poll() or in an event loop.  Everything else is here,
once: connecting, the calls in progress and close() against them, the
requests of each family (a begin that sends it, an end that turns the
answer into cpuhp's types), the C errors as OSError, and what the
connection holds (leases, freezes, the watch).

Waits happen in the clients, not inside a C call: a lease or a hotplug
that may wait is an asynchronous call of libcpuhp-client on a connection
of its own (cpuhp_client_*_begin, a Call here), events are read without
waiting (cpuhp_client_next_event(c, 0)) once the handle's socket is
readable.  So a signal ends any wait (Ctrl-C raises KeyboardInterrupt at
once; giving up a call closes its connection, and the daemon forgets it),
and threads sharing a Client do not wait for each other.  The C calls made
here run without the GIL and are answered by the daemon at once.
"""
from __future__ import annotations

import _thread
import collections
import contextlib
import errno
import grp
import inspect
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from ._cpuhp import lib as _locklib
from ._cpuhp_client import ffi, lib
from ._cpuset import CPUs, format_cset, from_cset, parse_cpulist, to_cset
from ._errors import UINT_MS_MAX, error, timeout_ms
from ._types import (CpuInfo, CpuResult, Event, EventsLost, Freeze, FreezeInfo, HotplugCancelled,
                     HotplugFinished, HotplugInfo, HotplugPending, HotplugResult, HotplugStarted,
                     Lease, LeaseBypassed, LeaseInfo, LeaseList, LeaseRevoked, LeasesLost,
                     OnlineChanged, PresentChanged, Status, WriterState)

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
    errno.EACCES: 'no permission to use the socket: run as root or join its group {group} '
                  '(then log in again)',
    errno.EPROTONOSUPPORT: 'cpuhpd speaks another protocol version: update one of them',
    errno.EUSERS: 'cpuhpd has too many connections: try again later',
    errno.EPERM: 'the process serving it is neither root nor you, so it is not trusted; '
                 'set {daemon_env}=UID to trust that uid',
}


def _socket_group(path: str) -> str:
    """The socket's group, which a user it keeps out should join, quoted."""
    try:
        return repr(grp.getgrgid(os.stat(path).st_gid).gr_name)
    except (OSError, KeyError):
        return '(see ls -l ' + path + ')'


# --- arguments: checked before anything is sent ------------------------------------------

def identity(s: str | None, what: str):
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


def delay_ms(delay: float | None) -> int:
    """Client(delay=...) in ms; 0 for None (block leases)."""
    if delay is None:
        return 0
    ms = timeout_ms(delay, forever=UINT_MS_MAX)
    if ms == 0 or ms == UINT_MS_MAX:
        raise ValueError(f'delay must be a positive number of seconds, not {delay!r}')
    return ms


def force_ms(force: bool | float | None) -> int | None:
    """set_online(force=...): None (not forced), or the grace in ms (True: 5 s)."""
    if force is None or force is False:
        return None
    if force is True:
        return 5000
    return timeout_ms(force, forever=UINT_MS_MAX)


def lease_args(timeout: float | None, who: str | None,
               why: str | None) -> tuple[int, tuple | None]:
    """lease()'s arguments: the timeout in ms, and the names (None: the Client's)."""
    ms = timeout_ms(timeout, forever=UINT_MS_MAX)
    if who is None and why is None:
        return ms, None
    return ms, (identity(who, 'who'), identity(why, 'why'))


def set_online_args(cpus: CPUs, online: bool) -> bytes:
    """set_online()'s CPUs as the range list the request carries."""
    if not isinstance(online, bool):
        raise TypeError(f'online must be True or False, not {online!r}')
    cset = to_cset(cpus)
    if _locklib.cpuhp_cpuset_count(cset) == 0:
        raise ValueError(f'no CPUs named in {cpus!r}')
    return format_cset(cset).encode('ascii')


# --- answers: the C structs as cpuhp's types ----------------------------------------------

def _text(chars) -> str:
    return ffi.string(chars).decode('utf-8', 'replace')


def _event(ev) -> Event:
    t = ev.type
    if t == lib.CPUHP_CLIENT_EVENT_HOTPLUG_STARTED:
        return HotplugStarted(from_cset(ffi.addressof(ev, 'cpus')), bool(ev.online))
    if t == lib.CPUHP_CLIENT_EVENT_HOTPLUG_FINISHED:
        return HotplugFinished(from_cset(ffi.addressof(ev, 'cpus')), bool(ev.online),
                               bool(ev.ok), from_cset(ffi.addressof(ev, 'failed')))
    if t == lib.CPUHP_CLIENT_EVENT_ONLINE_CHANGED:
        return OnlineChanged(from_cset(ffi.addressof(ev, 'online_cpus')), bool(ev.external))
    if t == lib.CPUHP_CLIENT_EVENT_PRESENT_CHANGED:
        return PresentChanged(*(from_cset(ffi.addressof(ev, f))
                                for f in ('present_cpus', 'added', 'removed', 'online_cpus')))
    if t == lib.CPUHP_CLIENT_EVENT_LOST:
        return EventsLost(int(ev.lost))
    if t == lib.CPUHP_CLIENT_EVENT_LEASE_REVOKED:
        reason = {lib.CPUHP_CLIENT_REVOKED_DELAY: 'delay',
                  lib.CPUHP_CLIENT_REVOKED_FORCED: 'forced'}.get(ev.revoke_reason, 'max_lease')
        return LeaseRevoked(None if ev.fast else int(ev.lease_id), int(ev.held_ms) / 1000,
                            int(ev.max_lease_ms) / 1000, reason, int(ev.hotplug_id),
                            int(ev.count), int(ev.delay_ms) / 1000)
    if t == lib.CPUHP_CLIENT_EVENT_HOTPLUG_PENDING:
        return HotplugPending(int(ev.hotplug_id), from_cset(ffi.addressof(ev, 'cpus')),
                              bool(ev.online), _text(ev.smt), int(ev.timeout_ms) / 1000,
                              bool(ev.force), int(ev.force_grace_ms) / 1000)
    if t == lib.CPUHP_CLIENT_EVENT_HOTPLUG_CANCELLED:
        return HotplugCancelled(int(ev.hotplug_id), from_cset(ffi.addressof(ev, 'cpus')),
                                bool(ev.online), _text(ev.smt), -int(ev.error), _text(ev.message))
    if t == lib.CPUHP_CLIENT_EVENT_LEASE_BYPASSED:
        return LeaseBypassed(from_cset(ffi.addressof(ev, 'online_cpus')), int(ev.leases))
    if t == lib.CPUHP_CLIENT_EVENT_LEASES_LOST:
        return LeasesLost(int(ev.leases))
    raise error(-errno.EPROTO, f'libcpuhp-client returned an event of unknown type {t}')


def _lease_info(li) -> LeaseInfo:
    return LeaseInfo(id=None if li.fast else int(li.lease_id), fast=bool(li.fast),
                     count=int(li.count), pid=int(li.pid), uid=int(li.uid),
                     comm=_text(li.comm), who=_text(li.who), why=_text(li.why),
                     held=int(li.held_ms) / 1000, connection=int(li.connection),
                     delay=int(li.delay_ms) / 1000)


def _lease_list(p) -> LeaseList:
    leases = [_lease_info(p.leases[i]) for i in range(p.n_leases)]
    hotplugs = [HotplugInfo(seq=int(h.seq), cpus=from_cset(ffi.addressof(h, 'cpus')),
                            online=bool(h.online), state=WriterState(h.state), pid=int(h.pid),
                            uid=int(h.uid), comm=_text(h.comm), waited=int(h.waited_ms) / 1000,
                            timeout=int(h.timeout_ms) / 1000, force=bool(h.force),
                            force_grace=int(h.force_grace_ms) / 1000, smt=_text(h.smt))
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


_TOPOLOGY = {lib.CPUHP_CLIENT_TOPOLOGY_UNKNOWN: 'unknown', lib.CPUHP_CLIENT_TOPOLOGY_LIVE: 'live',
             lib.CPUHP_CLIENT_TOPOLOGY_REMEMBERED: 'remembered'}


def _cpu_info(ci) -> CpuInfo:
    known = ci.topology != lib.CPUHP_CLIENT_TOPOLOGY_UNKNOWN
    busy = ci.hotplugs > 0
    return CpuInfo(
        cpu=int(ci.cpu), online=bool(ci.online), present=bool(ci.present),
        topology=_TOPOLOGY.get(ci.topology, 'unknown'),
        core=int(ci.core) if known else None,
        socket=int(ci.socket) if known else None,
        node=int(ci.node) if known and ci.node >= 0 else None,
        siblings=parse_cpulist(_text(ci.siblings)) if known else frozenset(),
        states=tuple(_text(ci.states[k].name) for k in range(ci.n_states)),
        hotplugs=int(ci.hotplugs),
        hotplug_seq=int(ci.hotplug_seq) if busy else None,
        hotplug_online=bool(ci.hotplug_online) if busy else None,
        hotplug_state=WriterState(ci.hotplug_state) if busy else None)


def _cpu_list_freed(p) -> list[CpuInfo]:
    """The CPUs of what libcpuhp-client allocated, which it then frees."""
    try:
        return [_cpu_info(p.cpus[i]) for i in range(p.n_cpus)]
    finally:
        lib.cpuhp_client_cpu_list_free(p)


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


def _run_callback(callback: Callable[..., object], lease: Lease, ev: Event) -> object:
    """An on_pending callback: its result, or None after an exception,
    which is reported as a thread's would be (it must not end the runner)."""
    try:
        return callback(lease, ev)
    except Exception:
        import sys
        import traceback
        print(f'cpuhp: the on_pending callback of {lease!r} raised:', file=sys.stderr)
        traceback.print_exc()
        return None


def run_callbacks(calls: list[tuple]) -> list[Any]:
    """The on_pending calls a runner step took, made, *calls* emptied as
    they are: the runner refers to no Lease while it waits for the next
    step (a Lease dropped unreleased ends when collected).  Return: the
    awaitables they returned."""
    out: list[Any] = []
    while calls:
        result = _run_callback(*calls.pop(0))
        if inspect.isawaitable(result):
            out.append(result)
    return out


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


# What a Session's leases and freezes are held in (grant.h): allocated with
# their finaliser in one step, so that no exception comes between.
_new_grants = ffi.new_allocator(lib.cpuhp_py_alloc, lib.cpuhp_py_grants_free)
_new_grant = ffi.new_allocator(lib.cpuhp_py_alloc, lib.cpuhp_py_grant_free)


def _call_error(call_p, rc: int) -> OSError:
    return error(rc, _text(lib.cpuhp_client_call_message(call_p)) or None)


class Call:
    """One asynchronous call of libcpuhp-client: begun (its request sent on
    a connection of its own), then read until done once its socket is
    readable.  Closing it before it is done gives the request up: the
    daemon drops a waiting lease acquire and cancels a hotplug that is not
    running yet.

    It is begun into a slot made before (grant.h), which cffi frees with
    the call when the Call is dropped: no exception comes between the
    begin and the Call that owns what it began.  A lease or freeze call
    records what it gets in *grant* (a struct cpuhp_py_grant) as done()
    reads it."""

    __slots__ = ('slot', '_owner', 'grant')

    def __init__(self, owner, grant=None) -> None:
        #: Where the begin puts the call (its ``out``).
        self.slot = ffi.gc(ffi.new('struct cpuhp_client_call **'), lib.cpuhp_py_call_free)
        # The handle it was begun on: it must outlive the call (a lease
        # the call gets joins that handle's table).
        self._owner = owner
        self.grant = grant

    @property
    def _p(self):
        return self.slot[0]

    def fileno(self) -> int:
        """The socket to wait on while done() says False."""
        return lib.cpuhp_client_call_fd(self._p)

    def done(self) -> bool:
        """Read what arrived, without waiting: False while the answer is to
        come; True when it is in; its error raised when it failed."""
        rc = lib.cpuhp_py_call_done(self.slot, ffi.NULL if self.grant is None else self.grant)
        if rc == -errno.EINPROGRESS:
            return False
        if rc < 0:
            raise _call_error(self._p, rc)
        return True

    def result(self, ctype: str, get: Callable[[object, object], int]):
        """A done call's result: a new *ctype* that ``get(call, out)``, one of
        the cpuhp_client_call_*() getters, filled; its error raised."""
        out = ffi.new(ctype)
        rc = get(self._p, out)
        if rc < 0:
            raise _call_error(self._p, rc)
        return out

    def close(self) -> None:
        lib.cpuhp_py_call_free(self.slot)


class Use:
    """A call in progress on a Session, from Session.using(): its handle
    stays open (close() waits, or leaves the closing to it) until it ends."""

    __slots__ = ('c', 'thread', 'cancel')

    def __init__(self, c) -> None:
        self.c = c
        self.thread = threading.get_ident()
        # Set by cpuhp.aio: ends the call's waits and frees its Call at
        # once, for close() on the thread whose event loop runs the task
        # (a suspended task cannot be waited for there).  Its next step
        # must then be Session.check_open().
        self.cancel: Callable[[], None] | None = None


class Session:
    """A connection to cpuhpd (*path*, *who*, *why* as for cpuhp.Client),
    for *owner*, the client whose leases and freezes these are."""

    def __init__(self, owner: object, path, who: str | None, why: str | None,
                 delay: float | None = None) -> None:
        # Weak: the owner holds the Session, and a dropped Client must close
        # (and end its leases) when its last reference goes, not at a GC.
        self._owner = weakref.ref(owner)
        self._c = None
        # Held only around C calls that do not wait (and the reading of
        # their message), never across a wait: waits happen in the clients.
        self.lock = threading.Lock()
        self._watching = False
        # Calls in progress (under lock); close() wakes them, and the last
        # one out of a closed Session closes its handle (_closing).
        self._uses: set[Use] = set()
        self._left = threading.Condition(self.lock)
        self._closing = None
        # The leases and freezes dropped while held (grant.h), ended on the
        # next call: made before the connection, which may hold some.
        self._grants = _new_grants('struct cpuhp_py_grants *')
        lib.cpuhp_py_grants_init(self._grants)
        # Readable once close() began: every wait inside a call polls it too.
        self._closed_r = self._closed_w = -1
        self._fast = False  # the handle takes fast leases (known after its first lease)
        # The watchers' wake-up: written when a call on the handle may have
        # read their events off the socket (so a wait would not see them).
        self._wake_r = self._wake_w = -1
        # Leases with an on_pending callback (under lock), the calls due
        # (run by the client's runner: a thread, or a task in the loop),
        # the events the runner read off the socket for next_event(), and
        # the runner's wake-up pipe.  Weak: a Lease dropped unreleased ends
        # (_types._Held), its callback or not.
        self._callbacks: weakref.WeakKeyDictionary[Lease, Callable[..., object]] = \
            weakref.WeakKeyDictionary()
        self._calls: collections.deque = collections.deque()
        self._queued: collections.deque[Event] = collections.deque()
        self._queued_lost = 0
        self._run_r = self._run_w = -1
        #: Set by the client: start its runner (under lock), when the first
        #: callback comes; a weak method (the runner holds this Session).
        self.start_runner: weakref.WeakMethod | None = None
        self.runner_on = False
        #: Client(delay=...) in seconds as granted; 0: block leases.
        self.lease_delay = 0.0
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
                                                      daemon_env=_DAEMON_UID_ENV,
                                                      group=_socket_group(self.path))
            raise error(rc, f'cannot connect to cpuhpd ({os.strerror(-rc)})'
                        + (f': {hint}' if hint else ''), self.path)
        self._c = ffi.gc(out[0], lib.cpuhp_client_close)
        try:
            if who is not None or why is not None:
                self.set_identity(who, why)
            ms = delay_ms(delay)
            if ms:
                self.set_lease_delay(ms)
        except BaseException:
            self.close()
            raise

    # --- the connection and the calls in progress on it ----------------------------------

    @property
    def closed(self) -> bool:
        return self._c is None

    def close(self) -> None:
        """cpuhp.Client.close() says what this does."""
        with self.lock:
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
        """Under self.lock, once closing and no call is in progress."""
        c, self._closing = self._closing, None
        ffi.release(c)  # runs cpuhp_client_close() now, once: the ffi.gc finalizer is off
        lib.cpuhp_py_grants_close(self._grants)  # what the connection held ended with it
        for fd in (self._wake_r, self._wake_w, self._closed_r, self._closed_w):
            if fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = self._closed_r = self._closed_w = -1
        self._callbacks.clear()
        self._calls.clear()
        if self._run_w >= 0 and not self.runner_on:
            os.close(self._run_r)
            os.close(self._run_w)
            self._run_r = self._run_w = -1

    # Short C calls hold self.lock around the call and the reading of its
    # message, so that the message is this call's even with threads sharing
    # the Session (the C library's own mutex covers only the call).
    def handle(self, reap: bool = True):
        """The C handle, under self.lock; ValueError once closed.  What was
        dropped while held and not ended yet ends first (unless the caller's
        C call does that itself)."""
        if self._c is None:
            raise ValueError('operation on a closed cpuhp.Client')
        if reap and lib.cpuhp_py_reap(self._grants, self._c):
            self._kick()
        return self._c

    @staticmethod
    def error(c, rc: int) -> OSError:
        """The OSError of *rc*, a failed call on handle *c*, with its message."""
        return error(rc, _text(lib.cpuhp_client_last_message(c)) or None)

    @staticmethod
    def closed_error() -> OSError:
        return error(-errno.ECANCELED, 'the cpuhp.Client was closed while this call was '
                     'in progress')

    def check_open(self) -> None:
        """Inside a call, after each wait: its ECANCELED if close() came."""
        if self._c is None:
            raise self.closed_error()

    @property
    def closed_fd(self) -> int:
        """Readable once close() began: a call's waits watch it too (inside using())."""
        return self._closed_r

    @property
    def busy(self) -> int:
        """Calls in progress (for the tests: "a thread is inside a call")."""
        with self.lock:
            return len(self._uses)

    @contextlib.contextmanager
    def using(self) -> Iterator[Use]:
        """A call in progress, for a block that waits outside the lock: its
        handle (use.c) stays valid until the block ends, and if close()
        comes meanwhile the block raises ECANCELED."""
        use = None
        collected = False
        try:
            with self.lock:
                use = Use(self.handle())
                if self._closed_r < 0:
                    self._closed_r, self._closed_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
                self._uses.add(use)
            yield use
            self.check_open()  # an answer that came with close() is not one
        except GeneratorExit:
            # Closed unfinished: an exception stopped the with statement's
            # exit as it started, and this runs as the generator is
            # collected, maybe in a section of this thread's under the lock.
            collected = True
            raise
        except OSError as e:
            # What close() did to the call (its wait ended) is its error, not the cause.
            if self._c is None and e.errno != errno.ECANCELED:
                raise self.closed_error() from e
            raise
        finally:
            if use is not None and collected:
                self._later(self._leave, use)
            elif use is not None:
                self._leave(use)

    def _leave(self, use: Use) -> None:
        with self.lock:
            if use in self._uses:  # else close() cancelled it
                self._uses.remove(use)
                self._left.notify_all()
                if self._closing is not None and not self._uses:
                    self._finish()

    def _later(self, fn: Callable[[object], None], arg: object) -> None:
        """``fn(arg)``, which takes the lock, for a finaliser or an exception
        on its way out: never waits for a lock this thread may hold.  Now if
        the lock is free; else on a thread of its own that waits for it."""
        if not self.lock.locked():
            # Free a moment ago: whoever took it since only makes C calls
            # that do not wait, and defers what it drops as this does.
            fn(arg)
            return
        try:
            _thread.start_new_thread(fn, (arg,))
        except RuntimeError:
            pass  # the interpreter is ending: so is the connection

    def _kick(self) -> None:
        """After a call on the handle's connection (under self.lock): it may
        have read events off the socket, so a watcher's wait must look."""
        if self._wake_w >= 0:
            try:
                os.write(self._wake_w, b'!')
            except BlockingIOError:
                pass  # full: readable already

    def _short(self, call: Callable[[object], int]) -> None:
        """``call(c)``, a C call on the handle that the daemon answers at once."""
        with self.lock:
            c = self.handle()
            rc = call(c)
            self._kick()
            if rc < 0:
                raise self.error(c, rc)

    def _begin(self, c, begin: Callable[[object], int], grant=None) -> Call:
        call = Call(c, grant)
        try:
            with self.lock:
                self.check_open()
                rc = begin(call.slot)
                self._kick()  # a first lease asks for the fast path on the handle's connection
                if rc < 0:
                    raise self.error(c, rc)
        except BaseException:
            self.drop_call(call)
            raise
        return call

    def fileno(self) -> int:
        with self.lock:
            return lib.cpuhp_client_fd(self.handle())

    # --- the requests: *_begin(use.c, ...) inside using(), *_end(call) once it is done ----

    def set_lease_delay(self, ms: int) -> None:
        """Client(delay=...): this Client's leases are delay leases of @ms
        (cut to cpuhpd's --max-delay-ms: lease_delay says)."""
        out = ffi.new('unsigned *')
        self._short(lambda c: lib.cpuhp_client_set_lease_delay(c, ms, out))
        self.lease_delay = int(out[0]) / 1000

    def set_identity(self, who: str | None, why: str | None) -> None:
        cwho, cwhy = identity(who, 'who'), identity(why, 'why')
        self._short(lambda c: lib.cpuhp_client_set_identity(c, cwho, cwhy))

    def leases(self) -> LeaseList:
        out = ffi.new('struct cpuhp_client_lease_list **')
        self._short(lambda c: lib.cpuhp_client_list_leases(c, out))
        return _lease_list_freed(out[0])

    def leases_begin(self, c) -> Call:
        return self._begin(c, lambda out: lib.cpuhp_client_list_leases_begin(c, out))

    @staticmethod
    def leases_end(call: Call) -> LeaseList:
        return _lease_list_freed(call.result('struct cpuhp_client_lease_list **',
                                             lib.cpuhp_client_call_list_leases)[0])

    def cpus(self) -> list[CpuInfo]:
        out = ffi.new('struct cpuhp_client_cpu_list **')
        self._short(lambda c: lib.cpuhp_client_list_cpus(c, out))
        return _cpu_list_freed(out[0])

    # --- leases and freezes: each held in a record of grant.h from its C call on ---------

    def _grant(self, freeze: bool):
        """A record for one lease or freeze, holding nothing yet."""
        g = _new_grant('struct cpuhp_py_grant *')
        lib.cpuhp_py_grant_init(g, self._grants, freeze)
        return g

    def lease_now(self, ms: int, ident: tuple | None) -> Lease | None:
        """A fast lease taken at once, or None: a lease with names of its own
        (*ident*), a socket lease (no fast path), or a wait (a hotplug in the
        way and *ms* not 0) is an asynchronous call.  The common case,
        without the asynchronous call's allocations."""
        if ident is None:
            grant = self._grant(False)
            try:
                with self.lock:
                    c = self.handle(reap=False)  # cpuhp_py_lease_now() reaps
                    if not self._fast:
                        rc = lib.cpuhp_client_fast_path(c)  # the first time, a round trip on c
                        self._kick()
                        if rc < 0:
                            raise self.error(c, rc)
                        self._fast = rc == 1  # once granted, for the handle's life
                    if self._fast:
                        rc = lib.cpuhp_py_lease_now(c, grant)  # never waits
                        if rc < 0 and (rc != -errno.EAGAIN or not ms):
                            raise self.error(c, rc)
                if grant.held:
                    return Lease(self._owner(), grant, self)
            except BaseException:
                self.drop(grant)  # maybe taken, its rc unseen
                raise
        return None

    def lease_begin(self, c, ms: int, ident: tuple | None) -> Call:
        named = ident is not None
        who, why = ident if named else (ffi.NULL, ffi.NULL)
        grant = self._grant(False)
        return self._begin(c, lambda out: lib.cpuhp_py_lease_begin(c, ms, named, who, why, out,
                                                                   grant), grant)

    def lease_end(self, call: Call) -> Lease:
        return Lease(self._owner(), call.grant, self)

    # --- on_pending callbacks: noted where events are read, run by the client's runner --

    def pending_callback(self, lease: Lease) -> Callable[..., object] | None:
        with self.lock:
            return self._callbacks.get(lease)

    def set_pending_callback(self, lease: Lease, callback: Callable[..., object] | None) -> None:
        """Lease.on_pending = callback (None: none).  The first starts the runner."""
        if callback is not None and not callable(callback):
            raise TypeError(f'on_pending must be callable or None, not {type(callback).__name__}')
        with self.lock:
            if callback is None or lease.released or self._c is None:
                self._callbacks.pop(lease, None)
                return
            self._callbacks[lease] = callback
            if self._run_r < 0:
                self._run_r, self._run_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
            start = self.start_runner() if self.start_runner is not None else None
            if not self.runner_on and start is not None:
                self.runner_on = True
                start()

    def _note(self, ev: Event) -> None:
        """Under self.lock: an event was read off the socket; a HotplugPending
        makes each held lease's callback due, for the runner."""
        if not isinstance(ev, HotplugPending) or not self._callbacks:
            return
        for lease, callback in self._callbacks.items():
            if not lease.released:  # given up by an exception, not yet collected
                self._calls.append((callback, lease, ev))
        try:
            os.write(self._run_w, b'!')
        except BlockingIOError:
            pass  # full: readable already

    def runner_step(self) -> tuple[list[tuple], list[int] | None]:
        """One step of a runner: read what arrived (keeping the events for
        next_event(), and waking its waits), take the callbacks due.
        Return: (calls to make, outside any lock), and the descriptors to
        wait on before the next step; None: the runner is done (the Client
        closed).  A runner stays while the Client is open, callbacks or
        not: it keeps no Lease nor the Client (only the Session), and a
        runner that came and went with each lease made whether a lease
        starts a thread depend on when the last one's runner woke."""
        out = ffi.new('struct cpuhp_client_event *')
        with self.lock:
            c = self._c
            if c is None:
                self.runner_on = False
                calls = list(self._calls)
                self._calls.clear()
                return calls, None
            _drain(self._run_r)
            read = False
            while lib.cpuhp_client_next_event(c, 0, out) == 0:
                ev = _event(out[0])
                read = True
                self._note(ev)
                if len(self._queued) < lib.CPUHP_CLIENT_EVENT_QUEUE_MAX:
                    self._queued.append(ev)
                else:
                    self._queued_lost += 1
            if read:
                self._kick()
            calls = list(self._calls)
            self._calls.clear()
            return calls, [lib.cpuhp_client_fd(c), self._run_r, self._closed_fd_locked()]

    def owner_gone(self) -> None:
        """A weak reference's callback: the Client of a running runner was
        collected.  Only wakes the runner, which then closes this Session
        (no lock here: a collection may run on a thread that holds it)."""
        try:
            os.write(self._run_w, b'!')
        except (BlockingIOError, OSError):
            pass  # full (readable already), or closed with the runner done

    def _closed_fd_locked(self) -> int:
        if self._closed_r < 0:
            self._closed_r, self._closed_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        return self._closed_r

    def freeze_begin(self, c, who, why) -> Call:
        return self._begin(c, lambda out: lib.cpuhp_client_freeze_begin(c, who, why, out),
                           self._grant(True))

    def freeze_end(self, call: Call) -> Freeze:
        return Freeze(self._owner(), call.grant, self)

    def _end_locked(self, grant, holder: object = None) -> int:
        """Under self.lock: end what *grant* holds, once (its *holder*'s
        on_pending with it); the C call's rc."""
        if holder is not None:
            self._callbacks.pop(holder, None)  # type: ignore[call-overload]
        c = self._c  # None once closed: what it held ended with the connection
        rc = lib.cpuhp_py_end(ffi.NULL if c is None else c, grant)
        if c is not None and grant.freeze:
            self._kick()
        return rc

    def end(self, grant, holder: object) -> None:
        """Lease.release(), Freeze.thaw(): once, whichever thread comes first
        (an on_pending callback may release while the lease's ``with`` block
        still runs)."""
        with self.lock:
            rc = self._end_locked(grant, holder)
            if rc < 0 and rc != -errno.ENOLCK:
                raise self.error(self._c, rc)

    def drop(self, grant) -> None:
        """End what *grant* still holds, for an exception on its way out or a
        finaliser (see _later(); if even that fails, the record's finaliser
        makes it an orphan, which the Client's next call ends)."""
        if grant.held:
            self._later(self._end_quietly, grant)

    def _end_quietly(self, grant) -> None:
        with self.lock:
            self._end_locked(grant)  # its error is nobody's to hear

    def drop_call(self, call: Call | None) -> None:
        """Give *call* up (if begun), and end what it got, for an exception on
        its way out of a client's call."""
        if call is not None:
            call.close()
            if call.grant is not None:
                self.drop(call.grant)

    def status(self) -> Status:
        out = ffi.new('struct cpuhp_client_status *')
        self._short(lambda c: lib.cpuhp_client_status(c, out))
        return _status(out)

    def status_begin(self, c) -> Call:
        return self._begin(c, lambda out: lib.cpuhp_client_status_begin(c, out))

    @staticmethod
    def status_end(call: Call) -> Status:
        return _status(call.result('struct cpuhp_client_status *', lib.cpuhp_client_call_status))

    def set_online_begin(self, c, text: bytes, online: bool, ms: int,
                         grace: int | None = None) -> Call:
        if grace is not None:
            return self._begin(c, lambda out: lib.cpuhp_client_set_online_forced_begin(
                c, text, online, ms, grace, out))
        return self._begin(c, lambda out: lib.cpuhp_client_set_online_results_begin(
            c, text, online, ms, out))

    @staticmethod
    def set_online_end(call: Call, online: bool, check: bool) -> HotplugResult:
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
        rv = ffi.new('struct cpuhp_client_lease_info **')
        rc = lib.cpuhp_client_call_revoked(call._p, rv, n)
        if rc < 0:
            raise _call_error(call._p, rc)
        try:
            revoked = tuple(_lease_info(rv[0][i]) for i in range(n[0]))
        finally:
            lib.free(rv[0])
        result = HotplugResult(online=online, results=results, revoked=revoked)
        return result.check() if check else result

    def subscribe(self) -> None:
        """Watch events on the handle's connection, once (watch())."""
        with self.lock:
            self._subscribe(self.handle())

    def _subscribe(self, c) -> None:
        """Under self.lock."""
        if self._watching:
            return
        if self._wake_r < 0:
            self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        rc = lib.cpuhp_client_watch(c)
        if rc < 0 and rc != -errno.EALREADY:
            raise self.error(c, rc)
        self._watching = True

    def try_event(self, c) -> tuple[Event | None, list[int]]:
        """An event that already arrived; or None, and the descriptors to
        wait on for the next one: the socket, the watchers' wake-up and
        the close's.  Inside a call (using()), subscribing first."""
        out = ffi.new('struct cpuhp_client_event *')
        with self.lock:
            self.check_open()  # c is still valid, but closed: no more events
            try:
                self._subscribe(c)
            except OSError:
                # The daemon went away first: its notice (LeasesLost) is still news.
                if lib.cpuhp_client_next_event(c, 0, out) == 0:
                    return _event(out[0]), []
                raise
            # Emptied before looking, so that a kick from now on is news.
            _drain(self._wake_r)
            if self._queued_lost:  # the runner's queue overflowed
                lost, self._queued_lost = self._queued_lost, 0
                return EventsLost(lost), []
            if self._queued:       # read by the runner for us
                return self._queued.popleft(), []
            rc = lib.cpuhp_client_next_event(c, 0, out)
            if rc == -errno.EAGAIN:
                return None, [lib.cpuhp_client_fd(c), self._wake_r, self._closed_r]
            if rc < 0:
                raise self.error(c, rc)
            ev = _event(out[0])
            self._note(ev)
        return ev, []
