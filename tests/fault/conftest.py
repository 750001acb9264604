# SPDX-License-Identifier: LGPL-2.1-or-later
"""pytest glue for the fault-injection suite: the daemon fixture from
tests/daemon, one rig for the whole module, and the report, written to
the build directory and summarised at the end of the run."""
import pathlib
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'daemon'))

import fixture  # noqa: E402
import faultlib  # noqa: E402

_t0 = time.monotonic()


@pytest.fixture(scope='module')
def rig():
    tmp = fixture.short_tmpdir()
    r = faultlib.Rig(tmp)
    try:
        yield r.start()
    finally:
        r.stop()
        if r.daemon:
            print(r.daemon.log()[-20000:])
        fixture.cleanup_dir(tmp)


@pytest.fixture
def row(request, rig):
    """This fault's row of the report, named by the test's docstring."""
    rig.new_probe()
    doc = (request.function.__doc__ or request.node.name).strip().splitlines()[0]
    return faultlib.REPORT.row(request.node.nodeid, doc.rstrip('.'))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == 'call':
        detail = ''
        if rep.failed:
            detail = str(rep.longrepr.reprcrash.message if hasattr(rep.longrepr, 'reprcrash')
                         else rep.longrepr).splitlines()[0][:160].replace('|', '/')
        faultlib.REPORT.outcome(item.nodeid, rep.outcome, detail)


def pytest_terminal_summary(terminalreporter):
    seconds = time.monotonic() - _t0
    text = faultlib.REPORT.markdown(seconds)
    path = faultlib.REPORT_PATH
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        where = f'written to {path}'
    except OSError as e:
        where = f'not written ({e})'
    terminalreporter.write_line('')
    terminalreporter.write_line(f'fault injection: seed {faultlib.SEED}, report {where}')
    for i, r in enumerate(faultlib.REPORT.rows.values(), 1):
        nums = ', '.join(f'{k} {v}' for k, v in r['numbers'].items())
        terminalreporter.write_line(f"  {i}. {r['result']:6} {r['fault']} ({nums})")
