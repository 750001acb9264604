# SPDX-License-Identifier: LGPL-2.1-or-later
"""`cpuhpctl leases` and `cpuhpctl states` as util-linux prints a listing:
libsmartcols tables with -o/--output (a list, or +LIST added to the
defaults, any case), --raw, --noheadings, the columns listed by --help,
and -J/--json as lscpu -J: an array of one object per row under the
table's name, keyed by the lower-case column names, numbers as numbers,
CPU lists as arrays."""
import json
import re
import signal
import subprocess

import pytest

import fixture

GUARD_S = fixture.GUARD_S


def ctl(daemon, *args):
    return subprocess.run([str(fixture.CPUHPCTL), '--socket', daemon.socket,
                           *(str(a) for a in args)],
                          capture_output=True, text=True, timeout=GUARD_S)


class Hold:
    def __init__(self, daemon, who, why):
        self.p = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon.socket, 'hold',
                                   '--who', who, '--why', why, '--', 'sh', '-c',
                                   'echo held; read x'],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.p.stdout.readline() == 'held\n'

    def end(self):
        self.p.stdin.close()
        self.p.wait(timeout=GUARD_S)
        self.p.stdout.close()


@pytest.fixture
def two_holders(daemon4):
    holds = [Hold(daemon4, 'pools', 'sizing pools'), Hold(daemon4, 'bench', 'pinned')]
    yield holds
    for h in holds:
        h.end()


def test_leases_default_table_aligns_the_default_columns(daemon4, two_holders):
    r = ctl(daemon4, 'leases')
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert lines[0].split() == ['WHO', 'PID', 'UID', 'KIND', 'MODE', 'COUNT', 'HELD', 'WHY'], \
        lines
    rows = [re.split(r'\s+', x.strip(), maxsplit=7) for x in lines[1:3]]
    assert [(x[0], x[1], x[4], x[-1]) for x in rows] == [
        ('pools', str(two_holders[0].p.pid), 'block', 'sizing pools'),
        ('bench', str(two_holders[1].p.pid), 'block', 'pinned')], lines
    # A fast lease's time is a lower bound, marked '>'.
    assert all(re.fullmatch(r'>?(\d+ms|\d+\.\ds|\d+m\d\ds|\d+h\d\dm)', x[6]) for x in rows), rows
    assert '2 holder(s) listed.' in r.stdout


def test_output_raw_and_noheadings_print_the_chosen_columns_for_scripts(daemon4, two_holders):
    r = ctl(daemon4, 'leases', '-o', 'who,PID,Why', '--raw', '--noheadings')
    assert r.returncode == 0, r
    # --raw: single spaces between cells, blanks inside one as \x20; the table alone.
    assert r.stdout.splitlines() == [f'pools {two_holders[0].p.pid} sizing\\x20pools',
                                     f'bench {two_holders[1].p.pid} pinned'], r.stdout
    r = ctl(daemon4, 'leases', '--output', '+COMM,LEASE_ID', '-r')
    lines = r.stdout.splitlines()
    assert lines[0] == 'WHO PID UID KIND MODE COUNT HELD WHY COMM LEASE_ID', lines
    assert len(lines) == 3 and all(line.split()[8] == 'cpuhpctl' for line in lines[1:]), lines


def test_json_is_an_array_of_rows_keyed_by_the_columns(daemon4, two_holders):
    out = json.loads(ctl(daemon4, 'leases', '-J').stdout)
    assert set(out) == {'leases', 'hotplugs', 'freezes', 'restart_grace_ms'}, out
    row = out['leases'][0]
    assert set(row) == {'who', 'pid', 'uid', 'kind', 'mode', 'count', 'why', 'comm',
                        'lease_id', 'held_ms', 'connection', 'delay_ms'}, row
    assert (row['mode'], row['delay_ms']) == ('block', 0), row
    assert (row['who'], row['why'], row['pid']) == ('pools', 'sizing pools',
                                                    two_holders[0].p.pid), row
    assert isinstance(row['held_ms'], int) and isinstance(row['count'], int), row
    # -o chooses the keys, in its order; HELD is milliseconds in JSON.
    r = ctl(daemon4, 'leases', '--json', '-o', 'WHY,HELD,PID')
    rows = json.loads(r.stdout)['leases']
    assert [list(x) for x in rows] == [['why', 'held', 'pid']] * 2, r.stdout
    assert rows[1]['why'] == 'pinned' and isinstance(rows[1]['held'], int), rows
    # A fast lease has no id: null, not a number.
    assert all((x['lease_id'] is None) == (x['kind'] == 'fast') for x in out['leases']), out


def test_states_table_and_json(daemon4):
    hook = subprocess.Popen([str(fixture.CPUHPCTL), '--socket', daemon4.socket, 'state', 'pool',
                             '--priority', '7', '--deadline', '2s', '--teardown', 'true'],
                            stdout=subprocess.PIPE, text=True)
    try:
        # The startups' lines, then the registration's.
        fixture.read_until(hook.stdout, 'state pool registered')
        r = ctl(daemon4, 'states')
        lines = r.stdout.splitlines()
        assert lines[0].split() == ['ID', 'NAME', 'PRIORITY', 'DEADLINE', 'PID', 'COMM', 'CPUS']
        assert lines[1].split()[1:] == ['pool', '7', '2.0s', str(hook.pid), 'cpuhpctl', '0-3']
        r = ctl(daemon4, 'states', '-rn', '-o', 'NAME,CPUS,DEADLINE_MS')
        assert r.stdout == 'pool 0-3 2000\n', r
        [row] = json.loads(ctl(daemon4, 'states', '-J').stdout)['states']
        assert row == {'id': row['id'], 'name': 'pool', 'priority': 7, 'deadline_ms': 2000,
                       'pid': hook.pid, 'uid': row['uid'], 'comm': 'cpuhpctl',
                       'cpus': [0, 1, 2, 3], 'section': 'online', 'instances': None}, row
        assert json.loads(ctl(daemon4, 'states', '-J', '-o', 'CPUS').stdout) == \
            {'states': [{'cpus': [0, 1, 2, 3]}]}
    finally:
        hook.send_signal(signal.SIGTERM)
        hook.communicate(timeout=GUARD_S)


@pytest.mark.parametrize('cmd, columns', [
    ('leases', ['WHO', 'PID', 'UID', 'KIND', 'MODE', 'COUNT', 'HELD', 'WHY', 'COMM',
                'LEASE_ID', 'HELD_MS', 'CONNECTION', 'DELAY_MS']),
    ('states', ['ID', 'NAME', 'PRIORITY', 'DEADLINE', 'DEADLINE_MS', 'PID', 'UID', 'COMM',
                'CPUS', 'SECTION', 'INSTANCES']),
])
def test_help_lists_every_column_and_o_refuses_an_unknown_one(tmp, cmd, columns):
    r = subprocess.run([str(fixture.CPUHPCTL), cmd, '--help'], capture_output=True, text=True,
                       timeout=GUARD_S)
    listed = r.stdout.split('Available output columns')[1]
    assert [m.group(1) for m in re.finditer(r'^ +([A-Z_]+)  ', listed, re.M)] == columns
    r = subprocess.run([str(fixture.CPUHPCTL), '--socket', str(tmp / 'none'), cmd, '-o',
                        'NOPE'], capture_output=True, text=True, timeout=GUARD_S)
    assert r.returncode == 2 and f"cpuhpctl {cmd}: unknown column 'NOPE'" in r.stderr, r
