# SPDX-License-Identifier: LGPL-2.1-or-later
"""Client.register_state(): hotplug states from Python, on a private cpuhpd
over a simulated tree of CPUs 0-3 (daemon/cpuhpd/README.md, "Hotplug
states").  Callbacks append to lists; every hotplug here is synchronous
(set_online returns after the calls), so the lists are read after it."""
import errno
import threading

import pytest
from conftest import GUARD_S, wait_until


def recorder(log, tag):
    def fn(cpu):
        log.append((tag, cpu, threading.current_thread() is threading.main_thread()))
    return fn


def test_register_runs_startup_for_each_online_cpu_on_a_binding_thread(cpuhp, client):
    log = []
    with client.register_state('py-a', startup=recorder(log, 'up'),
                               teardown=recorder(log, 'down')) as st:
        assert isinstance(st, cpuhp.State) and st.id > 0 and not st.removed
        assert log == [('up', cpu, False) for cpu in range(4)]
        log.clear()
    # Leaving the block removed it: teardown, last CPU first.
    assert log == [('down', cpu, False) for cpu in (3, 2, 1, 0)]
    assert st.removed


def test_teardown_highest_priority_first_startup_lowest_first(client, observer, sim):
    log = []
    states = [client.register_state(name, startup=recorder(log, name + '+'),
                                    teardown=recorder(log, name + '-'), priority=prio,
                                    nocalls=True)
              for name, prio in (('lo', -5), ('hi', 50), ('mid', 7))]
    try:
        assert observer.set_online('2', False, timeout=5).ok
        assert [t for t, _, _ in log] == ['hi-', 'mid-', 'lo-'] and sim.read_online(2) == '0'
        log.clear()
        assert observer.set_online('2', True, timeout=5).ok
        assert [t for t, _, _ in log] == ['lo+', 'mid+', 'hi+']
    finally:
        for st in states:
            st.remove(nocalls=True)


def test_an_exception_fails_the_call_with_its_text_and_rolls_back(client, observer, sim):
    log = []

    def refuse(cpu):
        raise RuntimeError(f'queue {cpu} still has work')

    with client.register_state('py-ok', startup=recorder(log, 'ok+'),
                               teardown=recorder(log, 'ok-'), priority=10, nocalls=True), \
            client.register_state('py-bad', teardown=refuse, priority=1, nocalls=True):
        r = observer.set_online('2', False, timeout=5, check=False)
        assert not r.ok and sim.read_online(2) == '1', r
        msg = r.results[0].message
        assert 'RuntimeError: queue 2 still has work' in msg and "'py-bad'" in msg, msg
        assert r.results[0].errno == errno.EIO
        # ok was torn down first, then started again by the rollback.
        assert [t for t, _, _ in log] == ['ok-', 'ok+']
        with pytest.raises(OSError, match='still has work'):
            r.check()


def test_an_oserror_keeps_its_errno(client, observer):
    def busy(cpu):
        raise OSError(errno.EBUSY, 'pinned worker busy')

    with client.register_state('py-busy', teardown=busy, nocalls=True):
        r = observer.set_online('1', False, timeout=5, check=False)
        assert r.results[0].errno == errno.EBUSY and 'pinned worker busy' in r.results[0].message


def test_a_failing_startup_at_registration_raises_and_leaves_no_state(client):
    log = []

    def startup(cpu):
        if cpu == 2:
            raise ValueError('no memory node for CPU 2')
        log.append(cpu)

    with pytest.raises(OSError, match='no memory node for CPU 2'):
        client.register_state('py-fail', startup=startup, teardown=lambda cpu: log.append(-cpu))
    assert log == [0, 1, -1, 0]   # torn down again, last first (-0 == 0)
    client.register_state('py-fail', nocalls=True).remove()   # the name is free


def test_names_are_unique(client, observer):
    with client.register_state('py-dup', nocalls=True):
        with pytest.raises(FileExistsError, match='unique'):
            observer.register_state('py-dup', nocalls=True)


def test_a_lease_inside_a_callback_raises_edeadlk(client, observer):
    seen = []

    def teardown(cpu):
        try:
            with client.lease(timeout=1.0):
                seen.append('granted')
        except OSError as e:
            seen.append(e.errno)

    with client.register_state('py-lease', teardown=teardown, nocalls=True):
        assert observer.set_online('3', False, timeout=5).ok
        assert seen == [errno.EDEADLK]
        observer.set_online('3', True, timeout=5)


def test_bad_arguments_are_refused_before_anything_is_sent(client):
    for kw in ({'name': ''}, {'name': 'a b'}, {'name': 'x' * 64}, {'name': 'ok', 'deadline': 0},
               {'name': 'ok', 'deadline': 601}, {'name': 'ok', 'priority': 2**31},
               {'name': 'ok', 'priority': 1.5}):
        with pytest.raises(ValueError):
            client.register_state(**kw)
    with pytest.raises(TypeError):
        client.register_state('ok', startup=42)


def test_close_during_register_cancels_it_and_rolls_back(cpuhp, client, observer, sim):
    """close() on another thread while register_state() runs its startups:
    close() waits for the registration, which then raises ECANCELED, and
    the state it made is removed (teardown undoes the startups) rather than
    outliving the error."""
    log, in_startup, go, got = [], threading.Event(), threading.Event(), []

    def startup(cpu):
        log.append(('up', cpu))
        if cpu == 0:
            in_startup.set()
            assert go.wait(30)

    def register():
        try:
            client.register_state('py-closed', startup=startup,
                                  teardown=lambda cpu: log.append(('down', cpu)))
        except OSError as e:
            got.append(e)

    reg = threading.Thread(target=register)
    reg.start()
    assert in_startup.wait(30)
    closer = threading.Thread(target=client.close)
    closer.start()
    wait_until('close() begun', lambda: client.closed)
    go.set()
    reg.join(30)
    closer.join(30)
    assert not reg.is_alive() and not closer.is_alive()
    assert len(got) == 1 and got[0].errno == errno.ECANCELED, got
    assert log == [('up', cpu) for cpu in range(4)] + [('down', cpu) for cpu in (3, 2, 1, 0)]
    log.clear()
    assert observer.set_online('2', False, timeout=5).ok and sim.read_online(2) == '0'
    assert log == []  # the state is gone from the daemon


def test_a_long_message_cut_inside_a_character_still_counts_as_the_answer(client, observer):
    """Cut to the message's size, the text ends inside a character; cpuhpd
    ignores an answer that is not UTF-8, so the library sends valid text
    and the failure is the callback's, not a missed deadline."""
    def busy(cpu):
        raise OSError(errno.EBUSY, 'é' * 300)

    with client.register_state('py-long', teardown=busy, nocalls=True, deadline=2.0):
        r = observer.set_online('1', False, timeout=5, check=False)
        res = r.results[0]
        assert res.errno == errno.EBUSY and 'éééé' in res.message, res


# --- a scripted fake daemon: the frames the real one may send in one write ---------------

def _varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7f, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _msg(*fields):
    """Protobuf fields (number, int or bytes) as the wire has them."""
    out = b''
    for num, val in fields:
        if isinstance(val, int):
            out += _varint(num << 3) + _varint(val)
        else:
            out += _varint(num << 3 | 2) + _varint(len(val)) + val
    return out


def _frame(payload):
    return len(payload).to_bytes(4, 'big') + payload


def _fields(buf):
    """{number: value} of a message's varint and length-delimited fields."""
    out, i = {}, 0
    while i < len(buf):
        key, i = _read_varint(buf, i)
        if key & 7 == 0:
            out[key >> 3], i = _read_varint(buf, i)
        else:
            n, i = _read_varint(buf, i)
            out[key >> 3], i = buf[i:i + n], i + n
    return out


def _read_varint(buf, i):
    n = shift = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def _recv_request(conn):
    """The next Request: (id, body field number, body fields)."""
    def exact(n):
        data = b''
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            assert chunk, 'the client closed the connection'
            data += chunk
        return data
    f = _fields(exact(int.from_bytes(exact(4), 'big')))
    (body,) = [k for k in f if k != 1]
    return f.get(1, 0), body, _fields(f[body])


HELLO, REGISTER_STATE, REMOVE_STATE, STATE_ANSWER = 2, 10, 11, 12  # Request.body
R_HELLO, R_REGISTERED, R_REMOVED, R_CALL = 3, 11, 12, 13           # Response.body


def _hello(conn):
    rid, body, _ = _recv_request(conn)
    assert body == HELLO
    conn.sendall(_frame(_msg((1, rid), (R_HELLO, _msg((1, 1), (3, 65536))))))


def test_a_call_read_with_the_registration_reply_is_run(cpuhp, tmp):
    """The registration's reply and a hotplug's StateCall come in one write
    (the real cpuhpd does that when a hotplug queued behind the
    registration): the binding's state thread must run the call, not poll a
    socket that has nothing more (the fake waits for its answer)."""
    import socket
    path = str(tmp / 'fake.sock')
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsock.bind(path)
    lsock.listen(4)
    lsock.settimeout(GUARD_S)
    answered, errors = [], []

    def fake():
        try:
            own, _ = lsock.accept()
            _hello(own)
            conn, _ = lsock.accept()
            conn.settimeout(GUARD_S)  # turns a hang into a failure
            _hello(conn)
            rid, body, _ = _recv_request(conn)
            assert body == REGISTER_STATE
            reply = _msg((1, rid), (R_REGISTERED, _msg((1, 7))))
            call = _msg((1, rid), (R_CALL, _msg((1, 7), (2, 3), (3, 1), (5, 1))))
            conn.sendall(_frame(reply) + _frame(call))
            _, body, ans = _recv_request(conn)
            assert body == STATE_ANSWER and ans.get(1) == 1
            answered.append(ans.get(3, 0))  # ok
            rid, body, _ = _recv_request(conn)
            assert body == REMOVE_STATE
            conn.sendall(_frame(_msg((1, rid), (R_REMOVED, _msg((1, 7))))))
            conn.recv(1)
            own.recv(1)
        except BaseException as e:  # noqa: B036 (reported by the test)
            errors.append(e)

    t = threading.Thread(target=fake)
    t.start()
    log = []
    with cpuhp.Client(path) as c:
        st = c.register_state('fake', teardown=lambda cpu: log.append(cpu), nocalls=True)
        st.remove(nocalls=True)
    t.join(GUARD_S)
    lsock.close()
    assert not errors, errors
    assert log == [3] and answered == [1]


# ---- sections and instances (doc/design.md, "Hotplug states: sections and instances") ----

def test_a_prepare_state_starts_before_the_write_and_tears_down_after_it(client, observer, sim):
    seen = []

    def look(tag):
        def fn(cpu):
            seen.append((tag, cpu, sim.read_online(cpu)))
        return fn

    with client.register_state('py-prep', startup=look('up'), teardown=look('down'),
                               nocalls=True, section='prepare') as st:
        assert st.section == 'prepare'
        assert observer.set_online('2', False, timeout=5).ok
        assert observer.set_online('2', True, timeout=5).ok
        st.remove(nocalls=True)
    # The CPU was offline during both calls: after the write, and before it.
    assert seen == [('down', 2, '0'), ('up', 2, '0')]


def test_a_prepare_teardown_that_raises_is_logged_and_the_offline_succeeds(client, observer,
                                                                          sim):
    def refuse(cpu):
        raise RuntimeError('cannot drain')

    with client.register_state('py-dead', teardown=refuse, nocalls=True, section='prepare'):
        r = observer.set_online('2', False, timeout=5)
        assert r.ok and sim.read_online(2) == '0', r
        assert observer.set_online('2', True, timeout=5).ok


def test_instances_are_called_in_turn_with_their_instance(cpuhp, client, observer):
    log = []

    def rec(tag):
        def fn(cpu, inst):
            assert isinstance(inst, cpuhp.Instance)
            log.append((tag, cpu, inst.name, inst.arg))
        return fn

    with client.register_state('py-multi', startup=rec('up'), teardown=rec('down'),
                               multi=True) as st:
        assert log == []                       # a multi state has no calls of its own
        a = st.add_instance('a', arg={'pool': 1})
        assert log == [('up', c, 'a', {'pool': 1}) for c in range(4)] and a.id > 0
        b = st.add_instance('b', arg=2, nocalls=True)
        log.clear()
        assert observer.set_online('2', False, timeout=5).ok
        assert log == [('down', 2, 'b', 2), ('down', 2, 'a', {'pool': 1})]
        log.clear()
        with pytest.raises(FileExistsError):
            st.add_instance('a')
        with pytest.raises(ValueError):
            st.add_instance('no spaces')
        a.remove()
        assert log == [('down', c, 'a', {'pool': 1}) for c in (3, 1, 0)] and a.removed
        assert [i.name for i in st.instances] == ['b']
        log.clear()
    # Removing the state removed b: its teardowns ran.
    assert log == [('down', c, 'b', 2) for c in (3, 1, 0)] and b.removed
    assert observer.set_online('2', True, timeout=5).ok


def test_bad_sections_and_instances_on_a_plain_state_are_refused(client):
    with pytest.raises(ValueError, match="'online' or 'prepare'"):
        client.register_state('py-x', section='early')
    with client.register_state('py-plain', nocalls=True) as st:
        with pytest.raises(ValueError, match='not a multi-instance state'):
            st.add_instance('a')
