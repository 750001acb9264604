# SPDX-License-Identifier: LGPL-2.1-or-later
"""Changes made behind the daemon's back: uevents (injected through
--uevent-socket for the simulated tree, in the kernel's format) update the
status and reach watchers; every hotplug re-reads the online set first."""


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
