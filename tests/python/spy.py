# SPDX-License-Identifier: LGPL-2.1-or-later
"""Record the C calls a cpuhp module makes, to prove what it calls (the
libcpuhp parser) and what it does not (nothing reaches the daemon before
arguments are checked)."""
import contextlib


class LibSpy:
    """Stands in for a cffi `lib`: forwards every attribute, records calls."""

    def __init__(self, lib):
        self._lib = lib
        self.calls = []

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
    """Replace `lib` in each module by one LibSpy; yield it."""
    spy = LibSpy(modules[0].lib)
    for m in modules:
        monkeypatch.setattr(m, 'lib', spy)
    yield spy
