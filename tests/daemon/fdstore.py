# SPDX-License-Identifier: LGPL-2.1-or-later
"""A service manager's part for the restart tests: the sd_notify socket
with systemd's file-descriptor store (FDSTORE=1, FDSTOREREMOVE=1, FDNAME=),
and the start of the next cpuhpd with the stored descriptors in LISTEN_FDS
(listenexec.py).  Like systemd, the store outlives the daemon and hands
every descriptor to each new instance, which keeps them in the store."""
import os
import pathlib
import select
import socket
import subprocess
import threading

import fixture

LISTENEXEC = pathlib.Path(__file__).resolve().parent / 'listenexec.py'
SENTINEL = b'X-TEST-SYNC=1'
QUIT = b'X-TEST-QUIT=1'


class Manager:
    def __init__(self, tmp, store_max=64):
        self.path = str(pathlib.Path(tmp) / 'manager.sock')
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.store_max = store_max
        self.store = []          # [name, fd], in the order stored
        self.messages = []       # every text received
        self.cond = threading.Condition()
        self.syncs = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            try:
                msg, fds, _, _ = socket.recv_fds(self.sock, 65536, 16)
            except OSError:
                return
            if msg == QUIT:
                return
            with self.cond:
                self._handle(msg, fds)
                self.cond.notify_all()

    def _handle(self, msg, fds):
        if msg == SENTINEL:
            self.syncs += 1
            return
        self.messages.append(msg.decode())
        fields = dict(line.split('=', 1) for line in msg.decode().split('\n') if '=' in line)
        if fields.get('FDSTORE') == '1':
            name = fields.get('FDNAME', 'stored')
            for fd in fds:
                if len(self.store) < self.store_max:
                    self.store.append([name, fd])
                else:
                    os.close(fd)
            return
        for fd in fds:
            os.close(fd)
        if fields.get('FDSTOREREMOVE') == '1':
            name = fields.get('FDNAME')
            for entry in [e for e in self.store if e[0] == name]:
                os.close(entry[1])
                self.store.remove(entry)

    def sync(self):
        """Wait until every message sent before this call is handled (a unix
        datagram socket keeps their order)."""
        with self.cond:
            want = self.syncs + 1
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.sendto(SENTINEL, self.path)
        with self.cond:
            assert self.cond.wait_for(lambda: self.syncs >= want, fixture.GUARD_S)

    def names(self):
        self.sync()
        with self.cond:
            return [e[0] for e in self.store]

    def wait_for(self, text):
        """Wait for a notify message containing @text; Return: it."""
        with self.cond:
            found = self.cond.wait_for(
                lambda: next((m for m in self.messages if text in m), None), fixture.GUARD_S)
            assert found, f'no {text!r} from cpuhpd: {self.messages}'
            self.messages.remove(found)
            return found

    def discard(self):
        """What systemd does at a stop (not a restart): close everything stored."""
        self.sync()
        with self.cond:
            for _, fd in self.store:
                os.close(fd)
            self.store = []

    def start(self, daemon, extra_env=None):
        """Start daemon (a fixture.Daemon) with the store's descriptors; wait for READY=1."""
        self.sync()
        with self.cond:
            store = list(self.store)
            self.messages = [m for m in self.messages if 'READY=1' not in m]
        env = dict(os.environ, NOTIFY_SOCKET=self.path, FDSTORE=str(self.store_max),
                   **(extra_env or {}))
        argv = daemon.argv()
        if store:
            fds = [fd for _, fd in store]
            argv = [str(LISTENEXEC), ':'.join(n for n, _ in store), *map(str, fds), '--'] + argv
        else:
            fds = []
        with open(daemon.logpath, 'ab') as log:
            daemon.proc = subprocess.Popen(argv, stderr=log, env=env, pass_fds=fds)
        pidfd = os.pidfd_open(daemon.proc.pid)
        try:
            while True:
                with self.cond:
                    if any('READY=1' in m for m in self.messages):
                        return daemon
                ready, _, _ = select.select([pidfd], [], [], 0.05)
                if ready:
                    daemon.rc = daemon.proc.wait()
                    raise AssertionError(f'cpuhpd exited with {daemon.rc} before it was '
                                         f'ready:\n{daemon.log()}')
        finally:
            os.close(pidfd)

    def close(self):
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.sendto(QUIT, self.path)
        self.thread.join(fixture.GUARD_S)
        with self.cond:
            for _, fd in self.store:
                os.close(fd)
            self.store = []
        self.sock.close()
        os.unlink(self.path)
