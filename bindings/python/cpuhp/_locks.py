# SPDX-License-Identifier: LGPL-2.1-or-later
"""In-process locks: struct cpuhp_rwsem and the process-wide hotplug lock.

Every C call that can block runs without the GIL (cffi releases it around
each call), so other Python threads keep running while one waits.

The C locks do not nest: a read lock taken again while a writer waits would
wait behind that writer, which waits for the first read lock.  The debug
build of libcpuhp aborts the process on it, a normal build deadlocks.  So
these wrappers remember what each Python thread holds and raise RuntimeError
for such calls instead of making them.

No exception leaves a lock held, Ctrl-C's KeyboardInterrupt included.
CPython raises a signal's exception at the start of a Python function or as
a C function returns, before its caller has the result: a lock taken by
that C call would be held unseen.  So each lock is taken and released
through a _Hold, whose record (struct cpuhp_py_hold, in hold.h) the C call
that takes the lock also sets: after any exception, ->taken says whether
the lock is held.  __enter__ releases what the record says it took before
passing an exception on; a _Hold dropped while its record says held (an
exception stopped its __exit__ as it started) releases it then, on the
thread that took it.  This thread's own notes of what it holds (_mark())
are plain stores, made before a release and after a take, and undone on
the way out of a failed __enter__, so they always end up as the record.
"""
from __future__ import annotations

import errno
import threading
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, Callable

from ._cpuhp import ffi, lib
from ._errors import UINT_MS_MAX, error, timeout_ms

_READ, _WRITE = 'read', 'write'


class _Hold:
    """One taking of a lock, as a context manager: entered once, and left
    by the thread that entered it."""

    __slots__ = ('_h', '_op', '_lock', '_ms', '_count', '_timeout', '_used')

    def __init__(self, op: int, lock: Any, timeout: float | None, count: Any) -> None:
        self._h = ffi.new('struct cpuhp_py_hold *')  # zeroed: nothing held
        self._used = False
        self._op = op
        self._lock = lock
        self._timeout = timeout
        self._ms = timeout_ms(timeout, forever=-1, limit=UINT_MS_MAX)
        self._count = count

    # What each kind of lock adds.
    def _check(self) -> None:
        """Before anything is taken: RuntimeError for what would deadlock."""

    def _mark(self, held: bool) -> None:
        """This thread's note of what it holds: set to *held*.  Stores only
        (no call, so no exception can stop it half way), and idempotent."""

    def _error(self, rc: int) -> BaseException:
        return error(rc)

    def __enter__(self) -> None:
        if self._used:
            raise RuntimeError('a lock context manager is entered once: take the lock again '
                               'with a new one (sem.read(), online_cpus_held(), ...)')
        self._used = True
        self._check()
        try:
            rc = lib.cpuhp_py_take(self._h, self._op, self._lock, self._ms, self._count)
            if rc < 0:
                raise self._error(rc)
            self._mark(True)
        except BaseException:
            # Maybe raised as cpuhp_py_take() returned, with rc unseen: the
            # record says whether the lock is held.
            self._mark(False)
            lib.cpuhp_py_release(self._h)
            raise

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if not lib.cpuhp_py_mine(self._h):
            raise RuntimeError('this thread does not hold the lock of this context manager')
        self._mark(False)
        lib.cpuhp_py_release(self._h)

    def __del__(self) -> None:
        # Still held: an exception came as __exit__ started, before it did
        # anything (or nobody left the block: a generator never finished).
        if self._h.taken and lib.cpuhp_py_mine(self._h):
            self._mark(False)
            lib.cpuhp_py_release(self._h)


class _Mine(threading.local):
    """What one thread holds of one RWSem."""

    mode: str | None = None  # _READ or _WRITE while it holds the lock
    hold: _SemHold | None = None  # the hold of acquire_*()/try_read(), until release_*()


class _SemHold(_Hold):
    __slots__ = ('_sem', '_mode')

    def __init__(self, sem: RWSem, op: int, timeout: float | None) -> None:
        super().__init__(op, sem._sem, timeout, sem._count)
        self._sem = sem
        self._mode = _WRITE if op == lib.CPUHP_PY_WRITE else _READ

    def _check(self) -> None:
        mode = self._sem._mine.mode
        if mode is not None:
            raise RuntimeError(f'this thread already holds the {mode} lock of this RWSem: '
                               f'taking the {self._mode} lock too would deadlock behind a '
                               'writer')

    def _mark(self, held: bool) -> None:
        self._sem._mine.mode = self._mode if held else None

    def _error(self, rc: int) -> BaseException:
        if rc == -errno.ETIMEDOUT:
            return error(rc, f'readers still hold the RWSem after {self._timeout} s'
                         if self._mode == _WRITE else
                         f'a writer still holds or waits for the RWSem after {self._timeout} s')
        return error(rc)


def _free_unless_held(count: Any) -> Callable[[Any], None]:
    def free(sem: Any) -> None:
        # A semaphore that is garbage while held (an acquire_read() on a
        # thread that never released it) is leaked, not freed:
        # cpuhp_rwsem_free() wants an unlocked one.
        if count[0] == 0:
            lib.cpuhp_rwsem_free(sem)
    return free


class RWSem:
    """A reader/writer semaphore whose readers are almost free (libcpuhp's
    struct cpuhp_rwsem).

    Readers share it, a writer excludes everyone.  Writers are preferred:
    once a writer waits, new readers wait behind it; every reader that waited
    for a writer gets in before the next writer.  Use the context managers::

        sem = cpuhp.RWSem()
        with sem.read():
            ...                      # any number of threads at once
        with sem.write(timeout=0.5): # TimeoutError if readers stay longer
            ...

    A thread holds at most one lock of a semaphore at a time: taking another
    (nesting reads, or writing while reading) raises RuntimeError, because
    the C lock would deadlock.  A lock is released by the thread that took it.
    An exception never leaves a lock held: not one raised while the lock is
    taken (Ctrl-C while it waits), nor one raised as the with block ends.
    """

    def __init__(self, name: str | None = None) -> None:
        """*name* labels the lock in the library's debug-build misuse reports."""
        if name is not None and not isinstance(name, str):
            raise TypeError(f'name must be a str or None, not {type(name).__name__}')
        out = ffi.new('struct cpuhp_rwsem **')
        rc = lib.cpuhp_rwsem_new_named(out, name.encode() if name is not None else ffi.NULL)
        if rc < 0:
            raise error(rc)
        # Locks held, by any thread; hold.h counts them as it takes and releases.
        self._count = ffi.new('long *')
        self._sem = ffi.gc(out[0], _free_unless_held(self._count))
        self._mine = _Mine()

    def __repr__(self) -> str:
        return f'<cpuhp.RWSem held={self._count[0]}>'

    def _acquire(self, op: int, timeout: float | None) -> None:
        hold = _SemHold(self, op, timeout)
        hold.__enter__()
        self._mine.hold = hold

    def _release(self, mode: str) -> None:
        hold = self._mine.hold
        if hold is None or hold._mode != mode:
            raise RuntimeError(f'this thread does not hold the {mode} lock of this RWSem '
                               f'(from acquire_{mode}()' + (' or try_read())' if mode == _READ
                                                            else ')'))
        self._mine.hold = None
        hold.__exit__(None, None, None)

    def acquire_read(self, timeout: float | None = None) -> None:
        """Take the lock shared; waits while a writer holds it or waits for it.
        Pair with release_read() on the same thread; the context manager
        read() does, and releases on any exception.

        *timeout*: seconds; None waits as long as it takes.  On TimeoutError the
        lock is exactly as before.
        """
        self._acquire(lib.CPUHP_PY_READ, timeout)

    def try_read(self) -> bool:
        """Take the lock shared if no writer holds it or waits for readers to
        leave; never waits.  True: the read lock is held, release it with
        release_read()."""
        try:
            self._acquire(lib.CPUHP_PY_TRY_READ, None)
        except BlockingIOError:
            return False
        return True

    def release_read(self) -> None:
        """Drop the read lock this thread took with acquire_read() or try_read()."""
        self._release(_READ)

    def acquire_write(self, timeout: float | None = None) -> None:
        """Take the lock exclusive, waiting for earlier writers and for the
        readers inside to leave.  Pair with release_write() on the same
        thread; the context manager write() does.

        *timeout*: seconds; None waits as long as it takes.  On TimeoutError the
        lock is exactly as before (readers this writer held off get in).
        """
        self._acquire(lib.CPUHP_PY_WRITE, timeout)

    def release_write(self) -> None:
        """Drop the write lock this thread took with acquire_write(); every
        reader waiting now gets in before the next writer."""
        self._release(_WRITE)

    def read(self, timeout: float | None = None) -> AbstractContextManager[None]:
        """Context manager holding the lock shared; see acquire_read()."""
        return _SemHold(self, lib.CPUHP_PY_READ, timeout)

    def write(self, timeout: float | None = None) -> AbstractContextManager[None]:
        """Context manager holding the lock exclusive; see acquire_write()."""
        return _SemHold(self, lib.CPUHP_PY_WRITE, timeout)


class _Hotplug(threading.local):
    """What this thread holds of the process-wide hotplug lock."""

    readers = 0  # online_cpus_held() blocks it is inside
    writing = False  # inside hotplug_section()


_hotplug = _Hotplug()


class _OnlineCpus(_Hold):
    __slots__ = ('_counted',)

    def __init__(self) -> None:
        super().__init__(lib.CPUHP_PY_ONLINE_CPUS, ffi.NULL, None, ffi.NULL)
        self._counted = False

    def _check(self) -> None:
        if _hotplug.writing:
            raise RuntimeError('this thread is inside hotplug_section(): holding the online '
                               'CPUs there would deadlock')

    def _mark(self, held: bool) -> None:
        if held != self._counted:
            _hotplug.readers += 1 if held else -1
            self._counted = held


class _HotplugSection(_Hold):
    __slots__ = ()

    def __init__(self, timeout: float | None) -> None:
        super().__init__(lib.CPUHP_PY_HOTPLUG, ffi.NULL, timeout, ffi.NULL)

    def _check(self) -> None:
        if _hotplug.readers:
            raise RuntimeError('this thread is inside online_cpus_held(): a hotplug section '
                               'would wait for it forever')
        if _hotplug.writing:
            raise RuntimeError('this thread is already inside hotplug_section()')

    def _mark(self, held: bool) -> None:
        _hotplug.writing = held

    def _error(self, rc: int) -> BaseException:
        if rc == -errno.ETIMEDOUT:
            return error(rc, f'online_cpus_held() still held after {self._timeout} s')
        return error(rc)


def online_cpus_held() -> AbstractContextManager[None]:
    """Context manager: the set of online CPUs does not change inside, as far
    as this process's hotplug_section() writers go (cpuhp_get_online_cpus()
    and cpuhp_put_online_cpus()).

    Nests within a thread; waits while a hotplug section is in progress.
    Across processes, hold a lease from cpuhpd instead (Client.lease()).
    """
    return _OnlineCpus()


def hotplug_section(timeout: float | None = None) -> AbstractContextManager[None]:
    """Context manager for code that changes the set of online CPUs of this
    process's view (cpuhp_hotplug_begin() and cpuhp_hotplug_done()): waits
    until no thread is inside online_cpus_held(), and keeps them out.

    *timeout*: seconds; None waits as long as it takes; TimeoutError with
    nothing changed if readers stay longer.  One section at a time.
    """
    return _HotplugSection(timeout)


__all__ = ['RWSem', 'online_cpus_held', 'hotplug_section']
