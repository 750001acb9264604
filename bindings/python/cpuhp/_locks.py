# SPDX-License-Identifier: LGPL-2.1-or-later
"""In-process locks: struct cpuhp_rwsem and the process-wide hotplug lock.

Every C call that can block runs without the GIL (cffi releases it around
each call), so other Python threads keep running while one waits.

The C locks do not nest: a read lock taken again while a writer waits would
wait behind that writer, which waits for the first read lock.  The debug
build of libcpuhp aborts the process on it, a normal build deadlocks.  So
these wrappers remember what each Python thread holds and raise RuntimeError
for such calls instead of making them.
"""
from __future__ import annotations

import contextlib
import errno
import threading
from collections.abc import Iterator

from ._cpuhp import ffi, lib
from ._errors import UINT_MS_MAX, error, timeout_ms

_READ, _WRITE = 'read', 'write'


class _Held:
    """How many locks of one semaphore are held, by any thread: a semaphore
    that is garbage while held (an acquire_read() never released) is leaked,
    not freed, as cpuhp_rwsem_free() wants an unlocked semaphore."""

    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()

    def add(self, n: int) -> None:
        with self.lock:
            self.count += n


def _free_unless_held(held: _Held):
    def free(sem) -> None:
        if held.count == 0:
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
    """

    def __init__(self, name: str | None = None) -> None:
        """*name* labels the lock in the library's debug-build misuse reports."""
        if name is not None and not isinstance(name, str):
            raise TypeError(f'name must be a str or None, not {type(name).__name__}')
        out = ffi.new('struct cpuhp_rwsem **')
        rc = lib.cpuhp_rwsem_new_named(out, name.encode() if name is not None else ffi.NULL)
        if rc < 0:
            raise error(rc)
        self._held = _Held()
        self._sem = ffi.gc(out[0], _free_unless_held(self._held))
        self._mine = threading.local()

    def __repr__(self) -> str:
        return f'<cpuhp.RWSem held={self._held.count}>'

    def _holding(self) -> str | None:
        return getattr(self._mine, 'mode', None)

    def _begin(self, what: str) -> None:
        mode = self._holding()
        if mode is not None:
            raise RuntimeError(f'this thread already holds the {mode} lock of this RWSem: '
                               f'taking the {what} lock too would deadlock behind a writer')

    def _took(self, mode: str) -> None:
        self._mine.mode = mode
        self._held.add(1)

    def _drop(self, mode: str) -> None:
        if self._holding() != mode:
            raise RuntimeError(f'this thread does not hold the {mode} lock of this RWSem')
        self._mine.mode = None
        self._held.add(-1)

    def acquire_read(self) -> None:
        """Take the lock shared; waits while a writer holds it or waits for it.
        Pair with release_read() on the same thread."""
        self._begin(_READ)
        lib.cpuhp_rwsem_read_lock(self._sem)
        self._took(_READ)

    def try_read(self) -> bool:
        """Take the lock shared if no writer holds it or waits for readers to
        leave; never waits.  True: the read lock is held, release it with
        release_read()."""
        self._begin(_READ)
        if not lib.cpuhp_rwsem_read_trylock(self._sem):
            return False
        self._took(_READ)
        return True

    def release_read(self) -> None:
        """Drop the read lock this thread took."""
        self._drop(_READ)
        lib.cpuhp_rwsem_read_unlock(self._sem)

    def acquire_write(self, timeout: float | None = None) -> None:
        """Take the lock exclusive, waiting for earlier writers and for the
        readers inside to leave.

        *timeout*: seconds; None waits as long as it takes.  On TimeoutError the
        lock is exactly as before (readers this writer held off get in).
        """
        ms = timeout_ms(timeout, forever=-1, limit=UINT_MS_MAX)
        self._begin(_WRITE)
        if ms < 0:
            lib.cpuhp_rwsem_write_lock(self._sem)
        else:
            rc = lib.cpuhp_rwsem_write_lock_timeout(self._sem, ms)
            if rc == -errno.ETIMEDOUT:
                raise error(rc, f'readers still hold the RWSem after {timeout} s')
            if rc < 0:
                raise error(rc)
        self._took(_WRITE)

    def release_write(self) -> None:
        """Drop the write lock this thread took; every reader waiting now gets
        in before the next writer."""
        self._drop(_WRITE)
        lib.cpuhp_rwsem_write_unlock(self._sem)

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        """Context manager holding the lock shared."""
        self.acquire_read()
        try:
            yield
        finally:
            self.release_read()

    @contextlib.contextmanager
    def write(self, timeout: float | None = None) -> Iterator[None]:
        """Context manager holding the lock exclusive; see acquire_write()."""
        self.acquire_write(timeout)
        try:
            yield
        finally:
            self.release_write()


# What this thread holds of the process-wide hotplug lock.
_hotplug = threading.local()


@contextlib.contextmanager
def online_cpus_held() -> Iterator[None]:
    """Context manager: the set of online CPUs does not change inside, as far
    as this process's hotplug_section() writers go (cpuhp_get_online_cpus()
    and cpuhp_put_online_cpus()).

    Nests within a thread; waits while a hotplug section is in progress.
    Across processes, hold a lease from cpuhpd instead (Client.lease()).
    """
    if getattr(_hotplug, 'writing', False):
        raise RuntimeError('this thread is inside hotplug_section(): holding the online '
                           'CPUs there would deadlock')
    lib.cpuhp_get_online_cpus()
    _hotplug.readers = getattr(_hotplug, 'readers', 0) + 1
    try:
        yield
    finally:
        _hotplug.readers -= 1
        lib.cpuhp_put_online_cpus()


@contextlib.contextmanager
def hotplug_section(timeout: float | None = None) -> Iterator[None]:
    """Context manager for code that changes the set of online CPUs of this
    process's view (cpuhp_hotplug_begin() and cpuhp_hotplug_done()): waits
    until no thread is inside online_cpus_held(), and keeps them out.

    *timeout*: seconds; None waits as long as it takes; TimeoutError with
    nothing changed if readers stay longer.  One section at a time.
    """
    ms = timeout_ms(timeout, forever=-1, limit=UINT_MS_MAX)
    if getattr(_hotplug, 'readers', 0):
        raise RuntimeError('this thread is inside online_cpus_held(): a hotplug section '
                           'would wait for it forever')
    if getattr(_hotplug, 'writing', False):
        raise RuntimeError('this thread is already inside hotplug_section()')
    if ms < 0:
        lib.cpuhp_hotplug_begin()
    else:
        rc = lib.cpuhp_hotplug_begin_timeout(ms)
        if rc < 0:
            raise error(rc, f'online_cpus_held() still held after {timeout} s'
                        if rc == -errno.ETIMEDOUT else None)
    _hotplug.writing = True
    try:
        yield
    finally:
        _hotplug.writing = False
        lib.cpuhp_hotplug_done()


__all__ = ['RWSem', 'online_cpus_held', 'hotplug_section']
