# SPDX-License-Identifier: LGPL-2.1-or-later
"""Record the C calls a cpuhp module makes, to prove what it calls (the
libcpuhp parser) and what it does not (nothing reaches the daemon before
arguments are checked)."""
import contextlib


class LibSpy:
    """Stands in for a cffi `lib`: forwards every attribute, records calls."""

    def __init__(self, lib, calls=None):
        self._lib = lib
        self.calls = [] if calls is None else calls

    def __getattr__(self, name):
        real = getattr(self._lib, name)
        if not callable(real):
            return real

        def call(*args):
            self.calls.append(name)
            return real(*args)
        return call

    def called(self, prefix=''):
        return [c for c in self.calls if c.startswith(prefix)]


@contextlib.contextmanager
def spy_on(monkeypatch, *modules):
    """Replace `lib` in each module by a LibSpy (the lock and the client
    extension are two libs), all recording into one list; yield the first."""
    spy = LibSpy(modules[0].lib)
    for m in modules:
        monkeypatch.setattr(m, 'lib', spy if m.lib is spy._lib else LibSpy(m.lib, spy.calls))
    yield spy
