# SPDX-License-Identifier: LGPL-2.1-or-later
"""cpuhpctl hold --strict: when the lease stops holding while
the command runs (cpuhpd SIGKILLed or SIGTERMed, the lease revoked), the
command gets SIGTERM, then SIGKILL after --grace, and hold exits 70.
Without --strict it warns and lets the command run on, as before.

The command says "ready" on stdout once its SIGTERM handler is in place;
the test kills cpuhpd only then, and waits for cpuhpd's exit: no sleeps.
Before the change: no --strict option (exit 2), and the command ran on."""
import signal
import subprocess
import sys

import pytest

import fixture

GUARD_S = fixture.GUARD_S
LEASE_LOST = 70

# Says "term" and exits 3 on SIGTERM, after "ready"; else waits for ever.
ON_TERM = ('import signal, sys\n'
           'def term(*_):\n'
           '    print("term", flush=True)\n'
           '    sys.exit(3)\n'
           'signal.signal(signal.SIGTERM, term)\n'
           'print("ready", flush=True)\n'
           'while True:\n'
           '    signal.pause()\n')
# Ignores SIGTERM: only SIGKILL ends it.
DEAF = ('import signal\n'
        'signal.signal(signal.SIGTERM, signal.SIG_IGN)\n'
        'print("ready", flush=True)\n'
        'while True:\n'
        '    signal.pause()\n')


def hold(daemon, *args, script=ON_TERM):
    p = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon.socket, 'hold', *args,
                          '--', sys.executable, '-c', script],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline() == 'ready\n', p.stderr.read()
    return p


def finish(p):
    try:
        out, err = p.communicate(timeout=GUARD_S)
    finally:
        p.kill()
    return p.returncode, out, err


@pytest.mark.parametrize('sig', [signal.SIGKILL, signal.SIGTERM])
@pytest.mark.parametrize('fast', [True, False], ids=['fast', 'socket'])
def test_strict_ends_the_command_when_cpuhpd_goes_away(tmp, sim, sig, fast):
    d = fixture.Daemon(tmp, sim.root, args=[] if fast else ['--fast-path', 'off']).start()
    try:
        p = hold(d, '--strict')
        d.send_signal(sig)
        d.wait()
        rc, out, err = finish(p)
    finally:
        d.kill()
    assert rc == LEASE_LOST, (rc, out, err)
    assert out == 'term\n', (out, err)
    assert 'lost the connection to cpuhpd: the lease is no longer held' in err, err
    assert '--strict: ending the command (SIGTERM, then SIGKILL after 5000 ms)' in err, err


def test_strict_kills_a_command_that_ignores_sigterm_after_the_grace(tmp, sim):
    d = fixture.Daemon(tmp, sim.root).start()
    try:
        p = hold(d, '--strict', '--grace', '50', script=DEAF)
        d.send_signal(signal.SIGKILL)
        d.wait()
        rc, out, err = finish(p)
    finally:
        d.kill()
    assert rc == LEASE_LOST, (rc, out, err)
    assert 'SIGKILL after 50 ms' in err, err


def test_strict_ends_the_command_when_its_lease_is_revoked(tmp, sim):
    # The revocation may come before the command's handler is in place: any
    # end by SIGTERM will do, the exit status says why.
    d = fixture.Daemon(tmp, sim.root, args=['--max-lease-ms', '50']).start()
    try:
        r = subprocess.run([str(fixture.CPUHPCTL), '--socket', d.socket, 'hold', '--strict',
                            '--', sys.executable, '-c', ON_TERM],
                           capture_output=True, text=True, timeout=GUARD_S)
    finally:
        assert d.stop() == 0, d.log()
    assert r.returncode == LEASE_LOST, r
    assert 'cpuhpd revoked the lease after' in r.stderr, r
    assert '--strict: ending the command' in r.stderr, r


def test_without_strict_the_command_runs_on_after_a_warning(tmp, sim):
    d = fixture.Daemon(tmp, sim.root).start()
    try:
        p = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', d.socket, 'hold', '--',
                              'sh', '-c', 'echo ready; read x; echo still running'],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        assert p.stdout.readline() == 'ready\n'
        d.send_signal(signal.SIGKILL)
        d.wait()
        assert 'lost the connection to cpuhpd' in p.stderr.readline()
        p.stdin.write('go\n')
        p.stdin.flush()
        rc, out, err = finish(p)
    finally:
        d.kill()
    assert (rc, out) == (0, 'still running\n'), (rc, out, err)


def test_grace_wants_milliseconds(daemon):
    r = subprocess.run([str(fixture.CPUHPCTL), '--socket', daemon.socket, 'hold', '--strict',
                        '--grace', 'soon', '--', 'true'], capture_output=True, text=True)
    assert r.returncode == 2 and "--grace wants a time such as 500ms, 5s or 2m (a bare number " \
        "is milliseconds), not 'soon'" in r.stderr, r
