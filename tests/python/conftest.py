# SPDX-License-Identifier: LGPL-2.1-or-later
"""pytest glue for the cpuhp binding tests.

The daemon side comes from tests/daemon/fixture.py (simulated sysfs tree,
private cpuhpd on a temporary socket, readiness by sd_notify): one fixture
for both suites.  A file whose every test skipped exits 77 (meson's SKIP);
pytest's 5 (nothing collected) stays a failure, and says why.
"""
import pathlib
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'daemon'))
import fixture  # noqa: E402  (tests/daemon/fixture.py)
from skipstatus import pytest_runtest_logreport, pytest_sessionfinish  # noqa: E402,F401 (hooks)

GUARD_S = fixture.GUARD_S


def wait_until(what, pred):
    """Ask until @pred() holds: for state another thread or process has to
    reach (a request it sent is queued).  Each try is a round trip to the
    daemon, not a timed wait; the deadline only turns a hang into a failure."""
    deadline = time.monotonic() + GUARD_S
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
    raise AssertionError(f'never saw {what} within {GUARD_S} s')


@pytest.fixture
def tmp():
    path = fixture.short_tmpdir()
    yield path
    fixture.cleanup_dir(path)


@pytest.fixture
def sim(tmp):
    """A simulated tree with CPUs 0-3 (0 not hotpluggable), whatever this machine has."""
    return fixture.SimSysfs(tmp / 'sys', cpus='0-3')


@pytest.fixture
def daemon(tmp, sim):
    d = fixture.Daemon(tmp, sim.root).start()
    yield d
    d.stop_clean()


@pytest.fixture
def cpuhp():
    import cpuhp as mod
    return mod


@pytest.fixture
def client(cpuhp, daemon):
    with cpuhp.Client(daemon.socket) as c:
        yield c


@pytest.fixture
def observer(cpuhp, daemon):
    """A second connection, to look at the daemon while `client` is busy."""
    with cpuhp.Client(daemon.socket) as c:
        yield c
