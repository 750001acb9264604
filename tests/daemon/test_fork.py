# SPDX-License-Identifier: LGPL-2.1-or-later
"""fork() with a lease held.

A child of fork() inherits its parent's handles, not its leases: every
call on an inherited handle fails with a clear error and touches nothing
(the parent's leases stay held), and the child's copy of the socket is
closed at fork, so a lease never outlives the process that took it.  (The
fast-lease case is test_fastlease.py's test_fork_child_cannot_use_or_end_its_parents_leases.)"""
import errno
import os
import signal
import time

import fixture

from fastlib import FastClient
from fixture import error_code

SHORT = 300


def socket_client(daemon):
    c = FastClient(daemon.socket, env={'CPUHP_CLIENT_FAST_PATH': '0'})
    c.connect('a', fast=False)
    c.thread('t', 'a')
    return c


def test_child_cannot_release_its_parents_socket_lease(daemon, sim, probe):
    c = socket_client(daemon)
    try:
        lease = c.lease('t', fast=False)
        r = c(f'forklease a {lease}')
        # Before the fix the child's release ended the parent's lease: the hotplug ran.
        assert r['acquire'] == -errno.ECHILD and 'fork' in r['message'], r
        assert r['release'] == -errno.ESRCH and r['status'] == -errno.ECHILD, r
        probe.connect('h')
        assert probe.status('h')['leases_held'] == 1
        r = probe.call('h', 'offline', 1, SHORT)
        assert error_code(r) == 'ERR_ETIMEDOUT' and sim.read_online(1) == '1', r
        # The parent's handle works on.
        c.unlease('t', lease)
        assert c.status('a')['leases_held'] == 0
    finally:
        c.kill()


def test_a_lease_ends_with_its_process_while_a_fork_child_lives_on(daemon, probe):
    c = socket_client(daemon)
    child = None
    try:
        c.lease('t', fast=False)
        child = c('forkstay a')['child']
        probe.connect('p')
        assert probe.status('p')['leases_held'] == 1
        c.proc.kill()
        c.proc.wait()
        # Before the fix the child's copy of the socket kept the lease held.
        # Poll the daemon until it has seen the parent's connection close (a
        # deadline only against a hang).
        deadline = time.monotonic() + fixture.GUARD_S
        s = probe.status('p')
        while s['connections'] > 1 and time.monotonic() < deadline:
            s = probe.status('p')
        assert s['leases_held'] == 0 and s['connections'] == 1, s
        os.kill(child, 0)   # the child still lives
    finally:
        c.kill()
        if child:
            os.kill(child, signal.SIGKILL)
