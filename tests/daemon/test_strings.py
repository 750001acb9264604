# SPDX-License-Identifier: LGPL-2.1-or-later
"""String fields from clients must be UTF-8 without NUL bytes: protobuf-c
cuts a C string at its first NUL, so "abc\\0def" would act as "abc".  cpuhpd
refuses such a request whole with ERR_EINVAL naming the field, does
nothing of it, and keeps the connection."""
import fixture
from fixture import error_code, pb, request_frame

# Request body field numbers (proto/cpuhp.proto).
LEASE_ACQUIRE, STATE_ANSWER, IDENTIFY, REGISTER_STATE, SET_SMT = 3, 12, 20, 10, 24


def raw_call(probe, name, req_id, body_field, body):
    probe(f'raw {name} {request_frame(req_id, body_field, body).hex()}')
    r = probe.recv(name)
    assert r['id'] == req_id, r
    return r


def still_served(probe, name):
    lease = probe.lease(name)
    assert probe.call(name, 'release', lease)['kind'] == 'lease_released'


def test_a_state_name_with_a_nul_is_refused_not_cut(daemon, probe):
    probe.connect('c')
    r = raw_call(probe, 'c', 9001, REGISTER_STATE, pb((1, b'abc\0def'), (3, 1000), (4, 1)))
    assert error_code(r) == 'ERR_EINVAL', r
    assert 'RegisterState.name holds a NUL byte (at byte 3)' in r['message'], r
    assert probe.call('c', 'states')['states'] == []
    still_served(probe, 'c')


def test_smt_control_with_a_nul_is_refused_not_run(daemon, probe):
    probe.connect('c')
    r = raw_call(probe, 'c', 9002, SET_SMT, pb((1, b'off\0forceoff'), (2, 1000)))
    assert error_code(r) == 'ERR_EINVAL', r
    assert 'SetSmt.control holds a NUL byte' in r['message'], r


def test_who_that_is_not_utf8_is_refused_naming_the_field(daemon, probe):
    probe.connect('c')
    r = raw_call(probe, 'c', 9003, IDENTIFY, pb((1, b'ok'), (2, b'bad \xff\xfe')))
    assert error_code(r) == 'ERR_EINVAL', r
    assert 'Identify.why is not valid UTF-8' in r['message'], r
    r = raw_call(probe, 'c', 9004, LEASE_ACQUIRE, pb((1, 0), (2, b'\xc3')))
    assert error_code(r) == 'ERR_EINVAL' and 'LeaseAcquire.who' in r['message'], r
    assert probe.status('c')['leases_held'] == 0
    still_served(probe, 'c')


def test_control_characters_are_valid_utf8_and_pass(daemon, probe):
    """ESC, CR, LF are UTF-8: taken as given (showing them safely is the printers' job)."""
    probe.connect('c')
    r = raw_call(probe, 'c', 9005, IDENTIFY, pb((1, b'\x1b[31mred'), (2, b'line\r\nfake')))
    assert r['kind'] == 'identified', r


def test_a_state_answer_that_is_not_utf8_is_ignored_and_logged(daemon, probe):
    """A StateAnswer is never answered: the refusal goes to the log, and the
    call meets its deadline as if no answer had come."""
    probe.connect('s')
    reg = probe.send('s', 'register', 'st', 0, 200)
    call = probe.recv('s')
    assert call['kind'] == 'state_call', call
    answer = pb((1, call['call_id']), (3, 1), (4, b'x\xff'))
    probe(f'raw s {request_frame(0, STATE_ANSWER, answer).hex()}')
    while True:  # the rollback's calls (a late call may have done its work), then the reply
        r = probe.recv('s')
        if r['kind'] != 'state_call':
            break
        probe.send('s', 'answer', r['call_id'], 'ok')
    assert r['id'] == reg and error_code(r) == 'ERR_ETIMEDOUT', r
    assert 'StateAnswer.message is not valid UTF-8' in daemon.log()


def test_log_lines_escape_what_they_quote(daemon, probe):
    """ESC, BEL, CR, LF and a backslash-x in who/why reach the log as \\xHH:
    no colour, no forged line, and the log stays valid UTF-8."""
    probe.connect('c')
    who = b'\x1b]0;title\x07evil'
    why = b'a\r\ncpuhpd: error: forged \\x41 \xc3\xa9'
    r = raw_call(probe, 'c', 9006, IDENTIFY, pb((1, who), (2, why)))
    assert r['kind'] == 'identified', r
    probe.lease('c')
    probe.connect('admin')
    r = probe.call('admin', 'offline', 1, 50)  # times out behind the lease, naming it
    assert error_code(r) == 'ERR_ETIMEDOUT', r
    raw = daemon.logpath.read_bytes()
    text = raw.decode('utf-8')  # valid UTF-8: raises otherwise
    assert b'\x1b' not in raw and b'\x07' not in raw and b'\r' not in raw
    assert not any(line.startswith('cpuhpd: error: forged') for line in text.splitlines())
    assert '\\x1b]0;title\\x07evil' in text, text
    assert 'a\\x0d\\x0acpuhpd: error: forged \\x5cx41 é' in text, text
