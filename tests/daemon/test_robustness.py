# SPDX-License-Identifier: LGPL-2.1-or-later
"""Bad clients hurt only themselves: malformed, truncated, oversized and
random frames, half a frame then silence, a client that stops reading, a
client killed while holding leases, and a thousand clients at once."""
import os
import random
import signal

import fixture
from fixture import error_code


def frame(payload):
    return len(payload).to_bytes(4, 'big') + payload


def served(probe, name='ok'):
    """Another client gets a full lease and status round trip."""
    probe.connect(name)
    lease = probe.lease(name)
    assert probe.call(name, 'release', lease)['kind'] == 'lease_released'
    probe(f'close {name}')


def expect_error_and_close(probe, name, code):
    r = probe(f'eof {name}')
    assert r['end'] in ('eof', 'ECONNRESET'), r
    errors = [x for x in r['responses'] if x['kind'] == 'error']
    assert errors and errors[-1]['code'] == code and errors[-1]['id'] == 0, r
    return errors[-1]


def test_payload_that_is_not_a_request_gets_eproto_and_close_others_served(daemon, probe):
    probe.connect('bad')
    probe(f'raw bad {frame(bytes([0xff, 0xff, 0xff])).hex()}')
    e = expect_error_and_close(probe, 'bad', 'ERR_EPROTO')
    assert 'malformed' in e['message']
    served(probe)


def test_zero_length_frame_gets_eproto_and_close(daemon, probe):
    probe('rawconnect bad')
    probe('raw bad 00000000')
    expect_error_and_close(probe, 'bad', 'ERR_EPROTO')
    served(probe)


def test_oversized_frame_gets_emsgsize_from_the_prefix_alone(daemon, probe):
    probe.connect('bad')
    # Only the prefix is sent: the daemon must not wait for 65537 bytes.
    probe('raw bad 00010001')
    e = expect_error_and_close(probe, 'bad', 'ERR_EMSGSIZE')
    assert '65536' in e['message']
    served(probe)


def test_frame_truncated_by_end_of_stream_gets_eproto(daemon, probe):
    probe.connect('bad')
    probe('raw bad 0000000a0102')
    probe('shutwr bad')
    e = expect_error_and_close(probe, 'bad', 'ERR_EPROTO')
    assert 'truncated' in e['message']
    served(probe)


def test_random_frames_get_an_error_and_close_while_others_are_served(daemon, probe):
    rng = random.Random(20240611)
    probe.connect('bystander')
    lease = probe.lease('bystander')
    codes = []
    for i in range(60):
        name = f'r{i}'
        probe(f'rawconnect {name}' if i % 2 else f'connect {name}')
        kind = i % 3
        if kind == 0:      # random payload in a well-formed frame
            data = frame(rng.randbytes(rng.randint(1, 64)))
        elif kind == 1:    # random bytes, prefix included
            data = rng.randbytes(rng.randint(1, 64))
        else:              # valid prefix, random payload, then garbage
            data = frame(rng.randbytes(8)) + rng.randbytes(rng.randint(1, 16))
        probe(f'raw {name} {data.hex()}')
        probe(f'shutwr {name}')
        r = probe(f'eof {name}')
        assert r['end'] in ('eof', 'ECONNRESET'), r
        codes += [x['code'] for x in r['responses'] if x['kind'] == 'error']
        # The daemon stays healthy for others after each one.
        assert probe.status('bystander')['leases_held'] == 1
    assert set(codes) <= {'ERR_EPROTO', 'ERR_EMSGSIZE', 'ERR_EOPNOTSUPP', 'ERR_EPROTONOSUPPORT',
                          'ERR_EINVAL', 'ERR_ESRCH', 'ERR_EDQUOT', 'ERR_EALREADY'}, codes
    assert codes.count('ERR_EPROTO') >= 10
    assert probe.call('bystander', 'release', lease)['kind'] == 'lease_released'


def test_half_a_frame_then_silence_delays_nobody(daemon, sim, probe):
    probe.connect('stall1')
    probe.connect('stall2')
    probe('raw stall1 000000')                       # 3 of 4 prefix bytes
    probe(f'raw stall2 {frame(bytes(40))[:20].hex()}')  # half a payload
    # A whole lease/hotplug cycle goes through beside them.
    probe.connect('a')
    probe.connect('h')
    lease = probe.lease('a')
    probe.send('h', 'offline', 1, 60000)
    assert probe.status('h')['writer'] == 'WRITER_WAITING'
    probe.call('a', 'release', lease)
    assert probe.recv('h')['results'][0]['changed']
    assert probe.status('a')['connections'] == 4
    # The stalled clients are still connected: only --client-timeout-ms (10 s
    # by default, test_admission.py) or their own end drops them.
    probe('close stall1')
    probe('shutwr stall2')
    expect_error_and_close(probe, 'stall2', 'ERR_EPROTO')


def test_watcher_that_stops_reading_is_disconnected(daemon, sim, probe):
    probe.connect('w')
    probe.call('w', 'watch')
    probe.connect('h')
    # Six events per round; the watcher never reads.  Its socket buffer fills,
    # then the daemon's bounded queue, then the daemon drops it.
    for rounds in range(5000):
        probe.call('h', 'offline', 1, 1000)
        probe.call('h', 'online', 1, 1000)
        if probe.status('h')['connections'] == 1:
            break
    else:
        raise AssertionError('a watcher that never reads was never disconnected')
    assert 'does not read' in daemon.log()
    # What it was sent before the limit is readable, then the stream ends.
    r = probe('eof w')
    assert r['end'] in ('eof', 'ECONNRESET') and len(r['responses']) > 100


def test_client_killed_while_holding_leases_lets_a_waiting_hotplug_proceed(daemon, sim, probe):
    holder = fixture.Probe(daemon.socket)
    try:
        holder.connect('x')
        holder.lease('x')
        holder.lease('x')
        probe.connect('h')
        hp = probe.send('h', 'offline', 1, 60000)
        s = probe.status('h')
        assert s['writer'] == 'WRITER_WAITING' and s['leases_held'] == 2
        os.kill(holder.pid, signal.SIGKILL)
        r = probe.recv('h')
        assert r['id'] == hp and r['results'][0]['changed'], r
        assert probe.status('h')['leases_held'] == 0
    finally:
        holder.kill()


def test_thousand_clients_each_holding_a_lease_then_a_hotplug_waits_for_all(daemon, sim, probe):
    r = probe('many p 1000 0')
    assert r == {'ok': True, 'granted': 1000}, r
    probe.connect('h')
    s = probe.status('h')
    assert s['leases_held'] == 1000 and s['connections'] == 1001
    hp = probe.send('h', 'offline', 1, 60000)
    assert probe.status('h')['writer'] == 'WRITER_WAITING'
    assert probe('closemany p 999')['closed'] == 999
    # One lease is left: the hotplug must still wait.  The next answer on h
    # is this status, not the hotplug's reply.
    s = probe.status('h')
    assert s['writer'] == 'WRITER_WAITING' and s['leases_held'] >= 1
    assert sim.read_online(1) == '1'
    probe('closemany p 1')
    r = probe.recv('h')
    assert r['id'] == hp and r['results'][0]['changed'], r
    assert probe.status('h')['connections'] == 1
