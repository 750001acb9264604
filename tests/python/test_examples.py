# SPDX-License-Identifier: LGPL-2.1-or-later
"""Runs each program of examples/ and checks what it prints, so that none
can rot.  Registered by examples/meson.build (suite 'examples'), one meson
test per example (-k readers, -k lease, -k ready, -k hotplug_py); the daemon an
example needs is started here, on a simulated tree.

A hotplug that must be waiting is observed through `cpuhpctl status`
(each try a round trip), never by sleeping."""
import os
import re
import signal
import subprocess
import sys

import fixture
from conftest import GUARD_S, wait_until

EXAMPLES = fixture.BUILD / 'examples'
READERS = EXAMPLES / 'readers'
LEASE = EXAMPLES / 'lease'
READY = EXAMPLES / 'ready'
HOTPLUG_PY = fixture.SOURCE / 'examples' / 'hotplug.py'


def run(argv, **kw):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                          timeout=GUARD_S, **kw)


def ctl_status(socket_path):
    r = run([fixture.CPUHPCTL, '--socket', socket_path, 'status'])
    assert r.returncode == 0, r.stderr
    return {k.strip(): v.strip() for k, _, v in
            (line.partition(':') for line in r.stdout.splitlines())}


def wait_writer_waiting(socket_path):
    def waiting():
        s = ctl_status(socket_path)
        return s if s['writer'].startswith('waiting') else None
    return wait_until('a hotplug waiting', waiting)


# --- readers.c --------------------------------------------------------------------

def test_readers_walk_each_state_of_the_set_once_and_never_see_it_change_mid_walk():
    r = run([READERS, '--cpus', '0-3', '--readers', '3', '--flips', '4'])
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [re.sub(r'^\[ *[\d.]+ ms\] ', '', line) for line in r.stdout.splitlines()]
    assert lines[0] == 'start:    3 readers, online CPUs 0-3; CPU 3 will be flipped 4 times'
    writer = [line for line in lines if line.startswith('writer:')]
    assert [w.split('CPU 3 ')[1] for w in writer] == [
        'offline, online CPUs now 0-2', 'online, online CPUs now 0-3'] * 2
    # Each reader walked every state, in order, once each.
    for n in range(3):
        walks = [line.split(': walked online CPUs ')[1] for line in lines
                 if line.startswith(f'reader {n}:')]
        assert walks == ['0-3 (4 CPUs)', '0-2 (3 CPUs)'] * 2 + ['0-3 (4 CPUs)'], lines
    done = [line for line in lines if line.startswith('done:')]
    assert len(done) == 3 and all(d.endswith(', 0 saw the set change mid-walk') for d in done)
    # The timeline is in order: no reader saw a state before the writer made it.
    first_offline = lines.index(writer[0])
    assert all('0-2' not in line for line in lines[:first_offline])


def test_readers_refuses_bad_arguments_saying_what_it_wants():
    r = run([READERS, '--cpus', '5'])
    assert r.returncode == 2 and 'at least two CPUs' in r.stderr
    r = run([READERS, '--readers', '0'])
    assert r.returncode == 2 and '--readers wants a number from 1 to 16' in r.stderr
    r = run([READERS, '--help'])
    assert r.returncode == 0 and r.stdout.startswith('Usage: readers')


# --- lease.c ----------------------------------------------------------------------

def paused_lease(socket_path):
    """lease --pause, once it holds its lease and waits in its critical section."""
    holder = subprocess.Popen([str(LEASE), '--socket', socket_path, '--pause'],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = ''
    while not line.startswith('lease: pausing'):
        line = holder.stdout.readline()
        if not line:
            holder.kill()
            raise AssertionError(f'lease ended (exit {holder.wait()}) before its critical '
                                 'section')
    return holder


def offline(socket_path, cpu):
    """cpuhpctl offline @cpu, started: it waits behind any lease held."""
    return subprocess.Popen([str(fixture.CPUHPCTL), '--socket', socket_path, 'offline',
                             '--timeout', str(GUARD_S * 1000), str(cpu)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_lease_example_holds_a_lease_around_its_critical_section(daemon):
    r = run([LEASE, '--socket', daemon.socket])
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert re.fullmatch(r'lease: lease \d+ held from cpuhpd \S+: online CPUs 0-3 will not '
                        r'change until it is released', out[0]), out
    assert out[1:] == ['lease: critical section: 4 workers started, one per online CPU',
                       'lease: workers done; the online CPUs did not change',
                       out[0].split(' held')[0] + ' released'], out
    assert ctl_status(daemon.socket)['leases held'] == '0'


def test_lease_example_finds_the_daemon_through_cpuhp_socket(daemon):
    r = run([LEASE], env=dict(os.environ, CPUHP_SOCKET=daemon.socket))
    assert r.returncode == 0 and 'released' in r.stdout, r.stderr


def test_a_hotplug_waits_for_the_lease_example_and_runs_once_it_leaves(daemon, sim):
    holder = paused_lease(daemon.socket)
    try:
        hp = offline(daemon.socket, 3)
        s = wait_writer_waiting(daemon.socket)
        assert s['leases held'] == '1' and sim.read_online(3) == '1'
        out, _ = holder.communicate('\n', timeout=GUARD_S)
        assert holder.returncode == 0, out
        assert 'the online CPUs did not change' in out
        out, _ = hp.communicate(timeout=GUARD_S)
        assert hp.returncode == 0, out
        assert sim.read_online(3) == '0'
    finally:
        holder.kill()
        holder.wait()


def test_a_killed_lease_example_lets_the_waiting_hotplug_through(daemon, sim):
    holder = paused_lease(daemon.socket)
    try:
        hp = offline(daemon.socket, 2)
        wait_writer_waiting(daemon.socket)
        holder.send_signal(signal.SIGKILL)
        out, _ = hp.communicate(timeout=GUARD_S)
        assert hp.returncode == 0, out
        assert sim.read_online(2) == '0'
    finally:
        holder.kill()
        holder.wait()


def test_lease_example_says_what_to_do_when_the_daemon_is_not_there(tmp):
    r = run([LEASE, '--socket', tmp / 'none.sock'])
    assert r.returncode == 1
    assert 'cannot connect to cpuhpd' in r.stderr and 'is it running' in r.stderr
    r = run([LEASE, '--timeout', 'soon'])
    assert r.returncode == 2 and 'milliseconds' in r.stderr
    assert run([LEASE, '--help']).stdout.startswith('Usage: lease')


# --- ready.c ----------------------------------------------------------------------

def test_ready_example_lets_go_on_the_notice_and_the_hotplug_runs_before_its_batch_ends(
        daemon, sim):
    """Its batch would hold the lease 10 minutes: the offline (60 s timeout)
    only gets through because the example releases on the notice."""
    holder = subprocess.Popen([str(READY), '--socket', daemon.socket, '--hold', '600000',
                               '--batches', '2'], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == \
            'ready: batch 1: lease held, work sized for online CPUs 0-3\n'
        r = run([fixture.CPUHPCTL, '--socket', daemon.socket, 'offline', '--timeout', '60s', 3])
        assert r.returncode == 0 and 'CPU 3 disabled' in r.stdout, r
        assert holder.stdout.readline() == \
            'ready: batch 1: hotplug #1 is pending: released the lease early\n'
        # The next batch waited for the hotplug, and is sized for what it left.
        assert holder.stdout.readline() == \
            'ready: batch 2: lease held, work sized for online CPUs 0-2\n'
        r = run([fixture.CPUHPCTL, '--socket', daemon.socket, 'online', '--timeout', '60s', 3])
        assert r.returncode == 0, r
        assert holder.stdout.readline() == \
            'ready: batch 2: hotplug #2 is pending: released the lease early\n'
        assert holder.wait(timeout=GUARD_S) == 0
        assert sim.read_online(3) == '1'
    finally:
        holder.kill()
        holder.wait()


def test_ready_example_with_a_delay(daemon):
    r = run([READY, '--socket', daemon.socket, '--hold', '20', '--batches', '1', '--delay',
             '10000000'])
    assert r.returncode == 0, r
    assert r.stdout.splitlines() == ['ready: delay leases of 5000 ms',
                                     'ready: batch 1: lease held, work sized for online CPUs 0-3',
                                     'ready: batch 1: done, lease released'], r
    assert run([READY, '--help']).stdout.startswith('Usage: ready')
    assert run([READY, '--hold', 'x']).returncode == 2


# --- hotplug.py -------------------------------------------------------------------

def check_hotplug_py_story(out, cpu):
    lines = [line.removeprefix('hotplug.py: ') for line in out.splitlines()]
    i = lines.index(f'admin: CPU {cpu} went offline')
    assert lines[i - 4] == (f'told: hotplug #1 of CPUs {cpu} offline pending: it waits for the '
                            'leases held'), lines
    assert lines[i - 2].startswith(f'admin asked to take CPU {cpu} offline: writer waiting, '
                                   '1 lease held'), lines
    assert lines[i + 1:i + 5] == [f'watcher: hotplug #1 of CPUs {cpu} offline pending: it waits '
                                  'for the leases held',
                                  f'watcher: hotplug of CPUs {cpu} offline started',
                                  f'watcher: hotplug of CPUs {cpu} finished: ok',
                                  'watcher: online CPUs now ' + ('0-2' if cpu == 3 else
                                                                 '0-1,3')], lines
    assert f'admin: CPU {cpu} back online' in lines
    assert lines[-2] == ('status: online 0-3, offline (none), possible 0-3; 0 lease(s) held, '
                         'writer idle'), lines
    assert lines[-1] == 'done'


def test_hotplug_py_runs_its_story_on_a_private_simulated_daemon():
    r = run([sys.executable, '-B', HOTPLUG_PY])
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'started a private cpuhpd on a simulated tree' in r.stdout
    check_hotplug_py_story(r.stdout, 3)


def test_hotplug_py_runs_its_story_against_a_given_daemon(daemon, sim):
    r = run([sys.executable, '-B', HOTPLUG_PY, '--socket', daemon.socket, '--cpu', '2'])
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'private' not in r.stdout
    check_hotplug_py_story(r.stdout, 2)
    assert sim.read_online(2) == '1'
    assert daemon.log().count('CPU 2 disabled') == 1 and daemon.log().count('CPU 2 enabled') == 1


def test_hotplug_py_says_what_is_wrong(daemon, tmp):
    r = run([sys.executable, '-B', HOTPLUG_PY, '--socket', daemon.socket, '--cpu', '9'])
    assert r.returncode == 1 and 'CPU 9 is not online' in r.stderr
    r = run([sys.executable, '-B', HOTPLUG_PY, '--socket', tmp / 'none.sock'])
    assert r.returncode == 1 and 'is cpuhpd running' in r.stderr



# --- percpu-pool.c and percpu_pool.py ----------------------------------------------

PERCPU_POOL = EXAMPLES / 'percpu-pool'
PERCPU_POOL_PY = fixture.SOURCE / 'examples' / 'percpu_pool.py'


def check_pool_story(argv, prefix, daemon, sim):
    """Start the pool, take CPU 2 offline and back, end it: the pool follows the CPUs."""
    pool = subprocess.Popen([str(a) for a in argv] + ['--socket', daemon.socket],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        def line():
            got = pool.stdout.readline()
            assert got, f'the pool ended (exit {pool.wait()})'
            assert got.startswith(prefix), got
            return got.rstrip('\n')[len(prefix):]
        # Registration: a worker per online CPU (pinned where this machine has the CPU).
        started = [line() for _ in range(4)]
        assert [re.fullmatch(r'started (a|an unpinned) worker (on|for) CPU (\d); workers on '
                             r'CPUs (\S+)', x).group(3, 4) for x in started] == \
            [('0', '0'), ('1', '0-1'), ('2', '0-2'), ('3', '0-3')], started
        assert line().endswith('registered; 4 worker(s)')
        r = run([fixture.CPUHPCTL, '--socket', daemon.socket, 'offline', 2])
        assert r.returncode == 0 and sim.read_online(2) == '0', r
        # The pool shrank before the CPU went: cpuhpd waited for the teardown.
        assert line() == 'stopped the worker of CPU 2; workers on CPUs 0-1,3'
        assert re.search(r'^  teardown of state percpu-pool\S* \(pid \d+, ', r.stdout,
                         re.M), r.stdout
        r = run([fixture.CPUHPCTL, '--socket', daemon.socket, 'online', 2])
        assert r.returncode == 0 and sim.read_online(2) == '1', r
        # ... and grew after it came back.
        assert re.fullmatch(r'started (a|an unpinned) worker (on|for) CPU 2; workers on CPUs '
                            r'0-3', line())
        out, _ = pool.communicate('', timeout=GUARD_S)     # EOF: remove the state
        assert pool.returncode == 0, out
        lines = [x[len(prefix):] for x in out.splitlines()]
        assert [x.split(';')[0] for x in lines[:-1]] == \
            [f'stopped the worker of CPU {c}' for c in (3, 2, 1, 0)], lines
        m = re.fullmatch(r'done; (\d+) check\(s\) by pinned workers, 0 on a wrong CPU, 0 '
                         r'with their affinity broken, (\d+) worker\(s\) unpinned', lines[-1])
        assert m, lines
        r = run([fixture.CPUHPCTL, '--socket', daemon.socket, '--json', 'states'])
        assert r.returncode == 0 and '"states":[]' in r.stdout, r
    finally:
        pool.kill()
        pool.wait()


def test_percpu_pool_c_shrinks_before_a_cpu_goes_and_grows_after_it_comes(daemon, sim):
    check_pool_story([PERCPU_POOL], 'percpu-pool: ', daemon, sim)


def test_percpu_pool_c_refuses_a_taken_name_and_bad_arguments(daemon, sim):
    first = subprocess.Popen([str(PERCPU_POOL), '--socket', daemon.socket],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        while 'registered' not in first.stdout.readline():
            pass
        r = run([PERCPU_POOL, '--socket', daemon.socket])
        assert r.returncode == 1 and "'percpu-pool' is registered already" in r.stderr, r
    finally:
        first.kill()
        first.wait()
    r = run([PERCPU_POOL, '--priority', 'high'])
    assert r.returncode == 2 and '--priority wants a number' in r.stderr, r
    assert run([PERCPU_POOL, '--help']).stdout.startswith('Usage: percpu-pool')


def test_percpu_pool_py_shrinks_before_a_cpu_goes_and_grows_after_it_comes(daemon, sim):
    check_pool_story([sys.executable, '-B', PERCPU_POOL_PY], 'percpu_pool.py: ', daemon, sim)


# --- percpu-cache.c ---------------------------------------------------------------

PERCPU_CACHE = EXAMPLES / 'percpu-cache'


def test_percpu_cache_sizes_slabs_in_prepare_and_drains_them_in_dead(daemon, sim):
    cache = subprocess.Popen([str(PERCPU_CACHE), '--socket', daemon.socket, '--cache',
                              'small:1024', '--cache', 'large:256'],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    prefix = 'percpu-cache: '
    try:
        def line():
            got = cache.stdout.readline()
            assert got, f'the example ended (exit {cache.wait()})'
            assert got.startswith(prefix), got
            return got.rstrip('\n')[len(prefix):]
        # One instance per cache, each started on every online CPU, in order.
        got = [line() for _ in range(8)]
        assert got == [f'cache {k}: CPU {c} has a slab of {n}, {n // 2} filled (before it runs '
                       f'anything)' for k, n in (('small', 64), ('large', 16))
                       for c in range(4)], got
        assert line() == 'state percpu-cache registered in the PREPARE section; 2 cache(s)'
        r = run([fixture.CPUHPCTL, '--socket', daemon.socket, 'offline', 2])
        assert r.returncode == 0 and sim.read_online(2) == '0', r
        assert re.search(r'^  PREPARE teardown of state percpu-cache instance large \(pid \d+, ',
                         r.stdout, re.M), r.stdout
        # Drained after the CPU died: newest instance first.
        assert [line(), line()] == ['cache large: drained 8 object(s) of CPU 2 (after it died)',
                                    'cache small: drained 32 object(s) of CPU 2 (after it died)']
        r = run([fixture.CPUHPCTL, '--socket', daemon.socket, '--json', 'states'])
        assert r.returncode == 0 and '"section":"prepare"' in r.stdout, r
        r = run([fixture.CPUHPCTL, '--socket', daemon.socket, 'online', 2])
        assert r.returncode == 0 and sim.read_online(2) == '1', r
        assert [line(), line()] == [
            'cache small: CPU 2 has a slab of 64, 32 filled (before it runs anything)',
            'cache large: CPU 2 has a slab of 16, 8 filled (before it runs anything)']
        out, _ = cache.communicate('', timeout=GUARD_S)     # EOF: remove the caches
        assert cache.returncode == 0, out
        lines = [x[len(prefix):] for x in out.splitlines()]
        assert lines[-3:] == ['cache small: 1024 of 1024 object(s) in the central list',
                              'cache large: 256 of 256 object(s) in the central list',
                              'done; every object is back'], lines
        # Removal drained every slab: large's first (removed first), last CPU first.
        assert lines[:4] == [f'cache large: drained 8 object(s) of CPU {c} (cache removed)'
                             for c in (3, 2, 1, 0)], lines
    finally:
        cache.kill()
        cache.wait()


def test_percpu_cache_refuses_bad_arguments(daemon):
    r = run([PERCPU_CACHE, '--cache', 'nocolon'])
    assert r.returncode == 2 and '--cache wants NAME:OBJECTS' in r.stderr, r
    r = run([PERCPU_CACHE, '--cache', 'x:3'])
    assert r.returncode == 2 and 'OBJECTS must be 16 to 1000000' in r.stderr, r
    assert run([PERCPU_CACHE, '--help']).stdout.startswith('Usage: percpu-cache')
