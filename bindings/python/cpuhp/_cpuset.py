# SPDX-License-Identifier: LGPL-2.1-or-later
"""CPU sets between Python and libcpuhp's struct cpuhp_cpuset.

Range lists ("0-3,8") are parsed and written by cpuhp_cpuset_parse() and
cpuhp_cpuset_format(), the one parser and formatter of the project; this
module only moves CPU numbers in and out of the C struct.
"""
from __future__ import annotations

import errno
from collections.abc import Iterable
from typing import Any, Union

from ._cpuhp import ffi, lib
from ._errors import error

#: What functions taking CPUs accept: one CPU number, an iterable of them, or
#: a range list such as ``"0-3,8"``.
CPUs = Union[int, Iterable[int], str]

#: CPU numbers must be below this (the kernel's largest NR_CPUS).
CPUSET_MAX: int = lib.CPUHP_CPUSET_MAX


def _cpu_number(cpu: object) -> int:
    if isinstance(cpu, bool) or not isinstance(cpu, int):
        raise TypeError(f'a CPU number must be an int, not {type(cpu).__name__}')
    if cpu < 0:
        raise ValueError(f'CPU numbers are not negative: {cpu}')
    if cpu >= CPUSET_MAX:
        raise ValueError(f'CPU {cpu} is out of range: CPU numbers are below {CPUSET_MAX}')
    return cpu


def _parse_into(text: str, cset: Any) -> None:
    if not isinstance(text, str):
        raise TypeError(f'a CPU list must be a str, not {type(text).__name__}')
    if '\0' in text:
        raise ValueError(f'CPU list {text!r} contains a NUL character')
    try:
        raw = text.encode('ascii')
    except UnicodeEncodeError:
        raise ValueError(f'CPU list {text!r} is not a range list such as "0-3,8"') from None
    rc = lib.cpuhp_cpuset_parse(raw, cset)
    if rc == -errno.ERANGE:
        raise ValueError(f'CPU list {text!r} is out of range: CPU numbers and strides are '
                         f'below {CPUSET_MAX}')
    if rc < 0:
        raise ValueError(f'CPU list {text!r} is not a range list such as "0-3,8" or '
                         '"0-15:2/4"')


def to_cset(cpus: CPUs) -> Any:
    """A new struct cpuhp_cpuset holding *cpus*.  TypeError or ValueError (a
    negative or too large CPU, a list that does not parse) if they are not
    CPUs."""
    cset = ffi.new('struct cpuhp_cpuset *')
    if isinstance(cpus, str):
        _parse_into(cpus, cset)
        return cset
    if isinstance(cpus, (bytes, bytearray)):
        raise TypeError('a CPU list must be a str, not bytes')
    if isinstance(cpus, int):
        cpus = (cpus,)
    try:
        it = iter(cpus)
    except TypeError:
        raise TypeError('CPUs must be an int, an iterable of ints or a range-list str, '
                        f'not {type(cpus).__name__}') from None
    for cpu in it:
        rc = lib.cpuhp_cpuset_add(cset, _cpu_number(cpu))
        if rc < 0:  # cannot happen after _cpu_number(); kept as the C contract says
            raise error(rc)
    return cset


def from_cset(cset: Any) -> frozenset[int]:
    """The CPUs in a struct cpuhp_cpuset."""
    out = []
    cpu = lib.cpuhp_cpuset_next(cset, -1)
    while cpu >= 0:
        out.append(cpu)
        cpu = lib.cpuhp_cpuset_next(cset, cpu)
    return frozenset(out)


def format_cset(cset: Any) -> str:
    buf = ffi.new('char[]', lib.CPUHP_CPUSET_LIST_MAX)
    n = lib.cpuhp_cpuset_format(cset, buf, len(buf))
    if n < 0:  # the buffer is the documented worst case: cannot happen
        raise error(n)
    return str(ffi.string(buf, n).decode('ascii'))


def parse_cpulist(text: str) -> frozenset[int]:
    """Parse a kernel range list such as ``"0-3,8,10-11"`` (the format of
    /sys/devices/system/cpu/online) into a set of CPU numbers.

    A range may carry a stride: the kernel's ``"a-b:u/g"`` takes the first
    *u* CPUs of every group of *g* (``"0-15:2/4"`` is {0, 1, 4, 5, 8, 9, 12,
    13}), taskset's ``"a-b:s"`` every *s*-th (``"0-7:2"`` is {0, 2, 4, 6}).
    Surrounding whitespace and a final newline are accepted; ``""`` is the
    empty set.  Raises ValueError for anything else (``"3-1"``, ``"1,,2"``,
    ``"-1"``, hex, a zero stride ``"0-7:0"``, more used than the group
    ``"0-7:3/2"``, a stride with no range ``":2"``, a CPU or stride >=
    CPUSET_MAX).  This is libcpuhp's parser, the one cpuhpd and cpuhpctl use.
    """
    cset = ffi.new('struct cpuhp_cpuset *')
    _parse_into(text, cset)
    return from_cset(cset)


def format_cpulist(cpus: CPUs) -> str:
    """Write CPUs as a kernel range list: ``format_cpulist({0, 1, 2, 3, 8})``
    is ``"0-3,8"``; the empty set is ``""``.  Accepts what parse_cpulist()
    returns, any iterable of CPU numbers, one number, or a range list (which
    comes back in canonical form)."""
    return format_cset(to_cset(cpus))
