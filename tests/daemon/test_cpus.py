# SPDX-License-Identifier: LGPL-2.1-or-later
"""The CPUs as rows, offline ones included: cpuhpd-simsysfs's topology
files (topology/ of each online CPU, node links), what cpuhpd reads and
remembers of them (ListCpus), across a CPU going offline (the test plays
the kernel and removes its topology/) and across cpuhpd restarts."""
import json
import pathlib
import re
import shutil
import signal
import subprocess

import pytest

import fixture

GUARD_S = fixture.GUARD_S


def topo(sim, n, cpu=None):
    """What the tree says of CPU n: (core, package, siblings, node links), None for absent
    files; of the tree whose devices/system/cpu is *cpu*, else *sim*'s."""
    d = (cpu or sim.cpu) / f'cpu{n}'
    t = d / 'topology'

    def read(name):
        p = t / name
        return p.read_text().strip() if p.exists() else None

    return (read('core_id'), read('physical_package_id'), read('thread_siblings_list'),
            sorted(p.name for p in d.glob('node[0-9]*')))


def test_simsysfs_invents_packages_nodes_and_offline_cpus(tmp):
    sim = fixture.SimSysfs(tmp / 'sys', cpus='0-7', extra=['--smt', '2', '--sockets', '2',
                                                         '--nodes', '2', '--offline', '5'])
    # 4 cores (x86 numbering: core i mod 4), 2 per package, a node each package.
    assert {n: topo(sim, n) for n in range(8)} == {
        0: ('0', '0', '0,4', ['node0']),
        1: ('1', '0', '1', ['node0']),      # its sibling 5 is offline: not listed
        2: ('0', '1', '2,6', ['node1']),
        3: ('1', '1', '3,7', ['node1']),
        4: ('0', '0', '0,4', ['node0']),
        5: (None, None, None, ['node0']),   # offline: no topology/, its node link stays
        6: ('0', '1', '2,6', ['node1']),
        7: ('1', '1', '3,7', ['node1']),
    }
    assert (sim.cpu / 'cpu0' / 'node0').resolve() == (sim.root / 'devices/system/node/node0')
    assert sim.read_online(5) == '0'
    assert (sim.cpu / 'online').read_text() == '0-4,6-7\n'
    assert (sim.cpu / 'offline').read_text() == '5\n'
    # Without the options: one package, node 0, a core per CPU.
    plain = fixture.SimSysfs(tmp / 'plain', cpus='0-2')
    assert [topo(plain, n) for n in range(3)] == [
        ('0', '0', '0', ['node0']), ('1', '0', '1', ['node0']), ('2', '0', '2', ['node0'])]


def test_simsysfs_mirrors_this_machines_topology(tmp):
    sim = fixture.SimSysfs(tmp / 'sys')
    real = pathlib.Path('/sys/devices/system/cpu')
    cpus = sorted(int(p.name[3:]) for p in real.glob('cpu[0-9]*'))
    assert cpus
    for n in cpus:
        want = topo(None, n, real)
        if want[0] is None:       # offline here, or no topology: nothing to mirror
            assert topo(sim, n)[:3] == (None, None, None)
        else:
            assert topo(sim, n) == want


def test_simsysfs_refuses_shapes_that_do_not_divide(tmp):
    def run(*args):
        return subprocess.run([str(fixture.SIMSYSFS), *args, str(tmp / 'x')],
                              capture_output=True, text=True, timeout=GUARD_S)

    r = run('--cpus', '0-5', '--sockets', '4')
    assert r.returncode == 2 and '6 cores do not split into 4' in r.stderr, r
    r = run('--cpus', '0-7', '--smt', '2', '--nodes', '3')
    assert r.returncode == 2 and '4 cores do not split into 3' in r.stderr, r
    r = run('--cpus', '0-3', '--offline', '0')
    assert r.returncode == 2 and 'CPU 0 is the first' in r.stderr, r
    r = run('--cpus', '0-3', '--offline', '9')
    assert r.returncode == 2 and 'CPU 9 is not in --cpus' in r.stderr, r
    r = run('--nodes', '2')
    assert r.returncode == 2 and '--nodes needs --cpus' in r.stderr, r
    r = run('--cpus', '0-3', '--sockets', '0')
    assert r.returncode == 2 and 'from 1 to' in r.stderr, r


# --- cpuhpd: ListCpus, `cpuhpctl cpus` -------------------------------------------------

def ctl(daemon, *args, check=True):
    r = subprocess.run([str(fixture.CPUHPCTL), '--socket', daemon.socket,
                        *(str(a) for a in args)],
                       capture_output=True, text=True, timeout=GUARD_S)
    if check:
        assert r.returncode == 0, r
    return r


def cpus(daemon):
    """`cpuhpctl --json cpus` as {cpu: row}, in the order listed (ascending, each once)."""
    rows = json.loads(ctl(daemon, '--json', 'cpus').stdout)['cpus']
    assert [r['cpu'] for r in rows] == sorted({r['cpu'] for r in rows}), rows
    return {r['cpu']: r for r in rows}


def shape(row):
    return (row['online'], row['topology'], row['node'], row['socket'], row['core'],
            row['siblings'])


def play_kernel_offline(sim, n):
    """What the kernel does to sysfs when CPU n goes: its topology/ goes too."""
    shutil.rmtree(sim.cpu / f'cpu{n}' / 'topology')


@pytest.fixture
def numa(tmp):
    """CPUs 0-7: 4 cores of 2 threads, 2 packages, 2 nodes; CPU 5 never brought up."""
    return fixture.SimSysfs(tmp / 'sys', cpus='0-7', extra=['--smt', '2', '--sockets', '2',
                                                          '--nodes', '2', '--offline', '5'])


@pytest.fixture
def daemon_numa(tmp, numa):
    d = fixture.Daemon(tmp, numa.root).start()
    yield d
    d.stop_clean()


LIVE3 = (True, 'live', 1, 1, 1, [3, 7])
REMEMBERED3 = (False, 'remembered', 1, 1, 1, [3, 7])
UNKNOWN = (False, 'unknown', None, None, None, None)


def test_cpus_lists_each_cpu_with_its_topology(daemon_numa):
    rows = cpus(daemon_numa)
    assert {n: shape(r) for n, r in rows.items()} == {
        0: (True, 'live', 0, 0, 0, [0, 4]),
        1: (True, 'live', 0, 0, 1, [1]),
        2: (True, 'live', 1, 1, 0, [2, 6]),
        3: LIVE3,
        4: (True, 'live', 0, 0, 0, [0, 4]),
        5: UNKNOWN,                     # never seen online: the kernel shows no topology
        6: (True, 'live', 1, 1, 0, [2, 6]),
        7: (True, 'live', 1, 1, 1, [3, 7]),
    }
    assert all(r['present'] and r['states'] == [] and r['hotplugs'] == 0 and
               r['hotplug_seq'] is r['hotplug_action'] is r['hotplug_state'] is None
               for r in rows.values()), rows
    assert 'hotplug' not in rows[0]     # the text column; JSON has its parts
    text = ctl(daemon_numa, 'cpus').stdout.splitlines()
    assert text[0].split() == ['CPU', 'NODE', 'SOCKET', 'CORE', 'SIBLINGS', 'ONLINE',
                               'TOPOLOGY', 'STATES', 'HOTPLUG'], text
    assert text[6].split() == ['5', '-', '-', '-', '-', 'no', 'unknown', '-'], text
    assert text[-1] == ('8 CPU(s), 7 online; 1 CPU(s) not seen online since boot: topology '
                        'unknown.'), text


def test_an_offline_cpu_shows_the_topology_it_had(tmp, numa, daemon_numa):
    assert ctl(daemon_numa, 'offline', 3).stdout == 'CPU 3 disabled\n'
    play_kernel_offline(numa, 3)
    assert shape(cpus(daemon_numa)[3]) == REMEMBERED3
    r = ctl(daemon_numa, 'cpus', '-o', 'cpu,topology,core', '--raw', '--noheadings')
    assert r.stdout.splitlines()[3] == '3 remembered 1', r.stdout
    # A CPU coming up (the kernel makes its topology/ first) is read again.
    numa.write_online(3, 0)
    (numa.cpu / 'cpu3' / 'topology').mkdir()
    for name, text in [('core_id', '9'), ('physical_package_id', '1'),
                       ('thread_siblings_list', '3,7')]:
        (numa.cpu / 'cpu3' / 'topology' / name).write_text(text + '\n')
    assert ctl(daemon_numa, 'online', 3).stdout == 'CPU 3 enabled\n'
    assert shape(cpus(daemon_numa)[3]) == (True, 'live', 1, 1, 9, [3, 7])


def offline_3_then_stop(tmp, numa, how='SIGTERM'):
    """A cpuhpd that saw CPU 3 online, then took it offline, and stopped (@how)."""
    d = fixture.Daemon(tmp, numa.root).start()
    ctl(d, 'offline', 3)
    play_kernel_offline(numa, 3)
    if how == 'SIGKILL':
        d.kill()
    else:
        assert d.stop() == 0


class Next:
    """The next cpuhpd on the same tree and runtime directory, stopped clean at the end."""

    def __init__(self, tmp, numa):
        self.d = fixture.Daemon(tmp, numa.root)

    def __enter__(self):
        return self.d.start()

    def __exit__(self, *exc):
        self.d.stop_clean()


@pytest.mark.parametrize('how', ['SIGTERM', 'SIGKILL'])
def test_the_topology_is_remembered_across_a_restart(tmp, numa, how):
    offline_3_then_stop(tmp, numa, how)
    with Next(tmp, numa) as d2:
        rows = cpus(d2)
        assert shape(rows[3]) == REMEMBERED3
        assert shape(rows[5]) == UNKNOWN
        assert 'topology: 7 CPU(s) remembered from' in d2.log()


def test_a_reboot_forgets_what_was_not_seen_online_since(tmp, numa):
    offline_3_then_stop(tmp, numa)
    (saved,) = tmp.glob('cpuhpd-*.topology')
    text = saved.read_text()
    assert text.splitlines()[0] == 'cpuhpd-topology 1'
    assert 'cpu 3 1 1 1 3,7\n' in text
    # Written in another boot: the file names the boot_id it was written in.
    saved.write_text(re.sub(r'(?m)^boot .*$', 'boot 00000000-0000-4000-8000-000000000000',
                            text))
    with Next(tmp, numa) as d2:
        rows = cpus(d2)
        assert shape(rows[3]) == UNKNOWN
        assert shape(rows[7]) == (True, 'live', 1, 1, 1, [3, 7])
        assert 'was written before the last boot' in d2.log()


def test_a_topology_file_that_does_not_parse_is_forgotten_whole(tmp, numa):
    offline_3_then_stop(tmp, numa)
    (saved,) = tmp.glob('cpuhpd-*.topology')
    saved.write_text(saved.read_text() + 'cpu 5 1 1 1 \x1b[31m\n')
    with Next(tmp, numa) as d2:
        assert shape(cpus(d2)[3]) == UNKNOWN
        assert 'not a topology file' in d2.log()
    # The new cpuhpd wrote what it saw: the next one reads it.
    assert saved.read_text().startswith('cpuhpd-topology 1\n')


def test_cpus_names_the_states_and_the_hotplugs_on_each_cpu(daemon_numa):
    hook = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon_numa.socket, 'state',
                             'pools', '--nocalls', '--startup', 'true', '--teardown', 'true'],
                            stdout=subprocess.PIPE, text=True)
    hold = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon_numa.socket, 'hold',
                             '--', 'sh', '-c', 'echo held; read x'],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    off = None
    try:
        assert hook.stdout.readline().startswith('state pools registered')
        assert hold.stdout.readline() == 'held\n'
        # A hotplug behind the lease, waiting.
        off = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon_numa.socket,
                                'offline', '--timeout', '60s', '6-7'],
                               stdout=subprocess.PIPE, text=True)
        # Its request is in the queue once `leases` lists it (requests are served in order).
        while not json.loads(ctl(daemon_numa, '--json', 'leases').stdout)['hotplugs']:
            pass
        rows = cpus(daemon_numa)
        assert [rows[n]['hotplugs'] for n in range(8)] == [0] * 6 + [1, 1]
        seq = rows[6]['hotplug_seq']
        assert seq >= 1 and rows[7]['hotplug_seq'] == seq
        assert [(rows[n]['hotplug_action'], rows[n]['hotplug_state']) for n in (5, 6, 7)] == [
            (None, None), ('offline', 'waiting'), ('offline', 'waiting')]
        text = ctl(daemon_numa, 'cpus', '-o', 'CPU,HOTPLUG', '--raw').stdout.splitlines()
        assert text[6:9] == ['5 -', f'6 offline\\x20#{seq}\\x20waiting',
                             f'7 offline\\x20#{seq}\\x20waiting'], text
        hold.stdin.close()
        assert off.wait(timeout=GUARD_S) == 0
        # CPU 6 back, the state's startup runs there: started on it again; CPU 5 never was.
        ctl(daemon_numa, 'online', 6)
        rows = cpus(daemon_numa)
        assert rows[6]['states'] == ['pools'] and rows[5]['states'] == [], rows
        assert rows[6]['hotplugs'] == 0 and rows[6]['hotplug_seq'] is None
        text = ctl(daemon_numa, 'cpus', '-o', 'CPU,STATES', '--raw').stdout.splitlines()
        assert text[7] == '6 pools', text
    finally:
        for p in (hold, off, hook):
            if p and p.poll() is None:
                if p is hook:
                    p.send_signal(signal.SIGTERM)
                else:
                    p.kill()
                p.wait(timeout=GUARD_S)
        for p in (hold, off, hook):
            if p and p.stdout:
                p.stdout.close()


def test_cpus_pages_through_a_big_machine(tmp):
    """8192 CPUs do not fit in one 64 KiB frame: the client asks page after
    page.  The tree is the masks alone (a CPU without files of its own is
    as the masks say, and its topology unknown), which a test makes at once."""
    cpu = tmp / 'sys' / 'devices' / 'system' / 'cpu'
    cpu.mkdir(parents=True)
    for mask, text in [('possible', '0-8191'), ('present', '0-8191'), ('online', '0-4095'),
                       ('offline', '4096-8191')]:
        (cpu / mask).write_text(text + '\n')
    d = fixture.Daemon(tmp, tmp / 'sys').start()
    try:
        rows = cpus(d)
        assert list(rows) == list(range(8192))
        assert [r['online'] for r in rows.values()] == [True] * 4096 + [False] * 4096
        assert all(shape(r)[1:] == UNKNOWN[1:] for r in rows.values())
    finally:
        d.stop_clean()
