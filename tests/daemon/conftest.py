# SPDX-License-Identifier: LGPL-2.1-or-later
"""pytest glue for the cpuhpd tests: fixtures, and exit status 77 (meson's
SKIP) for a file whose every test skipped, so that a skip shows as one."""
import pytest

import fastlib
import fixture
from skipstatus import pytest_runtest_logreport, pytest_sessionfinish  # noqa: F401 (hooks)


@pytest.fixture
def tmp():
    path = fixture.short_tmpdir()
    yield path
    fixture.cleanup_dir(path)


@pytest.fixture
def sim(tmp):
    """A simulated tree mirroring this machine's CPUs.  The tests hotplug CPU
    1: on a machine without a hotpluggable CPU 1 the tree has CPUs 0-1."""
    s = fixture.SimSysfs(tmp / 'sys')
    if 1 not in s.hotpluggable():
        print('this machine has no hotpluggable CPU 1: simulating CPUs 0-1 instead')
        fixture.cleanup_dir(tmp / 'sys')
        s = fixture.SimSysfs(tmp / 'sys', cpus='0-1')
    s.write_online(1, 1)
    return s


@pytest.fixture
def sim4(tmp):
    """A simulated tree with CPUs 0-3 (0 not hotpluggable), whatever this machine has."""
    return fixture.SimSysfs(tmp / 'sys', cpus='0-3')


@pytest.fixture
def daemon(tmp, sim):
    d = fixture.Daemon(tmp, sim.root).start()
    yield d
    d.stop_clean()


@pytest.fixture
def daemon4(tmp, sim4):
    d = fixture.Daemon(tmp, sim4.root).start()
    yield d
    d.stop_clean()


@pytest.fixture
def probe(request):
    """A probe on the daemon of the test (daemon or daemon4)."""
    d = request.getfixturevalue('daemon4' if 'daemon4' in request.fixturenames else 'daemon')
    p = fixture.Probe(d.socket)
    yield p
    p.kill()


@pytest.fixture
def client(daemon):
    """fastlease-client (libcpuhp-client driven line by line) on `daemon`."""
    c = fastlib.FastClient(daemon.socket)
    yield c
    c.kill()
