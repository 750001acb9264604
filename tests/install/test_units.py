# SPDX-License-Identifier: LGPL-2.1-or-later
"""The units a distribution installs: unprivileged leases (SocketGroup= and
the sysusers.d groups), the hardening systemd-analyze rates, and the
score the README quotes.  Properties of the unit files, checked offline
(systemd need not be PID 1)."""
import re
import subprocess

import pytest

import fixture
from units import ANALYZE, SERVICE, SOCKET, settings, syscall_allow_set

SYSUSERS = fixture.SOURCE / 'daemon' / 'cpuhpd' / 'cpuhpd.sysusers'
CONF = fixture.SOURCE / 'daemon' / 'cpuhpd' / 'cpuhpd.conf'
README = fixture.SOURCE / 'daemon' / 'cpuhpd' / 'README.md'
needs_analyze = pytest.mark.skipif(ANALYZE is None, reason='skipped: no systemd-analyze '
                                   '(apt-get install systemd) to rate the unit')


def sysusers_groups():
    return {ln.split()[1] for ln in SYSUSERS.read_text().splitlines()
            if ln.strip() and not ln.startswith('#') and ln.split()[0] == 'g'}


def test_the_socket_group_and_the_admin_group_are_created_by_sysusers():
    s = settings(SOCKET)
    assert s['SocketGroup'] == ['cpuhp'] and s['SocketMode'] == ['0660'], s
    admin = re.search(r'^admin-group = (\S+)$', CONF.read_text(), re.M)[1]
    assert {'cpuhp', admin} <= sysusers_groups()


def test_the_service_reads_the_default_config_file():
    """No --config: cpuhpd reads SYSCONFDIR/cpuhpd.conf if it exists (a file
    named with --config must exist, so a deleted one would stop the service)."""
    assert re.fullmatch(r'\S+/cpuhpd', settings(SERVICE)['ExecStart'][0])


@needs_analyze
def test_the_service_is_rated_ok_or_better_and_the_readme_quotes_the_score():
    r = subprocess.run([ANALYZE, 'security', '--offline=yes', '--no-pager', str(SERVICE)],
                       capture_output=True, text=True, timeout=fixture.GUARD_S)
    print(r.stdout[-3000:], r.stderr)
    m = re.search(r'Overall exposure level for cpuhpd\.service: (\d+\.\d+) (\w+)', r.stdout)
    assert m, r
    score, band = float(m[1]), m[2]
    assert band in ('PERFECT', 'SAFE', 'OK'), (score, band)
    for readme in (README, fixture.SOURCE / 'README.md'):
        quoted = re.search(r'`systemd-analyze security --offline=yes cpuhpd.service`.*?'
                           r'rates it\s+\**(\d+\.\d+) (\w+)', readme.read_text(), re.S)
        assert quoted and (float(quoted[1]), quoted[2]) == (score, band), \
            f'{readme} should quote {score} {band}'


def test_the_hardening_the_issue_asks_for_is_there():
    s = {k: v[-1] for k, v in settings(SERVICE).items()}
    want = {'CapabilityBoundingSet': '', 'ProtectSystem': 'strict', 'ProtectKernelTunables': 'yes',
            'ProtectKernelModules': 'yes', 'ProtectKernelLogs': 'yes', 'ProtectClock': 'yes',
            'PrivateDevices': 'yes', 'RestrictNamespaces': 'yes', 'MemoryDenyWriteExecute': 'yes',
            'LockPersonality': 'yes', 'SystemCallArchitectures': 'native',
            'NoNewPrivileges': 'yes'}
    assert {k: s.get(k) for k in want} == want
    assert '/sys/devices/system/cpu' in s['ReadWritePaths'].split()
    assert set(s['RestrictAddressFamilies'].split()) == {'AF_UNIX', 'AF_NETLINK'}


@needs_analyze
def test_the_system_call_filter_lets_the_fast_path_and_netlink_through():
    allowed = syscall_allow_set()
    need = {'membarrier', 'memfd_create', 'fcntl',            # fast leases (sealed memfd)
            'socket', 'bind', 'recvmsg', 'setsockopt', 'getsockopt',  # netlink uevents
            'accept4', 'sendmsg', 'epoll_wait', 'futex', 'clone3', 'write', 'openat'}
    assert need <= allowed, need - allowed
    assert not {'mount', 'setuid', 'init_module', 'reboot', 'ptrace', 'capset'} & allowed


RULE = fixture.BUILD / 'daemon' / 'cpuhpd' / '10-cpuhpd-new-cpus.rules'


def test_the_service_may_write_the_plans_drop_ins_and_reloads_on_hup():
    """ProtectSystem=strict makes /etc read-only: without the drop-in directory
    in ReadWritePaths=, `cpuhpctl offline --persist` fails under the unit."""
    s = settings(SERVICE)
    rw = s['ReadWritePaths'][-1].split()
    assert any(p.lstrip('-').endswith('/cpuhpd.conf.d') for p in rw), rw
    assert s['ExecReload'] == ['/bin/kill -HUP $MAINPID']
    # Enabled, it starts at boot: the plan is in force before any client comes.
    assert s['WantedBy'] == ['multi-user.target']


def rule_lines():
    return [ln for ln in RULE.read_text().splitlines() if ln.strip() and not ln.startswith('#')]


def test_the_udev_rule_waits_for_cpuhpd_on_added_cpus_only_while_it_asks():
    """The rule's PROGRAM runs while the rules are read (RUN would come after
    every rule, once a distribution's ATTR{online}="1" had won)."""
    lines = rule_lines()
    run_dir = settings(SOCKET)['ListenStream'][0].rsplit('/', 1)[0]
    assert 'SUBSYSTEM!="cpu", GOTO="cpuhpd_new_cpus_end"' in lines
    assert 'ACTION!="add", GOTO="cpuhpd_new_cpus_end"' in lines
    assert f'TEST!="{run_dir}/online-new-cpus", GOTO="cpuhpd_new_cpus_end"' in lines
    prog = [ln for ln in lines if ln.startswith('PROGRAM=')]
    assert len(prog) == 1 and re.fullmatch(r'PROGRAM="/\S+/cpuhpctl new-cpu --timeout \S+ %n"',
                                           prog[0]), prog
    assert not any(ln.startswith('RUN') or 'ATTR{online}' in ln for ln in lines), lines
    assert lines[-1] == 'LABEL="cpuhpd_new_cpus_end"'
    # Before the distributions' rules that online new CPUs (Fedora/RHEL's
    # 40-redhat.rules, SUSE's 80-hotplug-cpu-mem.rules), which udev reads in name order.
    assert sorted([RULE.name, '40-redhat.rules', '80-hotplug-cpu-mem.rules'])[0] == RULE.name


def test_the_udev_rules_command_line_is_one_cpuhpctl_takes():
    prog = next(ln for ln in rule_lines() if ln.startswith('PROGRAM='))
    argv = prog.split('"')[1].split()
    r = subprocess.run([str(fixture.CPUHPCTL), *argv[1:-1], '--help'], capture_output=True,
                       text=True, timeout=fixture.GUARD_S)
    assert r.returncode == 0 and 'Usage: cpuhpctl new-cpu' in r.stdout, r
