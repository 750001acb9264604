# SPDX-License-Identifier: LGPL-2.1-or-later
"""An exception while a lock is being taken or released, Ctrl-C's
KeyboardInterrupt above all, never leaves the lock held: a with block holds
it exactly while the block runs.

CPython runs a signal's Python handler (and raises its KeyboardInterrupt)
at set points of Python code: the start of a Python function, the return
of a C function, a backward jump.  A lock taken by a C call whose return
is such a point is held before any Python code of the binding has seen it.

Two kinds of test:

- A real SIGINT to a main thread blocked in the C call behind another
  thread's lock, in a child Python that catches the KeyboardInterrupt and
  goes on, as a server does: its next writer and reader must get in at
  once, and the process must end without a libcpuhp abort.  "Blocked" is
  observed: the main thread sleeps in a system call on the lock's own
  memory (/proc/.../syscall, whose first argument is the futex word's
  address), and the other thread sends the signal and only then releases
  its lock.
- Every point in between, one at a time: a sys.setprofile() hook counts
  the starts of Python functions and the calls and returns of C functions
  from the with statement to its body (and from the body's end to past the
  with statement), then raises KeyboardInterrupt at each in turn, as a
  signal handler would there.  Taking: the lock is free as soon as the
  exception is out, nothing collected.  Releasing (where an exception can
  stop __exit__ itself): free once the context manager is dropped, as the
  frame that ran the with statement drops it.
"""
import json
import subprocess
import sys
import threading

import pytest

from conftest import GUARD_S

CHILD = r'''
import json, signal, sys, threading, time
import cpuhp
from cpuhp._cpuhp import ffi, lib

GUARD_S = float(sys.argv[2])
kind = sys.argv[1]
sem = cpuhp.RWSem()
if kind in ('read', 'write'):
    lock = sem._sem
    take, other = (sem.read, sem.write) if kind == 'read' else (sem.write, sem.read)

    def check():
        with sem.write(timeout=0):
            pass
        with sem.read(timeout=0):
            pass
else:
    lock = lib.cpuhp_hotplug_lock()
    take, other = ((cpuhp.online_cpus_held, cpuhp.hotplug_section) if kind == 'online_cpus_held'
                   else (cpuhp.hotplug_section, cpuhp.online_cpus_held))

    def check():
        with cpuhp.hotplug_section(timeout=0):
            pass
        with cpuhp.online_cpus_held():
            pass

# A struct cpuhp_rwsem is 256 bytes (rwsem.c asserts it); its futex words are inside.
start = int(ffi.cast('uintptr_t', lock))
main = threading.get_native_id()


def blocked():
    with open(f'/proc/self/task/{main}/syscall') as f:
        fields = f.read().split()
    return len(fields) > 1 and fields[0] != 'running' and start <= int(fields[1], 16) < start + 256


holding = threading.Event()


def holder():
    with other():
        holding.set()
        deadline = time.monotonic() + GUARD_S
        while not blocked():
            assert time.monotonic() < deadline, 'the main thread never blocked on the lock'
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


t = threading.Thread(target=holder)
t.start()
assert holding.wait(GUARD_S)
interrupted = False
try:
    with take():
        pass
except KeyboardInterrupt:
    interrupted = True
t.join()
check()  # the server goes on: its next writer and reader get in at once
print(json.dumps({'interrupted': interrupted, 'sem': repr(sem)}), flush=True)
'''


@pytest.mark.parametrize('kind', ['read', 'write', 'online_cpus_held', 'hotplug_section'])
def test_ctrl_c_while_blocked_taking_a_lock_leaves_it_free(kind):
    r = subprocess.run([sys.executable, '-c', CHILD, kind, str(GUARD_S)], capture_output=True,
                       text=True, timeout=2 * GUARD_S)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {'interrupted': True, 'sem': '<cpuhp.RWSem held=0>'}


class Inject:
    """A sys.setprofile() hook: counts the points where a signal's exception
    may be raised (a Python function's start, a C function's return, and
    to be thorough the moment before a C function is called), and raises
    KeyboardInterrupt at the point numbered *at*.  CPython turns the hook
    off when it raises."""

    def __init__(self, at=None):
        self.at = at
        self.points = []

    def __call__(self, frame, event, arg):
        if event not in ('call', 'c_call', 'c_return'):
            return
        if len(self.points) == self.at:
            raise KeyboardInterrupt(f'at point {self.at}')
        self.points.append((event, frame.f_code.co_name if event == 'call' else
                            getattr(arg, '__name__', repr(arg))))


def entering(cm, inject):
    """Enter *cm* with *inject* on, until the block's first statement; True
    if that raised."""
    try:
        sys.setprofile(inject)
        with cm:
            sys.setprofile(None)
    except KeyboardInterrupt:
        return True
    finally:
        sys.setprofile(None)
    return False


def leaving(cm, inject):
    """Leave *cm*'s block with *inject* on, from its last statement to past
    the with statement; True if that raised."""
    raised = False
    try:
        with cm:
            sys.setprofile(inject)
        sys.setprofile(None)
    except KeyboardInterrupt:
        raised = True
    sys.setprofile(None)
    return raised


def cases(cpuhp):
    """Name: (make the context manager, check that everything is free)."""
    sem = cpuhp.RWSem()

    def sem_free():
        with sem.write(timeout=0):
            pass
        with sem.read(timeout=0):
            pass
        assert repr(sem) == '<cpuhp.RWSem held=0>'

    def hotplug_free():
        with cpuhp.hotplug_section(timeout=0):
            pass
        with cpuhp.online_cpus_held():
            pass

    return {
        'read': (sem.read, sem_free),
        'read-timeout': (lambda: sem.read(timeout=GUARD_S), sem_free),
        'write': (sem.write, sem_free),
        'write-timeout': (lambda: sem.write(timeout=GUARD_S), sem_free),
        'online_cpus_held': (cpuhp.online_cpus_held, hotplug_free),
        'hotplug_section': (cpuhp.hotplug_section, hotplug_free),
        'hotplug_section-timeout': (lambda: cpuhp.hotplug_section(timeout=GUARD_S),
                                    hotplug_free),
    }


CASES = ['read', 'read-timeout', 'write', 'write-timeout', 'online_cpus_held',
         'hotplug_section', 'hotplug_section-timeout']


def every_point(cpuhp, name, run, nested, dropped):
    """Run *run* once counting, then once per point with an exception there;
    after each, check the lock free (*dropped*: once the context manager is
    dropped; *nested*: an online_cpus_held() inner to another, checked once
    the outer one is left)."""
    make, free = cases(cpuhp)[name]
    outer = cpuhp.online_cpus_held() if nested else None
    if outer is not None:
        outer.__enter__()
    count = Inject()
    assert run(make(), count) is False
    assert count.points, 'nothing counted'
    for at, point in enumerate(count.points):
        cm = make()
        assert run(cm, Inject(at)), point
        if dropped:
            del cm
        if outer is None:
            try:
                free()
            except BaseException as e:
                raise AssertionError(f'held after an exception at {point} (point {at} of '
                                     f'{count.points})') from e
        cm = None
    if outer is not None:
        outer.__exit__(None, None, None)
        free()


def params():
    return [pytest.param(n, False, id=n) for n in CASES] + [
        pytest.param('online_cpus_held', True, id='online_cpus_held-nested')]


@pytest.mark.parametrize('name,nested', params())
def test_an_exception_at_any_point_of_taking_a_lock_leaves_it_free_at_once(cpuhp, name, nested):
    # Checked with the context manager still referenced: nothing waits for
    # its collection.
    every_point(cpuhp, name, entering, nested, dropped=False)


@pytest.mark.parametrize('name,nested', params())
def test_an_exception_at_any_point_of_releasing_a_lock_leaves_it_free(cpuhp, name, nested):
    # An exception at the start of __exit__ stops it before it did anything;
    # dropping the context manager, as the frame of a "with sem.read():"
    # does, releases what it still holds.
    every_point(cpuhp, name, leaving, nested, dropped=True)


def test_a_lock_context_manager_is_entered_once(cpuhp):
    sem = cpuhp.RWSem()
    for cm in (sem.read(), sem.write(), cpuhp.online_cpus_held(), cpuhp.hotplug_section()):
        with cm:
            pass
        with pytest.raises(RuntimeError, match='once'):
            with cm:
                pass
    with sem.write(timeout=0), cpuhp.hotplug_section(timeout=0):
        pass


def test_read_times_out_behind_a_writer_and_leaves_the_lock_as_it_was(cpuhp):
    sem = cpuhp.RWSem()
    writing, leave = threading.Event(), threading.Event()

    def writer():
        with sem.write():
            writing.set()
            assert leave.wait(GUARD_S)

    t = threading.Thread(target=writer)
    t.start()
    assert writing.wait(GUARD_S)
    with pytest.raises(TimeoutError, match='writer'):
        with sem.read(timeout=0.02):
            pass
    with pytest.raises(TimeoutError):
        sem.acquire_read(timeout=0)
    leave.set()
    t.join(GUARD_S)
    with sem.read(timeout=0):
        pass
    sem.acquire_read(timeout=GUARD_S)
    sem.release_read()
    assert repr(sem) == '<cpuhp.RWSem held=0>'
