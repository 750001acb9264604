# SPDX-License-Identifier: LGPL-2.1-or-later
# For type checkers: cpuhp._cpuhp_client: libcpuhp-client (cpuhp_client.cdef), a cffi extension
# module built from the C declarations in the cdef file.  cffi gives its
# objects no Python types: they are Any here.
from typing import Any

ffi: Any
lib: Any
