# SPDX-License-Identifier: LGPL-2.1-or-later
"""`import cpuhp` works in a plain interpreter, with nothing preloaded.

Python loads the extension, and with it libcpuhp.so and liburcu-memb.so,
with dlopen().  A library reached by initial-exec TLS references must fit
glibc's static TLS area as sized and aligned at start-up; liburcu-memb's
reader record (384 bytes, 128-byte aligned) does not, and the import then
fails with "cannot allocate memory in static TLS block".  So libcpuhp keeps
initial-exec for its own few bytes only.  These tests drop LD_PRELOAD and
GLIBC_TUNABLES, which could hide that."""
import os
import subprocess
import sys

import fixture

WORKAROUND_VARS = ('LD_PRELOAD', 'GLIBC_TUNABLES')


def clean_env():
    return {k: v for k, v in os.environ.items() if k not in WORKAROUND_VARS}


def test_import_cpuhp_in_a_fresh_interpreter_without_preloading(cpuhp):
    r = subprocess.run([sys.executable, '-c', 'import cpuhp; print(cpuhp.__version__)'],
                       env=clean_env(), capture_output=True, text=True,
                       timeout=fixture.GUARD_S)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == cpuhp.__version__


def test_a_thread_started_after_the_import_can_take_the_locks(cpuhp):
    code = ('import threading, cpuhp\n'
            'def work():\n'
            '    with cpuhp.online_cpus_held(): pass\n'
            '    with cpuhp.RWSem().read(): pass\n'
            't = threading.Thread(target=work); t.start(); t.join()\n'
            'print("ok")\n')
    r = subprocess.run([sys.executable, '-c', code], env=clean_env(), capture_output=True,
                       text=True, timeout=fixture.GUARD_S)
    assert r.returncode == 0 and r.stdout == 'ok\n', r.stderr
