# SPDX-License-Identifier: LGPL-2.1-or-later
"""Getting ready for a hotplug: a hotplug that has to wait announces itself
(HotplugPending, then HotplugCancelled if it ends without running) to every
watcher and every lease holder; delay leases are revoked their delay after
that notice (--max-delay-ms caps the delay); a forced hotplug revokes every
lease still held after its grace and lists them in its reply.

Ordering without sleeps: the daemon answers one connection's requests in
order, and a notice is awaited as a probe recv."""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

import fastlib
import fixture
from fixture import GUARD_S
from test_leases import ctl, ctl_json

NONROOT = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which('setpriv'),
                             reason='needs root and setpriv to run a client as nobody: skipped')
LONG = 60000

# <cpuhp/client.h>'s event types and revoke reasons, as fastlease-client prints them.
EV_LEASE_REVOKED, EV_HOTPLUG_PENDING = 5, 9
REVOKED_DELAY, REVOKED_FORCED = 1, 2
ETIME = 62


def held_by(daemon, who):
    """Ask until cpuhpd lists a lease held by @who (a process started meanwhile
    takes it); each try is a round trip.  Return: its rows (--json)."""
    deadline = time.monotonic() + GUARD_S
    while time.monotonic() < deadline:
        rc, out = ctl_json(daemon, 'leases')
        rows = [x for x in out['leases'] if x['who'] == who]
        if rows:
            return rows
    raise AssertionError(f'no lease of {who} within {GUARD_S} s')


def start(tmp, sim, *args):
    os.chmod(tmp, 0o755)
    return fixture.Daemon(tmp, sim.root, args=['--socket-mode', '0666', *args]).start()


def test_holders_and_watchers_hear_a_waiting_hotplug_and_its_timeout(daemon4, probe):
    for n in ('a', 'b', 'w', 'h'):
        probe.connect(n)
    wid = probe.send('w', 'watch')
    assert probe.recv('w')['kind'] == 'watch_started'
    probe.lease('a')
    probe.lease('a')            # two leases, one notice per connection
    probe.lease('b')
    hp = probe.send('h', 'offline', 2, 300)
    for n in ('a', 'b'):
        ev = probe.recv(n)
        assert (ev['id'], ev['event'], ev['cpus'], ev['online'], ev['smt']) == \
            (0, 'hotplug_pending', '2', False, ''), ev
        assert 0 < ev['timeout_ms'] <= 300 and not ev['force'], ev
    seq = ev['hotplug_id']
    ev = probe.recv('w')
    assert (ev['id'], ev['event'], ev['hotplug_id']) == (wid, 'hotplug_pending', seq), ev
    r = probe.recv('h')
    assert r['id'] == hp and fixture.error_code(r) == 'ERR_ETIMEDOUT', r
    for n, rid in (('a', 0), ('b', 0), ('w', wid)):
        ev = probe.recv(n)
        assert (ev['id'], ev['event'], ev['hotplug_id'], ev['code'], ev['cpus']) == \
            (rid, 'hotplug_cancelled', seq, 'ERR_ETIMEDOUT', '2'), ev
        assert 'timed out after 300 ms' in ev['message'], ev
        assert probe(f'queued {n}')['queued'] == 0   # once each
    # The requester itself holds nothing: it heard only its answer.
    assert probe.status('h')['kind'] == 'status' and probe('queued h')['queued'] == 0


def test_a_hotplug_that_does_not_wait_is_not_announced(daemon4, probe):
    probe.connect('w')
    probe.call('w', 'watch')
    probe.connect('h')
    assert probe.call('h', 'offline', 2, LONG)['kind'] == 'set_online'
    assert probe.recv('w')['event'] == 'hotplug_started'


def test_a_hotplug_withdrawn_by_its_client_is_cancelled_for_the_holders(daemon4, probe):
    probe.connect('a')
    probe.connect('h')
    probe.lease('a')
    probe.send('h', 'online', 3, LONG)
    pend = probe.recv('a')
    assert pend['event'] == 'hotplug_pending' and pend['online'], pend
    probe('close h')
    ev = probe.recv('a')
    assert (ev['event'], ev['hotplug_id'], ev['code']) == \
        ('hotplug_cancelled', pend['hotplug_id'], 'ERR_ECANCELED'), ev
    assert 'its client disconnected' in ev['message'], ev


def test_notices_of_a_connection_opened_beside_go_to_the_clients_own(daemon4, probe):
    main = probe.connect('main')['connection']
    assert main > 0
    probe('rawconnect side')
    hello = probe.call('side', 'hellofrom', 1, main)
    assert hello['kind'] == 'hello' and hello['connection'] not in (0, main), hello
    probe.lease('side')
    probe.connect('h')
    probe.send('h', 'offline', 2, 300)
    ev = probe.recv('main')
    assert (ev['id'], ev['event']) == (0, 'hotplug_pending'), ev
    assert fixture.error_code(probe.recv('h')) == 'ERR_ETIMEDOUT'
    assert probe.recv('main')['event'] == 'hotplug_cancelled'
    # Nothing went to the side connection: its next answer is its status.
    assert probe.status('side') and probe('queued side')['queued'] == 0


def test_a_connection_cannot_send_its_notices_to_another_processs(daemon4, probe):
    main = probe.connect('main')['connection']
    other = fixture.Probe(daemon4.socket)
    try:
        other('rawconnect side')
        assert other.call('side', 'hellofrom', 1, main)['kind'] == 'hello'
        other.lease('side')
        probe.connect('h')
        probe.send('h', 'offline', 2, LONG)
        # Told on its own connection, as if it had named none.
        assert other.recv('side')['event'] == 'hotplug_pending'
        assert probe.status('main') and probe('queued main')['queued'] == 0
        assert 'its notices stay here' in daemon4.log()
    finally:
        other.kill()


def test_a_delay_lease_is_revoked_its_delay_after_the_notice_a_block_lease_is_not(daemon4,
                                                                                  probe):
    for n in ('d', 'b', 'h'):
        probe.connect(n)
    r = probe.call('d', 'acquiredelay', 0, 200)
    assert (r['kind'], r['mode'], r['delay_ms'], r['delay_clipped']) == \
        ('lease_granted', 'delay', 200, False), r
    delay_lease = r['lease_id']
    block = probe.lease('b')
    rows = {x['lease_id']: x for x in probe.call('b', 'leases')['leases']}
    assert (rows[delay_lease]['mode'], rows[delay_lease]['delay_ms']) == ('delay', 200), rows
    assert (rows[block]['mode'], rows[block]['delay_ms']) == ('block', 0), rows
    hp = probe.send('h', 'offline', 2, LONG)
    pend = probe.recv('d')
    assert pend['event'] == 'hotplug_pending', pend
    rv = probe.recv('d')
    assert (rv['id'], rv['event'], rv['lease_id'], rv['reason'], rv['hotplug_id'],
            rv['delay_ms']) == (0, 'lease_revoked', delay_lease, 'delay', pend['hotplug_id'],
                                200), rv
    # The block lease still holds the hotplug: its holder heard only the notice.
    s = probe.status('h')
    assert (s['leases_held'], s['writer'], s['revocations']) == (1, 'WRITER_WAITING', 1), s
    assert probe.recv('b')['event'] == 'hotplug_pending'
    r = probe.call('d', 'release', delay_lease)
    assert fixture.error_code(r) == 'ERR_ETIME' and 'delay of 200 ms' in r['message'], r
    assert probe.call('b', 'release', block)['kind'] == 'lease_released'
    r = probe.recv('h')
    assert r['id'] == hp and r['results'][0]['changed'], r
    assert 'revoked after' in daemon4.log() and 'waited its delay of 200 ms' in daemon4.log()


def test_a_delay_over_max_delay_ms_is_clipped_and_the_reply_says_so(tmp, sim4):
    d = start(tmp, sim4, '--max-delay-ms', '250')
    p = fixture.Probe(d.socket)
    try:
        assert p.connect('a')['max_delay_ms'] == 250
        r = p.call('a', 'acquiredelay', 0, 10000)
        assert (r['mode'], r['delay_ms'], r['delay_clipped']) == ('delay', 250, True), r
        r = p.call('a', 'acquiredelay', 0, 0)        # 0: as long as cpuhpd allows
        assert (r['mode'], r['delay_ms'], r['delay_clipped']) == ('delay', 250, False), r
        r = p.call('a', 'acquiredelay', 0, 100)
        assert (r['mode'], r['delay_ms'], r['delay_clipped']) == ('delay', 100, False), r
        # cpuhpctl hold says it too, and leases shows the mode.
        h = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', d.socket, 'hold',
                              '--delay', '3s', '--', 'cat'], stdin=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            line = h.stderr.readline()
            assert "--delay 3.0s is over cpuhpd's --max-delay-ms: the lease's delay is 250ms" \
                in line, line
            mine = held_by(d, 'cat')
            assert [(x['mode'], x['delay_ms']) for x in mine] == [('delay', 250)], mine
        finally:
            h.communicate('', timeout=GUARD_S)
    finally:
        p.kill()
        assert d.stop() == 0, d.log()


def test_max_delay_ms_is_refused_at_zero(tmp, sim4):
    r = subprocess.run([str(fixture.CPUHPD), '--socket', str(tmp / 's'), '--sysfs-root',
                        str(sim4.root), '--max-delay-ms', '0'], capture_output=True, text=True,
                       timeout=GUARD_S)
    assert r.returncode != 0 and '--max-delay-ms: at least 1 ms' in r.stderr, r


def test_a_forced_hotplug_revokes_what_is_held_after_its_grace_and_lists_it(daemon4, probe):
    for n in ('a', 'h'):
        probe.connect(n)
    probe.call('a', 'identify', 'pools', 'sizing')
    lease = probe.lease('a')
    hp = probe.send('h', 'forceoffline', 2, LONG, 100)
    pend = probe.recv('a')
    assert (pend['event'], pend['force'], pend['force_grace_ms']) == \
        ('hotplug_pending', True, 100), pend
    rv = probe.recv('a')
    assert (rv['event'], rv['lease_id'], rv['reason'], rv['hotplug_id']) == \
        ('lease_revoked', lease, 'forced', pend['hotplug_id']), rv
    r = probe.recv('h')
    assert r['id'] == hp and r['results'][0]['changed'], r
    [row] = r['revoked']
    assert (row['lease_id'], row['who'], row['why'], row['mode'], row['fast']) == \
        (lease, 'pools', 'sizing', 'block', False), row
    assert fixture.error_code(probe.call('a', 'release', lease)) == 'ERR_ETIME'
    assert "hotplug #1 forced: 1 holder(s) revoked" in daemon4.log()
    # Nothing held: a forced hotplug runs at once and revokes nothing.
    r = probe.call('h', 'forceonline', 2, LONG, 100)
    assert r['results'][0]['changed'] and r['revoked'] == [], r


@NONROOT
def test_a_forced_hotplug_by_a_non_admin_is_eperm(tmp, sim4):
    d = start(tmp, sim4)
    nobody = fixture.Probe(d.socket, fixture.NOBODY)
    try:
        nobody.connect('n')
        r = nobody.call('n', 'forceoffline', 2, LONG, 0)
        assert fixture.error_code(r) == 'ERR_EPERM', r
        r = subprocess.run(fixture.NOBODY + [str(fixture.CPUHPCTL), '--socket', d.socket,
                                             'offline', '--force=1s', '2'],
                           capture_output=True, text=True, timeout=GUARD_S)
        assert r.returncode == 1 and 'not allowed' in r.stderr, r
        assert sim4.read_online(2) == '1'
    finally:
        nobody.kill()
        assert d.stop() == 0, d.log()


def test_cpuhpctl_force_prints_what_it_revoked(daemon4):
    hold = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon4.socket, 'hold', '--who',
                             'pools', '--', 'cat'], stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        held_by(daemon4, 'pools')
        r = ctl(daemon4, 'offline', '--force=50ms', 2)
        assert r.returncode == 0, r
        assert r.stdout.startswith(f'revoked: fast leases of pid {hold.pid} (pools), held '), r
        assert 'CPU 2 disabled' in r.stdout, r
        err = hold.stderr.readline()
        assert 'hotplug #1 (offline 2) is pending' in err and '(forced)' in err, err
        err = hold.stderr.readline()
        assert 'revoked the lease' in err and 'forced hotplug' in err, err
        # The fast path took a new region: the next lease is a fast one again.
        rc, out = ctl_json(daemon4, 'online', '--force', 2)
        assert rc == 0 and out['revoked'] == [], out
    finally:
        hold.communicate('', timeout=GUARD_S)


def test_smt_force_stays_forceoffs_confirmation(daemon4):
    r = ctl(daemon4, 'smt', '--force=1s', 'off')
    assert r.returncode == 2 and '--force-leases=1s' in r.stderr, r
    r = ctl(daemon4, 'smt', 'forceoff')
    assert r.returncode == 2 and 'add --force' in r.stderr, r
    r = ctl(daemon4, 'offline', '--force=soon', 2)
    assert r.returncode == 2 and 'wants a time' in r.stderr, r


def test_watch_json_shows_pending_and_cancelled(daemon4, probe):
    w = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon4.socket, 'watch', '--json',
                          '--count', '2'], stdout=subprocess.PIPE, text=True)
    try:
        assert json.loads(w.stdout.readline()) == {'event': 'watching'}
        probe.connect('a')
        probe.lease('a')
        rc, out = ctl_json(daemon4, 'offline', '--timeout', '100ms', 3)
        assert rc == 75 and out['error'] == 'ETIMEDOUT', out
        events = [json.loads(line) for line in w.stdout]
        assert w.wait(timeout=GUARD_S) == 0
    finally:
        w.kill()
    pend, canc = events
    assert pend == {'event': 'hotplug_pending', 'seq': 1, 'action': 'offline', 'cpus': [3],
                    'timeout_ms': pend['timeout_ms'], 'force': False,
                    'force_grace_ms': 0}, pend
    assert 0 < pend['timeout_ms'] <= 100, pend
    assert canc == {'event': 'hotplug_cancelled', 'seq': 1, 'action': 'offline', 'cpus': [3],
                    'error': 'ETIMEDOUT', 'message': canc['message']}, canc
    assert 'timed out after 100 ms behind 1 lease' in canc['message'], canc


def test_hold_on_pending_runs_its_hook_with_the_cpus(daemon4, tmp):
    out = tmp / 'hook.out'
    hold = subprocess.Popen(
        [str(fixture.CPUHPCTL), '--socket', daemon4.socket, 'hold', '--on-pending',
         f'echo "$CPUHP_CPUS $CPUHP_ACTION $CPUHP_HOTPLUG" > {out}; kill $CPUHP_HOLD_PID',
         '--', 'sleep', '600'], stderr=subprocess.PIPE, text=True)
    try:
        held_by(daemon4, 'sleep')
        # The hook ends the command, which ends the lease: no need to wait 600 s.
        r = ctl(daemon4, 'offline', '--timeout', '60s', '2-3')
        assert r.returncode == 0, r
        assert hold.wait(timeout=GUARD_S) == 128 + 15
        assert out.read_text() == '2-3 offline 1\n'
        assert 'hotplug #1 (offline 2-3) is pending' in hold.stderr.read()
    finally:
        hold.kill()
        hold.wait()


def test_a_fast_delay_lease_is_revoked_and_the_handle_gets_a_new_region(daemon4, probe):
    c = fastlib.FastClient(daemon4.socket)
    try:
        r = c('connectdelay d 150')
        assert (r['ret'], r['fast'], r['delay_ms']) == (0, True, 150), r
        c.thread('t', 'd')
        old = c.lease('t')
        probe.connect('h')
        rows = probe.call('h', 'leases')['leases']
        assert [(x['fast'], x['mode'], x['delay_ms']) for x in rows] == \
            [(True, 'delay', 150)], rows
        hp = probe.send('h', 'offline', 2, LONG)
        ev = c(f'event d {GUARD_S * 1000}')
        assert ev['type'] == EV_HOTPLUG_PENDING, ev
        ev = c(f'event d {GUARD_S * 1000}')
        assert (ev['type'], ev['reason'], ev['fast'], ev['count'], ev['delay_ms']) == \
            (EV_LEASE_REVOKED, REVOKED_DELAY, True, 1, 150), ev
        r = probe.recv('h')
        assert r['id'] == hp and r['results'][0]['changed'], r
        c.release('t', old)
        r = c.wait('t')
        assert r['ret'] == -ETIME and 'was revoked' in r['message'], r
        new = c.lease('t')                       # a new region, fast again
        assert new != old
        s = probe.status('h')
        assert (s['leases_held'], s['fast_leases_held']) == (1, 1), s
        c.unlease('t', new)
    finally:
        c.kill()


def test_a_forced_hotplug_revokes_block_fast_leases_too(daemon4, probe):
    c = fastlib.FastClient(daemon4.socket)
    try:
        c.connect('b')
        c.thread('t', 'b')
        old = c.lease('t')
        probe.connect('h')
        r = probe.call('h', 'forceoffline', 2, LONG, 0)
        assert r['results'][0]['changed'], r
        assert [(x['fast'], x['count'], x['mode']) for x in r['revoked']] == \
            [(True, 1, 'block')], r
        c.release('t', old)
        assert c.wait('t')['ret'] == -ETIME
        c.unlease('t', c.lease('t'))
    finally:
        c.kill()


def test_a_holder_that_never_reads_its_notices_is_cut_off_and_blocks_nothing(daemon4, probe):
    """Every try of a hotplug behind a lease sends its holder a notice and a
    cancel.  A holder that never reads them is closed at the bound of its
    write queue (core/conn.c, admit.c), which ends its lease, so the notices
    neither grow cpuhpd nor hold the hotplug; others are answered meanwhile."""
    for n in ('silent', 'h', 'other'):
        probe.connect(n)
    probe.lease('silent')            # then never read from again
    other = probe.lease('other')
    probe.call('other', 'release', other)
    tries = 0
    while True:
        r = probe.call('h', 'offline', 2, 0)
        tries += 1
        if r['kind'] == 'set_online':   # nothing holds it any more
            break
        assert fixture.error_code(r) == 'ERR_EAGAIN', r
        assert tries < 40000, f'a holder that reads nothing still held after {tries} tries'
        if tries % 100 == 0:            # another client is served all along
            assert probe.status('other')['leases_held'] == 1
    assert r['results'][0]['changed'], r
    assert 'client does not read its replies or events' in daemon4.log()
    s = probe.status('other')
    assert (s['leases_held'], s['connections']) == (0, 2), s
    print(f'cut off after {tries} tries ({2 * tries} notices)')


def test_a_hotplugs_client_and_its_holders_gone_at_once_leave_cpuhpd_standing(daemon4):
    """The requester's end drops its hotplug and tells the holders; telling
    one whose socket is gone closes it too, which ends its lease and lets
    the gate go on: the hotplug must already be out of the queue then (it
    was not, and the worker ran a freed request)."""
    for i in range(20):
        p = fixture.Probe(daemon4.socket)
        for n in ('x', 'y'):
            p.connect(n)
        p.lease('x')
        p.send('y', 'offline', 2, LONG)
        assert p.recv('x')['event'] == 'hotplug_pending'
        p.kill()                          # both connections end at once
    q = fixture.Probe(daemon4.socket)
    try:
        q.connect('q')
        s = q.status('q')
        assert (s['leases_held'], s['pending_hotplugs']) == (0, 0), s
    finally:
        q.kill()


# ---- a restart (the fd store) keeps the notices and the delay leases ----

@pytest.fixture
def manager(tmp):
    import fdstore
    m = fdstore.Manager(tmp)
    yield m
    m.close()


def restarted(manager, d, sig):
    d.send_signal(sig)
    assert d.wait() == (0 if sig == signal.SIGTERM else -signal.SIGKILL), d.log()
    manager.sync()
    return manager.start(d)


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGKILL], ids=['sigterm', 'sigkill'])
def test_a_pending_hotplug_and_its_notices_survive_a_restart(tmp, sim4, manager, sig):
    """Told before the restart, not told again after; its number kept; the
    cancel reaches those told, through the routes kept too; new numbers go
    on above it; a delay lease comes back a delay lease."""
    d = manager.start(fixture.Daemon(tmp, sim4.root, args=['--max-delay-ms', '600000']))
    p = fixture.Probe(d.socket)
    try:
        main = p.connect('main')['connection']
        p('rawconnect side')
        assert p.call('side', 'hellofrom', 1, main)['kind'] == 'hello'
        p.lease('side')
        p.connect('d')
        delay = p.call('d', 'acquiredelay', 0, 600000)['lease_id']
        p.connect('w')
        wid = p.send('w', 'watch')
        assert p.recv('w')['kind'] == 'watch_started'
        p.connect('admin')
        p.send('admin', 'offline', 2, LONG)
        seq = p.recv('main')['hotplug_id']
        assert p.recv('d')['hotplug_id'] == seq and p.recv('w')['hotplug_id'] == seq
        d = restarted(manager, d, sig)
        s = p.status('main')
        assert (s['pending_hotplugs'], s['leases_held'], s['writer']) == \
            (1, 2, 'WRITER_WAITING'), s
        rows = {x['lease_id']: x for x in p.call('main', 'leases')['leases']}
        assert (rows[delay]['mode'], rows[delay]['delay_ms']) == ('delay', 600000), rows
        p('close admin')                 # withdrawn after the restart
        for n, rid in (('main', 0), ('d', 0), ('w', wid)):
            ev = p.recv(n)
            assert (ev['id'], ev['event'], ev['hotplug_id'], ev['code']) == \
                (rid, 'hotplug_cancelled', seq, 'ERR_ECANCELED'), (n, ev)
        assert p.status('side') and p('queued side')['queued'] == 0
        # The next hotplug gets the next number.
        p.connect('admin2')
        p.send('admin2', 'offline', 2, 100)
        assert p.recv('d')['hotplug_id'] == seq + 1
    finally:
        p.kill()
        d.stop()


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGKILL], ids=['sigterm', 'sigkill'])
def test_a_delay_lease_is_revoked_after_a_restart_for_the_hotplug_announced_before(
        tmp, sim4, manager, sig):
    d = manager.start(fixture.Daemon(tmp, sim4.root))
    p = fixture.Probe(d.socket)
    try:
        p.connect('d')
        lease = p.call('d', 'acquiredelay', 0, 1500)['lease_id']
        p.connect('admin')
        hp = p.send('admin', 'offline', 2, LONG)
        seq = p.recv('d')['hotplug_id']
        d = restarted(manager, d, sig)
        ev = p.recv('d')                 # the delay runs on in the next cpuhpd
        assert (ev['event'], ev['lease_id'], ev['reason'], ev['hotplug_id']) == \
            ('lease_revoked', lease, 'delay', seq), ev
        r = p.recv('admin')
        assert r['id'] == hp and r['results'][0]['changed'], r
        assert fixture.error_code(p.call('d', 'release', lease)) == 'ERR_ETIME'
    finally:
        p.kill()
        d.stop()
