#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""listenexec.py NAMES FD... -- COMMAND ARG...: run COMMAND the way systemd
passes it descriptors: FD... become 3, 4, ..., and LISTEN_FDS, LISTEN_PID
(this process's pid, which exec keeps) and LISTEN_FDNAMES (NAMES, names
separated by ':') are set.  The tests' service manager (fdstore.py) starts
the next cpuhpd with it."""
import fcntl
import os
import sys


def main(argv):
    sep = argv.index('--')
    names, fds, cmd = argv[1], [int(x) for x in argv[2:sep]], argv[sep + 1:]
    # Out of the way first, so that moving one to 3 + i never overwrites another.
    top = 3 + len(fds) + max(fds + [0])
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, top) for fd in fds]
    for fd in fds:
        os.close(fd)
    for i, fd in enumerate(high):
        os.dup2(fd, 3 + i, inheritable=True)
        os.close(fd)
    os.environ.update(LISTEN_FDS=str(len(fds)), LISTEN_PID=str(os.getpid()),
                      LISTEN_FDNAMES=names)
    os.execv(cmd[0], cmd)


if __name__ == '__main__':
    main(sys.argv)
