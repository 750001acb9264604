# SPDX-License-Identifier: LGPL-2.1-or-later
"""cpuhp.Client against a private cpuhpd on a simulated tree (CPUs 0-3,
cpu0 not hotpluggable): connecting, status, leases, hotplug requests with
per-CPU results, events, errors.

"A request is waiting" is observed through a second connection's status,
never by sleeping."""
import errno
import itertools
import select
import socket
import threading

import pytest

import fixture
from conftest import GUARD_S, wait_until


class Bg(threading.Thread):
    """Run one call on a thread; join() returns its result or raises its error."""

    def __init__(self, fn, *args, **kw):
        super().__init__(daemon=True)
        self.fn, self.args, self.kw = fn, args, kw
        self.result = self.error = None
        self.start()

    def run(self):
        try:
            self.result = self.fn(*self.args, **self.kw)
        except BaseException as e:
            self.error = e

    def join(self, timeout=GUARD_S):
        super().join(timeout)
        assert not self.is_alive(), f'{self.fn.__name__} still blocked after {timeout} s'
        if self.error:
            raise self.error
        return self.result


def writer_is(cpuhp, observer, state):
    return lambda: observer.status().writer == state


# --- connecting -------------------------------------------------------------------

def test_connects_to_a_path_and_a_pathlike(cpuhp, daemon, observer):
    import pathlib
    with cpuhp.Client(daemon.socket) as a, cpuhp.Client(pathlib.Path(daemon.socket)) as b:
        assert a.path == b.path == daemon.socket
        assert observer.status().connections == 3


def test_without_a_path_connects_to_cpuhp_socket_from_the_environment(cpuhp, daemon,
                                                                        monkeypatch):
    monkeypatch.setenv(cpuhp.SOCKET_ENV, daemon.socket)
    with cpuhp.Client() as c:
        assert c.path == daemon.socket
        assert c.status().connections == 1


def test_the_default_socket_is_the_c_librarys(cpuhp, monkeypatch):
    assert cpuhp.SOCKET_ENV == 'CPUHP_SOCKET'
    assert cpuhp.DEFAULT_SOCKET == '/run/cpuhpd/cpuhpd.sock'


def test_socket_path_is_the_environment_unless_unset_or_empty(cpuhp, monkeypatch):
    # os.environ writes through to C's environment, where the resolver reads.
    monkeypatch.setenv(cpuhp.SOCKET_ENV, '/tmp/elsewhere.sock')
    assert cpuhp.socket_path() == '/tmp/elsewhere.sock'
    monkeypatch.setenv(cpuhp.SOCKET_ENV, '')
    assert cpuhp.socket_path() == cpuhp.DEFAULT_SOCKET
    monkeypatch.delenv(cpuhp.SOCKET_ENV)
    assert cpuhp.socket_path() == cpuhp.DEFAULT_SOCKET


def test_no_socket_is_filenotfounderror_naming_the_path_and_what_to_do(cpuhp, tmp):
    path = str(tmp / 'nothing.sock')
    with pytest.raises(FileNotFoundError) as e:
        cpuhp.Client(path)
    assert e.value.errno == errno.ENOENT and e.value.filename == path
    assert 'is cpuhpd running' in str(e.value)


def test_a_socket_nobody_listens_on_is_connectionrefusederror(cpuhp, tmp):
    path = str(tmp / 'stale.sock')
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()  # the file stays, nobody listens
    with pytest.raises(ConnectionRefusedError) as e:
        cpuhp.Client(path)
    assert e.value.errno == errno.ECONNREFUSED


def test_bad_paths_are_refused_before_connecting(cpuhp):
    with pytest.raises(ValueError):
        cpuhp.Client('/tmp/a\0b')
    with pytest.raises(TypeError):
        cpuhp.Client(b'/tmp/sock')
    with pytest.raises(TypeError):
        cpuhp.Client(3)


def test_closing_ends_the_connection_and_later_calls_are_valueerror(cpuhp, daemon, observer):
    with cpuhp.Client(daemon.socket) as c:
        assert not c.closed
        assert observer.status().connections == 2
    assert c.closed and 'closed' in repr(c)
    wait_until('the daemon seeing the close', lambda: observer.status().connections == 1)
    for call in (c.status, c.lease, c.watch, c.next_event, c.fileno,
                 lambda: c.set_online(1, True)):
        with pytest.raises(ValueError, match='closed'):
            call()
    c.close()  # twice is fine


def test_close_wakes_a_thread_in_next_event_and_twice_is_fine(cpuhp, daemon, client, observer):
    client.watch()
    waiter = Bg(client.next_event, GUARD_S)
    wait_until('the watcher inside next_event', lambda: client._busy)
    client.close()  # from another thread than the call's: it ends the call
    with pytest.raises(OSError) as e:
        waiter.join()
    assert e.value.errno == errno.ECANCELED and 'closed while this call' in str(e.value)
    assert client.closed and client._busy == 0
    wait_until('the daemon seeing the close', lambda: observer.status().connections == 1)
    client.close()
    with pytest.raises(ValueError, match='closed'):
        client.next_event(0)


def test_close_wakes_a_thread_waiting_for_a_lease_and_ends_every_lease(cpuhp, daemon,
                                                                        observer):
    c = cpuhp.Client(daemon.socket)
    fast = c.lease()  # on the Client's connection
    named = c.lease(who='named')  # on a connection of its own
    hotplug = Bg(observer.set_online, 1, False, GUARD_S)
    wait_until('the hotplug waiting for the leases',
               writer_is(cpuhp, observer, cpuhp.WriterState.WAITING))
    waiter = Bg(c.lease)
    wait_until('the lease queued behind it', lambda: observer.status().pending_leases == 1)
    c.close()
    with pytest.raises(OSError) as e:
        waiter.join()
    assert e.value.errno == errno.ECANCELED and 'closed while this call' in str(e.value)
    # Both leases ended with the Client: the hotplug they held up ran.
    assert hotplug.join().changed == {1}
    wait_until('the daemon seeing every connection close',
               lambda: observer.status().connections == 1)
    s = observer.status()
    assert (s.leases_held, s.pending_leases) == (0, 0)
    # Releasing a lease of a closed Client does nothing; so does a with block's end.
    named.release()
    with fast:
        pass
    assert fast.released and named.released


def test_close_gives_up_a_hotplug_a_thread_waits_for(cpuhp, daemon, observer):
    held = observer.lease()
    c = cpuhp.Client(daemon.socket)
    hotplug = Bg(c.set_online, 1, False, GUARD_S)
    wait_until('the hotplug waiting for the lease',
               writer_is(cpuhp, observer, cpuhp.WriterState.WAITING))
    c.close()
    with pytest.raises(OSError) as e:
        hotplug.join()
    assert e.value.errno == errno.ECANCELED
    wait_until('the hotplug dropped', writer_is(cpuhp, observer, cpuhp.WriterState.IDLE))
    s = observer.status()
    assert s.pending_hotplugs == 0 and 1 in s.online
    held.release()


def test_close_wakes_a_thread_waiting_to_freeze_and_the_hotplug_ahead_runs(cpuhp, daemon,
                                                                          observer):
    held = observer.lease()
    with cpuhp.Client(daemon.socket) as h:
        # Bounded, so that a close() held up by the freeze fails the test, not hangs it.
        hotplug = Bg(h.set_online, 1, False, GUARD_S)
        wait_until('the hotplug waiting for the lease',
                   writer_is(cpuhp, observer, cpuhp.WriterState.WAITING))
        c = cpuhp.Client(daemon.socket)
        freezing = Bg(c.freeze, who='bench')
        wait_until('the freeze waiting behind the hotplug',
                   lambda: [(f.granted, f.who) for f in observer.leases().freezes]
                   == [(False, 'bench')])
        c.close()
        with pytest.raises(OSError) as e:
            freezing.join()
        assert e.value.errno == errno.ECANCELED and 'closed while this call' in str(e.value)
        assert c.closed and c._busy == 0
        wait_until('the freeze request dropped', lambda: observer.status().freezes == 0)
        assert observer.leases().freezes == []
        held.release()
        assert hotplug.join().changed == {1}


# --- status -----------------------------------------------------------------------

def test_status_reports_sets_of_ints_leases_writer_and_version(cpuhp, daemon, client,
                                                               observer):
    s = client.status()
    assert isinstance(s, cpuhp.Status)
    assert s.online == s.possible == s.present == {0, 1, 2, 3}
    assert s.offline == set()
    for field in (s.online, s.offline, s.possible, s.present):
        assert isinstance(field, frozenset)
    assert s.leases_held == 0 and s.pending_leases == 0 and s.pending_hotplugs == 0
    assert s.writer is cpuhp.WriterState.IDLE
    assert s.connections == 2
    assert s.daemon_version == cpuhp.__version__
    assert s.smt_control == '' and s.smt_active is False   # the tree has no smt/
    with observer.lease():
        assert client.status().leases_held == 1


def test_status_reports_smt_control_and_active(cpuhp, tmp):
    sim = fixture.SimSysfs(tmp / 'smt', cpus='0-3', extra=['--smt', '2',
                                                           '--smt-control', 'forceoff'])
    d = fixture.Daemon(tmp, sim.root, socket_path=tmp / 'smt.sock').start()
    try:
        with cpuhp.Client(d.socket) as c:
            s = c.status()
            assert s.smt_control == 'forceoff' and s.smt_active is True
    finally:
        d.stop_clean()


def test_status_shows_a_waiting_hotplug_and_the_leases_behind_it(cpuhp, daemon, client,
                                                                  observer):
    lease = client.lease()
    with cpuhp.Client(daemon.socket) as h, cpuhp.Client(daemon.socket) as late:
        hp = Bg(h.set_online, 2, False, GUARD_S)
        wait_until('the hotplug waiting', writer_is(cpuhp, observer, cpuhp.WriterState.WAITING))
        behind = Bg(late.lease, GUARD_S)
        s = wait_until('the lease behind it', lambda: (lambda s: s.pending_leases == 1 and s)(
            observer.status()))
        assert s.writer is cpuhp.WriterState.WAITING
        assert s.leases_held == 1 and s.pending_hotplugs == 1
        lease.release()
        assert hp.join().changed == {2}
        behind.join().release()
    assert observer.status().offline == {2}


# --- leases -----------------------------------------------------------------------

def test_lease_context_manager_holds_and_releases(cpuhp, client, observer):
    with client.lease() as lease:
        assert isinstance(lease, cpuhp.Lease) and isinstance(lease.id, int)
        assert not lease.released and 'held' in repr(lease)
        assert observer.status().leases_held == 1
    assert lease.released
    assert observer.status().leases_held == 0


def test_lease_is_released_when_the_block_raises(cpuhp, client, observer):
    with pytest.raises(ZeroDivisionError):
        with client.lease():
            assert observer.status().leases_held == 1
            1 / 0
    assert observer.status().leases_held == 0


def test_leases_are_shared_and_have_distinct_ids(cpuhp, client, observer):
    a, b = client.lease(), observer.lease(timeout=0)
    c = client.lease()
    assert len({a.id, c.id}) == 2
    assert observer.status().leases_held == 3
    for lease in (a, b, c):
        lease.release()
        lease.release()  # a second release does nothing
    assert observer.status().leases_held == 0


def test_closing_the_client_ends_its_leases(cpuhp, daemon, observer):
    c = cpuhp.Client(daemon.socket)
    lease = c.lease()
    c.close()
    wait_until('the lease gone with the connection',
               lambda: observer.status().leases_held == 0)
    lease.release()  # nothing left to release: no error


def test_lease_behind_a_waiting_hotplug_is_blockingioerror_with_timeout_0(cpuhp, daemon,
                                                                          client, observer):
    held = observer.lease()
    with cpuhp.Client(daemon.socket) as h:
        hp = Bg(h.set_online, 1, False, GUARD_S)
        wait_until('the hotplug waiting', writer_is(cpuhp, observer, cpuhp.WriterState.WAITING))
        with pytest.raises(BlockingIOError) as e:
            client.lease(timeout=0)
        assert e.value.errno == errno.EAGAIN and 'hotplug' in e.value.strerror
        with pytest.raises(TimeoutError) as e:
            client.lease(timeout=0.05)
        assert e.value.errno == errno.ETIMEDOUT
        assert 'hotplug' in e.value.strerror  # the daemon's words
        held.release()
        hp.join()


def test_a_lease_waiting_behind_a_hotplug_releases_the_gil(cpuhp, daemon, client, observer):
    """Two threads block in C (a hotplug waiting for a lease, a lease waiting
    for that hotplug) while this one keeps running Python and asking the
    daemon; if either held the GIL, the wait below could not see the lease
    queued, and the blocked calls would run into their timeouts."""
    held = observer.lease()
    with cpuhp.Client(daemon.socket) as h:
        hp = Bg(h.set_online, 1, False, GUARD_S)
        wait_until('the hotplug waiting', writer_is(cpuhp, observer, cpuhp.WriterState.WAITING))
        waiting = Bg(client.lease, GUARD_S)
        wait_until('the lease queued', lambda: observer.status().pending_leases == 1)
        assert waiting.is_alive() and hp.is_alive()
        held.release()
        assert hp.join().changed == {1}
        lease = waiting.join()
        # Granted after the hotplug, not before: CPU 1 is already offline.
        assert client.status().offline == {1}
        lease.release()


def test_a_sigkilled_python_lease_holder_lets_a_waiting_hotplug_proceed(cpuhp, daemon, sim,
                                                                        client, observer):
    import subprocess
    import sys
    holder = subprocess.Popen(
        [sys.executable, '-c', 'import sys, cpuhp\n'
         'c = cpuhp.Client(sys.argv[1])\n'
         'lease = c.lease()\n'
         'print("held", lease.id, flush=True)\n'
         'sys.stdin.read()\n', daemon.socket],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().startswith('held ')
        hp = Bg(client.set_online, 3, False, GUARD_S)
        wait_until('the hotplug waiting', writer_is(cpuhp, observer, cpuhp.WriterState.WAITING))
        assert sim.read_online(3) == '1' and observer.status().leases_held == 1
        holder.kill()
        assert hp.join().changed == {3}
        assert sim.read_online(3) == '0'
    finally:
        holder.kill()
        holder.wait()


# --- hotplug ----------------------------------------------------------------------

def test_set_online_takes_an_int_an_iterable_or_a_range_list(cpuhp, client, sim):
    r = client.set_online(1, False)
    assert isinstance(r, cpuhp.HotplugResult) and r.ok and r.changed == {1}
    assert sim.read_online(1) == '0'
    r = client.set_online([1, 2], True, timeout=GUARD_S)
    assert [(x.cpu, x.changed, x.ok) for x in r.results] == [(1, True, True), (2, False, True)]
    r = client.set_online(range(2, 4), False)
    assert r.changed == {2, 3}
    r = client.set_online('1-3', True)
    assert r.changed == {2, 3} and r.online is True
    assert client.status().online == {0, 1, 2, 3}


def test_a_cpu_that_cannot_change_raises_its_error_with_every_result(cpuhp, client, sim):
    with pytest.raises(OSError) as e:
        client.set_online('0-1', False)
    r = e.value.result
    assert r.failed == {0} and r.changed == {1} and not r.ok
    assert e.value.errno == r.results[0].errno != 0
    assert 'CPU 0' in str(e.value) and r.results[0].message in str(e.value)
    assert sim.read_online(1) == '0'  # the others went ahead


def test_with_check_false_failures_are_in_the_result(cpuhp, client):
    r = client.set_online([0, 7], False, check=False)
    assert r.failed == {0, 7} and not r.ok and r.changed == set()
    assert all(x.errno and x.message for x in r.results)


def test_hotplug_with_a_lease_held_and_timeout_0_is_blockingioerror(cpuhp, client, observer,
                                                                   sim):
    with observer.lease():
        with pytest.raises(BlockingIOError) as e:
            client.set_online(1, False, timeout=0)
        assert 'lease' in e.value.strerror
        with pytest.raises(TimeoutError) as e:
            client.set_online(1, False, timeout=0.05)
        assert e.value.errno == errno.ETIMEDOUT and 'behind 1 lease:' in e.value.strerror
    assert sim.read_online(1) == '1'  # nothing changed


def test_bad_arguments_are_refused_before_anything_is_sent(cpuhp, daemon, client,
                                                           monkeypatch):
    import cpuhp._cpuset
    import cpuhp._session
    from spy import spy_on
    bad_cpus = [-1, [1, -2], '1-', 'garbage', '3-1', '', [], range(0), cpuhp.CPUSET_MAX,
                '1\x00', 1.0, None, b'1', True]
    with spy_on(monkeypatch, cpuhp._session, cpuhp._cpuset) as lib:
        for cpus in bad_cpus:
            with pytest.raises((ValueError, TypeError)):
                client.set_online(cpus, False)
        for online in (1, None, 'yes'):
            with pytest.raises(TypeError):
                client.set_online(1, online)
        for timeout in (-1, float('nan'), 1e10):
            with pytest.raises(ValueError):
                client.set_online(1, False, timeout=timeout)
            with pytest.raises(ValueError):
                client.lease(timeout=timeout)
            with pytest.raises(ValueError):
                client.next_event(timeout=timeout)
        with pytest.raises(TypeError):
            client.lease(timeout='1')
        assert lib.called('cpuhp_client_') == []
        client.status()  # the spy does see the calls that are made
        assert lib.called('cpuhp_client_') == ['cpuhp_client_status']
    assert 'asks CPUs' not in daemon.log() and 'lease' not in daemon.log()
    assert client.status().pending_hotplugs == 0


# --- events -----------------------------------------------------------------------

def test_watch_yields_the_events_of_a_hotplug_in_order(cpuhp, client, observer):
    events = client.watch(timeout=GUARD_S)  # subscribed already
    observer.set_online('1-2', False)
    started, finished, changed = itertools.islice(events, 3)
    assert started == cpuhp.HotplugStarted(cpus=frozenset({1, 2}), online=False)
    assert finished == cpuhp.HotplugFinished(cpus=frozenset({1, 2}), online=False, ok=True,
                                             failed=frozenset())
    assert changed == cpuhp.OnlineChanged(online_cpus=frozenset({0, 3}), external=False)
    assert all(isinstance(e, cpuhp.Event) for e in (started, finished, changed))
    assert list(client.watch(timeout=0)) == []  # nothing more: the iteration ends


def test_a_failed_hotplug_event_names_the_cpus_that_failed(cpuhp, client, observer):
    client.watch()
    observer.set_online('0-1', False, check=False)
    assert isinstance(client.next_event(GUARD_S), cpuhp.HotplugStarted)
    ev = client.next_event(GUARD_S)
    assert ev.ok is False and ev.failed == {0} and ev.cpus == {0, 1}


def test_changes_behind_the_daemons_back_are_external_events(cpuhp, daemon, sim, client):
    client.watch()
    sim.write_online(2, 0)
    daemon.inject_uevent('offline', '/devices/system/cpu/cpu2')
    ev = client.next_event(GUARD_S)
    assert ev == cpuhp.OnlineChanged(online_cpus=frozenset({0, 1, 3}), external=True)


def test_next_event_returns_none_when_nothing_comes(cpuhp, client):
    assert client.next_event(0) is None  # subscribes on first use
    assert client.next_event(0.01) is None


def test_fileno_polls_readable_when_an_event_arrives(cpuhp, client, observer):
    client.watch()
    fd = client.fileno()
    assert isinstance(fd, int) and fd >= 0
    observer.set_online(1, False)
    assert select.select([fd], [], [], GUARD_S)[0] == [fd]
    assert isinstance(client.next_event(0), cpuhp.HotplugStarted)


def test_a_hot_added_cpu_is_a_present_changed_event(cpuhp, daemon, sim, client):
    """A vCPU plugged in: the present set grows, the new CPU waits offline."""
    client.watch()
    (sim.cpu / 'cpu4').mkdir()
    sim.write_online(4, 0)
    (sim.cpu / 'possible').write_text('0-4\n')
    (sim.cpu / 'present').write_text('0-4\n')
    daemon.inject_uevent('add', '/devices/system/cpu/cpu4')
    ev = client.next_event(GUARD_S)
    assert ev == cpuhp.PresentChanged(present_cpus=frozenset(range(5)), added=frozenset({4}),
                                      removed=frozenset(), online_cpus=frozenset(range(4)))
    assert isinstance(ev, cpuhp.Event)


def test_a_stopping_daemon_ends_the_watch_with_an_oserror(cpuhp, tmp, sim):
    d = fixture.Daemon(tmp, sim.root).start()
    try:
        with cpuhp.Client(d.socket) as c:
            c.watch()
            waiter = Bg(c.next_event, GUARD_S)
            wait_until('the watcher inside next_event', lambda: c._busy)
            assert d.stop() == 0
            with pytest.raises(OSError) as e:
                waiter.join()
            assert e.value.errno in (errno.ECANCELED, errno.ECONNRESET)
    finally:
        d.kill()


def test_calls_after_the_daemon_died_are_connectionerror(cpuhp, tmp, sim):
    d = fixture.Daemon(tmp, sim.root).start()
    try:
        with cpuhp.Client(d.socket) as c:
            c.status()
            d.kill()
            with pytest.raises(ConnectionError):
                c.status()
    finally:
        d.kill()


# --- errors -----------------------------------------------------------------------

@pytest.mark.parametrize('code, cls', [
    (errno.ETIMEDOUT, TimeoutError), (errno.EPERM, PermissionError),
    (errno.EACCES, PermissionError), (errno.ENOENT, FileNotFoundError),
    (errno.ECONNREFUSED, ConnectionRefusedError), (errno.ECONNRESET, ConnectionResetError),
    (errno.EAGAIN, BlockingIOError), (errno.ESRCH, ProcessLookupError),
    (errno.EINVAL, OSError), (errno.EDQUOT, OSError)])
def test_negative_errno_becomes_the_matching_oserror_subclass(cpuhp, code, cls):
    from cpuhp._errors import error
    e = error(-code, 'the daemon said so')
    assert type(e) is cls and e.errno == code and e.strerror == 'the daemon said so'
    assert error(-code).strerror  # the C library's text when there is no message


def test_status_reports_the_fast_path_and_its_counts(cpuhp, client, observer):
    before = observer.status()
    assert before.fast_path in ('membarrier-global-expedited', 'membarrier-global', 'fence',
                                'off')
    assert before.fast_leases_held == before.fast_holders == 0
    with client.lease() as lease:
        s = observer.status()
        if before.fast_path == 'off':
            assert s.fast_leases_held == 0 and s.fast_connections == 0
        else:
            assert lease.id >= 1 << 63  # a fast lease
            assert s.fast_leases_held == s.fast_holders == s.fast_connections == 1
            assert s.leases_held == 1  # counted there too


# --- threads sharing a Client ---------------------------------------------------------

def thread_asleep(thread):
    """The thread sleeps in the kernel (in its poll()), per /proc."""
    with open(f'/proc/self/task/{thread.native_id}/stat') as f:
        return f.read().rsplit(')', 1)[1].split()[0] == 'S'


def test_a_thread_blocked_in_watch_holds_up_no_lease_of_the_same_client(cpuhp, daemon, client,
                                                                         observer):
    """Before, the watcher held the Client while it waited, and a
    lease(timeout=0.1) waited for the watcher's next event instead."""
    events = client.watch()
    watcher = Bg(lambda: list(itertools.islice(events, 4)))
    wait_until('the watcher asleep', lambda: thread_asleep(watcher))
    with client.lease(timeout=0.1):  # granted at once: no hotplug in the way
        assert observer.status().leases_held == 1
    held = observer.lease()
    with cpuhp.Client(daemon.socket) as h:
        hp = Bg(h.set_online, 1, False, GUARD_S)
        # The holder is told that the hotplug waits for it (once cpuhpd counted the leases).
        assert isinstance(observer.next_event(GUARD_S), cpuhp.HotplugPending)
        with pytest.raises(TimeoutError):  # the daemon's 0.1 s, not the watcher's wait
            client.lease(timeout=0.1)
        assert watcher.is_alive()  # no event came: the lease did not wait for one
        assert client.status().pending_leases == 0
        held.release()
        assert hp.join().changed == {1}
    pending, started, finished, changed = watcher.join()
    assert isinstance(pending, cpuhp.HotplugPending) and pending.cpus == {1}, pending
    assert isinstance(started, cpuhp.HotplugStarted) and changed.online_cpus == {0, 2, 3}


def test_events_read_by_another_threads_call_still_reach_the_watcher(cpuhp, client, observer):
    """A call on the Client's connection (status) reads whatever came before
    its reply, events too; the watcher in poll() is woken for them."""
    events = client.watch()
    watcher = Bg(lambda: list(itertools.islice(events, 6)))
    wait_until('the watcher asleep', lambda: thread_asleep(watcher))
    for cpus in ('1', '2'):
        observer.set_online(cpus, False)
        client.status()  # likely to find the three events ahead of its reply
    got = watcher.join()
    assert [type(e) for e in got] == [cpuhp.HotplugStarted, cpuhp.HotplugFinished,
                                      cpuhp.OnlineChanged] * 2
    assert got[-1].online_cpus == {0, 3}


def test_a_lease_on_a_client_without_the_fast_path_waits_on_a_connection_of_its_own(
        cpuhp, daemon, observer, monkeypatch):
    monkeypatch.setenv('CPUHP_CLIENT_FAST_PATH', '0')
    with cpuhp.Client(daemon.socket) as c:
        events = c.watch()
        watcher = Bg(next, events)
        wait_until('the watcher asleep', lambda: thread_asleep(watcher))
        with c.lease(timeout=0.1) as lease:
            assert lease.id < 1 << 63  # a socket lease
            s = observer.status()
            assert s.leases_held == 1 and s.connections == 3  # observer, c, the lease's
        wait_until('its connection closed', lambda: observer.status().connections == 2)
        observer.set_online(1, False)
        assert isinstance(watcher.join(), cpuhp.HotplugStarted)


def test_cpus_lists_each_cpu_with_its_topology_states_and_hotplugs(cpuhp, daemon, sim, client,
                                                                  observer):
    rows = client.cpus()
    assert [r.cpu for r in rows] == [0, 1, 2, 3]
    assert all(isinstance(r, cpuhp.CpuInfo) for r in rows)
    # cpuhpd-simsysfs --cpus: a core of its own each, package 0, node 0.
    assert [(r.online, r.present, r.topology, r.node, r.socket, r.core, r.siblings)
            for r in rows] == [(True, True, 'live', 0, 0, n, frozenset({n})) for n in range(4)]
    assert all(r.states == () and r.hotplugs == 0 and r.hotplug_seq is None for r in rows)
    with client.register_state('pools', nocalls=True):
        client.set_online(2, False, timeout=GUARD_S)
        # The kernel takes an offline CPU's topology/ away; cpuhpd remembers it.
        for f in (sim.cpu / 'cpu2' / 'topology').iterdir():
            f.unlink()
        (sim.cpu / 'cpu2' / 'topology').rmdir()
        client.set_online(3, False, timeout=GUARD_S)
        client.set_online(3, True, timeout=GUARD_S)  # the state's startup runs on CPU 3
        lease = client.lease()
        with cpuhp.Client(daemon.socket) as h:
            hp = Bg(h.set_online, 1, False, GUARD_S)
            wait_until('the hotplug waiting', writer_is(cpuhp, observer,
                                                        cpuhp.WriterState.WAITING))
            rows = observer.cpus()
            lease.release()
            hp.join()
    two, three, one = rows[2], rows[3], rows[1]
    assert (two.online, two.topology, two.core, two.siblings) == (False, 'remembered', 2,
                                                                  frozenset({2}))
    # nocalls: taken as started on the CPUs online then, called on none; gone with CPU 2.
    assert three.states == one.states == ('pools',) and two.states == ()
    assert (one.hotplugs, one.hotplug_online, one.hotplug_state) == (1, False,
                                                                    cpuhp.WriterState.WAITING)
    assert one.hotplug_seq > 0 and three.hotplugs == 0 and three.hotplug_state is None
