# SPDX-License-Identifier: LGPL-2.1-or-later
"""pytest glue for the packaging tests: what a distribution installs (units,
sysusers.d, the config file, man pages, completion, the libraries' ABI).
The daemon side comes from tests/daemon/fixture.py."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'daemon'))
import fixture  # noqa: E402  (tests/daemon/fixture.py)
from skipstatus import pytest_runtest_logreport, pytest_sessionfinish  # noqa: E402,F401 (hooks)


@pytest.fixture
def tmp():
    path = fixture.short_tmpdir()
    yield path
    fixture.cleanup_dir(path)


@pytest.fixture
def sim(tmp):
    return fixture.SimSysfs(tmp / 'sys', cpus='0-3')
