# SPDX-License-Identifier: LGPL-2.1-or-later
"""a client whose daemon went away is told at once.

cpuhpd is SIGKILLed (or SIGTERMed) while socket and fast leases are held.
Each test waits for the daemon's exit (the kernel has closed its sockets by
then: no sleep), and then:
- the handle's socket is readable and cpuhp_client_next_event(0) gives
  LEASES_LOST naming how many leases died, without a watch;
- the release of each of those leases is -ECONNRESET with a message, fast
  ones included, whether the application read the event or not;
- a daemon that dies while its connections live on (systemd's fd store
  keeps them for the next one: here the test holds copies of cpuhpd's
  sockets, taken with pidfd_getfd) is not a lost lease: the fast release
  stores its slot, sends FastWake on the kept connection, and returns 0.

Before the fix: no event (next_event said -ECONNRESET), a fast release
returned 0, and a socket release -EPIPE or -ECONNRESET by chance."""
import ctypes
import errno
import os
import select
import signal

import pytest

import fixture
from fastlib import FastClient

LEASES_LOST = 7
GUARD_MS = fixture.GUARD_S * 1000
SYS_pidfd_getfd = 438


def killed(daemon, sig):
    daemon.send_signal(sig)
    rc = daemon.wait()
    assert rc in (-sig, 0), rc


def client(daemon, fast):
    env = None if fast else {'CPUHP_CLIENT_FAST_PATH': '0'}
    c = FastClient(daemon.socket, env=env)
    c.connect('a', fast=fast)
    c.thread('t', 'a')
    c.thread('u', 'a')
    return c


def release(c, thread, lease_id):
    c.release(thread, lease_id)
    return c.wait(thread)


@pytest.mark.parametrize('sig', [signal.SIGKILL, signal.SIGTERM])
@pytest.mark.parametrize('fast', [False, True], ids=['socket', 'fast'])
def test_leases_lost_event_then_releases_fail_with_econnreset(tmp, sim, sig, fast):
    d = fixture.Daemon(tmp, sim.root).start()
    c = None
    try:
        c = client(d, fast)
        ids = [c.lease('t', fast=fast), c.lease('u', fast=fast)]
        killed(d, sig)
        r = c(f'event a {GUARD_MS}')
        assert r['readable'] and r['ret'] == 0, r
        assert (r['type'], r['leases']) == (LEASES_LOST, 2), r
        for thread, lease in zip('tu', ids):
            r = release(c, thread, lease)
            assert r['ret'] == -errno.ECONNRESET, r
            assert 'died with the connection to cpuhpd' in r['message'], r
        # Once: then the connection's error (ECANCELED: the daemon said it
        # was shutting down).  A second release: the fast lease table
        # refuses it, a socket one gets the connection's error.
        r = c('event a 0')
        dead = -errno.ECONNRESET if sig == signal.SIGKILL else -errno.ECANCELED
        assert r['ret'] == dead, r
        assert release(c, 't', ids[0])['ret'] == (-errno.ESRCH if fast else dead)
    finally:
        if c:
            c.kill()
        d.kill()


@pytest.mark.parametrize('sig', [signal.SIGKILL, signal.SIGTERM])
def test_fast_release_notices_a_dead_daemon_without_polling(tmp, sim, sig):
    """The application reads nothing: the release itself finds the end."""
    d = fixture.Daemon(tmp, sim.root).start()
    c = None
    try:
        c = client(d, True)
        first, second = c.lease('t'), c.lease('u')
        killed(d, sig)
        r = release(c, 'u', second)
        assert r['ret'] == -errno.ECONNRESET, r
        assert 'died with the connection to cpuhpd' in r['message'], r
        # The event still names the lease that was held when the end was read.
        r = c(f'event a {GUARD_MS}')
        assert (r['ret'], r['type'], r['leases']) == (0, LEASES_LOST, 1), r
        assert release(c, 't', first)['ret'] == -errno.ECONNRESET
        # A later acquire says the connection ended, with no socket lease attempt.
        c.acquire('t', 100)
        assert c.wait('t')['ret'] == -errno.ECONNRESET
    finally:
        if c:
            c.kill()
        d.kill()


def test_no_event_when_no_lease_was_held(tmp, sim):
    d = fixture.Daemon(tmp, sim.root).start()
    c = None
    try:
        c = client(d, True)
        c.unlease('t', c.lease('t'))
        killed(d, signal.SIGKILL)
        r = c(f'event a {GUARD_MS}')
        assert r['readable'] and r['ret'] == -errno.ECONNRESET, r
    finally:
        if c:
            c.kill()
        d.kill()


def daemon_sockets(pid):
    """Copies of every socket cpuhpd has open, as systemd's fd store would
    keep them across a restart (the test is cpuhpd's parent, so ptrace
    rules let it take them)."""
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    fds = []
    try:
        for name in os.listdir(f'/proc/{pid}/fd'):
            try:
                target = os.readlink(f'/proc/{pid}/fd/{name}')
            except FileNotFoundError:
                continue
            if not target.startswith('socket:'):
                continue
            fd = libc.syscall(SYS_pidfd_getfd, pidfd, int(name), 0)
            if fd < 0:
                pytest.skip(f'pidfd_getfd: {os.strerror(ctypes.get_errno())}')
            fds.append(fd)
    finally:
        os.close(pidfd)
    return fds


def test_fast_release_on_a_kept_connection_sends_fastwake_and_succeeds(tmp, sim):
    d = fixture.Daemon(tmp, sim.root).start()
    c, kept = None, []
    try:
        c = client(d, True)
        lease = c.lease('t')
        kept = daemon_sockets(d.proc.pid)
        for fd in kept:
            os.set_blocking(fd, False)
            try:
                while os.read(fd, 65536):
                    pass
            except (BlockingIOError, OSError):
                pass
        killed(d, signal.SIGKILL)
        # The state word says the daemon died (FUTEX_OWNER_DIED), the connection lives.
        r = release(c, 't', lease)
        assert r['ret'] == 0, r
        ready, _, _ = select.select(kept, [], [], fixture.GUARD_S)
        data = b''.join(os.read(fd, 4096) for fd in ready)
        assert data, 'no FastWake on the kept connection'
        r = c('event a 0')
        assert not r['readable'] and r['ret'] == -errno.EAGAIN, r
    finally:
        for fd in kept:
            os.close(fd)
        if c:
            c.kill()
        d.kill()
