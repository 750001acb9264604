# SPDX-License-Identifier: LGPL-2.1-or-later
"""An exception while a lease or a freeze of cpuhpd is taken or ended,
Ctrl-C's KeyboardInterrupt above all, never leaves it held: not in
cpuhp.Client, not in cpuhp.aio.Client (a task cancelled at an await
included), not with ``with``, not as a plain call.  "Not held" is the
daemon's word, through a second connection while the first stays open: it
lists no lease and no freeze, and a CPU goes offline with timeout 0.

- Every point, one at a time (test_lock_interrupt's Inject: the start of
  each Python function, each C call and its return), from the call that
  takes the lease to the with body's first statement, and from the body's
  last statement to past the with statement (or around a plain release).
  Taking: not held as soon as the exception is out, nothing collected.
  Ending (an exception can stop __exit__ as it starts): not held once the
  Lease is dropped, as the frame that ran the with statement drops it.  A
  request on a connection of its own (a named lease, a freeze, a lease
  behind a hotplug) is first answered by the daemon when the hook sees
  the call that reads the answer (settle), so that every run passes the
  same points.
- A real SIGINT to a child Python blocked behind a hotplug, once the daemon
  has granted the lease and before the child reads it (the child is
  stopped meanwhile); and a timer's signal, raising at whatever point it
  lands, to a child taking and releasing fast leases in a loop.
- A task cancelled at each await of a request on a connection of its own:
  while the daemon holds it back, and once it granted it unread.
- A Lease or Freeze dropped unreleased ends: at once, or, while the
  Client's lock is held (here by the very thread that drops it), as soon
  as it is let go; one whose Python finaliser was stopped ends at the
  Client's next call; and what was held, dropped or not, ends with close().
- A call an exception left unfinished is let go when it is collected,
  without waiting for a lock the collecting thread may hold.
- A lease with an on_pending callback, everywhere above: the Client keeps
  the callback, not the lease; and a lease called back and then dropped
  ends while the runner (a thread, or a task in the loop) waits.
"""
import asyncio
import gc
import json
import select
import signal
import subprocess
import sys
import threading
import warnings

import pytest

from conftest import GUARD_S, wait_until
from test_client import Bg, writer_is
from test_lock_interrupt import Inject, leaving

LOCK = type(threading.Lock())


class Points(Inject):
    """Inject, but for the moment before a lock's __exit__ is called: no
    signal's exception comes there (CPython looks for a pending signal as
    a C call returns, and a with statement calls __exit__ right after its
    block's last statement), so a with statement on a lock is one step."""

    def __call__(self, frame, event, arg):
        if (event == 'c_call' and getattr(arg, '__name__', '') == '__exit__'
                and isinstance(getattr(arg, '__self__', None), LOCK)):
            return None
        return super().__call__(frame, event, arg)


class Settled(Points):
    """Points, that first runs *settle()* when the hook sees the C call
    that reads a call's answer (in Call.done()): it waits until the daemon
    has granted the request, and then for the answer in the call's socket,
    so that done() is True at once."""

    def __init__(self, settle=None, at=None):
        super().__init__(at)
        self.settle = settle

    def __call__(self, frame, event, arg):
        if (event == 'c_call' and self.settle is not None
                and 'call_done' in getattr(arg, '__name__', '')):
            settle, self.settle = self.settle, None
            call = frame.f_locals['self']
            settle()
            assert select.select([call.fileno()], [], [], GUARD_S)[0], 'no answer came'
        return super().__call__(frame, event, arg)


def end_of(held):
    """A Lease's release() or a Freeze's thaw()."""
    return held.release if hasattr(held, 'release') else held.thaw


def raises(inject, fn):
    """fn() with *inject* on, until fn turns it off or ends; True if that raised."""
    try:
        sys.setprofile(inject)
        fn()
        sys.setprofile(None)
    except KeyboardInterrupt:
        return True
    finally:
        sys.setprofile(None)
    return False


def entered(make):
    with make():
        sys.setprofile(None)  # the body's first statement


def taking(make, inject):
    """Take with make() and enter, with *inject* on until the with body's
    first statement; True if that raised.  Then leave, released."""
    return raises(inject, lambda: entered(make))


def taking_plain(make, inject):
    """``held = make()`` with *inject* on; True if that raised.  Then released."""
    held = []
    if raises(inject, lambda: held.append(make())):
        return True
    end_of(held.pop())()
    return False


def releasing_plain(held, inject):
    """A plain release() or thaw() with *inject* on; True if that raised."""
    return raises(inject, end_of(held))


def nothing_held(observer, where):
    """The daemon lists nothing held (it may have to notice first that a
    connection closed), and a CPU goes offline at once."""
    def empty():
        got = observer.leases()
        return (got.leases, got.freezes) == ([], [])
    wait_until(f'nothing held after an exception at {where}', empty)
    assert observer.set_online(2, False, timeout=0).changed == {2}
    assert observer.set_online(2, True, timeout=0).changed == {2}


class Behind:
    """A hotplug (CPU 1 offline) waiting for the observer's lease, for a
    lease that waits behind it; settle() lets it run and waits for that
    lease's grant."""

    def __init__(self, cpuhp, daemon, observer):
        self.cpuhp, self.observer = cpuhp, observer
        self.h = cpuhp.Client(daemon.socket)

    def setup(self):
        self.blocker = self.observer.lease()
        self.hp = Bg(self.h.set_online, 1, False, GUARD_S)
        wait_until('the hotplug waiting',
                   writer_is(self.cpuhp, self.observer, self.cpuhp.WriterState.WAITING))

    def settle(self):
        wait_until('the lease queued', lambda: self.observer.status().pending_leases == 1)
        self.blocker.release()
        assert self.hp.join().changed == {1}
        wait_until('the lease granted', lambda: self.observer.status().leases_held == 1)

    def cleanup(self):
        self.blocker.release()
        self.hp.join()
        assert self.observer.set_online(1, True, timeout=GUARD_S).ok


def granted(observer, pred):
    def settle():
        wait_until('the grant', lambda: pred(observer.leases()))
    return settle


# name: (make(client), settle(client, observer) or None, kind).  Behind: the setup above.
SYNC = {
    'fast': (lambda c: c.lease(), None),
    'fast-timeout': (lambda c: c.lease(timeout=GUARD_S), None),
    'named': (lambda c: c.lease(who='named'),
              lambda o: granted(o, lambda ll: [li.who for li in ll.leases] == ['named'])),
    'freeze': (lambda c: c.freeze(),
               lambda o: granted(o, lambda ll: [f.granted for f in ll.freezes] == [True])),
    'behind-hotplug': (lambda c: c.lease(timeout=GUARD_S), 'behind'),
    # A callback the Client keeps (and a runner it starts) for the lease.
    'on-pending': (lambda c: c.lease(on_pending=lambda lease, ev: None), None),
}


def every_point(observer, run, settle_of, setup=None, cleanup=None):
    """*run(inject)* once counting, then once per point with an exception
    there; after each, nothing is held.  *settle_of()*: a fresh settle per
    run (or None)."""
    def once(at):
        if setup:
            setup()
        try:
            gc.disable()  # no finaliser of an earlier run between the points
            return run(Settled(settle_of(), at) if settle_of else Points(at))
        finally:
            gc.enable()
            if cleanup:
                cleanup()

    for _ in range(2):  # the first run also sets up what only a first lease does
        count = Settled(settle_of()) if settle_of else Points()
        if setup:
            setup()
        try:
            gc.disable()
            assert run(count) is False
        finally:
            gc.enable()
            if cleanup:
                cleanup()
    assert count.points, 'nothing counted'
    nothing_held(observer, 'no point')
    for at, point in enumerate(count.points):
        assert once(at), f'no exception at point {at} {point}: the points changed'
        nothing_held(observer, f'{point} (point {at} of {count.points})')


def sync_case(cpuhp, daemon, observer, name):
    make, settle = SYNC[name]
    if settle == 'behind':
        b = Behind(cpuhp, daemon, observer)
        return make, b.settle and (lambda: b.settle), b.setup, b.cleanup
    return make, settle and (lambda: settle(observer)), None, None


@pytest.mark.parametrize('name', SYNC)
def test_an_exception_at_any_point_of_taking_leaves_nothing_held(cpuhp, daemon, client,
                                                                 observer, name):
    make, settle_of, setup, cleanup = sync_case(cpuhp, daemon, observer, name)
    every_point(observer, lambda inject: taking(lambda: make(client), inject), settle_of,
                setup, cleanup)


@pytest.mark.parametrize('name', SYNC)
def test_an_exception_at_any_point_of_a_plain_take_leaves_nothing_held(cpuhp, daemon, client,
                                                                       observer, name):
    make, settle_of, setup, cleanup = sync_case(cpuhp, daemon, observer, name)
    every_point(observer, lambda inject: taking_plain(lambda: make(client), inject), settle_of,
                setup, cleanup)


@pytest.mark.parametrize('name', ['fast', 'named', 'freeze', 'on-pending'])
@pytest.mark.parametrize('how', ['with', 'plain'])
def test_an_exception_at_any_point_of_ending_leaves_nothing_held_once_dropped(
        client, observer, name, how):
    make = SYNC[name][0]

    def run(inject):
        held = make(client)
        raised = leaving(held, inject) if how == 'with' else releasing_plain(held, inject)
        del held  # as the frame that ran the with statement drops it
        return raised
    every_point(observer, run, None)


# --- asyncio --------------------------------------------------------------------------

@pytest.fixture
def aio(cpuhp):
    import cpuhp.aio
    return cpuhp.aio


async def araises(inject, coro):
    """raises() for a coroutine: *coro()* awaited."""
    try:
        sys.setprofile(inject)
        await coro()
        sys.setprofile(None)
    except KeyboardInterrupt:
        return True
    finally:
        sys.setprofile(None)
    return False


async def ataking(make, inject):
    async def entered():
        async with make():
            sys.setprofile(None)  # the body's first statement
    return await araises(inject, entered)


async def ataking_plain(make, inject):
    held = []

    async def take():
        held.append(await make())
    if await araises(inject, take):
        return True
    end_of(held.pop())()
    return False


async def aleaving(make, inject):
    raised = False
    req = make()  # dropped once the hook is off, as leaving()'s caller drops its Lease
    try:
        async with req:
            sys.setprofile(inject)
        sys.setprofile(None)
    except KeyboardInterrupt:
        raised = True
    sys.setprofile(None)
    return raised


async def aevery_point(observer, run, settle_of):
    """every_point() in a coroutine: *run(inject)* is awaited."""
    for _ in range(2):  # the first run also sets up what only a first lease does
        count = Settled(settle_of()) if settle_of else Points()
        gc.disable()
        try:
            assert await run(count) is False
        finally:
            gc.enable()
    assert count.points, 'nothing counted'
    nothing_held(observer, 'no point')
    for at, point in enumerate(count.points):
        gc.disable()
        try:
            raised = await run(Settled(settle_of(), at) if settle_of else Points(at))
        finally:
            gc.enable()
        assert raised, f'no exception at point {at} {point}: the points changed'
        nothing_held(observer, f'{point} (point {at} of {count.points})')


AIO = ['fast', 'named', 'freeze', 'on-pending']


@pytest.mark.parametrize('name', AIO)
@pytest.mark.parametrize('how', ['async-with', 'await', 'leaving'])
def test_an_exception_at_any_point_in_asyncio_leaves_nothing_held(aio, daemon, observer, name,
                                                                  how):
    make, settle = SYNC[name]
    settle_of = settle and (lambda: settle(observer))
    if how == 'leaving':
        settle_of = None  # what waited is taken before the hook is on

    async def main():
        async with aio.Client(daemon.socket) as c:
            run = {'async-with': ataking, 'await': ataking_plain, 'leaving': aleaving}[how]
            await aevery_point(observer, lambda inject: run(lambda: make(c), inject), settle_of)
    asyncio.run(main())


@pytest.mark.parametrize('name', ['named', 'freeze', 'behind-hotplug', 'on-pending'])
@pytest.mark.parametrize('when', ['waiting', 'answered'])
def test_a_task_cancelled_at_its_await_leaves_nothing_held(cpuhp, aio, daemon, sim, observer,
                                                           name, when):
    """The request waits (a hotplug holds it back: a freeze waits for it too);
    the task is cancelled while it waits, or once the daemon has granted
    it but before the task read the answer (the loop has not run since)."""
    make = SYNC[name][0]
    b = Behind(cpuhp, daemon, observer)

    async def main():
        async with aio.Client(daemon.socket) as c:
            b.setup()
            try:
                async def hold():
                    async with make(c):
                        raise AssertionError('the with body ran')
                task = asyncio.create_task(hold())
                await asyncio.sleep(0)  # to its first wait: the request is sent
                if name == 'freeze':
                    wait_until('the freeze queued',
                               lambda: [f.granted for f in observer.leases().freezes] == [False])
                else:
                    wait_until('the lease queued',
                               lambda: observer.status().pending_leases == 1)
                if when == 'answered':
                    b.blocker.release()
                    assert b.hp.join().changed == {1}
                    if name == 'freeze':
                        wait_until('the freeze granted', lambda: [
                            f.granted for f in observer.leases().freezes] == [True])
                    else:
                        wait_until('the lease granted',
                                   lambda: observer.status().leases_held == 1)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                b.blocker.release()  # the hotplug goes on, and nothing comes after it
                assert b.hp.join().changed == {1}
                nothing_held(observer, f'a cancel while {when}')
            finally:
                b.cleanup()
    asyncio.run(main())


# --- real signals ---------------------------------------------------------------------

CHILD_BEHIND = '''
import json, sys, cpuhp
c = cpuhp.Client(sys.argv[1])
print('ready', flush=True)
try:
    with c.lease():
        print('body', flush=True)
except KeyboardInterrupt:
    print('interrupted', flush=True)
sys.stdin.readline()  # still connected while the parent looks
'''


def stopped(pid):
    with open(f'/proc/{pid}/stat') as f:
        return f.read().rsplit(')', 1)[1].split()[0] == 'T'


def asleep(pid):
    with open(f'/proc/{pid}/stat') as f:
        return f.read().rsplit(')', 1)[1].split()[0] == 'S'


def test_ctrl_c_as_the_grant_of_a_lease_behind_a_hotplug_arrives_leaves_nothing_held(
        cpuhp, daemon, observer):
    b = Behind(cpuhp, daemon, observer)
    b.setup()
    p = subprocess.Popen([sys.executable, '-c', CHILD_BEHIND, daemon.socket],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout.readline() == 'ready\n'
        wait_until('the lease queued', lambda: observer.status().pending_leases == 1)
        wait_until('the child asleep in its wait', lambda: asleep(p.pid))
        p.send_signal(signal.SIGSTOP)
        wait_until('the child stopped', lambda: stopped(p.pid))
        b.blocker.release()
        assert b.hp.join().changed == {1}
        wait_until('the lease granted', lambda: observer.status().leases_held == 1)
        p.send_signal(signal.SIGINT)
        p.send_signal(signal.SIGCONT)
        assert p.stdout.readline() == 'interrupted\n'
        nothing_held(observer, 'a SIGINT as the grant came')
        out, err = p.communicate('\n', timeout=GUARD_S)
        assert p.returncode == 0, err
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        b.cleanup()


CHILD_TIMER = '''
import json, signal, sys, cpuhp
c = cpuhp.Client(sys.argv[1])
n = int(sys.argv[2])


class Tick(Exception):
    pass


armed = False  # one signal's exception per try, where it lands: never in the bookkeeping


def tick(signum, frame):
    global armed
    if armed:
        armed = False
        raise Tick()


signal.signal(signal.SIGALRM, tick)
interrupted = done = 0
signal.setitimer(signal.ITIMER_REAL, 0.0002, 0.0002)
while done < n:
    try:
        armed = True
        with c.lease():
            pass
        armed = False
        done += 1
    except Tick:
        interrupted += 1
signal.setitimer(signal.ITIMER_REAL, 0, 0)
signal.signal(signal.SIGALRM, signal.SIG_IGN)
c.status()  # a call: what a finaliser could not end, this one does
print(json.dumps({'done': done, 'interrupted': interrupted}), flush=True)
sys.stdin.readline()
'''


def test_signals_landing_anywhere_in_fast_leases_leave_nothing_held(daemon, observer):
    p = subprocess.Popen([sys.executable, '-c', CHILD_TIMER, daemon.socket, '20000'],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        line = p.stdout.readline()
        assert line, p.stderr.read()
        got = json.loads(line)
        assert got['done'] == 20000 and got['interrupted'] > 0, got
        nothing_held(observer, f'{got["interrupted"]} signals')
        p.communicate('\n', timeout=GUARD_S)
        assert p.returncode == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


# --- a Lease or Freeze dropped unreleased -----------------------------------------------

@pytest.mark.parametrize('name', ['fast', 'named', 'freeze', 'on-pending'])
def test_dropping_an_unreleased_lease_or_freeze_ends_it_at_once(client, observer, name):
    held = SYNC[name][0](client)
    got = observer.leases()
    assert len(got.leases) + len(got.freezes) == 1
    del held
    nothing_held(observer, 'the drop')


@pytest.mark.parametrize('name', ['fast', 'named', 'freeze'])
def test_dropped_while_the_client_lock_is_held_it_ends_once_that_is_let_go(
        client, observer, name):
    held = SYNC[name][0](client)
    with client._s.lock:
        del held  # the finaliser must not wait for the lock: it would wait for itself here
        got = observer.leases()
        assert len(got.leases) + len(got.freezes) == 1
    nothing_held(observer, 'the drop')


def stopped_finaliser(held, monkeypatch):
    """Drop *held* with its Python finaliser stopped as it starts: what it
    held is an orphan of its Client, for its next call."""
    ignored = []  # the types only: the traceback would keep the Lease
    monkeypatch.setattr(sys, 'unraisablehook', lambda u: ignored.append(type(u.exc_value)))

    def stop(frame, event, arg):
        if event == 'call' and frame.f_code.co_name == '__del__':
            raise KeyboardInterrupt('as the finaliser starts')
    sys.setprofile(stop)
    try:
        del held
    finally:
        sys.setprofile(None)
    assert ignored == [KeyboardInterrupt]


@pytest.mark.parametrize('name', ['fast', 'named', 'freeze'])
def test_one_whose_finaliser_was_stopped_ends_at_the_next_call(client, observer, name,
                                                               monkeypatch):
    stopped_finaliser(SYNC[name][0](client), monkeypatch)
    got = observer.leases()
    assert len(got.leases) + len(got.freezes) == 1
    client.status()
    nothing_held(observer, 'the next call')


@pytest.mark.parametrize('name', ['fast', 'named', 'freeze'])
def test_what_was_held_when_the_client_closed_ended_with_it(cpuhp, daemon, observer, name,
                                                            monkeypatch):
    c = cpuhp.Client(daemon.socket)
    make = SYNC[name][0]
    stopped_finaliser(make(c), monkeypatch)  # an orphan at close
    kept, dropped = make(c), make(c)
    c.close()
    nothing_held(observer, 'the close')
    del dropped  # nothing left to end: no call on the closed handle
    end_of(kept)()  # does nothing, as before
    assert (kept.released if hasattr(kept, 'released') else kept.thawed) is True


def test_a_call_left_unfinished_is_let_go_without_waiting_for_the_lock(client):
    # What an exception at the start of the with statement's exit leaves:
    # the call's generator suspended, let go as it is collected, here (as a
    # collection may) where this thread holds the Client's lock.
    cm = client._s.using()
    cm.__enter__()
    assert client._busy == 1
    with client._s.lock:
        del cm
    wait_until('the call let go', lambda: client._busy == 0)
    client.status()


@pytest.mark.parametrize('name', ['fast', 'named', 'freeze', 'on-pending'])
def test_one_collected_unended_says_so_with_a_resource_warning(client, observer, name):
    held = SYNC[name][0](client)
    held.cycle = held  # only the cyclic collector can find it
    what = repr(held)
    gc.collect()  # what earlier tests left, with its own warnings
    del held
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter('always')
        gc.collect()
    assert [(w.category, str(w.message)) for w in got] == [
        (ResourceWarning, f'{what} was collected unended: ended now')]
    nothing_held(observer, 'the collection')


def test_an_ended_one_collected_says_nothing(client):
    held = client.lease()
    held.release()
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter('always')
        del held
    assert got == []


# --- on_pending: the runner that calls a lease back keeps no lease ---------------------

def test_a_lease_called_back_then_dropped_ends_while_the_runner_waits(client, observer):
    """The runner thread called the lease's callback (which kept it) and
    waits for the next notice; the lease is then dropped: it ends at once,
    so the hotplug that waited for it runs (before: it waited its timeout,
    the runner's last call still referring to the lease)."""
    called = threading.Event()
    lease = client.lease(on_pending=lambda lease, ev: called.set())
    hp = Bg(observer.set_online, 1, False, GUARD_S)
    assert called.wait(GUARD_S), 'no callback'
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', ResourceWarning)
        del lease
    assert hp.join().changed == {1}
    nothing_held(observer, 'the drop after a callback')
    assert observer.set_online(1, True, timeout=GUARD_S).ok


def test_aio_a_lease_called_back_then_dropped_ends_while_the_runner_waits(aio, daemon,
                                                                          observer):
    async def main():
        async with aio.Client(daemon.socket) as c:
            called = asyncio.Event()
            lease = await c.lease(on_pending=lambda lease, ev: called.set())
            hp = Bg(observer.set_online, 1, False, GUARD_S)
            await asyncio.wait_for(called.wait(), GUARD_S)
            with warnings.catch_warnings():
                warnings.simplefilter('ignore', ResourceWarning)
                del lease
            assert hp.join().changed == {1}
            nothing_held(observer, 'the drop after a callback')
            assert observer.set_online(1, True, timeout=GUARD_S).ok
    asyncio.run(main())


# --- a Client dropped while its runner waits: its connection closes at once --------------

def connections(observer):
    return observer.status().connections


def test_a_client_dropped_while_its_runner_waits_closes_at_once(cpuhp, daemon, observer):
    """The runner thread of a Client with an on_pending lease refers to the
    Client weakly: once the program drops the lease and the Client, the
    Client is collected, its connection closes and the thread ends (before:
    the thread's bound method kept the Client, its connection and the
    thread, until an event came on a socket that none would ever get)."""
    base = connections(observer)
    before = set(threading.enumerate())
    c = cpuhp.Client(daemon.socket)
    lease = c.lease(on_pending=lambda lease, ev: None)
    [runner] = [t for t in set(threading.enumerate()) - before if t.name == 'cpuhp-on-pending']
    assert connections(observer) == base + 1
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', ResourceWarning)
        del lease, c
        gc.collect()
    runner.join(GUARD_S)
    assert not runner.is_alive(), 'the runner still waits for a dropped Client'
    wait_until("the dropped Client's connection closed", lambda: connections(observer) == base)
    nothing_held(observer, 'a Client dropped with its runner waiting')


def test_aio_a_client_dropped_while_its_runner_waits_closes_at_once(aio, daemon, observer):
    base = connections(observer)

    async def main():
        c = aio.Client(daemon.socket)
        lease = await c.lease(on_pending=lambda lease, ev: None)
        pump = c._pump
        assert connections(observer) == base + 1
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', ResourceWarning)
            del lease, c
            gc.collect()
        await asyncio.wait_for(pump, GUARD_S)
        wait_until("the dropped Client's connection closed",
                   lambda: connections(observer) == base)
    asyncio.run(main())
    nothing_held(observer, 'an aio Client dropped with its runner waiting')
