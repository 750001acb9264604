# SPDX-License-Identifier: LGPL-2.1-or-later
"""Negative errno returns of libcpuhp become Python exceptions, in one place.

``OSError(errno, message)`` picks the subclass Python has for that errno
(ETIMEDOUT: TimeoutError, EPERM and EACCES: PermissionError, ENOENT:
FileNotFoundError, ECONNREFUSED: ConnectionRefusedError, EAGAIN:
BlockingIOError, ...), so callers catch the usual built-in exceptions.
"""
from __future__ import annotations

import math
import os

# Timeouts cross the C API as milliseconds in an unsigned or int.
UINT_MS_MAX = 0xFFFFFFFF
INT_MS_MAX = 0x7FFFFFFF


def error(neg_errno: int, message: str | None = None, filename: str | None = None) -> OSError:
    """The exception for a negative errno return: an OSError subclass whose
    ``errno`` is the error and whose ``strerror`` is *message* (the daemon's
    words when it sent some), else the C library's text."""
    code = -neg_errno
    text = message or os.strerror(code)
    if filename is not None:
        return OSError(code, text, filename)
    return OSError(code, text)


def timeout_ms(timeout: float | None, forever: int, limit: int = UINT_MS_MAX) -> int:
    """Seconds (None: as long as it takes) to whole milliseconds, rounded up so
    that a short timeout is never 0 ("do not wait").  ValueError for negative,
    NaN or over-long timeouts, before anything is called."""
    if timeout is None or timeout == math.inf:
        return forever
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f'timeout must be a number of seconds or None, not {type(timeout).__name__}')
    if math.isnan(timeout) or timeout < 0:
        raise ValueError(f'timeout must be >= 0 seconds or None, not {timeout!r}')
    ms = math.ceil(timeout * 1000)
    if ms > limit:
        raise ValueError(f'timeout {timeout!r} s is over the limit of {limit / 1000:.0f} s; '
                         'use None to wait as long as it takes')
    return ms
