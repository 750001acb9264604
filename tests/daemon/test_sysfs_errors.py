# SPDX-License-Identifier: LGPL-2.1-or-later
"""Kernel errors come back per CPU, with the errno and a clear message, and
leave the daemon serving leases; the daemon answers while sysfs is slow."""
import fixture
from fixture import error_code


def test_failing_online_file_gives_enospc_and_leases_stay_grantable(daemon, sim, probe):
    f = sim.online_file(1)
    f.unlink()
    f.symlink_to('/dev/full')  # reads give zeros, writes fail with ENOSPC: a real write error
    probe.connect('h')
    r = probe.call('h', 'offline', 1, 1000)
    res = r['results'][0]
    assert not res['ok'] and res['code'] == 'ERR_ENOSPC', r
    assert 'cpu1/online' in res['message'] and 'No space left' in res['message']
    s = probe.status('h')
    assert s['writer'] == 'WRITER_IDLE' and s['online'] == r['online']
    lease = probe.lease('h', 0)
    assert probe.call('h', 'release', lease)['kind'] == 'lease_released'


def test_online_file_that_is_a_directory_gives_a_clear_error(daemon, sim, probe):
    f = sim.online_file(1)
    f.unlink()
    f.mkdir()
    probe.connect('h')
    r = probe.call('h', 'offline', 1, 1000)
    res = r['results'][0]
    assert not res['ok'] and 'Is a directory' in res['message'], r
    probe.lease('h', 0)


def test_status_connections_and_leases_are_served_while_sysfs_writes_run(daemon, sim, probe):
    stall = fixture.StalledOnlineFile(sim, 1)
    probe.connect('w')
    probe.call('w', 'watch')
    probe.connect('h')
    hp = probe.send('h', 'offline', 1, 60000)
    stall.wait_for_reader()  # the worker is now inside the hotplug
    assert probe.recv('w')['event'] == 'hotplug_started'
    probe.connect('new')
    s = probe.status('new')
    assert s['writer'] == 'WRITER_RUNNING' and s['pending_hotplugs'] == 1
    assert error_code(probe.call('new', 'acquire', 0)) == 'ERR_EAGAIN'
    waiting = probe.send('new', 'acquire', 60000)
    stall.release()
    r = probe.recv('h')
    assert r['id'] == hp and r['results'][0]['changed'], r
    g = probe.recv('new')
    assert g['id'] == waiting and g['kind'] == 'lease_granted'
