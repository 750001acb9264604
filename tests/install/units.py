# SPDX-License-Identifier: LGPL-2.1-or-later
"""The shipped units as data: their settings, and the system calls the
service's SystemCallFilter= allows (expanded by systemd-analyze)."""
import functools
import shutil
import subprocess

import fixture

UNITS = fixture.BUILD / 'daemon' / 'cpuhpd'
SERVICE = UNITS / 'cpuhpd.service'
SOCKET = UNITS / 'cpuhpd.socket'
ANALYZE = shutil.which('systemd-analyze')


def settings(path):
    """{key: [values in order]} of a unit file (comments and sections dropped)."""
    out = {}
    for ln in path.read_text().splitlines():
        ln = ln.strip()
        if not ln or ln[0] in '#;[':
            continue
        k, _, v = ln.partition('=')
        out.setdefault(k, []).append(v)
    return out


@functools.lru_cache(maxsize=None)
def expand(item):
    """A system call name, or a @group expanded (recursively) by systemd-analyze."""
    if not item.startswith('@'):
        return frozenset([item])
    r = subprocess.run([ANALYZE, 'syscall-filter', item], capture_output=True, text=True,
                       check=True, timeout=fixture.GUARD_S)
    names = set()
    for ln in r.stdout.splitlines()[1:]:
        ln = ln.strip()
        if ln and not ln.startswith('#'):
            names |= expand(ln)
    return frozenset(names)


def syscall_allow_set():
    """What SystemCallFilter= lets through, as systemd computes it: the
    allow-list lines (plus @default, which systemd always allows in an
    allow-list), less the ~ lines."""
    allow, deny = set(expand('@default')), set()
    for v in settings(SERVICE)['SystemCallFilter']:
        words = v.split()
        if v.startswith('~'):
            words[0] = words[0][1:]
            for w in words:
                deny |= expand(w)
        else:
            for w in words:
                allow |= expand(w)
    return allow - deny
