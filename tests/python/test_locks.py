# SPDX-License-Identifier: LGPL-2.1-or-later
"""In-process locks: cpuhp.RWSem, online_cpus_held(), hotplug_section().

Threads synchronise with threading.Event/Barrier; "a writer is waiting" is
observed through try_read(), which fails exactly while a writer holds the
lock or waits for readers to leave."""
import errno
import subprocess
import sys
import threading

import pytest

from conftest import GUARD_S, wait_until


class Holder(threading.Thread):
    """A thread that enters a context manager, says so, and leaves when told."""

    def __init__(self, cm_factory):
        super().__init__(daemon=True)
        self.cm_factory = cm_factory
        self.inside = threading.Event()
        self.leave = threading.Event()
        self.error = None

    def run(self):
        try:
            with self.cm_factory():
                self.inside.set()
                assert self.leave.wait(GUARD_S)
        except BaseException as e:  # reported by finish()
            self.error = e
            self.inside.set()

    def enter(self):
        self.start()
        assert self.inside.wait(GUARD_S)
        assert self.error is None, self.error
        return self

    def finish(self):
        self.leave.set()
        self.join(GUARD_S)
        assert not self.is_alive()
        if self.error:
            raise self.error


def test_readers_share_the_lock(cpuhp):
    sem = cpuhp.RWSem()
    both = threading.Barrier(2, timeout=GUARD_S)

    def reader():
        with sem.read():
            both.wait()  # breaks (BrokenBarrierError) unless both are inside at once

    t = threading.Thread(target=reader)
    t.start()
    reader()
    t.join()


def test_a_named_lock_works_like_any_other(cpuhp):
    # The name only labels debug-build reports; the lock behaves the same.
    sem = cpuhp.RWSem(name='routing table')
    with sem.read():
        pass
    with sem.write(timeout=1.0):
        pass
    with pytest.raises(TypeError, match='name must be a str'):
        cpuhp.RWSem(name=42)  # refused before any C call


def test_writer_times_out_while_a_reader_holds_and_leaves_the_lock_as_it_was(cpuhp):
    sem = cpuhp.RWSem()
    r = Holder(sem.read).enter()
    with pytest.raises(TimeoutError) as e:
        sem.acquire_write(timeout=0.02)
    assert e.value.errno == errno.ETIMEDOUT
    assert 'readers' in str(e.value)
    # The failed writer let new readers in again.
    assert sem.try_read()
    sem.release_read()
    r.finish()
    with sem.write(timeout=GUARD_S):
        pass


def test_try_read_fails_while_a_writer_holds_the_lock(cpuhp):
    sem = cpuhp.RWSem()
    w = Holder(sem.write).enter()
    assert sem.try_read() is False
    w.finish()
    assert sem.try_read() is True
    sem.release_read()


def test_a_blocked_writer_releases_the_gil(cpuhp):
    sem = cpuhp.RWSem()
    r = Holder(sem.read).enter()
    w = Holder(sem.write)
    w.start()
    # This thread runs Python while W waits inside cpuhp_rwsem_write_lock():
    # try_read() starts failing once W is in, which we can only see if W
    # let go of the GIL there.
    wait_until('the writer waiting for the reader', lambda: not _try_read_once(sem))
    assert not w.inside.is_set()
    r.finish()
    assert w.inside.wait(GUARD_S)
    w.finish()


def _try_read_once(sem):
    if sem.try_read():
        sem.release_read()
        return True
    return False


def test_context_managers_release_on_exceptions(cpuhp):
    sem = cpuhp.RWSem()
    with pytest.raises(KeyError):
        with sem.read():
            raise KeyError('x')
    with pytest.raises(KeyError):
        with sem.write():
            raise KeyError('y')
    # Both are free: a writer gets in without waiting, and so does a reader.
    with sem.write(timeout=0):
        pass
    assert sem.try_read()
    sem.release_read()


def test_nested_locks_on_one_thread_are_refused_not_deadlocked(cpuhp):
    sem = cpuhp.RWSem()
    with sem.read():
        with pytest.raises(RuntimeError, match='already holds the read lock'):
            sem.acquire_read()
        with pytest.raises(RuntimeError):
            sem.try_read()
        with pytest.raises(RuntimeError):
            sem.acquire_write(timeout=0)
    with sem.write():
        with pytest.raises(RuntimeError, match='already holds the write lock'):
            sem.acquire_read()
    with sem.write(timeout=0):  # nothing leaked by the refusals
        pass


def test_releasing_a_lock_this_thread_does_not_hold_is_refused(cpuhp):
    sem = cpuhp.RWSem()
    with pytest.raises(RuntimeError, match='does not hold'):
        sem.release_read()
    with pytest.raises(RuntimeError, match='does not hold'):
        sem.release_write()
    r = Holder(sem.read).enter()
    with pytest.raises(RuntimeError):
        sem.release_read()  # the lock is the other thread's
    r.finish()


@pytest.mark.parametrize('bad', [-1, float('nan'), 5e6])
def test_bad_timeouts_are_valueerror_before_locking(cpuhp, bad):
    sem = cpuhp.RWSem()
    r = Holder(sem.read).enter()
    with pytest.raises(ValueError):
        sem.acquire_write(timeout=bad)
    assert _try_read_once(sem)  # no writer got anywhere
    r.finish()


def test_timeout_must_be_a_number(cpuhp):
    with pytest.raises(TypeError):
        cpuhp.RWSem().acquire_write(timeout='1')


def child_says(code):
    """What a Python child running *code* prints, once it exited 0."""
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                       timeout=GUARD_S)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_a_semaphore_dropped_while_read_locked_is_not_freed_under_the_lock(cpuhp):
    # In a child: the read lock stays held to the end by a thread that never
    # releases it (cpuhp_rwsem_free() of a held lock would abort a debug
    # build; a normal one would free it in use).
    code = ('import gc, threading, weakref, cpuhp\n'
            'sem = cpuhp.RWSem()\n'
            'count, gone = sem._count, weakref.ref(sem)\n'
            'took, never = threading.Event(), threading.Event()\n'
            'def reader(box):\n'
            '    box.pop().acquire_read()\n'
            '    took.set()\n'
            '    never.wait()\n'
            'threading.Thread(target=reader, args=([sem],), daemon=True).start()\n'
            'took.wait()\n'
            'del sem\n'
            'gc.collect()\n'
            'print(gone() is None, count[0])\n')
    assert child_says(code) == 'True 1\n'


def test_a_semaphore_dropped_by_the_thread_holding_it_is_released_then_freed(cpuhp):
    # The forgotten acquire_read()'s hold goes with the semaphore: on the
    # thread that took the lock, it releases it first.
    code = ('import gc, cpuhp\n'
            'sem = cpuhp.RWSem()\n'
            'count = sem._count\n'
            'sem.acquire_read()\n'
            'del sem\n'
            'gc.collect()\n'
            'print(count[0])\n')
    assert child_says(code) == '0\n'


def test_hotplug_section_waits_for_online_cpus_held_readers(cpuhp):
    r = Holder(cpuhp.online_cpus_held).enter()
    with pytest.raises(TimeoutError) as e:
        with cpuhp.hotplug_section(timeout=0.02):
            pass
    assert 'online_cpus_held' in str(e.value)
    r.finish()
    with cpuhp.hotplug_section(timeout=GUARD_S):
        pass


def test_online_cpus_held_nests_and_waits_for_a_hotplug_section(cpuhp):
    with cpuhp.online_cpus_held():
        with cpuhp.online_cpus_held():
            pass
    section_open = threading.Event()

    def section():
        with cpuhp.hotplug_section():
            section_open.set()
            yield
            section_open.clear()

    import contextlib
    w = Holder(contextlib.contextmanager(section)).enter()
    trying = threading.Event()
    saw = []

    def reader():
        trying.set()
        with cpuhp.online_cpus_held():
            saw.append(section_open.is_set())

    t = threading.Thread(target=reader)
    t.start()
    assert trying.wait(GUARD_S)
    w.finish()
    t.join(GUARD_S)
    assert saw == [False]  # got in, and only once the section had closed


def test_hotplug_section_inside_online_cpus_held_is_refused(cpuhp):
    with cpuhp.online_cpus_held():
        with pytest.raises(RuntimeError, match='online_cpus_held'):
            with cpuhp.hotplug_section(timeout=0):
                pass
    with cpuhp.hotplug_section():
        with pytest.raises(RuntimeError, match='hotplug_section'):
            with cpuhp.online_cpus_held():
                pass
        with pytest.raises(RuntimeError, match='already inside'):
            with cpuhp.hotplug_section():
                pass
    with cpuhp.hotplug_section(timeout=0):  # all of it undone
        pass


def test_hotplug_section_releases_on_exceptions(cpuhp):
    with pytest.raises(KeyError):
        with cpuhp.hotplug_section():
            raise KeyError('z')
    with cpuhp.online_cpus_held():
        pass
