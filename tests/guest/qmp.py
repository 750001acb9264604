# SPDX-License-Identifier: LGPL-2.1-or-later
"""A small QMP client: QEMU's JSON machine protocol on a Unix socket.

One command at a time: execute() sends it and reads lines until its
answer; asynchronous events in between are dropped (nothing here waits
for one: QEMU 7.2 sends none for the end of a vCPU's eject).
"""
import json
import select
import time


class QMPError(Exception):
    pass


class QMP:
    def __init__(self, sock, timeout_s=30):
        """Speak QMP on @sock, a connected stream socket (QEMU's monitor chardev)."""
        self.sock = sock
        self.buf = b''
        greeting = self._read(timeout_s)
        if 'QMP' not in greeting:
            raise QMPError(f'not a QMP greeting: {greeting}')
        self.execute('qmp_capabilities')

    def _read(self, timeout_s):
        """The next message, waited for up to @timeout_s."""
        deadline = time.monotonic() + timeout_s
        while b'\n' not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                raise QMPError(f'QEMU said nothing on QMP for {timeout_s:.0f} s')
            data = self.sock.recv(65536)
            if not data:
                raise QMPError('QEMU closed its QMP socket')
            self.buf += data
        line, self.buf = self.buf.split(b'\n', 1)
        return json.loads(line)

    def execute(self, command, timeout_s=30, **arguments):
        """Run @command; return its "return" value, or raise QMPError with QEMU's reason."""
        msg = {'execute': command}
        if arguments:
            msg['arguments'] = arguments
        self.sock.sendall(json.dumps(msg).encode() + b'\n')
        while True:
            reply = self._read(timeout_s)
            if 'error' in reply:
                raise QMPError(f'{command}: {reply["error"].get("desc", reply["error"])}')
            elif 'return' in reply:
                return reply['return']

    def close(self):
        self.sock.close()
