# SPDX-License-Identifier: LGPL-2.1-or-later
"""Log lines for the journal: when $JOURNAL_STREAM names cpuhpd's stderr (as
systemd sets it for a service logging to the journal), every line starts
with its syslog priority, so that `journalctl -p warning` finds warnings;
when it names anything else (a child whose stderr was redirected inherits
the variable), lines are plain."""
import os
import re

import fixture


def journal_stream(path):
    st = os.stat(path)
    return f'{st.st_dev}:{st.st_ino}'


def lines(d):
    return [ln for ln in d.log().splitlines() if ln]


def start_refusing_a_connection(tmp, sim, env):
    """A daemon (--verbose: debug lines too) that refuses a second connection
    (a warning); Return: its log lines after it stopped."""
    d = fixture.Daemon(tmp, sim.root, args=['--max-connections', '1'])
    d.logpath.touch()
    d.start(env=env(d.logpath))
    a, b = fixture.Probe(d.socket), fixture.Probe(d.socket)
    try:
        a.connect('a')
        r = b('connect b')
        assert r.get('kind') != 'hello', r
    finally:
        a.kill()
        b.kill()
    d.stop_clean()
    return lines(d)


def test_each_line_starts_with_its_priority_when_stderr_is_the_journal(tmp, sim):
    log = start_refusing_a_connection(tmp, sim, lambda p: {'JOURNAL_STREAM': journal_stream(p)})
    for ln in log:
        m = re.match(r'<([3467])>cpuhpd: (error|warning|info|debug): ', ln)
        assert m, f'no priority prefix: {ln!r}'
        assert {'3': 'error', '4': 'warning', '6': 'info', '7': 'debug'}[m[1]] == m[2], ln
    seen = {ln[:3] for ln in log}
    assert {'<4>', '<6>', '<7>'} <= seen, log
    assert any(ln.startswith('<4>cpuhpd: warning: connection refused') for ln in log), log


def test_lines_are_plain_when_journal_stream_names_another_file(tmp, sim):
    other = tmp / 'other'
    other.touch()
    log = start_refusing_a_connection(tmp, sim, lambda p: {'JOURNAL_STREAM': journal_stream(other)})
    assert log and all(ln.startswith('cpuhpd: ') for ln in log), log
    assert any(ln.startswith('cpuhpd: warning: connection refused') for ln in log), log


def test_lines_are_plain_when_journal_stream_is_malformed(tmp, sim):
    log = start_refusing_a_connection(
        tmp, sim, lambda p: {'JOURNAL_STREAM': journal_stream(p) + 'x'})
    assert log and all(ln.startswith('cpuhpd: ') for ln in log), log


def test_an_error_gets_priority_3(tmp):
    """A start that fails (no sysfs tree there) logs an error line."""
    d = fixture.Daemon(tmp, tmp / 'no-such-tree', uevents=False)
    d.logpath.touch()
    d.start(expect_ready=False, env={'JOURNAL_STREAM': journal_stream(d.logpath)})
    assert d.wait() != 0
    log = lines(d)
    assert any(ln.startswith('<3>cpuhpd: error: ') for ln in log), log
    assert all(re.match(r'<[3467]>cpuhpd: ', ln) for ln in log), log
