# SPDX-License-Identifier: LGPL-2.1-or-later
"""The CPUs as rows, offline ones included: cpuhpd-simsysfs's topology
files (topology/ of each online CPU, node links), what cpuhpd reads and
remembers of them (ListCpus), across a CPU going offline (the test plays
the kernel and removes its topology/) and across cpuhpd restarts."""
import pathlib
import subprocess

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
