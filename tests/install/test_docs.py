# SPDX-License-Identifier: LGPL-2.1-or-later
"""The man pages: built from doc/*.scd, lint-free for man --warnings (what
Debian's lintian runs), named by the units' Documentation=, installed into
mandir, and in step with the programs' --help."""
import json
import re
import shutil
import subprocess

import pytest

import fixture
from units import SERVICE, SOCKET, settings

DOC = fixture.BUILD / 'doc'
PAGES = ['cpuhpd.8', 'cpuhpctl.8', 'libcpuhp.3', 'cpuhpd-simsysfs.1']
built = pytest.mark.skipif(not (DOC / 'libcpuhp.3').exists(),
                           reason='skipped: the man pages were not built (apt-get install scdoc)')


def text(page):
    r = subprocess.run(['man', '-l', '-Tutf8', str(DOC / page)], capture_output=True, text=True,
                       env={'MANWIDTH': '80', 'LC_ALL': 'C.UTF-8', 'PATH': '/usr/bin:/bin'},
                       timeout=fixture.GUARD_S)
    assert r.returncode == 0, r
    plain = re.sub('.\x08', '', r.stdout)   # no overstrike bold/underline
    return plain.replace('\u2010', '-').replace('\u2212', '-')


@built
@pytest.mark.parametrize('page', PAGES)
def test_the_page_lints_clean(page):
    if not shutil.which('man'):
        pytest.skip('skipped: no man (man-db) to lint with')
    r = subprocess.run(['man', '--warnings', '-E', 'UTF-8', '-l', '-Tutf8', '-Z', str(DOC / page)],
                       capture_output=True, text=True, timeout=fixture.GUARD_S,
                       env={'MANWIDTH': '80', 'LC_ALL': 'C.UTF-8', 'MANROFFSEQ': '',
                            'PATH': '/usr/bin:/bin'})
    assert r.returncode == 0 and r.stderr == '', r.stderr


@built
def test_the_units_documentation_names_the_pages_and_the_build_installs_them():
    docs = set()
    for unit in (SERVICE, SOCKET):
        for v in settings(unit)['Documentation']:
            docs |= set(v.split())
    assert docs == {'man:cpuhpd(8)', 'man:cpuhpctl(8)', 'man:libcpuhp(3)'}, docs
    r = subprocess.run(['meson', 'introspect', '--installed', str(fixture.BUILD)],
                       capture_output=True, text=True, check=True, timeout=fixture.GUARD_S)
    dests = json.loads(r.stdout).values()
    for page in PAGES:
        assert any(d.endswith(f'/man/man{page[-1]}/{page}') for d in dests), (page, dests)


def help_options(argv):
    r = subprocess.run(argv + ['--help'], capture_output=True, text=True, timeout=fixture.GUARD_S)
    return set(re.findall(r'^  (?:-\w, )?(--[a-z-]+)', r.stdout, re.M))


@built
def test_cpuhpd_8_describes_every_option():
    page = text('cpuhpd.8')
    missing = {o for o in help_options([str(fixture.CPUHPD)]) if o not in page}
    assert not missing, missing


@built
def test_cpuhpctl_8_describes_every_command_and_option():
    page = text('cpuhpctl.8')
    opts = help_options([str(fixture.CPUHPCTL)])
    for cmd in ('online', 'watch', 'hold', 'freeze', 'state', 'states'):
        opts |= help_options([str(fixture.CPUHPCTL), cmd])
    assert {'--socket', '--version', '--timeout', '--count'} <= opts
    missing = {o for o in opts if o not in page}
    missing |= {c for c in ('status', 'leases', 'online', 'offline', 'watch', 'hold', 'freeze',
                            'states', 'state NAME') if c not in page}
    assert not missing, missing


@built
def test_cpuhpd_simsysfs_is_installed_with_a_page_for_every_option():
    # A test tool a packaged user runs: bindir, and its page says what --help says.
    r = subprocess.run(['meson', 'introspect', '--installed', str(fixture.BUILD)],
                       capture_output=True, text=True, check=True, timeout=fixture.GUARD_S)
    assert any(d.endswith('/bin/cpuhpd-simsysfs') for d in json.loads(r.stdout).values())
    page = text('cpuhpd-simsysfs.1')
    opts = help_options([str(fixture.SIMSYSFS)])
    assert {'--from', '--cpus', '--smt', '--smt-control', '--help', '--version'} <= opts, opts
    missing = {o for o in opts if o not in page}
    assert not missing and 'test tool' in page, missing


@built
def test_libcpuhp_3_points_at_every_public_header():
    page = text('libcpuhp.3')
    headers = {p.name for p in (fixture.SOURCE / 'libcpuhp' / 'include' / 'cpuhp').glob('*.h')
               if p.name != 'export.h'}
    missing = {h for h in headers if h not in page}
    assert not missing, missing
    for word in ('cpuhp_rwsem_read_lock', 'cpuhp_client_lease_acquire', 'FAST LEASES'):
        assert word in page


@built
@pytest.mark.parametrize('page', PAGES)
def test_the_page_points_at_no_file_a_package_does_not_ship(page):
    # A man page is read where only what `meson install` put is: no source
    # file, README or example path of the source tree.  Headers are
    # installed (<cpuhp/...h>), and so are the pages it names.
    names = re.findall(r'[\w./-]*(?:README|\.md\b|\.c\b|\.py\b|\.txt\b|examples/|daemon/|'
                       r'tests/|proto/|bindings/)[\w./-]*', text(page))
    assert not names, names
