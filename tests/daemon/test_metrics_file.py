# SPDX-License-Identifier: LGPL-2.1-or-later
"""--metrics-file against whoever else can reach its directory, and the
text itself: a FIFO at FILE.tmp must not hang cpuhpd (the file is written on
its event loop), a temporary file someone else made must not become the
published file, a directory others may write is refused as for the socket,
a label value from a hostile sysfs cannot forge a sample, and the numbers
follow the Prometheus conventions (process_start_time_seconds)."""
import os
import re
import subprocess
import time

import pytest

import fixture

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # pragma: no cover - run.sh installs python3-prometheus-client
    text_string_to_metric_families = None


def metrics_daemon(tmp, sim, prom, **kw):
    return fixture.Daemon(tmp, sim.root, ['--metrics-file', str(prom)], **kw)


def served(d):
    """A status round trip: the loop is not blocked."""
    probe = fixture.Probe(d.socket)
    try:
        probe.connect('c')
        assert probe.status('c')['online']
    finally:
        probe.kill()


def test_a_fifo_at_the_temporary_name_does_not_hang_cpuhpd(tmp, sim4):
    prom = tmp / 'm' / 'cpuhpd.prom'
    prom.parent.mkdir(mode=0o755)
    os.mkfifo(str(prom) + '.tmp')
    # Before: the open for writing blocked the start (and later every request) for good.
    d = metrics_daemon(tmp, sim4, prom).start()
    try:
        served(d)
        assert not prom.exists()
    finally:
        d.stop_clean()
    assert 'cpuhpd.prom.tmp is there and is not a file cpuhpd left: remove it' in d.log()


@pytest.mark.skipif(os.geteuid() != 0, reason='needs root to make a file of another user')
def test_a_temporary_file_of_another_user_never_becomes_the_published_file(tmp, sim4):
    prom = tmp / 'm' / 'cpuhpd.prom'
    prom.parent.mkdir(mode=0o1777)  # sticky, as /tmp: others may create, not replace
    tmpfile = pathlib_tmp(prom)
    tmpfile.write_text('forged_total 1\n')
    os.chown(tmpfile, 65534, 65534)
    d = metrics_daemon(tmp, sim4, prom).start()
    try:
        served(d)
    finally:
        d.stop_clean()
    assert not prom.exists() or prom.stat().st_uid == os.geteuid()
    assert 'forged_total' not in (prom.read_text() if prom.exists() else '')
    assert 'is there and is not a file cpuhpd left' in d.log()


def pathlib_tmp(prom):
    return prom.with_name(prom.name + '.tmp')


def test_a_temporary_file_cpuhpd_left_is_replaced(tmp, sim4):
    prom = tmp / 'cpuhpd.prom'
    pathlib_tmp(prom).write_text('half a text from a cpuhpd that was killed')
    d = metrics_daemon(tmp, sim4, prom).start()
    try:
        served(d)
        assert 'cpuhpd_connections' in prom.read_text()
        assert not pathlib_tmp(prom).exists()
    finally:
        d.stop_clean()


def test_a_directory_others_may_write_is_refused_at_start(tmp, sim4):
    shared = tmp / 'shared'
    shared.mkdir()
    os.chmod(shared, 0o777)  # not sticky: anyone may rename or replace entries
    d = metrics_daemon(tmp, sim4, shared / 'cpuhpd.prom')
    d.start(expect_ready=False)
    assert d.wait() != 0
    assert re.search(r'refusing .*shared as the directory of --metrics-file: mode 0777', d.log())


@pytest.mark.skipif(text_string_to_metric_families is None,
                    reason='python3-prometheus-client is not installed')
def test_a_hostile_smt_control_word_cannot_forge_a_sample(tmp):
    sim = fixture.SimSysfs(tmp / 'sys', cpus='0-3', extra=('--smt', '2'))
    (sim.cpu / 'smt' / 'control').write_text('x"} 1\nforged_total 7\n#\x1b\n')
    prom = tmp / 'cpuhpd.prom'
    d = metrics_daemon(tmp, sim, prom).start()
    try:
        text = prom.read_text()
    finally:
        d.stop_clean()
    assert not any(line.startswith('forged') for line in text.splitlines()), text
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    [s] = fams['cpuhpd_smt_control'].samples
    assert s.labels['control'] == 'x"} 1\\x0aforged_total 7\\x0a#\\x1b', s
    assert 'forged' not in fams


def test_start_time_follows_the_convention_and_numbers_are_plain(tmp, sim4):
    prom = tmp / 'cpuhpd.prom'
    before = time.time()
    d = metrics_daemon(tmp, sim4, prom).start()
    try:
        text = prom.read_text()
    finally:
        d.stop_clean()
    assert 'cpuhpd_uptime_seconds' not in text
    [start] = re.findall(r'^process_start_time_seconds (\S+)$', text, re.M)
    assert re.fullmatch(r'\d+\.\d{3}', start), start
    assert before - 1 <= float(start) <= time.time() + 1
    # Counters and gauges are integers; sums have at most 9 decimals (no 486.02254047299999).
    for line in text.splitlines():
        if line and not line.startswith('#'):
            value = line.rsplit(' ', 1)[1]
            assert re.fullmatch(r'\d+(\.\d{1,9})?', value), line
