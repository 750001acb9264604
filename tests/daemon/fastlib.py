# SPDX-License-Identifier: LGPL-2.1-or-later
"""Helpers of the fast-lease tests: the line-driven tools fastlease-client
(libcpuhp-client with named handles and threads), fastlease-raw (a raw
connection that abuses the fast path's memory) and fastlease-torture, and a
daemon started with a chosen --fast-path mode.

Each tool is a fixture.Lines, like cpuhpd-probe: one command line out, one
JSON line back."""
import fixture
from fixture import Lines

FASTCLIENT = fixture.BUILD / 'tests' / 'daemon' / 'fastlease-client'
FASTRAW = fixture.BUILD / 'tests' / 'daemon' / 'fastlease-raw'
TORTURE = fixture.BUILD / 'tests' / 'daemon' / 'fastlease-torture'

FAST_BIT = 1 << 63

# --fast-path modes this kernel can run (a forced mode it cannot is a start error).
MODES = ('expedited', 'global', 'fence')


class FastClient(Lines):
    """fastlease-client: libcpuhp-client handles and lease threads."""

    def __init__(self, socket_path, env=None):
        super().__init__([FASTCLIENT, socket_path], env)

    def connect(self, handle, fast=True):
        r = self(f'connect {handle}')
        assert r['ret'] == 0 and r['fast'] == fast, r
        return r

    def thread(self, name, handle):
        assert self(f'thread {name} {handle}')['ok']

    def acquire(self, thread, ms=0):
        """Queue an acquire on @thread; its result comes with wait()."""
        assert self(f'acquire {thread} {ms}')['queued']

    def release(self, thread, lease_id=None):
        assert self(f'release {thread}' + ('' if lease_id is None else f' {lease_id}'))['queued']

    def wait(self, thread):
        return self(f'wait {thread}')

    def lease(self, thread, ms=0, fast=True):
        """Acquire and wait; Return: the lease id (fast or not, as asked)."""
        self.acquire(thread, ms)
        r = self.wait(thread)
        assert r['ret'] == 0 and r['fast'] == fast, r
        return r['lease_id']

    def unlease(self, thread, lease_id=None):
        self.release(thread, lease_id)
        r = self.wait(thread)
        assert r['ret'] == 0, r
        return r

    def status(self, handle):
        r = self(f'status {handle}')
        assert r['ret'] == 0, r
        return r


class Raw(Lines):
    """fastlease-raw: one raw connection."""

    def __init__(self, socket_path):
        super().__init__([FASTRAW, socket_path])


def fast_daemon(tmp, sim_root, mode=None, args=()):
    """A started fixture.Daemon with --fast-path @mode (None: the default, auto)."""
    extra = list(args) + (['--fast-path', mode] if mode else [])
    return fixture.Daemon(tmp, sim_root, args=extra).start()
