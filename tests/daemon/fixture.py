# SPDX-License-Identifier: LGPL-2.1-or-later
"""Test fixture for cpuhpd: a simulated sysfs tree, a private daemon, and
cpuhpd-probe, the scriptable protocol client.

Everything here synchronises on events, never on time: the daemon is ready
when it sends READY=1 on our NOTIFY_SOCKET (the sd_notify protocol), a
probe command returns when its one JSON answer line has arrived.
"""
import json
import os
import pathlib
import select
import shutil
import signal
import socket
import subprocess
import tempfile

SOURCE = pathlib.Path(os.environ.get('CPUHP_SOURCE_ROOT',
                                     pathlib.Path(__file__).resolve().parents[2]))
BUILD = pathlib.Path(os.environ.get('CPUHP_BUILD_ROOT', SOURCE / 'build'))
CPUHPD = BUILD / 'daemon' / 'cpuhpd' / 'cpuhpd'
CPUHPCTL = BUILD / 'daemon' / 'cpuhpctl' / 'cpuhpctl'
SIMSYSFS = BUILD / 'daemon' / 'simsysfs' / 'cpuhpd-simsysfs'
PROBE = BUILD / 'tests' / 'daemon' / 'cpuhpd-probe'

# How long a test may wait for the daemon to start or stop before calling it
# broken.  A guard against hangs, not a synchronisation: nothing sleeps.
GUARD_S = 30


def short_tmpdir():
    """A private directory with a short path: socket paths must stay under 108 bytes."""
    return pathlib.Path(tempfile.mkdtemp(prefix='cpuhpd-'))


class SimSysfs:
    """A simulated DIR/devices/system/cpu tree, built by cpuhpd-simsysfs."""

    def __init__(self, root, cpus=None, extra=()):
        self.root = pathlib.Path(root)
        argv = [str(SIMSYSFS), *extra]
        if cpus:
            argv += ['--cpus', cpus]
        subprocess.run(argv + [str(self.root)], check=True)
        self.cpu = self.root / 'devices' / 'system' / 'cpu'

    def online_file(self, n):
        return self.cpu / f'cpu{n}' / 'online'

    def read_online(self, n):
        return self.online_file(n).read_text().strip()

    def write_online(self, n, value):
        """Change a CPU behind the daemon's back (what chcpu would do)."""
        self.online_file(n).write_text(f'{value}\n')

    def hotpluggable(self):
        return sorted(int(p.parent.name[3:]) for p in self.cpu.glob('cpu[0-9]*/online'))


class Daemon:
    """A private cpuhpd on a temporary socket."""

    def __init__(self, tmp, sysfs_root, args=(), socket_path=None, uevents=True):
        self.tmp = pathlib.Path(tmp)
        self.sysfs_root = str(sysfs_root)
        self.socket = str(socket_path or self.tmp / 'cpuhpd.sock')
        self.uevent_socket = str(self.tmp / 'uevent.sock') if uevents else None
        self.args = list(args)
        self.logpath = self.tmp / 'cpuhpd.log'
        self.proc = None
        self.rc = None

    def argv(self):
        # --config /dev/null: whatever this machine's SYSCONFDIR/cpuhpd.conf says.
        argv = [str(CPUHPD), '--config', '/dev/null', '--socket', self.socket,
                '--sysfs-root', self.sysfs_root, '--verbose']
        if self.uevent_socket:
            # A simulated tree: its uevents come from the test, and the real
            # kernel's (another test hotplugging for real) would only add noise.
            argv += ['--uevent-socket', self.uevent_socket, '--no-netlink']
        return argv + self.args

    def start(self, argv=None, pass_fds=(), expect_ready=True, env=None):
        notify_path = str(self.tmp / 'notify.sock')
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        env = dict(os.environ, **(env or {}), NOTIFY_SOCKET=notify_path)
        with open(self.logpath, 'ab') as log:
            self.proc = subprocess.Popen(argv or self.argv(), stderr=log, env=env,
                                         pass_fds=pass_fds)
        try:
            if expect_ready:
                self._wait_ready(notify)
        finally:
            notify.close()
            os.unlink(notify_path)
        return self

    def _wait_ready(self, notify):
        pidfd = os.pidfd_open(self.proc.pid)
        try:
            while True:
                ready, _, _ = select.select([notify, pidfd], [], [], GUARD_S)
                if not ready:
                    raise AssertionError(f'cpuhpd sent no READY=1 in {GUARD_S} s:\n{self.log()}')
                if pidfd in ready:
                    self.rc = self.proc.wait()
                    raise AssertionError(f'cpuhpd exited with {self.rc} before it was ready:\n'
                                         f'{self.log()}')
                if b'READY=1' in notify.recv(4096):
                    return
        finally:
            os.close(pidfd)

    def log(self):
        """The log as text; a byte that is not UTF-8 (a client's, quoted) as \\xHH."""
        try:
            return self.logpath.read_text(errors='backslashreplace')
        except FileNotFoundError:
            return ''

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def wait(self):
        self.rc = self.proc.wait(timeout=GUARD_S)
        return self.rc

    def stop(self, sig=signal.SIGTERM):
        """Stop it the way systemd would; Return: its exit status."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.wait() if self.proc else None

    def stop_clean(self):
        """stop(), print the log, and assert that the daemon stopped cleanly:
        every test also proves that, after whatever it did."""
        rc = self.stop()
        print(self.log())
        assert rc == 0, f'cpuhpd exited with {rc}'

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def inject_uevent(self, action, devpath):
        """Send a uevent in the kernel's format to --uevent-socket."""
        msg = (f'{action}@{devpath}\0ACTION={action}\0DEVPATH={devpath}\0'
               f'SUBSYSTEM=cpu\0SEQNUM=1\0').encode()
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.sendto(msg, self.uevent_socket)


class Lines:
    """A process answering one JSON line per command line (cpuhpd-probe and the
    fast-lease tools): a test orders events by the answers it waits for."""

    def __init__(self, argv, env=None, name=None):
        argv = [str(a) for a in argv]
        self.name = name or pathlib.Path(argv[0]).name
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1, env=dict(os.environ, **(env or {})))
        self.pid = self.proc.pid

    def __call__(self, line):
        self.proc.stdin.write(line + '\n')
        self.proc.stdin.flush()
        out = self.proc.stdout.readline()
        if not out:
            raise AssertionError(f'{self.name} died (exit {self.proc.wait()}) on: {line}')
        return json.loads(out)

    def close(self):
        """EOF on stdin; Return: the exit status."""
        if self.proc.poll() is None:
            self.proc.stdin.close()
        return self.proc.wait(timeout=GUARD_S)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Probe(Lines):
    """cpuhpd-probe: named connections driven one command (one JSON line) at a time."""

    def __init__(self, socket_path, prefix_argv=()):
        super().__init__(list(prefix_argv) + [PROBE, socket_path], name='cpuhpd-probe')

    # Shorthands.  Each returns the decoded answer.
    def connect(self, name, batch=False):
        """batch: say Hello.state_batch (state calls may come in batches)."""
        r = self(f'connect {name}' + (' batch' if batch else ''))
        assert r.get('kind') == 'hello', r
        return r

    def call(self, name, *req):
        return self(f'call {name} ' + ' '.join(str(x) for x in req))

    def send(self, name, *req):
        r = self(f'send {name} ' + ' '.join(str(x) for x in req))
        assert r.get('ok'), r
        return r['sent']

    def recv(self, name):
        return self(f'recv {name}')

    def status(self, name):
        r = self.call(name, 'status')
        assert r['kind'] == 'status', r
        return r

    def lease(self, name, timeout_ms=0):
        r = self.call(name, 'acquire', timeout_ms)
        assert r['kind'] == 'lease_granted', r
        return r['lease_id']


NOBODY = ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups']


def daemon_as_nobody(tmp, sysfs_root, args=()):
    """A cpuhpd running as nobody (root and setpriv needed), in a directory
    nobody owns, as a fake daemon of another user would be."""
    os.chmod(tmp, 0o755)
    home = pathlib.Path(tmp) / 'nobody'
    home.mkdir(mode=0o755)
    os.chown(home, 65534, 65534)
    d = Daemon(home, sysfs_root, args=list(args))
    old = os.umask(0)   # our notify socket must take nobody's READY=1
    try:
        return d.start(argv=NOBODY + d.argv())
    finally:
        os.umask(old)


def read_until(stream, prefix):
    """Read lines of @stream (a process's, text) until one starts with @prefix;
    Return: that line.  The process ending first is a failure."""
    for line in stream:
        if line.startswith(prefix):
            return line
    raise AssertionError(f'the stream ended before a line starting {prefix!r}')


def error_code(r):
    """The ErrorCode name of an error answer, or None for any other answer."""
    return r['code'] if r.get('kind') == 'error' else None


def cleanup_dir(path):
    shutil.rmtree(path, ignore_errors=True)


class StalledOnlineFile:
    """Holds the daemon's worker inside a hotplug, deterministically.

    cpuN/online becomes a FIFO.  The first thing a hotplug does once it holds
    the lock (state RUNNING) is to re-read the online set, which blocks in
    open() on the FIFO until wait_for_reader() opens the other end, and then
    in read() until release() writes the value, puts a regular file back at
    the path (so every later open finds a plain file) and closes the FIFO.
    Use it with a daemon that gets no uevents (their re-reads would block too).
    """

    def __init__(self, sim, cpu):
        self.path = sim.online_file(cpu)
        self.value = sim.read_online(cpu)
        self.path.unlink()
        os.mkfifo(self.path)
        self.fd = None

    def wait_for_reader(self):
        self.fd = os.open(self.path, os.O_WRONLY)

    def release(self):
        tmp = self.path.with_name('online.tmp')
        tmp.write_text(self.value + '\n')
        if self.fd is not None:
            os.write(self.fd, (self.value + '\n').encode())
        os.rename(tmp, self.path)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


# --- frames written by hand, for what no well-behaved encoder sends -------------

def frame(payload):
    """A frame (proto/FRAMING.md): 4-byte big-endian length, then the payload."""
    return len(payload).to_bytes(4, 'big') + payload


def pb_varint(n):
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def pb(*fields):
    """A protobuf message from (number, value) pairs: an int is a varint,
    bytes (or a str, as UTF-8) and nested pb() results are length-delimited."""
    out = bytearray()
    for num, value in fields:
        if isinstance(value, int):
            out += pb_varint(num << 3) + pb_varint(value)
        else:
            data = value.encode() if isinstance(value, str) else bytes(value)
            out += pb_varint(num << 3 | 2) + pb_varint(len(data)) + data
    return bytes(out)


def request_frame(req_id, body_field, body):
    """A framed cpuhp.Request: id (field 1), its body as field @body_field."""
    return frame(pb((1, req_id), (body_field, body)))
