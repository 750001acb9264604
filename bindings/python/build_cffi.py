#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Write the C source of cpuhp._cpuhp, the cffi extension, for meson to compile.

cffi in API mode, without setuptools: the declarations come from cpuhp.cdef,
and the C file this writes includes the real <cpuhp/cpuhp.h> and
<cpuhp/client.h>, so compiling it checks every declaration against the
headers and fills in the constants and struct layouts the cdef leaves as
"...".  meson compiles the result with py.extension_module().

Usage: build_cffi.py CDEF OUTPUT.c
"""
import contextlib
import sys

import cffi

PREAMBLE = '''
#include <cpuhp/cpuhp.h>
#include <cpuhp/client.h>
'''


def main(argv):
    if len(argv) != 3 or argv[1] in ('-h', '--help'):
        print(__doc__.strip(), file=sys.stderr if len(argv) != 2 else sys.stdout)
        return 0 if len(argv) == 2 else 2
    cdef_path, out = argv[1], argv[2]
    ffi = cffi.FFI()
    with open(cdef_path, encoding='utf-8') as f:
        ffi.cdef(f.read())
    ffi.set_source('cpuhp._cpuhp', PREAMBLE)
    with contextlib.redirect_stdout(None):  # cffi prints 'generating ...'
        ffi.emit_c_code(out)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
