# SPDX-License-Identifier: LGPL-2.1-or-later
"""`meson install` puts the package where the python it was built for looks
for it, and the installed package works (against the installed libraries)."""
import json
import pathlib
import subprocess
import sys

import fixture
from test_import import clean_env

BUILD = fixture.BUILD


def installed():
    r = subprocess.run(['meson', 'introspect', '--installed', str(BUILD)],
                       capture_output=True, text=True, check=True, timeout=fixture.GUARD_S)
    return json.loads(r.stdout)


def package_dir():
    dests = [pathlib.Path(d) for d in installed().values()
             if pathlib.Path(d).name == '__init__.py' and pathlib.Path(d).parent.name == 'cpuhp']
    assert len(dests) == 1, dests
    return dests[0].parent


def test_the_install_directory_is_on_the_interpreters_search_path_for_its_prefix():
    prefix = json.loads(subprocess.run(
        ['meson', 'introspect', '--buildoptions', str(BUILD)], capture_output=True, text=True,
        check=True, timeout=fixture.GUARD_S).stdout)
    prefix = next(o['value'] for o in prefix if o['name'] == 'prefix')
    site = package_dir().parent
    if prefix not in ('/usr', '/usr/local'):
        print(f'prefix {prefix}: {site} is searched only with PYTHONPATH; not checked')
        return
    assert str(site) in sys.path, (site, sys.path)


def test_the_installed_package_imports_and_works(tmp):
    dest = tmp / 'dest'
    subprocess.run(['meson', 'install', '-C', str(BUILD), '--no-rebuild', '--destdir',
                    str(dest)], check=True, capture_output=True, timeout=120)
    site = dest / package_dir().relative_to('/').parent
    files = sorted(p.name for p in (site / 'cpuhp').iterdir())
    assert '__init__.py' in files and 'py.typed' in files
    assert any(f.startswith('_cpuhp.') and f.endswith('.so') for f in files), files
    libdirs = {str(dest / pathlib.Path(d).parent.relative_to('/'))
               for d in installed().values() if pathlib.Path(d).name.startswith('libcpuhp')}
    env = clean_env()
    env.pop('PYTHONPATH', None)
    env.update(PYTHONPATH=str(site), LD_LIBRARY_PATH=':'.join(sorted(libdirs)))
    code = ('import cpuhp, sys\n'
            'assert cpuhp.__file__.startswith(sys.argv[1]), cpuhp.__file__\n'
            'assert cpuhp.parse_cpulist("0-2") == {0, 1, 2}\n'
            'print("ok")\n')
    r = subprocess.run([sys.executable, '-c', code, str(site)], env=env, capture_output=True,
                       text=True, cwd=str(tmp), timeout=fixture.GUARD_S)
    assert r.returncode == 0 and r.stdout == 'ok\n', r.stderr
