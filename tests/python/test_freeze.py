# SPDX-License-Identifier: LGPL-2.1-or-later
"""Hotplug freezes from Python: Client.freeze() as a context
manager, what it refuses and what it lets through, leases().freezes and
status().freezes, and the freeze's end with its Client."""
import errno
import os

import pytest

from conftest import wait_until


def test_a_freeze_refuses_hotplug_at_once_and_lets_leases_through(cpuhp, client, observer,
                                                                  sim):
    with client.freeze(who='bench', why='latency window') as fz:
        assert isinstance(fz, cpuhp.Freeze) and fz.id > 0 and not fz.thawed
        with pytest.raises(OSError) as e:
            observer.set_online(2, False, timeout=60)
        assert e.value.errno == errno.EBUSY, e.value
        assert f"frozen by pid {os.getpid()} (bench) 'latency window'" in e.value.strerror
        assert sim.read_online(2) == '1'
        with observer.lease(timeout=0):                 # leases are not frozen
            pass
        assert observer.status().freezes == 1
        [row] = observer.leases().freezes
        assert isinstance(row, cpuhp.FreezeInfo), row
        assert (row.id, row.granted, row.who, row.why) == (fz.id, True, 'bench',
                                                           'latency window'), row
        assert (row.pid, row.uid) == (os.getpid(), os.getuid()) and row.held >= 0, row
    assert fz.thawed and 'thawed' in repr(fz)
    assert observer.status().freezes == 0 and observer.leases().freezes == []
    assert observer.set_online(2, False, timeout=5).ok
    assert sim.read_online(2) == '0'


def test_a_freeze_is_named_after_its_client_by_default(cpuhp, daemon, observer):
    with cpuhp.Client(daemon.socket, who='pools', why='sizing') as c:
        with c.freeze():
            [row] = observer.leases().freezes
    assert (row.who, row.why) == ('pools', 'sizing'), row


def test_thaw_twice_is_harmless_and_the_freeze_ends_with_its_client(cpuhp, daemon, observer):
    c = cpuhp.Client(daemon.socket)
    fz = c.freeze()
    fz.thaw()
    fz.thaw()
    kept = c.freeze()  # held while referenced: a Freeze dropped unthawed thaws
    assert observer.status().freezes == 1 and not kept.thawed
    c.close()
    wait_until('the freeze ended with its Client', lambda: observer.status().freezes == 0)
    assert observer.set_online(3, False, timeout=5).ok


def test_freeze_checks_its_names(client):
    with pytest.raises(ValueError):
        client.freeze(who='x' * 256)
    with pytest.raises(TypeError):
        client.freeze(why=5)
