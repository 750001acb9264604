# SPDX-License-Identifier: LGPL-2.1-or-later
"""The package's types, as a user's type checker sees them: ``mypy
--strict`` accepts typed_user.py, a program using the whole public API the
way the docs say (the package found as an installed one is: through the
interpreter's search path, py.typed), and rejects a program that misuses
it, naming each misuse.  typed_user.py also runs, against a cpuhpd on a
simulated tree, so what it says is the API is the API."""
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import GUARD_S

HERE = pathlib.Path(__file__).resolve().parent

pytestmark = pytest.mark.skipif(importlib.util.find_spec('mypy') is None,
                                reason='mypy is not installed (Debian: python3-mypy; run.sh '
                                'installs it)')

# Each line is wrong, and mypy must say so on that line.
MISUSE = '''\
import cpuhp
sem = cpuhp.RWSem()
sem.read(timeout="1")
cpuhp.Clinet
cpuhp.parse_cpulist(5)
n: int = cpuhp.format_cpulist({1})
cpuhp.Client().lease().idd
cpuhp.aio.Client().lease(timeout="x")
e: cpuhp.HotplugFinished = cpuhp.Client().next_event()
'''


def mypy(tmp, *files):
    env = dict(os.environ, MYPY_FORCE_COLOR='0')
    env.pop('MYPYPATH', None)  # found as an installed package is, not as source
    r = subprocess.run([sys.executable, '-m', 'mypy', '--strict', '--no-error-summary',
                        '--cache-dir', str(tmp / 'mypy-cache'), *map(str, files)],
                       capture_output=True, text=True, env=env, cwd=str(tmp),
                       timeout=5 * GUARD_S)
    assert 'Cannot find implementation or library stub' not in r.stdout, r.stdout
    return r


def test_mypy_strict_accepts_a_program_using_the_public_api(tmp):
    r = mypy(tmp, HERE / 'typed_user.py')
    assert r.returncode == 0 and r.stdout == '', r.stdout + r.stderr


def test_mypy_strict_rejects_each_misuse_of_the_api(tmp):
    prog = tmp / 'misuse.py'
    prog.write_text(MISUSE)
    r = mypy(tmp, prog)
    lines = {int(line.split(':')[1]) for line in r.stdout.splitlines()
             if line.startswith('misuse.py:') and ': error:' in line}
    assert lines == set(range(3, MISUSE.count('\n') + 1)), r.stdout


def test_the_typed_program_runs(daemon):
    r = subprocess.run([sys.executable, str(HERE / 'typed_user.py'), daemon.socket],
                       capture_output=True, text=True, timeout=GUARD_S)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[:5] == ['read', 'write', 'online_cpus_held', 'hotplug_section', '0-1'], out
    for line in ('1 lease', '4 cpus, live 0 0', 'offline 2', 'finished 2 ok=True', 'state',
                 'aio lease True', 'aio offline 3', 'aio online 0-3', 'aio 4 cpus online'):
        assert line in out, out
