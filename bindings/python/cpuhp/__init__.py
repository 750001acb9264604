# SPDX-License-Identifier: LGPL-2.1-or-later
"""cpuhp: CPU-hotplug locking for Python, on libcpuhp and cpuhpd.

Inside one process (libcpuhp):

- ``RWSem()``: a reader/writer semaphore whose readers are almost free;
  ``with sem.read(): ...``, ``with sem.write(timeout=1.0): ...``,
  ``sem.try_read()``.
- ``online_cpus_held()``: ``with cpuhp.online_cpus_held(): ...`` keeps this
  process's ``hotplug_section()`` writers out.

Across processes (cpuhpd, the daemon that owns CPU hotplug):

- ``Client(path=None)``: a connection; ``client.lease(timeout=None)`` holds
  the set of online CPUs still while it is held, ``client.status()`` says
  what the daemon sees, ``client.set_online(cpus, online, timeout=None)``
  brings CPUs online or takes them offline once no lease is held,
  ``client.watch()`` yields events.

CPU lists: ``parse_cpulist("0-3,8")`` and ``format_cpulist({0, 1, 2, 3, 8})``
use libcpuhp's parser and formatter; functions that take CPUs accept a CPU
number, an iterable of them, or such a list.

Errors are OSError subclasses carrying the errno and the daemon's message:
TimeoutError (ETIMEDOUT), PermissionError (EPERM, EACCES),
FileNotFoundError (no socket), ConnectionRefusedError, BlockingIOError
(EAGAIN: a timeout of 0 found something in the way), ConnectionResetError
(the daemon went away).  Bad arguments raise ValueError or TypeError before
anything is sent or locked.

Every call that can block releases the GIL: other Python threads run while
one waits for a lock, a lease or a hotplug.  (So a blocked call does not see
Ctrl-C until it returns: give it a timeout.)
"""
from __future__ import annotations

from ._client import (DEFAULT_SOCKET, SOCKET_ENV, Client, CpuResult, Event, EventsLost,
                      HotplugFinished, HotplugResult, HotplugStarted, Lease, OnlineChanged, Status,
                      WriterState, socket_path)
from ._cpuset import CPUSET_MAX, CPUs, format_cpulist, parse_cpulist
from ._locks import RWSem, hotplug_section, online_cpus_held



def _version() -> str:
    from ._cpuhp import ffi, lib
    return ffi.string(lib.CPUHP_VERSION_STRING).decode()


#: The version of the libcpuhp this package was built with.
__version__: str = _version()
del _version

__all__ = [
    'RWSem', 'online_cpus_held', 'hotplug_section',
    'Client', 'Lease', 'Status', 'WriterState', 'HotplugResult', 'CpuResult',
    'Event', 'HotplugStarted', 'HotplugFinished', 'OnlineChanged', 'EventsLost',
    'parse_cpulist', 'format_cpulist', 'CPUs', 'CPUSET_MAX', 'DEFAULT_SOCKET', 'SOCKET_ENV',
    'socket_path',
]

# Public names say cpuhp.X in help(), reprs and tracebacks, wherever they live.
for _name in __all__:
    if hasattr(globals()[_name], '__module__') and not _name.isupper():
        try:
            globals()[_name].__module__ = __name__
        except (AttributeError, TypeError):
            pass
del _name
