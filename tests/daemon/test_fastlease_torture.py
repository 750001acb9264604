# SPDX-License-Identifier: LGPL-2.1-or-later
"""Torture: reader processes of several threads each read the simulated
cpu1/online file twice per lease while the test takes CPU 1 offline and
online over and over; only cpuhpd writes that file, under its hotplug lock.
No section may see it change, with every barrier the daemon can use.

The control experiment reads twice without a lease around one hotplug and
must see the change: the check can fail."""
import json

import pytest

import fixture
from fastlib import MODES, TORTURE, Lines, fast_daemon

PROCESSES = 3
THREADS = 3
CYCLES = 15  # offline + online each


@pytest.mark.parametrize('mode', MODES)
def test_readers_never_see_the_online_file_change_under_a_lease(tmp, sim, mode):
    d = fast_daemon(tmp, sim.root, mode)
    online = sim.online_file(1)
    readers = [Lines([TORTURE, d.socket, online, THREADS]) for _ in range(PROCESSES)]
    probe = fixture.Probe(d.socket)
    try:
        for r in readers:
            line = json.loads(r.proc.stdout.readline())
            assert line['running'] and line['fast_path'] == 1, line
        probe.connect('h')
        for _ in range(CYCLES):
            for verb in ('offline', 'online'):
                r = probe.call('h', verb, 1, 20000)
                assert r['kind'] == 'set_online' and r['results'][0]['changed'], r
        results = []
        for r in readers:
            r.proc.stdin.close()
            results.append(json.loads(r.proc.stdout.readline()))
            assert r.proc.wait(timeout=fixture.GUARD_S) == 0
        print(results)
        for res in results:
            assert res['violations'] == 0 and res['errors'] == 0, res
        total = {k: sum(res[k] for res in results) for k in ('sections', 'fast', 'seen0',
                                                              'seen1')}
        # Not vacuous: leases were fast, and sections ran in both states of the CPU.
        assert total['fast'] > 0 and total['seen0'] > 0 and total['seen1'] > 0, total
    finally:
        probe.kill()
        for r in readers:
            r.kill()
        d.stop_clean()


def test_the_check_sees_a_change_without_a_lease(daemon, sim, probe):
    control = Lines([TORTURE, '--unleased', sim.online_file(1)])
    try:
        first = json.loads(control.proc.stdout.readline())
        assert first['first'] == 1
        probe.connect('h')
        assert probe.call('h', 'offline', 1, 20000)['results'][0]['changed']
        r = control('go')
        assert r == {'second': 0, 'violations': 1}, r
    finally:
        control.kill()
