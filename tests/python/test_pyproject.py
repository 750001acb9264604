# SPDX-License-Identifier: LGPL-2.1-or-later
"""pip installs the binding from its source directory, offline, with the
distribution's cffi and setuptools, built against an installed libcpuhp:
the libraries are staged with `meson install --destdir`, pkg-config finds
them there (PKG_CONFIG_SYSROOT_DIR, PKG_CONFIG_LIBDIR) and nothing of the
build tree, `pip install --no-build-isolation --no-index` puts the package
into a venv (--system-site-packages, for Debian's cffi and setuptools), and
a fresh interpreter imports it from there and takes its locks, against the
staged libraries (LD_LIBRARY_PATH)."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import fixture

PY_SOURCE = fixture.SOURCE / 'bindings' / 'python'


def run(argv, **kw):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                          timeout=4 * fixture.GUARD_S, **kw)


@pytest.fixture(scope='module')
def installed():
    """The venv's python, and the environment to run it with."""
    top = fixture.short_tmpdir()
    try:
        dest = top / 'dest'
        r = run(['meson', 'install', '-C', fixture.BUILD, '--no-rebuild', '--destdir', dest])
        assert r.returncode == 0, r.stdout + r.stderr
        pcdir = next(dest.rglob('libcpuhp.pc')).parent
        system = run(['pkg-config', '--variable', 'pc_path', 'pkg-config']).stdout.strip()
        env = {k: v for k, v in os.environ.items()
               if k not in ('PYTHONPATH', 'PKG_CONFIG_PATH', 'LD_PRELOAD', 'GLIBC_TUNABLES')}
        env.update(PKG_CONFIG_SYSROOT_DIR=str(dest),
                   PKG_CONFIG_LIBDIR=':'.join([str(pcdir), system]),
                   PIP_DISABLE_PIP_VERSION_CHECK='1', PIP_NO_INPUT='1')
        # A copy of the binding's directory alone: pip builds in it.
        src = top / 'src'
        shutil.copytree(PY_SOURCE, src)
        venv = top / 'venv'
        r = run([sys.executable, '-m', 'venv', '--system-site-packages', '--without-pip', venv])
        assert r.returncode == 0, r.stderr
        python = venv / 'bin' / 'python'
        r = run([python, '-m', 'pip', 'install', '--no-build-isolation', '--no-index', src],
                env=env, cwd=top)
        assert r.returncode == 0, r.stdout + r.stderr
        yield python, dict(env, LD_LIBRARY_PATH=str(pcdir.parent)), top
    finally:
        fixture.cleanup_dir(top)


def test_the_pip_installed_package_imports_from_the_venv_and_takes_its_locks(installed):
    python, env, top = installed
    code = ('import sys, cpuhp\n'
            'assert cpuhp.__file__.startswith(sys.prefix), cpuhp.__file__\n'
            'sem = cpuhp.RWSem()\n'
            'with sem.write(timeout=1.0):\n'
            '    pass\n'
            'with sem.read(timeout=1.0):\n'
            '    pass\n'
            'with cpuhp.online_cpus_held():\n'
            '    pass\n'
            'with cpuhp.hotplug_section(timeout=1.0):\n'
            '    pass\n'
            'print(sem, cpuhp.__version__, cpuhp.HAVE_CLIENT, cpuhp.format_cpulist("3,1-2"))\n')
    r = run([python, '-c', code], env=env, cwd=top)
    assert r.returncode == 0, r.stderr
    project = json.loads(run(['meson', 'introspect', '--projectinfo', fixture.BUILD]).stdout)
    # Built with the client exactly when pkg-config found libcpuhp-client.
    have_client = run(['pkg-config', '--exists', 'libcpuhp-client'], env=env).returncode == 0
    assert r.stdout.split() == ['<cpuhp.RWSem', 'held=0>', project['version'],
                                str(have_client), '1-3'], r.stdout


def test_the_extensions_link_the_staged_libraries(installed):
    python, env, top = installed
    site = pathlib.Path(run([python, '-c', 'import cpuhp, os; print(os.path.dirname('
                             'cpuhp.__file__))'], env=env, cwd=top).stdout.strip())
    files = sorted(p.name for p in site.iterdir())
    assert {'py.typed', '_cpuhp.pyi', '__init__.py'} <= set(files), files
    ext = [site / f for f in files if f.startswith('_cpuhp.') and f.endswith('.so')]
    assert len(ext) == 1, files
    r = run(['ldd', ext[0]], env=env)
    assert f'libcpuhp.so.0 => {env["PKG_CONFIG_SYSROOT_DIR"]}/' in r.stdout, r.stdout


def test_the_metadata_names_the_runtime_dependency(installed):
    python, env, top = installed
    r = run([python, '-m', 'pip', 'show', 'cpuhp'], env=env, cwd=top)
    assert r.returncode == 0, r.stderr
    fields = dict(line.split(': ', 1) for line in r.stdout.splitlines() if ': ' in line)
    assert fields['Requires'] == 'cffi' and fields['License'] == 'LGPL-2.1-or-later', fields
