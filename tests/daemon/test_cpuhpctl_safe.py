# SPDX-License-Identifier: LGPL-2.1-or-later
"""Client strings reach cpuhpctl's output shown, never obeyed.

Any member of cpuhpd's group names its leases and freezes (who, why) and
picks its process name (/proc/PID/comm: here through a symlink to cpuhpctl
whose name is hostile).  Each is given ESC sequences (colour, window title,
clear screen), BEL, CR, LF, DEL, a C1 control (U+009B, CSI to some
terminals) and bytes that are not UTF-8; every output path of cpuhpctl
that quotes them is checked: the tables (plain, --raw, -o, --json), the
messages that name holders ("timed out ... behind", "frozen by"), the
state callbacks' lines, hold's, watch's and status's output.  Text output
must hold no control byte but the line ends it writes itself, and show
each hostile byte as \\xHH; --json output must parse with Python's strict
json from bytes, with each invalid byte as U+FFFD.

Where the strings come from: who/why through libcpuhp-client (cpuhpctl
hold/freeze --who/--why), comm from the kernel.  cpuhpd takes string fields
as UTF-8 only (control characters are UTF-8), so bytes that are not UTF-8
reach the output through comm, which the kernel takes as given; who/why
with such bytes are refused with a clear error."""
import json
import os
import re
import signal
import subprocess

import pytest

import fixture

GUARD_S = fixture.GUARD_S

# Bytes that must never reach a terminal raw, and how each must show.
WHO = b'\x1b]0;owned\x07\x1b[31mRED\r\nFAKE LINE\x7f'
WHY = b'why\x1b[2J\x07\r\x0bnext\n\xc2\x9b1m'
COMM = b'\x1b[1m\x07\r\xfe'   # the kernel keeps 15 bytes; cpuhpd cuts comm at a LF
MUST_SHOW = ['\\x1b', '\\x07', '\\x0d', '\\x0a', '\\x7f']
ENV = dict(os.environ, LC_ALL='C.UTF-8')


def text_is_safe(out, where):
    """@out (bytes) is UTF-8 with no control character but LF (which cpuhpctl
    writes itself) and, in a table, the blanks that align it."""
    s = out.decode('utf-8')   # raises on invalid UTF-8
    bad = [c for c in s if (ord(c) < 0x20 and c != '\n') or 0x7f <= ord(c) <= 0x9f]
    assert not bad, f'{where}: raw control characters {bad!r} in {s!r}'
    return s


def no_forged_lines(s, where):
    assert not any(line.startswith('FAKE LINE') for line in s.splitlines()), \
        f'{where}: a forged line: {s!r}'


def strict_json(out):
    """@out (bytes) as Python's json reads it: strict (no raw control
    characters in strings) and from bytes (which must be UTF-8)."""
    return json.loads(out)


def replaced(b):
    """What JSON must say for @b: each byte that is not UTF-8 as U+FFFD."""
    return b.decode('utf-8', errors='replace')


@pytest.fixture
def evil(tmp):
    """A symlink to cpuhpctl with a hostile name: processes started through it
    have that name as their comm."""
    link = os.path.join(os.fsencode(str(tmp)), COMM)
    os.symlink(os.fsencode(str(fixture.CPUHPCTL)), link)
    return link


def ctl(daemon, *args, prog=None):
    argv = [prog or os.fsencode(str(fixture.CPUHPCTL)), b'--socket', daemon.socket.encode()]
    argv += [a if isinstance(a, bytes) else str(a).encode() for a in args]
    return subprocess.run(argv, capture_output=True, timeout=GUARD_S, env=ENV)


class Holding:
    """`PROG hold|freeze --who WHO --why WHY -- sh -c 'echo held; read x'`:
    holds until end()."""

    def __init__(self, daemon, what, prog):
        self.p = subprocess.Popen(
            [prog, b'--socket', daemon.socket.encode(), what.encode(), b'--who', WHO,
             b'--why', WHY, b'--', b'sh', b'-c', b'echo held; read x'],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=ENV)
        assert self.p.stdout.readline() == b'held\n'

    def end(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=GUARD_S)
        self.p.stdout.close()
        return rc


def test_leases_table_raw_and_json_show_hostile_names_safely(daemon4, evil):
    h = Holding(daemon4, 'hold', evil)
    try:
        for args in ([], ['--raw'], ['--noheadings'], ['-o', 'WHO,COMM,WHY,PID']):
            r = ctl(daemon4, 'leases', *args)
            assert r.returncode == 0, r
            s = text_is_safe(r.stdout, f'leases {args}')
            no_forged_lines(s, f'leases {args}')
            for esc in MUST_SHOW:
                assert esc in s, (args, esc, s)
            assert '\\xc2\\x9b' in s, s   # the C1 control, both bytes
        # One row, on one line: LF and CR forged nothing.
        r = ctl(daemon4, 'leases', '--raw', '--noheadings')
        assert len(r.stdout.splitlines()) == 1, r.stdout
        r = ctl(daemon4, 'leases', '--json')
        assert r.returncode == 0, r
        [row] = strict_json(r.stdout)['leases']
        assert row['who'] == replaced(WHO) and row['why'] == replaced(WHY), row
        assert row['comm'] == replaced(COMM), row
        # Control characters are \u escapes in the bytes, not raw.
        assert b'\\u001b' in r.stdout and b'\\u007f' in r.stdout and b'\\u009b' in r.stdout
        text_is_safe(r.stdout, 'leases --json')
    finally:
        h.end()


def test_messages_naming_a_holder_show_it_safely(daemon4, sim4, evil):
    h = Holding(daemon4, 'hold', evil)
    try:
        r = ctl(daemon4, 'offline', '2', '--timeout', '10')
        assert r.returncode == 75, r
        s = text_is_safe(r.stderr, 'timed out behind')
        assert 'timed out after 10 ms behind 1 lease' in s, s
        for esc in MUST_SHOW:
            assert esc in s, (esc, s)
        assert len(s.splitlines()) == 2, s   # the message and its hint, nothing forged
        r = ctl(daemon4, '--json', 'offline', '2', '--timeout', '10')
        assert r.returncode == 75, r
        out = strict_json(r.stdout)
        assert out['error'] == 'ETIMEDOUT' and replaced(WHO) in out['message'], out
        text_is_safe(r.stderr, 'timed out behind, --json')
    finally:
        h.end()
    assert sim4.read_online(2) == '1'


def test_frozen_by_shows_the_holder_safely(daemon4, sim4, evil):
    f = Holding(daemon4, 'freeze', evil)
    try:
        r = ctl(daemon4, 'offline', '2')
        assert r.returncode == 1, r
        s = text_is_safe(r.stderr, 'frozen by')
        assert 'frozen by pid' in s and '\\x1b]0;owned\\x07' in s, s
        r = ctl(daemon4, 'leases')
        s = text_is_safe(r.stdout, 'leases with a freeze')
        assert 'Hotplug frozen' in s and '\\x1b[2J' in s, s
        r = ctl(daemon4, 'offline', '2', '--json')
        out = strict_json(r.stdout)
        assert out['error'] == 'EBUSY' and replaced(WHY) in out['message'], out
        [fz] = strict_json(ctl(daemon4, 'leases', '-J').stdout)['freezes']
        assert (fz['who'], fz['comm']) == (replaced(WHO), replaced(COMM)), fz
    finally:
        f.end()


def test_a_state_owners_name_is_shown_safely_in_tables_and_callback_lines(daemon4, sim4, evil):
    state = subprocess.Popen([evil, b'--socket', daemon4.socket.encode(), b'state', b'pool',
                              b'--nocalls', b'--teardown', b'true'],
                             stdout=subprocess.PIPE, env=ENV)
    try:
        assert state.stdout.readline().startswith(b'state pool registered')
        for args in ([], ['--raw'], ['-o', 'NAME,COMM']):
            r = ctl(daemon4, 'states', *args)
            s = text_is_safe(r.stdout, f'states {args}')
            assert '\\x1b[1m\\x07\\x0d\\xfe' in s, s
        [row] = strict_json(ctl(daemon4, 'states', '--json').stdout)['states']
        assert row['comm'] == replaced(COMM), row
        r = ctl(daemon4, 'offline', '3')
        assert r.returncode == 0, r
        s = text_is_safe(r.stdout, 'teardown lines')
        assert re.search(r'teardown of state pool \(pid \d+, \\x1b\[1m\\x07\\x0d\\xfe\)',
                         s), s
        r = ctl(daemon4, 'online', '3', '--json')
        res = strict_json(r.stdout)['results'][0]
        assert res['states'][0]['comm'] == replaced(COMM), res
        text_is_safe(ctl(daemon4, 'status').stdout, 'status')
    finally:
        state.send_signal(signal.SIGTERM)
        state.wait(timeout=GUARD_S)
        state.stdout.close()


def test_an_error_quoting_a_bad_state_name_is_shown_safely(daemon4):
    r = ctl(daemon4, 'state', b'\x1b[31mx\x07', '--teardown', 'true')
    assert r.returncode == 1, r
    s = text_is_safe(r.stderr, 'invalid state name')
    assert s.startswith('cpuhpctl: state \\x1b[31mx\\x07: '), s


def test_hold_and_watch_output_stay_safe(daemon4, evil):
    w = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon4.socket, 'watch',
                          '--count', '2'], stdout=subprocess.PIPE, env=ENV)
    try:
        assert w.stdout.readline() == b'watching cpuhpd events\n'
        # A hotplug asked by a process with a hostile name.
        r = ctl(daemon4, 'offline', '1', prog=evil)
        assert r.returncode == 0, r
        out, _ = w.communicate(timeout=GUARD_S)
        text_is_safe(out, 'watch')
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()
    # hold quotes its command when it cannot run it.
    r = ctl(daemon4, 'hold', '--', b'/nonexistent/\x1b[31mjob\r\n\xff')
    assert r.returncode == 127, r
    s = text_is_safe(r.stderr, 'hold')
    assert 'cannot run /nonexistent/\\x1b[31mjob\\x0d\\x0a\\xff' in s, s
    # A hotplug whose asker has a hostile name, listed while it waits.
    h = Holding(daemon4, 'hold', evil)
    off = subprocess.Popen([evil, b'--socket', daemon4.socket.encode(), b'offline', b'2',
                            b'--timeout', b'60000'], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=ENV)
    try:
        while True:   # each try is a round trip, until the request has arrived
            r = ctl(daemon4, 'leases')
            if b'Hotplug requests' in r.stdout:
                break
            assert off.poll() is None, off.communicate()
        s = text_is_safe(r.stdout, 'leases with a hotplug')
        assert 'asked by pid' in s and '\\x1b[1m\\x07\\x0d\\xfe' in s, s
        [hp] = strict_json(ctl(daemon4, 'leases', '--json').stdout)['hotplugs']
        assert hp['comm'] == replaced(COMM), hp
    finally:
        h.end()
        out, err = off.communicate(timeout=GUARD_S)
    assert off.returncode == 0 and out == b'CPU 2 disabled\n', (out, err)


def test_who_that_is_not_utf8_is_refused_with_a_clear_error(daemon4):
    r = ctl(daemon4, 'hold', '--who', b'bad\xff', '--', 'true')
    assert r.returncode != 0, r
    s = text_is_safe(r.stderr, 'hold --who')
    assert 'who and why must be UTF-8 text' in s, s
