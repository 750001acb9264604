# SPDX-License-Identifier: LGPL-2.1-or-later
"""pytest hooks that make a test file whose every test skipped exit 77
(meson's SKIP), so that a skip shows as one; pytest's 5 (nothing
collected) stays a failure, and says why.  A conftest imports both by
name: pytest finds hooks among a conftest's names."""
import sys

import pytest

_outcomes = {'passed': 0, 'failed': 0, 'skipped': 0}


def pytest_runtest_logreport(report):
    if report.when == 'call' or report.outcome != 'passed':
        _outcomes[report.outcome] = _outcomes.get(report.outcome, 0) + 1


def pytest_sessionfinish(session, exitstatus):
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        print('\nno test ran: the test file or -k expression that meson.build gives '
              'names nothing', file=sys.stderr)
    elif exitstatus == 0 and _outcomes['skipped'] and not _outcomes['passed'] \
            and not _outcomes['failed']:
        session.exitstatus = 77
