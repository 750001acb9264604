#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Write the C source of one of the cpuhp package's cffi extensions, for
meson to compile.

  build_cffi.py LOCK_CDEF OUTPUT.c              cpuhp._cpuhp (libcpuhp)
  build_cffi.py LOCK_CDEF CLIENT_CDEF OUTPUT.c  cpuhp._cpuhp_client
                                                (libcpuhp-client)

cffi in API mode: the declarations come from the cdef files, and the C
file this writes includes the real headers, so compiling it checks every
declaration against them and fills in the constants and struct layouts the
cdef leaves as "...".  Both include hold.h too, the C of the binding's own
that the lock context managers call; the client module also grant.h, what
its leases and freezes are held in.  The client module includes the lock
module (ffi.include): the types of cpuhp.cdef, struct cpuhp_cpuset first,
are one type in both, and the lock module is built and imported on its
own, without the client library.  meson compiles the result with
py.extension_module(); setup.py (pip) writes it with lock_ffi() and
client_ffi() and compiles it with setuptools.
"""
import contextlib
import sys

import cffi

# hold.h and grant.h are found beside this file: meson and setup.py add its directory.
LOCK_PREAMBLE = '''
#include <cpuhp/cpuhp.h>
#include "hold.h"
'''
CLIENT_PREAMBLE = '''
#include <stdlib.h>
#include <cpuhp/cpuhp.h>
#include <cpuhp/client.h>
#include "hold.h"
#include "grant.h"
'''


def read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def lock_ffi(cdef_path):
    """The FFI of cpuhp._cpuhp."""
    ffi = cffi.FFI()
    ffi.cdef(read(cdef_path))
    ffi.set_source('cpuhp._cpuhp', LOCK_PREAMBLE)
    return ffi


def client_ffi(lock, cdef_path):
    """The FFI of cpuhp._cpuhp_client, which includes *lock*'s types."""
    ffi = cffi.FFI()
    ffi.include(lock)
    ffi.cdef(read(cdef_path))
    ffi.set_source('cpuhp._cpuhp_client', CLIENT_PREAMBLE)
    return ffi


def main(argv):
    if len(argv) not in (3, 4) or argv[1] in ('-h', '--help'):
        print(__doc__.strip(), file=sys.stderr if len(argv) != 2 else sys.stdout)
        return 0 if len(argv) == 2 else 2
    ffi = lock_ffi(argv[1])
    if len(argv) == 4:
        ffi = client_ffi(ffi, argv[2])
    with contextlib.redirect_stdout(None):  # cffi prints 'generating ...'
        ffi.emit_c_code(argv[-1])
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
