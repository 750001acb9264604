# SPDX-License-Identifier: LGPL-2.1-or-later
"""cpuhp: CPU-hotplug locking for Python, on libcpuhp and cpuhpd.

Inside one process (libcpuhp):

- ``RWSem()``: a reader/writer semaphore whose readers are almost free;
  ``with sem.read(): ...``, ``with sem.write(timeout=1.0): ...``,
  ``sem.read(timeout=1.0)``, ``sem.try_read()``.  No exception leaves one
  of these locks held, Ctrl-C's KeyboardInterrupt while it waits included.
- ``online_cpus_held()``: ``with cpuhp.online_cpus_held(): ...`` keeps this
  process's ``hotplug_section()`` writers out.

Across processes (cpuhpd, the daemon that owns CPU hotplug):

- ``Client(path=None)``: a connection; ``client.lease(timeout=None)`` holds
  the set of online CPUs still while it is held, ``client.status()`` says
  what the daemon sees, ``client.set_online(cpus, online, timeout=None)``
  brings CPUs online or takes them offline once no lease is held,
  ``client.watch()`` yields events.  ``HAVE_CLIENT`` says whether this build
  has it: a package built without libcpuhp-client (meson
  ``-Dclient=disabled``) has only the in-process part, and asking it for
  ``Client`` (or any name of this part) raises ImportError saying so.
- ``cpuhp.aio.Client``: the same for asyncio (``async with c.lease()``,
  ``await c.set_online(...)``, ``async for event in c.watch()``), waiting
  in the event loop, with no thread per call.

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
one waits for a lock, a lease or a hotplug.  A Client's waits happen in
poll(), so a signal ends them (Ctrl-C raises KeyboardInterrupt at once, and
the request is given up), and threads sharing a Client do not wait for each
other.  The in-process locks wait in C: give them a timeout.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._cpuset import CPUSET_MAX, CPUs, format_cpulist, parse_cpulist
from ._locks import RWSem, hotplug_section, online_cpus_held

# Written out, not computed, so that type checkers see every public name.
__all__ = [
    'RWSem', 'online_cpus_held', 'hotplug_section',
    'parse_cpulist', 'format_cpulist', 'CPUs', 'CPUSET_MAX', 'HAVE_CLIENT',
    # The cross-process part (libcpuhp-client's), from 'Client' on: only in
    # a build with the client (HAVE_CLIENT), and else dropped below.
    'Client', 'Lease', 'Status', 'WriterState', 'HotplugResult', 'CpuResult', 'CpuInfo',
    'LeaseList', 'LeaseInfo', 'HotplugInfo', 'Freeze', 'FreezeInfo',
    'Event', 'HotplugStarted', 'HotplugFinished', 'OnlineChanged', 'PresentChanged', 'EventsLost',
    'LeaseRevoked', 'LeaseBypassed', 'LeasesLost', 'HotplugPending', 'HotplugCancelled',
    'DEFAULT_SOCKET', 'SOCKET_ENV', 'socket_path', 'State', 'Instance',
]
_CLIENT_NAMES = frozenset(__all__[__all__.index('Client'):])

try:
    from ._cpuhp_client import lib as _client_lib  # built only with libcpuhp-client
except ModuleNotFoundError as _e:
    if _e.name != f'{__name__}._cpuhp_client':
        raise  # it exists but does not load: say why, do not hide it
    del _e
    #: Whether this build has the cross-process part (Client, libcpuhp-client).
    HAVE_CLIENT: bool = False
    __all__ = [n for n in __all__ if n not in _CLIENT_NAMES]
else:
    del _client_lib
    HAVE_CLIENT = True
    from ._client import (DEFAULT_SOCKET, SOCKET_ENV, Client, CpuInfo, CpuResult, Event,
                          EventsLost, Freeze, FreezeInfo, HotplugCancelled, HotplugFinished,
                          HotplugInfo, HotplugPending, HotplugResult, HotplugStarted, Lease,
                          LeaseBypassed, LeaseInfo, LeaseList, LeaseRevoked, LeasesLost,
                          OnlineChanged, PresentChanged, Status,
                          WriterState, socket_path)
    from ._states import Instance, State

if TYPE_CHECKING:
    # Imported on first use at run time (__getattr__ below), as it raises
    # ImportError without the client.
    from . import aio


def _version() -> str:
    from ._cpuhp import ffi, lib
    return str(ffi.string(lib.CPUHP_VERSION_STRING).decode())


#: The version of the libcpuhp this package was built with.
__version__: str = _version()
del _version

if not TYPE_CHECKING:  # a type checker knows every name: unknown ones are errors there
    def __getattr__(name: str) -> object:
        if name == 'aio':  # the submodule, imported on first use (it raises without the client)
            import importlib
            return importlib.import_module(f'{__name__}.aio')
        if name in _CLIENT_NAMES:
            raise ImportError(f'cpuhp.{name} is not in this build: the cpuhp package was built '
                              'without libcpuhp-client (meson -Dclient=disabled, or protobuf-c '
                              'missing); rebuild with -Dclient=enabled to talk to cpuhpd',
                              name=__name__)
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def __dir__() -> list[str]:
    # The API, not the modules and helpers it is built from (they stay
    # importable, as cpuhp._client..., for whoever wants them).
    return sorted(__all__ + ['__version__'] + (['aio'] if HAVE_CLIENT else []))


# Public names say cpuhp.X in help(), reprs and tracebacks, wherever they live.
for _name in __all__:
    if hasattr(globals()[_name], '__module__') and not _name.isupper():
        try:
            globals()[_name].__module__ = __name__
        except (AttributeError, TypeError):
            pass
del _name, annotations, TYPE_CHECKING
