# SPDX-License-Identifier: LGPL-2.1-or-later
"""One boot of the guest: QEMU (TCG: no KVM needed) with Debian's kernel and
the image as its initramfs, systemd as PID 1, the scenarios run by the rig's
unit, their results read from the second serial port, and vCPU hot-add and
eject done through QMP when a scenario asks.

The serial protocol (tests/guest/rig/usr/lib/cpuhp-guest/lib.sh writes it):
one line each, "@@ KIND TEXT", from the guest:
    hello UPTIME             the rig runs (systemd reached it)
    begin NAME / end NAME RC a scenario's bounds, RC its script's exit status
    test NAME                the checks from here to the next "test" or the
                             end are test NAME's (a scenario's own are NAME's
                             until then): a situation a scenario made,
                             judged by a test of its own
    ok TEXT / fail TEXT      one check of the current test
    skip TEXT                the scenario cannot run here (it says why)
    note TEXT / log TEXT     a figure measured, a line of a log shown on failure
    ask VERB ARGS            hotadd CORE THREAD | eject CORE THREAD |
                             deleted CORE THREAD (wait until QEMU freed the
                             slot) | reboot NAME RC (scenario NAME's script
                             exited RC and reboots the guest: boot it
                             again when QEMU ends): answered "ok" or "error: TEXT"
    resume NAME              after that reboot: scenario NAME goes on
    done                     every scenario ran

A reboot is the guest's own (`systemctl reboot`): its reset ends QEMU
(-no-reboot, as a panic's does), and the host starts a new QEMU with the same
kernel, initramfs and disk (/dev/vda, made empty once per Boot), which keeps
the guest's /etc (rig's persist-init.c).  A new process rather than QEMU's
own reset: the second boot has no vCPU hot-add or eject behind it.
"""
import ctypes
import os
import pathlib
import select
import signal
import socket
import subprocess
import shutil
import tempfile
import time

from qmp import QMP, QMPError

CPU_MODEL = 'Skylake-Server-v1'
# 4 CPUs at boot (two cores of two threads), room for one more core of two.
SMP = '4,maxcpus=6,sockets=1,cores=3,threads=2'
MEMORY_MB = 1536
# Guards against a guest that hangs, not synchronisation: a boot takes about
# 25 s and the longest scenario under a minute on an idle 2-core machine.
BOOT_TIMEOUT_S = 300
SCENARIO_TIMEOUT_S = 300
EJECT_TIMEOUT_S = 120
SHUTDOWN_TIMEOUT_S = 120
DISK_MB = 32


class BootError(Exception):
    """The guest did not boot, hung or died: fails every guest test."""


def _die_with_parent():
    # QEMU must not outlive a test killed by meson's timeout.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Boot:
    def __init__(self, workdir, vmlinuz, cpio, scenarios, append=''):
        self.workdir = pathlib.Path(workdir)
        self.vmlinuz, self.cpio = vmlinuz, cpio
        self.scenarios = list(scenarios)
        self.append = append
        self.console = self.workdir / 'console.log'
        self.qemu_log = self.workdir / 'qemu.log'
        self.disk = self.workdir / 'disk.img'
        # By test: a scenario's name, or one named by "test" within it.
        self.results = {name: self._result(name) for name in self.scenarios}
        self.timings = {}

    @staticmethod
    def _result(scenario):
        return {'scenario': scenario, 'status': 'not run', 'checks': [], 'seconds': None,
                'rc': None}

    def argv(self, res_path, qmp_path):
        # irqaffinity=0: every interrupt on CPU 0, which has no online file and
        # never goes offline.  Without it a scenario's last lines once never
        # came, after the selftest had taken CPUs offline and online many
        # times: an edge-triggered serial interrupt moved with a CPU going
        # offline can be lost, and the 8250 driver then waits for it forever.
        cmdline = ('console=ttyS0 rdinit=/usr/lib/cpuhp-guest/init panic=-1 irqaffinity=0 systemd.show_status=error '
                   f'cpuhp.scenarios={",".join(self.scenarios)} {self.append}').strip()
        # tb-size: TCG splits its code buffer into 8 regions per possible vCPU
        # and a hot-added vCPU's thread must get a free one at once; QEMU 7.2
        # aborts (tcg_region_initial_alloc__locked) when the running vCPUs hold
        # them all, which they do just before a flush.  The default 1 GiB buffer
        # was full by the hotplug scenario once; 4 GiB (only what is translated
        # becomes resident) leaves a boot's translations four times the room.
        return ['qemu-system-x86_64', '-accel', 'tcg,tb-size=4096', '-cpu', CPU_MODEL, '-smp', SMP,
                '-m', str(MEMORY_MB), '-nodefaults', '-display', 'none', '-no-reboot',
                '-kernel', str(self.vmlinuz), '-initrd', str(self.cpio), '-append', cmdline,
                '-drive', f'file={self.disk},format=raw,if=virtio,cache=unsafe',
                '-chardev', f'file,id=console,path={self.console},append=on', '-serial', 'chardev:console',
                '-chardev', f'socket,id=results,path={res_path}', '-serial', 'chardev:results',
                '-chardev', f'socket,id=qmp,path={qmp_path}', '-mon', 'chardev=qmp,mode=control']

    def make_disk(self):
        """An empty ext4 disk: nothing of an earlier run's /etc is in the guest's."""
        mkfs = shutil.which('mkfs.ext4') or shutil.which('mkfs.ext4', path='/usr/sbin:/sbin')
        if not mkfs:
            raise BootError('mkfs.ext4 is not installed: apt-get install e2fsprogs (run.sh does)')
        self.disk.unlink(missing_ok=True)
        with open(self.disk, 'wb') as f:
            f.truncate(DISK_MB << 20)
        r = subprocess.run([mkfs, '-q', '-F', '-L', 'cpuhp-guest', str(self.disk)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise BootError(f'{mkfs} {self.disk} failed: {r.stdout}{r.stderr}')

    def run(self):
        """Boot, run every scenario, power off.  Raises BootError (results keeps what ran)."""
        self.make_disk()
        tmp = pathlib.Path(tempfile.mkdtemp(prefix='cpuhp-guest-'))  # short socket paths
        self.listeners = {}
        self.proc = None
        try:
            for name in ('results', 'qmp'):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.bind(str(tmp / name))
                s.listen(1)
                self.listeners[name] = s
            self.console.unlink(missing_ok=True)
            self.qemu_log.unlink(missing_ok=True)
            self.tmp = tmp
            t0 = time.monotonic()
            self._serve(self._start(), t0)
            self.timings['total_s'] = round(time.monotonic() - t0, 1)
            try:
                self.qmp.execute('quit')
            except (QMPError, OSError):
                pass  # it may be gone already
            self.proc.wait(timeout=30)
        finally:
            self._stop()
            for s in self.listeners.values():
                s.close()
            for f in tmp.iterdir():
                f.unlink()
            tmp.rmdir()

    def _start(self):
        """Start a QEMU on the disk as it is; its results connection (QMP in self.qmp)."""
        # Appended to: a reboot's second QEMU adds its boot to the first's.
        with open(self.qemu_log, 'ab') as log:
            self.proc = subprocess.Popen(self.argv(self.tmp / 'results', self.tmp / 'qmp'),
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         preexec_fn=_die_with_parent)
        # QEMU connects both client chardevs while it starts.
        conns = {}
        for name, s in self.listeners.items():
            s.settimeout(60)
            try:
                conns[name], _ = s.accept()
                conns[name].settimeout(None)
            except socket.timeout:
                raise BootError(f'QEMU did not connect its {name} socket: '
                                f'{self.tail(self.qemu_log)}') from None
        self.qmp = QMP(conns['qmp'])
        return conns['results']

    def _stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if getattr(self, 'qmp', None):
            self.qmp.close()

    def _reboot(self, conn, current):
        """The guest reboots: its reset ended QEMU (-no-reboot).  Wait for that, then
        boot a fresh QEMU on the same disk; its results connection.  A new process,
        not QEMU's own reset: QEMU 7.2 crashes ("double free or corruption") on a
        reset after a vCPU's device_del, and a guest reset after a long TCG run
        once took minutes to unpack the initramfs."""
        try:
            self.proc.wait(timeout=SHUTDOWN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._abort(current, f'QEMU still runs {SHUTDOWN_TIMEOUT_S} s after the guest '
                                 f'was asked to reboot')
        if self.proc.returncode != 0:
            self._abort(current, f'QEMU exited ({self.proc.returncode}) during the '
                                 f'guest\'s reboot: {self.tail(self.qemu_log, 3)}')
        conn.close()
        self.qmp.close()
        return self._start()

    def _serve(self, conn, t0):
        buf = b''
        current = test = None
        started = t0
        deadline = t0 + BOOT_TIMEOUT_S
        waiting_for = 'the rig to start (systemd to boot)'
        rebooting = None  # the scenario that rebooted the guest, until it resumed
        reboot_t0 = None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._abort(current, f'timed out after {round(time.monotonic() - started)} s '
                                     f'waiting for {waiting_for}')
            ready, _, _ = select.select([conn], [], [], min(left, 1.0))
            if self.proc.poll() is not None:
                self._abort(current, f'QEMU exited ({self.proc.returncode}) while waiting for '
                                     f'{waiting_for}')
            if not ready:
                continue
            data = conn.recv(65536)
            if not data:
                self._abort(current, f'the results port closed while waiting for {waiting_for}')
            buf += data.replace(b'\r', b'')
            *lines, buf = buf.split(b'\n')
            for raw in lines:
                line = raw.decode(errors='replace')
                if not line.startswith('@@ '):
                    continue
                kind, _, text = line[3:].partition(' ')
                now = time.monotonic()
                if kind == 'hello' and rebooting:
                    self.timings['reboot_s'] = round(now - reboot_t0, 1)
                    waiting_for = f'scenario {rebooting} to resume after the reboot'
                elif kind == 'hello':
                    self.timings['boot_s'] = round(now - t0, 1)
                    self.timings['guest_uptime_at_hello_s'] = float(text.split()[0])
                elif kind == 'resume' and text == rebooting:
                    current = test = text
                    rebooting = None
                    deadline = now + SCENARIO_TIMEOUT_S
                    waiting_for = f'the end of scenario {current}'
                elif rebooting:
                    self._abort(current, f'the guest rebooted but "{line}" came instead of '
                                         f'"resume {rebooting}": its /etc did not persist')
                elif kind == 'begin':
                    current = test = text
                    started = now
                    deadline = now + SCENARIO_TIMEOUT_S
                    waiting_for = f'the end of scenario {current}'
                    self.results[current]['status'] = 'running'
                elif kind == 'test':
                    test = text
                    self.results.setdefault(test, self._result(current))
                    self.results[test]['status'] = 'running'
                elif kind == 'end':
                    name, _, rc = text.partition(' ')
                    for r in self.results.values():
                        if r['scenario'] == name:
                            r['status'] = 'ended'
                            # A failed script before a reboot fails the scenario.
                            r['rc'] = int(rc) or r.get('rc_before_reboot') or 0
                            r['seconds'] = round(now - started, 1)
                    current = test = None
                    waiting_for = 'the next scenario'
                elif kind == 'done':
                    return
                elif kind == 'ask' and text.startswith('reboot '):
                    name, rc = text.split()[1:3]
                    for r in self.results.values():
                        if r['scenario'] == name:
                            r['rc_before_reboot'] = int(rc)
                    conn.sendall(b'ok\n')
                    self.results[test]['checks'].append(
                        ('host', f'{text}: a new QEMU boots on the same disk'))
                    rebooting, reboot_t0 = name, now
                    # The guest writes nothing more before its reset ends QEMU.
                    conn = self._reboot(conn, current)
                    buf = b''
                    now = time.monotonic()
                    self.timings['shutdown_s'] = round(now - reboot_t0, 1)
                    deadline = now + BOOT_TIMEOUT_S
                    waiting_for = f'the guest to reboot (scenario {name})'
                elif kind == 'ask':
                    try:
                        answer = self._answer(text)
                    except OSError as e:
                        self._abort(current, f'QMP failed ({e}) on "{text}"; QEMU says: '
                                             f'{self.tail(self.qemu_log, 3)}')
                    conn.sendall(answer.encode() + b'\n')
                    self.results[test]['checks'].append(('host', f'{text}: {answer}'))
                elif test:
                    self.results[test]['checks'].append((kind, text))

    def _answer(self, text):
        verb, *args = text.split()
        try:
            core, thread = (int(a) for a in args)
        except ValueError:
            return f'error: bad request "{text}"'
        dev = f'vcpu-c{core}t{thread}'
        try:
            if verb == 'hotadd':
                self.qmp.execute('device_add', driver=f'{CPU_MODEL}-x86_64-cpu', id=dev,
                                 **{'socket-id': 0, 'core-id': core, 'thread-id': thread})
            elif verb == 'eject':
                self.qmp.execute('device_del', id=dev)
            elif verb == 'deleted':
                self._wait_slot_free(core, thread)
            else:
                return f'error: unknown request "{verb}"'
        except QMPError as e:
            return f'error: {e}'
        return 'ok'

    def _wait_slot_free(self, core, thread):
        """Wait until QEMU has let go of the vCPU in the slot (the guest ejected it).
        QEMU 7.2 sends DEVICE_DELETED for the CPU's lapic only, not for the CPU: the
        slot is free again when query-hotpluggable-cpus shows no object in it."""
        deadline = time.monotonic() + EJECT_TIMEOUT_S
        while True:
            slots = self.qmp.execute('query-hotpluggable-cpus')
            slot = [s for s in slots if s['props'].get('core-id') == core
                    and s['props'].get('thread-id') == thread]
            if slot and 'qom-path' not in slot[0]:
                return
            if time.monotonic() > deadline:
                raise QMPError(f'the vCPU of core {core} thread {thread} is still there '
                               f'{EJECT_TIMEOUT_S} s after device_del')
            time.sleep(0.1)

    def _abort(self, current, why):
        for r in self.results.values():
            if r['scenario'] == current:
                r['status'] = 'aborted'
        raise BootError(f'{why}\n--- last lines of the guest console ---\n'
                        f'{self.tail(self.console, 40)}')

    @staticmethod
    def tail(path, n=20):
        try:
            lines = path.read_text(errors='replace').splitlines()
        except FileNotFoundError:
            return '(none)'
        return '\n'.join(lines[-n:])
