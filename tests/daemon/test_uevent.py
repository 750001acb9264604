# SPDX-License-Identifier: LGPL-2.1-or-later
"""Changes made behind the daemon's back: uevents (injected through
--uevent-socket for the simulated tree, in the kernel's format) update the
status and reach watchers; every hotplug re-reads the online set first."""
import subprocess
import time

import fixture


def test_injected_uevent_updates_status_and_watchers(daemon, sim, probe):
    probe.connect('w')
    wid = probe.send('w', 'watch')
    assert probe.recv('w')['kind'] == 'watch_started'
    sim.write_online(1, 0)
    daemon.inject_uevent('offline', '/devices/system/cpu/cpu1')
    ev = probe.recv('w')
    assert ev == {'id': wid, 'kind': 'event', 'event': 'online_changed', 'external': True,
                  'online': '0'}, ev
    s = probe.status('w')
    assert s['online'] == '0' and s['offline'] == '1'
    sim.write_online(1, 1)
    daemon.inject_uevent('online', '/devices/system/cpu/cpu1')
    ev = probe.recv('w')
    assert ev['event'] == 'online_changed' and ev['external'] and ev['online'] == '0-1'


def test_uevents_of_other_devices_are_ignored(daemon, sim, probe):
    probe.connect('w')
    probe.call('w', 'watch')
    sim.write_online(1, 0)
    # None of these is a CPU going online/offline: no re-read, no event.
    daemon.inject_uevent('offline', '/devices/system/memory/memory0')
    daemon.inject_uevent('change', '/devices/system/cpu/cpu1')
    daemon.inject_uevent('offline', '/devices/system/cpu/cpufreq')
    # This one is, and is the first event the watcher gets.
    daemon.inject_uevent('offline', '/devices/system/cpu/cpu1')
    ev = probe.recv('w')
    assert ev['event'] == 'online_changed' and ev['online'] == '0'
    # The three went through the same socket first, and none was taken for a CPU event.
    assert daemon.log().count('debug: uevent: ') == 1, daemon.log()


def test_hotplug_rereads_the_online_set_before_writing(daemon, sim, probe):
    probe.connect('h')
    sim.write_online(1, 0)  # no uevent: the daemon's copy is stale
    assert probe.status('h')['online'] != '0'
    r = probe.call('h', 'offline', 1, 1000)
    assert r['results'][0]['ok'] and not r['results'][0]['changed'], r
    assert r['online'] == '0' and probe.status('h')['online'] == '0'


def hot_pluggable_tree(sim):
    """CPUs 0-3 present and online, 4-5 possible only: room to hot-add."""
    for n in (4, 5):
        sim.write_online(n, 0)
    (sim.cpu / 'online').write_text('0-3\n')
    (sim.cpu / 'present').write_text('0-3\n')


def test_a_hot_added_cpu_and_one_removed_offline_reach_watchers_and_the_log(tmp):
    """Before, only a change of the online set made an event: a vCPU
    hot-added (it comes offline) or ejected while offline was invisible."""
    sim = fixture.SimSysfs(tmp / 'sys6', cpus='0-5')
    hot_pluggable_tree(sim)
    d = fixture.Daemon(tmp, sim.root).start()
    probe = fixture.Probe(d.socket)
    try:
        probe.connect('w')
        wid = probe.send('w', 'watch')
        assert probe.recv('w')['kind'] == 'watch_started'
        (sim.cpu / 'present').write_text('0-4\n')
        d.inject_uevent('add', '/devices/system/cpu/cpu4')
        ev = probe.recv('w')
        assert ev == {'id': wid, 'kind': 'event', 'event': 'present_changed', 'present': '0-4',
                      'added': '4', 'removed': '', 'online': '0-3'}, ev
        assert probe.status('w')['present'] == '0-4'
        assert 'info: CPU 4 is now present (offline)' in d.log()
        # Ejected while still offline: the online set never changes.
        (sim.cpu / 'present').write_text('0-3\n')
        d.inject_uevent('remove', '/devices/system/cpu/cpu4')
        ev = probe.recv('w')
        assert ev['event'] == 'present_changed' and ev['removed'] == '4' and ev['added'] == ''
        assert 'info: CPU 4 is no longer present (it was offline)' in d.log()
        # Two added at once, one of them online (a udev rule onlined it): then OnlineChanged.
        (sim.cpu / 'present').write_text('0-5\n')
        sim.write_online(5, 1)
        d.inject_uevent('add', '/devices/system/cpu/cpu5')
        ev = probe.recv('w')
        assert (ev['event'], ev['added'], ev['online']) == ('present_changed', '4-5', '0-3,5'), ev
        ev = probe.recv('w')
        assert ev['event'] == 'online_changed' and ev['online'] == '0-3,5', ev
        log = d.log()
        assert 'CPU 4 is now present (offline)' in log.split('CPU 4 is no longer')[1]
        assert 'info: CPU 5 is now present (online)' in log
    finally:
        probe.kill()
        d.stop_clean()


def test_cpuhpctl_watch_prints_present_changes_in_text_and_json(tmp):
    sim = fixture.SimSysfs(tmp / 'sys6', cpus='0-5')
    hot_pluggable_tree(sim)
    d = fixture.Daemon(tmp, sim.root).start()
    try:
        for args, want in ((['watch', '--count', '1'],
                            b'present changed: 0-4 (added 4; online 0-3)\n'),
                           (['--json', 'watch', '--count', '1'],
                            b'{"event":"present_changed","present":[0,1,2,3,4],"added":[4],'
                            b'"removed":[],"online":[0,1,2,3]}\n')):
            w = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', d.socket, *args],
                                 stdout=subprocess.PIPE)
            first = w.stdout.readline()
            assert b'watching' in first, first
            (sim.cpu / 'present').write_text('0-4\n')
            d.inject_uevent('add', '/devices/system/cpu/cpu4')
            out, _ = w.communicate(timeout=fixture.GUARD_S)
            assert w.returncode == 0 and out == want, out
            # Back to 0-3 before the next watcher subscribes: each try is a round trip.
            (sim.cpu / 'present').write_text('0-3\n')
            d.inject_uevent('remove', '/devices/system/cpu/cpu4')
            p = fixture.Probe(d.socket)
            try:
                p.connect('s')
                deadline = time.monotonic() + fixture.GUARD_S
                while p.status('s')['present'] != '0-3':
                    assert time.monotonic() < deadline, 'the removal was never read'
            finally:
                p.kill()
    finally:
        d.stop_clean()
