# SPDX-License-Identifier: LGPL-2.1-or-later
"""cpuhpctl's waits say what they wait for, and what Ctrl-C did.

On a terminal, a hotplug waiting behind leases (offline, online, smt), and
a hold or freeze waiting behind hotplugs, show after about a second one
line, rewritten in place, that names what is in the way; Ctrl-C cancels
and says what is true ("cancelled: nothing was changed"), exit 130.  On a
pipe or with --json no line is drawn.

Each cpuhpctl runs on a pseudo-terminal (Python's pty), in its own
session, so that a ^C written to the terminal is the SIGINT a user's
Ctrl-C is.  Nothing sleeps: a test reads the terminal until the line
shows, then types ^C, then reads to the end."""
import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import termios

import pytest

import fixture

GUARD_S = fixture.GUARD_S
ENV = dict(os.environ, LC_ALL='C.UTF-8', TERM='xterm')


class Tty:
    """cpuhpctl ARGS with stdin, stdout and stderr on a new pseudo-terminal."""

    def __init__(self, daemon, *args, stderr_pipe=False, columns=200):
        self.master, slave = pty.openpty()
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack('HHHH', 24, columns, 0, 0))
        argv = [str(fixture.CPUHPCTL), '--socket', daemon.socket, *(str(a) for a in args)]
        self.p = subprocess.Popen(argv, stdin=slave, stdout=slave,
                                  stderr=subprocess.PIPE if stderr_pipe else slave,
                                  start_new_session=True, env=ENV,
                                  # The terminal is the session's: ^C on it is SIGINT.
                                  preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.out = b''

    def read_until(self, want):
        """Read the terminal until @want (bytes) has come; Return: all read so far."""
        while want not in self.out:
            ready, _, _ = select.select([self.master], [], [], GUARD_S)
            assert ready, f'no {want!r} in {GUARD_S} s; got {self.out!r}'
            try:
                chunk = os.read(self.master, 4096)
            except OSError:   # EIO: the other end is closed
                chunk = b''
            assert chunk, f'cpuhpctl ended ({self.p.wait()}) before {want!r}: {self.out!r}'
            self.out += chunk
        return self.out

    def ctrl_c(self):
        os.write(self.master, b'\x03')

    def finish(self):
        """Read to the end; Return: the exit status."""
        while True:
            ready, _, _ = select.select([self.master], [], [], GUARD_S)
            assert ready, f'cpuhpctl did not end: {self.out!r}'
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                break
            if not chunk:
                break
            self.out += chunk
        os.close(self.master)
        return self.p.wait(timeout=GUARD_S)


def hold(daemon, who, why):
    """`cpuhpctl hold --who WHO --why WHY -- sh -c 'echo held; read x'`, lease held on return."""
    p = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon.socket, 'hold', '--who', who,
                          '--why', why, '--', 'sh', '-c', 'echo held; read x'],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == 'held\n'
    return p


def release(p):
    p.stdin.close()   # read x ends
    p.wait(timeout=GUARD_S)
    p.stdout.close()


def pending(daemon):
    r = subprocess.run([str(fixture.CPUHPCTL), '--socket', daemon.socket, '--json', 'leases'],
                       capture_output=True, timeout=GUARD_S)
    return json.loads(r.stdout)['hotplugs']


def test_offline_names_the_leases_it_waits_for_and_ctrl_c_changes_nothing(daemon4, sim4):
    a = hold(daemon4, 'A', 'sizing pools')
    b = hold(daemon4, 'B', '')
    try:
        t = Tty(daemon4, 'offline', '--timeout', '60000', '2')
        out = t.read_until(b'Ctrl-C cancels')
        line = out.rsplit(b'\r', 1)[-1]
        assert line.startswith(b"cpuhpctl offline 2: waiting for 2 leases: "
                               b"pid %d (A) 'sizing pools', pid %d (B); " % (a.pid, b.pid)), out
        assert line.endswith(b', Ctrl-C cancels\x1b[K'), out
        # A narrow terminal: the holders are cut, the time and the hint stay.
        narrow = Tty(daemon4, 'offline', '--timeout', '60000', '2', columns=50)
        out = narrow.read_until(b'Ctrl-C cancels')
        line = out.rsplit(b'\r', 1)[-1][:-len(b'\x1b[K')]
        assert len(line) == 49 and b'...; ' in line, line
        narrow.ctrl_c()
        assert narrow.finish() == 130, narrow.out
        t.ctrl_c()
        assert t.finish() == 130, t.out
        # The line is erased (\r, erase to the end of line) before the last word.
        assert t.out.endswith(b'\r\x1b[Kcpuhpctl offline 2: cancelled: nothing was changed\r\n'), \
            t.out
        assert sim4.read_online(2) == '1'
        # cpuhpctl said so only once cpuhpd had dropped the request.
        assert pending(daemon4) == []
    finally:
        release(a)
        release(b)


def test_ctrl_c_too_late_says_what_the_hotplug_did(daemon4, sim4):
    # The request is running (its worker stalled on CPU 2's online file) when ^C comes:
    # it runs to its end, and cpuhpctl waits for that, then says what changed.
    stall = fixture.StalledOnlineFile(sim4, 2)
    t = Tty(daemon4, 'offline', '2')
    stall.wait_for_reader()
    t.read_until(b'running')
    t.ctrl_c()
    t.read_until(b'cancelling: the hotplug had started')
    stall.release()
    assert t.finish() == 0, t.out
    assert b'CPU 2 disabled\r\n' in t.out, t.out
    assert b'cancelled too late: the hotplug had started and ran to its end (1 CPU disabled' \
        in t.out, t.out
    assert sim4.read_online(2) == '0'


def test_hold_names_the_hotplugs_it_waits_for_and_ctrl_c_runs_nothing(daemon4, sim4):
    a = hold(daemon4, 'A', 'x')
    off = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon4.socket, 'offline',
                            '--timeout', '60000', '3'], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    try:
        while not pending(daemon4):   # each try is a round trip, until it has arrived
            assert off.poll() is None, off.communicate()
        t = Tty(daemon4, 'hold', '--timeout', '60000', '--', 'sh', '-c', 'echo RAN')
        out = t.read_until(b'Ctrl-C cancels')
        assert b'cpuhpctl hold: waiting for 1 hotplug: offline 3 by pid %d (cpuhpctl), ' \
               b'waiting for leases; ' % off.pid in out, out
        t.ctrl_c()
        assert t.finish() == 130, t.out
        assert t.out.endswith(b'cpuhpctl hold: cancelled: no lease is held and CMD was not '
                              b'run\r\n') and b'RAN' not in t.out, t.out
    finally:
        release(a)
        out, err = off.communicate(timeout=GUARD_S)
    assert off.returncode == 0 and out == b'CPU 3 disabled\n', (out, err)


def test_no_line_on_a_pipe_or_with_json(daemon4, sim4):
    a = hold(daemon4, 'A', 'x')
    try:
        # Both start before the terminal one: when its line shows, they have waited as long.
        piped = Tty(daemon4, 'offline', '-t', '60000', '2', stderr_pipe=True)
        js = Tty(daemon4, '--json', 'offline', '-t', '60000', '2')
        while len(pending(daemon4)) < 2:
            pass
        shown = Tty(daemon4, 'offline', '-t', '60000', '2')
        shown.read_until(b'Ctrl-C cancels')
        for t in (piped, js, shown):
            t.ctrl_c()
        assert shown.finish() == 130
        # Nothing on the terminal but the echo of ^C.
        assert piped.finish() == 130 and piped.out in (b'', b'^C'), piped.out
        err = piped.p.stderr.read()
        assert err == b'cpuhpctl offline 2: cancelled: nothing was changed\n', err
        assert js.finish() == 130
        assert b'waiting' not in js.out and b'\r\x1b[K' not in js.out, js.out
        assert json.loads(js.out[js.out.index(b'{'):].split(b'\r\n')[0]) == {
            'error': 'ECANCELED', 'message': 'cancelled: nothing was changed'}, js.out
    finally:
        release(a)
    assert sim4.read_online(2) == '1'
