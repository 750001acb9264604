# SPDX-License-Identifier: LGPL-2.1-or-later
"""The bash completion of cpuhpctl (daemon/cpuhpctl/cpuhpctl.bash), driven
the way bash drives it: COMP_WORDS/COMP_CWORD set, the function that
`complete -p cpuhpctl` names called, COMPREPLY read back.  CPU numbers come
from a simulated tree (CPUHPCTL_SYSFS_ROOT) or the real /sys."""
import pathlib
import re
import shlex
import subprocess

import pytest

import fixture

SCRIPT = fixture.SOURCE / 'daemon' / 'cpuhpctl' / 'cpuhpctl.bash'


def bash(code, env=None):
    r = subprocess.run(['bash', '--norc', '--noprofile', '-c', f'source {shlex.quote(str(SCRIPT))}\n'
                        + code], capture_output=True, text=True, timeout=fixture.GUARD_S,
                       env={'PATH': '/usr/bin:/bin', **(env or {})})
    assert r.returncode == 0 and r.stderr == '', r
    return r.stdout


def complete(line, root=None):
    """The candidates for the last word of @line ('' after a trailing space)."""
    words = line.split(' ')
    arr = ' '.join(shlex.quote(w) for w in words)
    out = bash(f'COMP_WORDS=({arr}); COMP_CWORD={len(words) - 1}\n'
               'fn=$(complete -p cpuhpctl | sed -n "s/.*-F \\([^ ]*\\) .*/\\1/p")\n'
               '"$fn" cpuhpctl\n'
               'printf "%s\\n" "${COMPREPLY[@]}"',
               env={'CPUHPCTL_SYSFS_ROOT': str(root)} if root else None)
    return sorted(x for x in out.splitlines() if x)


def test_it_registers_a_function_for_cpuhpctl():
    assert bash('complete -p cpuhpctl').strip() == 'complete -F _cpuhpctl cpuhpctl'


def test_commands():
    assert complete('cpuhpctl ') == sorted(['status', 'leases', 'cpus', 'states', 'state',
                                            'online', 'offline', 'smt', 'watch', 'hold',
                                            'freeze', 'metrics', 'plan', 'new-cpu', 'help'])
    assert complete('cpuhpctl of') == ['offline']
    assert complete('cpuhpctl --socket /run/x.sock st') == ['state', 'states', 'status']


def test_options_are_the_ones_cpuhpctl_has():
    def has(*args):
        r = subprocess.run([str(fixture.CPUHPCTL), *args, '--help'], capture_output=True,
                           text=True, timeout=fixture.GUARD_S)
        # Every command takes -h/--help (its usage says so only on the program's).
        return set(re.findall(r'(?<![\w-])(--?[a-zA-Z][a-z-]*)', r.stdout)) | {'-h', '--help'}
    for line, args in (('cpuhpctl -', ()), ('cpuhpctl online -', ('online',)),
                       ('cpuhpctl watch -', ('watch',)), ('cpuhpctl hold -', ('hold',)),
                       ('cpuhpctl freeze -', ('freeze',)),
                       ('cpuhpctl leases -', ('leases',)), ('cpuhpctl status -', ('status',)),
                       ('cpuhpctl states -', ('states',)), ('cpuhpctl state x -', ('state',)),
                       ('cpuhpctl cpus -', ('cpus',)),
                       ('cpuhpctl smt -', ('smt',)), ('cpuhpctl metrics -', ('metrics',)),
                       ('cpuhpctl plan -', ('plan',)), ('cpuhpctl new-cpu -', ('new-cpu',))):
        got = set(complete(line)) - {'--'}
        assert got and got <= has(*args), (line, got - has(*args))
    assert {'--socket', '--version', '--help'} <= set(complete('cpuhpctl --'))
    assert '--timeout' in complete('cpuhpctl offline --')
    assert '--persist' in complete('cpuhpctl offline --') and '--persist' in complete('cpuhpctl smt --')
    assert complete('cpuhpctl new-cpu --') == ['--help', '--timeout']
    assert '--timeout' not in complete('cpuhpctl freeze --')
    assert '--why' in complete('cpuhpctl freeze --')


def test_smt_words():
    assert complete('cpuhpctl smt ') == ['off', 'on']
    assert complete('cpuhpctl smt --force ') == ['forceoff', 'off', 'on']
    assert complete('cpuhpctl smt --timeout ') == []


def test_cpu_numbers_come_from_the_tree(tmp):
    sim = fixture.SimSysfs(tmp / 'sys', cpus='0-5')   # CPU 0 has no online file
    sim.write_online(2, 0)
    sim.write_online(4, 0)
    assert complete('cpuhpctl offline ', sim.root) == ['1', '3', '5']
    assert complete('cpuhpctl online ', sim.root) == ['2', '4']
    assert complete('cpuhpctl --socket /x offline --timeout 10 3', sim.root) == ['3']
    assert complete('cpuhpctl online 2,', sim.root) == ['2,2', '2,4']
    assert complete('cpuhpctl offline 1-', sim.root) == ['1-1', '1-3', '1-5']
    assert complete('cpuhpctl offline --timeout ', sim.root) == []
    # The command line's --sysfs-root wins, as it does for cpuhpctl.
    assert complete(f'cpuhpctl --sysfs-root {sim.root} offline ') == ['1', '3', '5']
    assert complete(f'cpuhpctl --sysfs-root={sim.root} online ', '/nonexistent') == ['2', '4']
    assert '--sysfs-root' in complete('cpuhpctl --sy')


def test_cpu_numbers_default_to_the_real_sys():
    cpu = pathlib.Path('/sys/devices/system/cpu')
    files = list(cpu.glob('cpu[0-9]*/online'))
    if not files:
        pytest.skip('skipped: this machine has no hotpluggable CPU in /sys')
    def online():
        return sorted(f.parent.name[3:] for f in files if f.read_text().strip() == '1')
    # A real-hotplug test running beside this one may flip a CPU between our
    # read and the completion's: compare only when /sys held still around it.
    for _ in range(20):
        before = online()
        got = complete('cpuhpctl offline ')
        if online() == before:
            break
    assert got == before


def test_hold_completes_the_command_to_run():
    assert 'true' in complete('cpuhpctl hold -- tru')
    assert 'true' in complete('cpuhpctl hold --timeout 5 tru')
    assert complete('cpuhpctl hold --timeout ') == []
    assert complete('cpuhpctl hold --grace ') == []
    assert 'true' in complete('cpuhpctl hold --strict --grace 100 tru')
    assert {'--strict', '--grace'} <= set(complete('cpuhpctl hold --'))
    assert '--strict' not in complete('cpuhpctl freeze --')
    assert 'true' in complete('cpuhpctl freeze --why x -- tru')


def test_output_columns_come_from_the_commands_help():
    prog = str(fixture.CPUHPCTL)
    assert complete(f'{prog} leases -o W') == ['WHO', 'WHY']
    assert complete(f'{prog} leases --output WHO,P') == ['WHO,PID']
    assert complete(f'{prog} states -o +CP') == ['+CPUS']
    assert complete(f'{prog} cpus -o CPU,TOP') == ['CPU,TOPOLOGY']
    assert complete(f'{prog} cpus --output HOTPLUG_') == ['HOTPLUG_ACTION', 'HOTPLUG_SEQ',
                                                          'HOTPLUG_STATE']
    assert '-o' in complete(f'{prog} states -') and '--noheadings' in complete(f'{prog} leases --')


def test_the_renamed_letters_are_offered():
    assert {'-c', '--count'} <= set(complete('cpuhpctl watch -'))
    assert {'-N', '-T'} <= set(complete('cpuhpctl state x -'))
    assert '-J' in complete('cpuhpctl status -')
