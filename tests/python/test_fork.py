# SPDX-License-Identifier: LGPL-2.1-or-later
"""fork() with a lease held, in Python: a forked child that leaves `with
c.lease()` does not release its parent's lease, and every call it makes on
the inherited Client fails clearly (ChildProcessError; ProcessLookupError
for the release)."""
import errno
import os

import pytest


def in_child(fn):
    """Run @fn() in a forked child; Return: the text it returned."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(w, fn().encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    assert os.waitpid(pid, 0)[1] == 0
    return out


def test_a_forked_child_cannot_take_a_lease_on_an_inherited_client(client):
    def child():
        try:
            with client.lease():
                return 'acquired'
        except ChildProcessError as e:
            return f'{e.errno}:{e.strerror}'
    out = in_child(child)
    assert out.startswith(f'{errno.ECHILD}:') and 'fork' in out, out


def test_a_forked_child_leaving_with_lease_keeps_the_parents_lease(client, observer, sim):
    with client.lease() as lease:
        def child():
            try:
                lease.__exit__(None, None, None)     # what leaving the inherited `with` does
            except ProcessLookupError as e:
                return f'{e.errno}'
            return 'released'
        assert in_child(child) == f'{errno.ESRCH}'
        # Before the fix the child's exit released the parent's lease.
        assert observer.status().leases_held == 1
        with pytest.raises(TimeoutError):
            observer.set_online(1, False, timeout=0.3)
        assert sim.read_online(1) == '1'
    assert observer.status().leases_held == 0
