# SPDX-License-Identifier: LGPL-2.1-or-later
"""Hotplug states across a SIGKILL restart with the fd store
(daemon/cpuhpd/README.md, "Restart"): a late answer to a call of the killed
cpuhpd never completes a call of the next one, and a hotplug cut inside a
rollback ends where it would have without the kill.

The test plays systemd with fdstore.Manager; the probe owns the states and
answers each call itself, so each test decides when the killed daemon's
call is answered: after the next daemon sent its own."""
import signal

import pytest

import fdstore
import fixture
from fixture import error_code
from test_states import expect_call, register


@pytest.fixture
def manager(tmp):
    m = fdstore.Manager(tmp)
    yield m
    m.close()


@pytest.fixture
def two(tmp, sim4, manager):
    """A cpuhpd with the store, and on the probe's connection s the states
    a (priority 10) and b (20), each started on CPUs 0-3 (answered ok);
    connection admin asks hotplugs.  Yields (daemon, probe, a, b)."""
    d = manager.start(fixture.Daemon(tmp, sim4.root))
    p = fixture.Probe(d.socket)
    try:
        p.connect('s')
        p.connect('admin')
        a = register(p, 's', 'a', 10, deadline=60000)
        b = register(p, 's', 'b', 20, deadline=60000)
        yield d, p, a, b
    finally:
        p.kill()
        d.stop()


def kill_and_restart(manager, d):
    d.send_signal(signal.SIGKILL)
    assert d.wait() == -signal.SIGKILL
    manager.sync()
    return manager.start(d)


def test_a_late_answer_to_the_killed_daemons_call_is_ignored(tmp, sim4, manager):
    """The killed cpuhpd's teardown call is answered with a failure only after
    the next cpuhpd sent its own teardown of the same state and CPU: the
    failure must not be taken for the new call's answer."""
    d = manager.start(fixture.Daemon(tmp, sim4.root))
    p = fixture.Probe(d.socket)
    try:
        p.connect('s')
        p.connect('admin')
        pool = register(p, 's', 'pool', deadline=60000)
        hp = p.send('admin', 'offline', 1, 60000)
        old = expect_call(p, 's', state_id=pool, cpu=1, phase='teardown')
        d = kill_and_restart(manager, d)
        # The offline runs again from the start: the same teardown, asked anew.
        new = expect_call(p, 's', state_id=pool, cpu=1, phase='teardown')
        assert new['call_id'] != old['call_id'], (old, new)
        p.send('s', 'answer', old['call_id'], 'ERR_EBUSY', 'late', 'answer')
        p.send('s', 'answer', new['call_id'], 'ok')
        r = p.recv('admin')
        assert r['id'] == hp and r['kind'] == 'set_online', r
        assert r['results'][0]['ok'] and sim4.read_online(1) == '0', r
    finally:
        p.kill()
        d.stop()


def test_a_late_answer_of_one_state_never_completes_another_states_call(two, sim4, manager):
    """Two states on one connection: a removal of state b is cut by the kill
    inside its second teardown call, whose failure is answered while the
    next cpuhpd waits for state a's teardown."""
    d, p, a, b = two
    p.send('s', 'remove', b)
    call = expect_call(p, 's', state_id=b, cpu=3, phase='teardown')
    p.send('s', 'answer', call['call_id'], 'ok')
    old = expect_call(p, 's', state_id=b, cpu=2, phase='teardown')
    kill_and_restart(manager, d)
    # The removal was never answered: b is still registered, and called first.
    hp = p.send('admin', 'offline', 1, 60000)
    call = expect_call(p, 's', state_id=b, cpu=1, phase='teardown')
    p.send('s', 'answer', call['call_id'], 'ok')
    new = expect_call(p, 's', state_id=a, cpu=1, phase='teardown')
    assert new['call_id'] != old['call_id'], (old, new)
    p.send('s', 'answer', old['call_id'], 'ERR_EBUSY', 'late', 'answer')
    p.send('s', 'answer', new['call_id'], 'ok')
    r = p.recv('admin')
    assert r['id'] == hp and r['results'][0]['ok'] and sim4.read_online(1) == '0', r
    assert [run['name'] for run in r['results'][0]['states']] == ['b', 'a'], r


def test_a_kill_inside_a_failed_startups_rollback_still_ends_offline(two, sim4, manager):
    """online 1: a starts, b refuses (EBUSY), and the rollback's teardown of a
    is cut by the kill.  Without the kill CPU 1 ends offline with EBUSY
    naming b; the next cpuhpd must end there too: it runs the online again
    from where the states are, not "already online": a's startup again
    (after the teardown its client may still run), b's, refused again, then
    the rollback."""
    d, p, a, b = two
    hp = p.send('admin', 'offline', 1, 60000)
    for sid in (b, a):
        call = expect_call(p, 's', state_id=sid, cpu=1, phase='teardown')
        p.send('s', 'answer', call['call_id'], 'ok')
    assert p.recv('admin')['id'] == hp and sim4.read_online(1) == '0'
    hp = p.send('admin', 'online', 1, 60000)
    call = expect_call(p, 's', state_id=a, cpu=1, phase='startup', rollback=False)
    p.send('s', 'answer', call['call_id'], 'ok')
    call = expect_call(p, 's', state_id=b, cpu=1, phase='startup', rollback=False)
    p.send('s', 'answer', call['call_id'], 'ERR_EBUSY', 'b', 'refuses')
    old = expect_call(p, 's', state_id=a, cpu=1, phase='teardown', rollback=True)
    assert sim4.read_online(1) == '1'
    kill_and_restart(manager, d)
    call = expect_call(p, 's', state_id=a, cpu=1, phase='startup', rollback=False,
                       external=False)
    p.send('s', 'answer', old['call_id'], 'ok')     # late: ignored
    p.send('s', 'answer', call['call_id'], 'ok')
    call = expect_call(p, 's', state_id=b, cpu=1, phase='startup', rollback=False,
                       external=False)
    p.send('s', 'answer', call['call_id'], 'ERR_EBUSY', 'b', 'refuses')
    call = expect_call(p, 's', state_id=a, cpu=1, phase='teardown', rollback=True)
    p.send('s', 'answer', call['call_id'], 'ok')
    r = p.recv('admin')
    assert r['id'] == hp and r['kind'] == 'set_online', r
    res = r['results'][0]
    assert not res['ok'] and res['code'] == 'ERR_EBUSY' and res['failed_state'] == 'b', r
    assert sim4.read_online(1) == '0', r
    assert [s['cpus'] for s in p.call('admin', 'states')['states']] == ['0,2-3'] * 2


def test_a_call_cut_by_the_kill_is_made_again(two, sim4, manager):
    """offline 1: b tears down, a refuses, and the rollback's startup of b is
    cut by the kill.  Its client may still run it (the call is in its
    socket): the next cpuhpd must tear b down on CPU 1 again, or CPU 1 goes
    offline with b set up there."""
    d, p, a, b = two
    hp = p.send('admin', 'offline', 1, 60000)
    call = expect_call(p, 's', state_id=b, cpu=1, phase='teardown')
    p.send('s', 'answer', call['call_id'], 'ok')
    call = expect_call(p, 's', state_id=a, cpu=1, phase='teardown')
    p.send('s', 'answer', call['call_id'], 'ERR_EBUSY', 'a', 'refuses')
    old = expect_call(p, 's', state_id=b, cpu=1, phase='startup', rollback=True)
    kill_and_restart(manager, d)
    p.send('s', 'answer', old['call_id'], 'ok')     # it ran: late, ignored
    for sid in (b, a):
        call = expect_call(p, 's', state_id=sid, cpu=1, phase='teardown', rollback=False)
        p.send('s', 'answer', call['call_id'], 'ok')
    r = p.recv('admin')
    assert r['id'] == hp and r['results'][0]['ok'] and sim4.read_online(1) == '0', r
    assert [s['cpus'] for s in p.call('admin', 'states')['states']] == ['0,2-3'] * 2


def test_every_call_of_a_batch_cut_by_the_kill_is_made_again(tmp, sim4, manager):
    """offline 2 to a client that runs batches: b's, a's and c's teardowns go
    out in one write and the kill comes before any answer.  Its client may
    run all three.  The next cpuhpd runs the offline again; b refuses it
    this time (the rest of its batch skipped), so CPU 2 stays online: a and
    c, torn down by the killed daemon's calls for all it knows, must be
    started there again (each call of the batch was written down before it
    went out, not only the first), or they stay torn down on an online CPU.
    The connection's Hello.state_batch is kept across the restart."""
    d = manager.start(fixture.Daemon(tmp, sim4.root))
    p = fixture.Probe(d.socket)
    try:
        assert p.connect('s', batch=True)['state_batch'] is True
        p.connect('admin')
        a = register(p, 's', 'a', 10, deadline=60000)
        b = register(p, 's', 'b', 20, deadline=60000)
        c = register(p, 's', 'c', 5, deadline=60000)
        hp = p.send('admin', 'offline', 2, 60000)
        old = [expect_call(p, 's', state_id=x, cpu=2, phase='teardown') for x in (b, a, c)]
        assert {x['batch'] for x in old} == {old[0]['call_id']}, old
        d = kill_and_restart(manager, d)
        # The connection runs batches after the restart too: the re-run's in one write.
        new = [expect_call(p, 's', state_id=x, cpu=2, phase='teardown', rollback=False)
               for x in (b, a, c)]
        assert {x['batch'] for x in new} == {new[0]['call_id']}, new
        for x in old:                                   # they ran: late, ignored
            p.send('s', 'answer', x['call_id'], 'ok')
        p.send('s', 'answer', new[0]['call_id'], 'ERR_EBUSY', 'b', 'refuses')
        for x in new[1:]:                               # as the client must
            p.send('s', 'answer', x['call_id'], 'skipped')
        r = p.recv('admin')
        assert r['id'] == hp and r['results'][0]['code'] == 'ERR_EBUSY', r
        assert sim4.read_online(2) == '1', r
        for sid in (c, a):                              # startups: lowest priority first
            call = expect_call(p, 's', state_id=sid, cpu=2, phase='startup', external=True)
            p.send('s', 'answer', call['call_id'], 'ok')
        assert [s['cpus'] for s in p.call('admin', 'states')['states']] == ['0-3'] * 3
    finally:
        p.kill()
        d.stop()
