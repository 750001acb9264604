# SPDX-License-Identifier: LGPL-2.1-or-later
"""Hotplug states for Python: Client.register_state() (libcpuhp-client's
cpuhp_client_state_*, daemon/cpuhpd/README.md "Hotplug states").

Every callback runs on one thread the binding starts per state: it
registers the state (so the startups for the CPUs online then run there
too), then polls the state's connection and dispatches its calls, and at
remove() runs the teardowns and leaves.  The thread that called
register_state() or remove() waits for it on an Event, so Ctrl-C ends
that wait.  A multi state's add_instance() and Instance.remove() are run
by that thread too (asked through its pipe), so that their calls run
there like every other.
"""
from __future__ import annotations

import errno
import os
import queue
import select
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Self

from ._cpuhp_client import ffi, lib
from ._errors import error


@ffi.def_extern()
def _cpuhp_state_cb(call, arg):  # noqa: D103 (cffi's entry point)
    return ffi.from_handle(arg)._run(call)


class _Removable:
    """What State and Instance share: a context manager whose exit is
    remove(), and whether that happened."""

    _removed: bool

    def remove(self, nocalls: bool = False) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.remove()

    @property
    def removed(self) -> bool:
        return self._removed


class State(_Removable):
    """A registered hotplug state (Client.register_state() returns one).

    A context manager: leaving the block removes the state (teardown runs
    for every CPU it was started on, as remove() does)."""

    def __init__(self, session, name: str, startup: Callable[[int], object] | None,
                 teardown: Callable[[int], object] | None, priority: int, deadline: float,
                 nocalls: bool, start: bool = True, *, section: str = 'online',
                 multi: bool = False) -> None:
        if not isinstance(name, str) or not name or len(name.encode()) > 63 or \
                any(ch <= ' ' or ord(ch) >= 0x7f for ch in name):
            raise ValueError(f'state name must be 1 to 63 printable ASCII characters without '
                             f'spaces, not {name!r}')
        for what, fn in (('startup', startup), ('teardown', teardown)):
            if fn is not None and not callable(fn):
                raise TypeError(f'{what} must be callable or None, not {type(fn).__name__}')
        if isinstance(priority, bool) or not isinstance(priority, int) or \
                not -2**31 <= priority < 2**31:
            raise ValueError(f'priority must be an int that fits 32 bits, not {priority!r}')
        if isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or \
                not 0 < deadline <= 600:
            raise ValueError(f'deadline must be seconds, over 0 and at most 600, not {deadline!r}')
        if section not in ('online', 'prepare'):
            raise ValueError(f"section must be 'online' or 'prepare', not {section!r}")
        if not isinstance(multi, bool):
            raise TypeError(f'multi must be a bool, not {type(multi).__name__}')
        self.name = name
        self.section = section
        self.multi = multi
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._instances: list[Instance] = []
        self.priority = priority
        self.deadline = deadline
        self.id = 0
        self._startup, self._teardown = startup, teardown
        self._handle = ffi.new_handle(self)
        self._s = None
        self._stop_r = self._stop_w = -1
        self._nocalls = nocalls
        self._nocalls_remove = False
        self._ready = threading.Event()
        self._done = threading.Event()
        self._err: OSError | None = None
        self._removed = False
        self._session = session  # the Client's (cpuhp._session)
        if start:
            self._start()
            self._wait_registered()

    def _start(self) -> None:
        """Start the state's thread, which registers it (without *start*,
        the caller's to call once, then _wait_registered())."""
        self._session.handle()  # ValueError if closed
        self._stop_r, self._stop_w = os.pipe()
        self._thread = threading.Thread(target=self._main, name=f'cpuhp-state-{self.name}',
                                        args=(self._session, self._nocalls,
                                              max(1, round(self.deadline * 1000))),
                                        daemon=True)
        self._thread.start()

    def _wait_registered(self) -> None:
        """Wait for the state's thread to register it (and run the startups);
        raise its error."""
        self._ready.wait()
        if self._err is not None:
            self._removed = True  # nothing to remove: its thread has left
            self._close_pipe()
            raise self._err

    def __repr__(self) -> str:
        return (f'<cpuhp.State {self.name!r} id={self.id} priority={self.priority} '
                f'{"removed" if self._removed else "registered"}>')

    # On the state's thread.
    def _main(self, session, nocalls: bool, ms: int) -> None:
        out = ffi.new('struct cpuhp_client_state **')
        flags = lib.CPUHP_CLIENT_STATE_NOCALLS if nocalls else 0
        if self.section == 'prepare':
            flags |= lib.CPUHP_CLIENT_STATE_PREPARE
        if self.multi:
            flags |= lib.CPUHP_CLIENT_STATE_MULTI
        # A call in progress on the Client: close() on another thread wakes
        # it (ECANCELED) and frees the handle only after it, and its message.
        try:
            with session.using() as use:
                rc = lib.cpuhp_client_state_register(use.c, self.name.encode(), self.priority,
                                                     ms, flags, lib._cpuhp_state_cb,
                                                     lib._cpuhp_state_cb, self._handle, out)
                if rc < 0:
                    raise session.error(use.c, rc)
        except (OSError, ValueError) as e:
            # Registered as close() came: the caller gets the error, so the
            # state (on a connection of its own) must not outlive it.
            if out[0] != ffi.NULL:
                lib.cpuhp_client_state_remove(out[0], False)
            self._err = e if isinstance(e, OSError) else session.closed_error()
            self._ready.set()
            return
        self._s = out[0]
        self.id = int(lib.cpuhp_client_state_id(self._s))
        self._ready.set()
        # Calls read with the registration's reply ran in register, and each
        # dispatch runs all it reads: nothing waits in the C library, so
        # POLLIN is all there is to wait for.
        fd = lib.cpuhp_client_state_fd(self._s)
        p = select.poll()
        p.register(fd, select.POLLIN)
        p.register(self._stop_r, select.POLLIN)
        while True:
            ready = dict(p.poll())
            if self._stop_r in ready:
                if os.read(self._stop_r, 1) == b'!':
                    break
                self._run_jobs()
                continue
            if lib.cpuhp_client_state_dispatch(self._s) < 0:
                break   # the daemon is gone, and the state with it
        rc = lib.cpuhp_client_state_remove(self._s, self._nocalls_remove)
        self._s = None
        for inst in self._instances:   # gone with the state (their teardowns ran)
            inst._i = None
            inst._removed = True
        self._instances.clear()
        self._fail_jobs()
        if rc < 0 and rc != -errno.ECONNRESET:
            self._err = error(rc)
        self._done.set()

    def _run(self, call) -> int:
        fn = self._teardown if call.teardown else self._startup
        if fn is None:
            return 0
        try:
            if self.multi:
                fn(int(call.cpu), ffi.from_handle(call.instance))
            else:
                fn(int(call.cpu))
        except BaseException as e:  # noqa: B036 (a failed answer, whatever it was)
            text = f'{type(e).__name__}: {e}' if str(e) else type(e).__name__
            data = text.encode('utf-8', 'replace')[:len(call.message) - 1]
            call.message = data.decode('utf-8', 'ignore').encode()  # not inside a character
            code = e.errno if isinstance(e, OSError) and e.errno else errno.EIO
            return -code
        return 0

    def _close_pipe(self) -> None:
        for fd in (self._stop_r, self._stop_w):
            if fd >= 0:
                os.close(fd)
        self._stop_r = self._stop_w = -1

    def remove(self, nocalls: bool = False) -> None:
        """Remove the state: unless *nocalls*, teardown runs (on the state's
        thread) for every CPU it was started on.  Does nothing if removed
        already.  Raises the OSError of a broken connection, if any."""
        if self._removed:
            return
        self._removed = True
        self._nocalls_remove = nocalls
        os.write(self._stop_w, b'!')
        self._done.wait()
        self._thread.join()
        self._close_pipe()
        if self._err is not None:
            raise self._err

    # ---- instances (a multi state) ----

    def _check_instance(self, name: str) -> None:
        if not self.multi:
            raise ValueError(f'state {self.name!r} is not a multi-instance state '
                             f'(register it with multi=True)')
        if not isinstance(name, str) or not name or len(name.encode()) > 63 or \
                any(ch <= ' ' or ord(ch) >= 0x7f for ch in name):
            raise ValueError(f'instance name must be 1 to 63 printable ASCII characters '
                             f'without spaces, not {name!r}')

    def add_instance(self, name: str, arg: object = None, nocalls: bool = False) -> Instance:
        """Add an instance named *name* (unique in the state) to this multi
        state: unless *nocalls*, its startup runs, as ``startup(cpu,
        instance)`` on the state's thread, for every CPU the state is up on
        before this returns; then every hotplug calls it in turn.
        *arg* is the instance's ``arg``.  Raises FileExistsError for a
        taken name, the OSError of the first failed startup otherwise (those
        done are torn down again)."""
        self._check_instance(name)
        inst = Instance(self, name, arg)
        self._ask(('add', inst, nocalls))
        return inst

    def _ask(self, job) -> None:
        """Have the state's thread run *job*, and wait for it (raising its error)."""
        if self._removed:
            raise ValueError(f'state {self.name!r} is removed')
        inst = job[1]
        inst._ev.clear()
        inst._err = None
        if threading.current_thread() is self._thread:
            self._run_job(job)   # from a callback: this thread is the state's
        else:
            self._jobs.put(job)
            os.write(self._stop_w, b'+')
            inst._ev.wait()
        if inst._err is not None:
            raise inst._err

    def _run_jobs(self) -> None:
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return
            self._run_job(job)

    def _run_job(self, job) -> None:
        what, inst, nocalls = job
        if what == 'add':
            out = ffi.new('struct cpuhp_client_instance **')
            rc = lib.cpuhp_client_state_add_instance(
                self._s, inst.name.encode(), inst._handle,
                lib.CPUHP_CLIENT_STATE_NOCALLS if nocalls else 0, out)
            if rc < 0:
                inst._err = error(rc)
            else:
                inst._i = out[0]
                inst.id = int(lib.cpuhp_client_instance_id(out[0]))
                self._instances.append(inst)
        else:
            rc = lib.cpuhp_client_instance_remove(inst._i, nocalls)
            inst._i = None
            if inst in self._instances:
                self._instances.remove(inst)
            if rc < 0 and rc != -errno.ECONNRESET:
                inst._err = error(rc)
        inst._ev.set()

    def _fail_jobs(self) -> None:
        """The state is gone: jobs that came too late fail."""
        while True:
            try:
                _, inst, _ = self._jobs.get_nowait()
            except queue.Empty:
                return
            inst._err = ValueError(f'state {self.name!r} is removed')
            inst._ev.set()

    @property
    def instances(self) -> list[Instance]:
        """The instances, oldest first."""
        return list(self._instances)


class Instance(_Removable):
    """An instance of a multi state (State.add_instance() returns one): its
    ``name``, its ``arg``, its ``state`` and the daemon's ``id``.  A
    context manager: leaving the block removes it."""

    def __init__(self, state: State, name: str, arg: object) -> None:
        self.state = state
        self.name = name
        self.arg = arg
        self.id = 0
        self._handle = ffi.new_handle(self)
        self._i = None
        self._ev = threading.Event()
        self._err: BaseException | None = None
        self._removed = False

    def __repr__(self) -> str:
        return (f'<cpuhp.Instance {self.name!r} of {self.state.name!r} id={self.id} '
                f'{"removed" if self._removed else "added"}>')

    def remove(self, nocalls: bool = False) -> None:
        """Remove the instance: unless *nocalls*, its teardown runs (on the
        state's thread) for every CPU it is up on.  Does nothing if removed
        already (or its state is)."""
        if self._removed:
            return
        self._removed = True
        self.state._ask(('remove', self, nocalls))
