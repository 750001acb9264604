# SPDX-License-Identifier: LGPL-2.1-or-later
"""cpuhpd --config FILE, the options cpuhpd.service reads from
SYSCONFDIR/cpuhpd.conf: the shipped file names every option with its
default, a daemon runs from it, the command line overrides it, and a bad
line is refused with the file and line number."""
import pathlib
import re
import subprocess

import pytest

import fixture

SHIPPED = fixture.SOURCE / 'daemon' / 'cpuhpd' / 'cpuhpd.conf'
NOT_IN_FILE = {'config', 'help', 'version'}


def cpuhpd(*args):
    return subprocess.run([str(fixture.CPUHPD), *map(str, args)], capture_output=True,
                          text=True, timeout=fixture.GUARD_S)


def help_options():
    """{name: default or None} from --help: '--name VALUE ... (default X)'."""
    text = cpuhpd('--help').stdout
    opts = {}
    for m in re.finditer(r'^  (?:-\w, )?--([a-z-]+)( [A-Z]+)?(.*(?:\n {20,}.*)*)', text, re.M):
        d = re.search(r'\(default:? ([^;)]+?)[;)]', m[3].replace('\n', ' '))
        opts[m[1]] = d[1].strip() if d else None
    assert {'socket', 'sysfs-root', 'max-connections', 'config'} <= opts.keys(), text
    return opts


def shipped_lines():
    """{name: value} of the file's option lines, commented-out defaults included."""
    out = {}
    for ln in SHIPPED.read_text().splitlines():
        m = re.match(r'^#?([a-z][a-z-]*) = (.*)$', ln)
        if m:
            out[m[1]] = m[2]
    return out


def test_the_shipped_file_names_every_option_with_the_default_of_help():
    lines = shipped_lines()
    for name, default in help_options().items():
        if name in NOT_IN_FILE or name == 'uevent-socket':  # a test knob, no default
            continue
        assert name in lines, f'{SHIPPED.name} does not mention {name}'
        # A default --help describes in words ("the best this kernel offers") is not a value.
        if default is not None and ' ' not in default and f'#{name} = ' in SHIPPED.read_text():
            assert lines[name] == default, (name, lines[name], default)


def test_a_daemon_runs_from_the_shipped_file_with_every_default_uncommented(tmp, sim):
    conf = tmp / 'cpuhpd.conf'
    text = re.sub(r'^#([a-z][a-z-]* = )', r'\1', SHIPPED.read_text(), flags=re.M)
    # This machine has no cpuhp-admin group (sysusers.d creates it): root's group instead.
    text = text.replace('admin-group = cpuhp-admin', 'admin-group = root')
    conf.write_text(text)
    # The command line's --socket and --sysfs-root override the file's.
    d = fixture.Daemon(tmp, sim.root, args=['--config', conf], uevents=False)
    d.start()
    try:
        log = d.log()
        assert f'listening on {d.socket}' in log and f'sysfs {sim.root}' in log, log
        p = fixture.Probe(d.socket)
        p.connect('a')
        assert p.call('a', 'offline', 1, 1000)['results'][0]['changed']
        p.kill()
    finally:
        d.stop_clean()


def test_options_in_the_file_take_effect(tmp, sim):
    conf = tmp / 'c.conf'
    conf.write_text(f'# a comment\n\n  socket =  {tmp}/from-file.sock  \nsysfs-root = {sim.root}\n'
                    'no-netlink = yes\nverbose = no\nmax-connections = 1\n')
    d = fixture.Daemon(tmp, sim.root, socket_path=tmp / 'from-file.sock', uevents=False)
    d.start(argv=[str(fixture.CPUHPD), '--config', str(conf)])
    try:
        assert 'debug:' not in d.log()
        a, b = fixture.Probe(d.socket), fixture.Probe(d.socket)
        a.connect('a')
        assert b('connect b').get('kind') != 'hello'   # max-connections = 1
        a.kill()
        b.kill()
    finally:
        d.stop_clean()


@pytest.mark.parametrize('line, why', [
    ('nonsense = 1', "no option 'nonsense'"),
    ('socket', "expected 'name = value'"),
    ('socket =', 'socket needs a value'),
    ('no-netlink = maybe', 'no-netlink takes yes or no'),
    ('config = /etc/other.conf', "no option 'config'"),
    ('help = yes', "no option 'help'"),
])
def test_a_bad_line_is_refused_with_file_and_line(tmp, line, why):
    conf = tmp / 'bad.conf'
    conf.write_text(f'# fine\nverbose = yes\n{line}\n')
    r = cpuhpd('--config', conf, '--socket', tmp / 's', '--sysfs-root', tmp)
    assert r.returncode == 2, r
    assert r.stderr.startswith(f'cpuhpd: {conf}:3: ') and why in r.stderr, r.stderr
    assert not (tmp / 's').exists()


def test_a_missing_file_is_refused(tmp):
    r = cpuhpd('--config', tmp / 'none.conf')
    assert r.returncode == 2 and f'cannot read {tmp}/none.conf' in r.stderr, r


def test_a_bad_value_in_the_file_is_checked_like_the_command_line(tmp):
    conf = tmp / 'c.conf'
    conf.write_text('max-connections = lots\n')
    r = cpuhpd('--config', conf)
    assert r.returncode == 2 and "--max-connections: invalid value 'lots'" in r.stderr, r


UNIT = fixture.BUILD / 'daemon' / 'cpuhpd' / 'cpuhpd.service'


def default_file():
    """The file the unit's comment names, which cpuhpd reads without --config."""
    path = re.search(r'^# Options: (\S+)', UNIT.read_text(), re.M)[1]
    assert path.endswith('/cpuhpd.conf')
    return path


def test_help_names_the_default_config_file():
    assert f'(default {default_file()},' in cpuhpd('--help').stdout


def test_a_missing_default_file_means_the_defaults(tmp, sim):
    """As the unit starts it: a deleted /etc/cpuhpd.conf must not stop the service."""
    if pathlib.Path(default_file()).exists():
        pytest.skip(f'{default_file()} exists on this machine: its absence cannot be tried')
    exec_start = re.search(r'^ExecStart=(.*)$', UNIT.read_text(), re.M)[1].split()
    d = fixture.Daemon(tmp, sim.root, uevents=False)
    d.start(argv=[str(fixture.CPUHPD), *exec_start[1:], '--socket', d.socket,
                  '--sysfs-root', str(sim.root), '--no-netlink'])
    try:
        assert f'listening on {d.socket}' in d.log()
    finally:
        d.stop_clean()


def test_help_and_version_read_no_config_file(tmp):
    """A broken default file must not keep --help from saying what is wrong."""
    conf = tmp / 'bad.conf'
    conf.write_text('nonsense\n')
    for arg in ('--help', '--version'):
        r = cpuhpd('--config', conf, arg)
        assert r.returncode == 0 and 'cpuhpd' in r.stdout, r


def test_a_missing_admin_group_says_how_to_create_it(tmp):
    """A package that never ran sysusers: the service exits 2 saying what to run."""
    r = cpuhpd('--config', '/dev/null', '--admin-group', 'cpuhp-no-such-group',
               '--socket', tmp / 's', '--sysfs-root', tmp)
    assert r.returncode == 2, r
    assert "no group 'cpuhp-no-such-group'" in r.stderr, r.stderr
    assert 'systemd-sysusers' in r.stderr and 'groupadd --system cpuhp-no-such-group' in r.stderr
