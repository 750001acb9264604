# SPDX-License-Identifier: LGPL-2.1-or-later
"""An exception that stops a cpuhp.Client call on its way out leaves
nothing behind: a call it leaves unfinished is let go when it is collected,
without waiting for a lock the collecting thread may hold."""
from conftest import wait_until


def test_a_call_left_unfinished_is_let_go_without_waiting_for_the_lock(client):
    # What an exception at the start of the with statement's exit leaves:
    # the call's generator suspended, let go as it is collected, here (as a
    # collection may) where this thread holds the Client's lock.
    cm = client._s.using()
    cm.__enter__()
    assert client._busy == 1
    with client._s.lock:
        del cm
    wait_until('the call let go', lambda: client._busy == 0)
    client.status()
