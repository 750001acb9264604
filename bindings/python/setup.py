# SPDX-License-Identifier: LGPL-2.1-or-later
"""Build the cpuhp package's cffi extensions for pip (pyproject.toml), with
the C compiler and the flags pkg-config gives for the installed libcpuhp:
cpuhp._cpuhp always, cpuhp._cpuhp_client when pkg-config finds
libcpuhp-client too (else the package is the lock half, as meson's
-Dclient=disabled builds it).  build_cffi.py writes the C, as for meson.

For a libcpuhp installed under a prefix of your own, point PKG_CONFIG_PATH
at its pkgconfig directory, and LD_LIBRARY_PATH (or ld.so.conf) at its
library directory when running.
"""
import os
import shlex
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import build_cffi  # noqa: E402  (beside this file)


def pkg_config(*args, check=True):
    try:
        r = subprocess.run(['pkg-config', *args], capture_output=True, text=True)
    except FileNotFoundError:
        sys.exit('cpuhp setup.py: pkg-config is not installed (Debian: pkgconf); it finds '
                 'the installed libcpuhp')
    if check and r.returncode != 0:
        sys.exit(f'cpuhp setup.py: pkg-config does not find {args[-1]}: install it (Debian: '
                 'libcpuhp-dev; or meson install this project), and for a prefix of your own '
                 f'set PKG_CONFIG_PATH to its pkgconfig directory.\n{r.stderr.strip()}')
    return r


def build_args(*packages):
    """An Extension's flags to compile and link against *packages*."""
    return {'include_dirs': [HERE],  # hold.h, grant.h
            'extra_compile_args': shlex.split(pkg_config('--cflags', *packages).stdout),
            'extra_link_args': shlex.split(pkg_config('--libs', *packages).stdout)}


VERSION = pkg_config('--modversion', 'libcpuhp').stdout.strip()
LOCK = build_cffi.lock_ffi(os.path.join(HERE, 'cpuhp.cdef'))
# Extension name: (its FFI, its flags).
FFIS = {'cpuhp._cpuhp': (LOCK, build_args('libcpuhp'))}
if pkg_config('--exists', 'libcpuhp-client', check=False).returncode == 0:
    FFIS['cpuhp._cpuhp_client'] = (
        build_cffi.client_ffi(LOCK, os.path.join(HERE, 'cpuhp_client.cdef')),
        build_args('libcpuhp-client', 'libcpuhp'))
else:
    print('cpuhp setup.py: pkg-config does not find libcpuhp-client: building the lock half '
          'only (cpuhp.Client needs it)', file=sys.stderr)


class BuildCffi(build_ext):
    """Write each extension's C (build_cffi.py) into the build directory first."""

    def run(self):
        os.makedirs(self.build_temp, exist_ok=True)
        for ext in self.extensions:
            ext.sources = [os.path.join(self.build_temp, ext.name.rsplit('.', 1)[1] + '.c')]
            FFIS[ext.name][0].emit_c_code(ext.sources[0])
        super().run()


# Each source is a placeholder until BuildCffi writes it.
setup(version=VERSION,
      ext_modules=[Extension(name, sources=[f'{name}.c'], **flags)
                   for name, (_, flags) in FFIS.items()],
      cmdclass={'build_ext': BuildCffi})
