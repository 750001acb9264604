# SPDX-License-Identifier: LGPL-2.1-or-later
"""What cpuhpd's answers become in Python, for cpuhp.Client and
cpuhp.aio.Client alike: the daemon's view (Status), who holds what
(LeaseList), what a hotplug did (HotplugResult), the events, and the held
things (Lease, Freeze), which end through the connection they came on
(cpuhp._session)."""
from __future__ import annotations

import enum
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING

from ._cpuhp_client import lib
from ._errors import error

if TYPE_CHECKING:
    from ._session import Session


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
    #: A delay lease's delay in seconds (Client(delay=...)); 0: a block lease.
    delay: float = 0.0

    @property
    def mode(self) -> str:
        """"delay" (revoked *delay* seconds after a hotplug's notice) or
        "block" (holds a hotplug up to its timeout)."""
        return 'delay' if self.delay else 'block'


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
    #: Forced (set_online(force=...)): leases still held *force_grace*
    #: seconds after its notice are revoked.
    force: bool = False
    force_grace: float = 0.0
    #: An SMT change's word ("off"...); "" for CPUs.
    smt: str = ''


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
class CpuInfo:
    """One possible CPU, from Client.cpus(): a row of ``lscpu -e`` that also
    names the hotplug states started on it and the hotplug requests that
    name it.  The kernel shows no topology for an offline CPU: cpuhpd gives
    the one it read when the CPU was last online."""
    cpu: int
    online: bool
    #: In the machine now (a possible CPU may be absent, as an empty socket).
    present: bool
    #: 'live' (read since the CPU last came online), 'remembered' (read when it
    #: was last online, by this cpuhpd or an earlier one) or 'unknown' (not
    #: seen online since boot: core, socket, node are None, siblings empty).
    topology: str
    #: topology/core_id: the core within its package.
    core: int | None
    #: topology/physical_package_id (-1 where the platform has none).
    socket: int | None
    #: The NUMA node; None also on a machine without NUMA.
    node: int | None
    #: topology/thread_siblings_list: the threads of its core online when read.
    siblings: frozenset[int]
    #: The hotplug states started on it, by name, in startup order.
    states: tuple[str, ...] = ()
    #: How many hotplug requests, queued or running, name it.
    hotplugs: int = 0
    #: The first of them in queue order: its number ("hotplug #N" in
    #: cpuhpd's log), whether it brings the CPU online, and its state; None
    #: when hotplugs is 0.
    hotplug_seq: int | None = None
    hotplug_online: bool | None = None
    hotplug_state: WriterState | None = None


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
    """What Client.set_online() did, CPU by CPU (in ascending order), and,
    forced, the leases it revoked (*revoked*: held after its grace)."""
    online: bool
    results: tuple[CpuResult, ...]
    revoked: tuple[LeaseInfo, ...] = ()

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
class PresentChanged(Event):
    """The present CPUs changed behind cpuhpd (never its doing): *added* were
    hot-added (a vCPU plugged in; it usually comes offline), *removed* are
    gone (ejected).  *present_cpus* and *online_cpus*: the sets now.  An
    OnlineChanged follows if the online set changed too."""
    present_cpus: frozenset[int]
    added: frozenset[int]
    removed: frozenset[int]
    online_cpus: frozenset[int]


@dataclass(frozen=True)
class EventsLost(Event):
    """*lost* events were dropped while a call waited for its answer: read
    Client.status() again."""
    lost: int


@dataclass(frozen=True)
class LeaseRevoked(Event):
    """A notice (watching or not): a lease of this Client was revoked and is
    no longer held; its release raises OSError(ETIME).  *reason*:
    ``"max_lease"`` (held *held* seconds, past cpuhpd's ``--max-lease-ms``,
    *max_lease* seconds), ``"delay"`` (a delay lease, whose *delay* seconds
    after hotplug *hotplug_id*'s notice are over) or ``"forced"`` (hotplug
    *hotplug_id* was forced and its grace is over).  *lease_id* is None for
    fast leases: then *count* of them, all this Client's fast leases."""
    lease_id: int | None
    held: float
    max_lease: float
    reason: str = 'max_lease'
    hotplug_id: int = 0
    count: int = 1
    delay: float = 0.0


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
class HotplugPending(Event):
    """A hotplug became the next to run and waits: to a watcher, and as a
    notice to a Client that holds a lease (watching or not), once.  A holder
    that can let go now should: the hotplug runs as soon as nothing holds
    it.  *id*: "hotplug #N" in cpuhpd's log.  *cpus* (empty for SMT: *smt*
    is its word, "off"...), *online*; *timeout*: seconds until it gives up;
    *force*: leases still held *force_grace* seconds after this are revoked
    (a delay lease: its delay after this)."""
    id: int
    cpus: frozenset[int]
    online: bool
    smt: str
    timeout: float
    force: bool
    force_grace: float


@dataclass(frozen=True)
class HotplugCancelled(Event):
    """The hotplug of a HotplugPending ended without running: it timed out
    (*errno* ETIMEDOUT, or EAGAIN) or was withdrawn (ECANCELED: its client
    left, or cpuhpd stops); *message* says which, in cpuhpd's words."""
    id: int
    cpus: frozenset[int]
    online: bool
    smt: str
    errno: int
    message: str


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



class _Held:
    """What Lease and Freeze share: a lease or a freeze held in *grant*, a
    record (grant.h) whose C call took it, and which the one that ends it
    clears, so that no exception between two Python statements loses it.
    Dropped while it still holds it (an exception stopped the with block's
    end as it started, or nobody ended it), it ends it: at once unless the
    Client's lock is held (then as soon as that is let go), or, if even
    this finaliser was stopped, at the Client's next call.  Collected
    unended, it says so with a ResourceWarning, as an unclosed file does."""

    def __init__(self, client: object, grant: object, session: Session) -> None:
        self.client = client
        self._session = session
        self._grant = grant  # last: __del__ looks at it, and then at the rest

    @property
    def id(self) -> int:
        """The daemon's number for it."""
        return int(self._grant.id)  # type: ignore[attr-defined]

    def _end(self) -> None:
        if self._grant.held:  # type: ignore[attr-defined]
            self._session.end(self._grant, self)

    def _give_up(self) -> None:
        """End what it still holds, for an exception on its way out (of a
        with statement, or of the call that took it)."""
        self._session.drop(self._grant)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            _end_on_exit(self._end, exc_type)
        except BaseException:
            # Maybe raised before the end began: what is still held ends now.
            self._give_up()
            raise

    def __del__(self) -> None:
        grant = getattr(self, '_grant', None)  # None: __init__ stopped (whoever made it ends it)
        if grant is None or not grant.held:
            return
        what = repr(self)
        try:
            self._session.drop(self._grant)
        finally:
            # After the drop: a warnings filter may make this raise.
            warnings.warn(f'{what} was collected unended: ended now', ResourceWarning,
                          source=self)


def _end_on_exit(end: Callable[[], None], exc_type: type[BaseException] | None) -> None:
    """A with block's end for a lease or a freeze: *end* it.  If the
    connection failed, what it held died with it: say so only if nothing
    else is on its way out."""
    try:
        end()
    except OSError:
        if exc_type is None:
            raise


class Lease(_Held):
    """A reader lease from cpuhpd: the set of online CPUs does not change
    until it is released, or its Client is closed, or its process dies (or,
    for a delay lease, until cpuhpd revokes it: see Client(delay=...)).

    A context manager: ``with client.lease(): ...`` releases it on the way
    out, exceptions included.  If the lease did not hold for the whole
    block (its daemon went away: ConnectionResetError; revoked: ETIME;
    bypassed: ESTALE), the exit raises that error, unless the block is
    already raising an exception of its own.

    No exception leaves it held, Ctrl-C's KeyboardInterrupt included: not
    one raised while it is taken (with or without ``with``), nor one raised
    as the with block ends.  A Lease dropped unreleased is released, with a
    ResourceWarning.
    """

    #: The cpuhp.Client (or cpuhp.aio.Client) it was taken on.
    client: object

    def __repr__(self) -> str:
        return f'<cpuhp.Lease id={self.id} {"released" if self.released else "held"}>'

    @property
    def released(self) -> bool:
        """release() was called (or the Lease was given up)."""
        return not self._grant.held  # type: ignore[attr-defined]

    @property
    def on_pending(self) -> Callable[..., object] | None:
        """Called as ``on_pending(lease, event)`` when a hotplug that this
        lease holds up becomes the next to run (a HotplugPending): let go
        of what the lease protects and release it, and the hotplug runs at
        once instead of at the lease's natural end.  Set it here or with
        Client.lease(on_pending=...); None removes it.  cpuhp.Client calls
        it on a thread of the binding's (one per Client, started with the
        first such lease), cpuhp.aio.Client in its event loop (a coroutine
        function's result is run as a task).  Once per hotplug per Client,
        for every held lease that has one."""
        return self._session.pending_callback(self)

    @on_pending.setter
    def on_pending(self, callback: Callable[..., object] | None) -> None:
        self._session.set_pending_callback(self, callback)

    def release(self) -> None:
        """End the lease.  Does nothing if it already ended (released, or
        its Client closed).  ConnectionResetError if it died with the
        connection (the daemon stopped, died or closed it; see LeasesLost):
        CPUs may have changed while it was believed held.  OSError ETIME
        (revoked) and ESTALE (bypassed) say the same of a lease that cpuhpd
        ended or could not protect."""
        self._end()

    def __enter__(self) -> Lease:
        return self


class Freeze(_Held):
    """A hotplug freeze from Client.freeze(): until it is thawed, or its
    Client is closed, or its process dies, every new hotplug fails at once
    (OSError with errno EBUSY) with a message naming its holder; leases are
    still granted.

    A context manager: ``with client.freeze(): ...`` thaws on the way out,
    exceptions included.  As for a Lease, no exception leaves it held, and
    a Freeze dropped unthawed is thawed.
    """

    #: The cpuhp.Client (or cpuhp.aio.Client) it was taken on.
    client: object

    def __repr__(self) -> str:
        return f'<cpuhp.Freeze id={self.id} {"thawed" if self.thawed else "held"}>'

    @property
    def thawed(self) -> bool:
        """thaw() was called (or the Freeze was given up)."""
        return not self._grant.held  # type: ignore[attr-defined]

    def thaw(self) -> None:
        """End the freeze.  Does nothing if it already ended (thawed, or its
        Client closed)."""
        self._end()

    def __enter__(self) -> Freeze:
        return self
