# SPDX-License-Identifier: LGPL-2.1-or-later
"""PREPARE states and instances across a SIGKILL restart with the fd store
(daemon/cpuhpd/README.md, "Restart"): a state keeps its section and a multi
state its instances, each with the CPUs it is up on, as states are kept;
and an offline killed inside its PREPARE teardowns (after the write) ends
them when it runs again.  The test plays systemd with fdstore.Manager."""
import pytest

import fdstore
import fixture
from test_restart_states import kill_and_restart
from test_sections import add, answer, register
from test_states import expect_call, states


@pytest.fixture
def manager(tmp):
    m = fdstore.Manager(tmp)
    yield m
    m.close()


def test_instances_and_sections_survive_a_restart(tmp, sim4, manager):
    d = manager.start(fixture.Daemon(tmp, sim4.root))
    p = fixture.Probe(d.socket)
    try:
        p.connect('s')
        p.connect('admin')
        m = register(p, 's', 'caches', 0, 60000, 'multi', 'prepare')
        o = register(p, 's', 'plain', 5, 60000)
        a = add(p, 's', m, 'a')['instance_id']
        b = add(p, 's', m, 'b')['instance_id']
        d = kill_and_restart(manager, d)
        info = states(p, 'admin')
        assert [(s['name'], s['section'], s['multi'], s['instances']) for s in info] == \
            [('caches', 'prepare', True, 2), ('plain', 'online', False, 0)], info
        # The next cpuhpd calls them as the killed one would have.
        hid = p.send('admin', 'offline', 2, 60000)
        call = expect_call(p, 's', state_id=o, cpu=2, phase='teardown', section='online')
        answer(p, 's', call)
        for iid in (b, a):
            call = expect_call(p, 's', state_id=m, instance_id=iid, cpu=2, phase='teardown',
                               section='prepare')
            assert sim4.read_online(2) == '0'
            answer(p, 's', call)
        r = p.recv('admin')
        assert r['id'] == hid and r['results'][0]['ok'], r
        # An instance added after the restart follows the kept ones.
        c = add(p, 's', m, 'c', cpus=(0, 1, 3))['instance_id']
        assert c not in (a, b)
    finally:
        p.kill()
        d.stop()


def test_an_offline_killed_inside_its_prepare_teardowns_ends_them(tmp, sim4, manager):
    d = manager.start(fixture.Daemon(tmp, sim4.root))
    p = fixture.Probe(d.socket)
    try:
        p.connect('s')
        p.connect('admin')
        p1 = register(p, 's', 'p1', 1, 60000, 'prepare')
        p2 = register(p, 's', 'p2', 2, 60000, 'prepare')
        hid = p.send('admin', 'offline', 2, 60000)
        call = expect_call(p, 's', state_id=p2, cpu=2, phase='teardown')
        answer(p, 's', call)
        old = expect_call(p, 's', state_id=p1, cpu=2, phase='teardown')
        assert sim4.read_online(2) == '0'      # the write was made: these are DEAD's
        d = kill_and_restart(manager, d)
        # Run again: the CPU is offline already; p1's teardown, cut by the kill, is due.
        new = expect_call(p, 's', state_id=p1, cpu=2, phase='teardown')
        assert new['call_id'] != old['call_id']
        answer(p, 's', new)
        r = p.recv('admin')
        assert r['id'] == hid and r['results'][0]['ok'], r
        assert all(s['cpus'] == '0-1,3' for s in states(p, 'admin'))
    finally:
        p.kill()
        d.stop()
