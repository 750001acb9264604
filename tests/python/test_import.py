# SPDX-License-Identifier: LGPL-2.1-or-later
"""`import cpuhp` works in a plain interpreter, with nothing preloaded.

libcpuhp.so reads thread-locals with initial-exec TLS, its own and, through
liburcu's inlined read side, liburcu-memb's.  A library loaded by dlopen()
(as Python loads extensions) can only use initial-exec TLS if glibc can
place the TLS blocks in the static TLS area it reserved at start-up; if it
cannot, the import fails with "cannot allocate memory in static TLS block".
The other tests in this suite may run with a workaround in their
environment (tests/python/meson.build); this one removes it."""
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
