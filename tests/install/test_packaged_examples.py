# SPDX-License-Identifier: LGPL-2.1-or-later
"""A packaged library's user: `meson install --destdir` into a temporary
tree, then the C examples built out of tree against the installed .pc
files (PKG_CONFIG_SYSROOT_DIR and PKG_CONFIG_LIBDIR into the staged tree,
nothing from the source or build tree) and run against the staged
libraries (LD_LIBRARY_PATH into it), with no RUNPATH to fall back on."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

import fixture

EXAMPLES = fixture.SOURCE / 'examples'
CC = os.environ.get('CC', 'cc')


def run(argv, **kw):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                          timeout=fixture.GUARD_S, **kw)


@pytest.fixture(scope='module')
def staged():
    """The destdir, and the environment a user of it builds and runs with."""
    dest = fixture.short_tmpdir()
    try:
        r = subprocess.run(['meson', 'install', '-C', str(fixture.BUILD), '--no-rebuild',
                            '--destdir', str(dest)], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        pcs = sorted(dest.rglob('libcpuhp*.pc'))
        assert [p.name for p in pcs] == ['libcpuhp-client.pc', 'libcpuhp.pc'], pcs
        pcdir = pcs[0].parent
        # The staged .pc files come first; the system's after them only for
        # what they require privately (liburcu, protobuf-c), which a sysroot
        # would hold too.
        system = run(['pkg-config', '--variable', 'pc_path', 'pkg-config']).stdout.strip()
        env = dict(os.environ, PKG_CONFIG_SYSROOT_DIR=str(dest),
                   PKG_CONFIG_LIBDIR=':'.join([str(pcdir), system]))
        env.pop('PKG_CONFIG_PATH', None)
        libdir = pcdir.parent
        yield dest, env, libdir
    finally:
        fixture.cleanup_dir(dest)


def build(staged, tmp, example, package):
    dest, env, _ = staged
    flags = run(['pkg-config', '--cflags', '--libs', package], env=env)
    assert flags.returncode == 0, flags.stderr
    flags = flags.stdout.split()
    assert f'-I{dest}/' in ' '.join(flags) and f'-L{dest}/' in ' '.join(flags), flags
    out = tmp / example
    # A copy of the source alone: no header of the source tree is reachable.
    src = tmp / f'{example}.c'
    shutil.copy(EXAMPLES / f'{example}.c', src)
    r = run([CC, '-Wall', '-Wextra', '-Werror', '-o', out, src] + flags, env=env, cwd=tmp)
    assert r.returncode == 0, r.stderr
    return out


def run_env(staged):
    _, env, libdir = staged
    return dict(env, LD_LIBRARY_PATH=str(libdir))


def loaded_from(staged, binary):
    """The libcpuhp libraries @binary loads, as ldd resolves them."""
    r = run(['ldd', binary], env=run_env(staged))
    assert r.returncode == 0, r.stderr
    return {m[1]: pathlib.Path(m[2]) for m in
            re.finditer(r'^\s*(libcpuhp[\w-]*\.so\.\d+) => (\S+)', r.stdout, re.M)}


def test_readers_builds_against_the_staged_libcpuhp_and_runs(staged, tmp):
    readers = build(staged, tmp, 'readers', 'libcpuhp')
    dest, _, libdir = staged
    assert loaded_from(staged, readers) == {'libcpuhp.so.0': libdir / 'libcpuhp.so.0'}
    undefined = run(['nm', '-D', '--undefined-only', readers]).stdout
    used = re.findall(r'\b(cpuhp_\w+)@(\w+)', undefined)
    assert used and {v for _, v in used} == {'LIBCPUHP_0'}, undefined
    r = run([readers, '--cpus', '0-3', '--readers', '2', '--flips', '2'], env=run_env(staged))
    assert r.returncode == 0, r.stdout + r.stderr
    done = [ln for ln in r.stdout.splitlines() if 'done:' in ln]
    assert len(done) == 2 and all(d.endswith(', 0 saw the set change mid-walk') for d in done)


def test_lease_builds_against_the_staged_libcpuhp_client_and_holds_a_lease(staged, tmp, sim):
    lease = build(staged, tmp, 'lease', 'libcpuhp-client')
    _, _, libdir = staged
    assert loaded_from(staged, lease) == {'libcpuhp-client.so.0': libdir / 'libcpuhp-client.so.0',
                                          'libcpuhp.so.0': libdir / 'libcpuhp.so.0'}
    undefined = run(['nm', '-D', '--undefined-only', lease]).stdout
    assert re.search(r'\bcpuhp_client_lease_acquire@LIBCPUHP_CLIENT_0\b', undefined), undefined
    d = fixture.Daemon(tmp, sim.root).start()
    try:
        r = run([lease, '--socket', d.socket], env=run_env(staged))
        assert r.returncode == 0, r.stdout + r.stderr
        assert re.search(r'^lease: lease \d+ released$', r.stdout, re.M), r.stdout
    finally:
        d.stop_clean()


def test_the_staged_test_tools_try_cpuhpd_without_root(staged, tmp):
    # What a packaged user (or another project's CI) does: a simulated tree from the
    # installed cpuhpd-simsysfs, the installed cpuhpd on it, the installed cpuhpctl.
    dest, _, libdir = staged
    bins = {p.name: p for p in dest.rglob('*') if p.name in ('cpuhpd-simsysfs', 'cpuhpd',
                                                            'cpuhpctl') and p.is_file()}
    assert set(bins) == {'cpuhpd-simsysfs', 'cpuhpd', 'cpuhpctl'}, bins
    env = run_env(staged)
    r = run([bins['cpuhpd-simsysfs'], '--cpus', '0-3', tmp / 'sim'], env=env)
    assert r.returncode == 0, r.stderr
    d = fixture.Daemon(tmp, tmp / 'sim')
    d.start(argv=[str(bins['cpuhpd'])] + d.argv()[1:], env={'LD_LIBRARY_PATH': str(libdir)})
    try:
        r = run([bins['cpuhpctl'], '--socket', d.socket, 'offline', '2'], env=env)
        assert (r.returncode, r.stdout) == (0, 'CPU 2 disabled\n'), r
        assert (tmp / 'sim/devices/system/cpu/cpu2/online').read_text() == '0\n'
    finally:
        d.stop_clean()
