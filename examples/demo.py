#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""cpuhpd demo: processes that hold CPU-hotplug leases, and a CPU hotplug that
waits for them.

It builds a simulated sysfs tree that mirrors this machine's CPUs in a
temporary directory, starts cpuhpd on it with a private socket, and plays
the story below with real processes (cpuhpctl), printing a timeline.  With
--real (root only) the same story runs against /sys: a CPU really goes
offline and comes back, and its original state is restored whatever happens.

  1. Two programs, A and B, each hold a lease (`cpuhpctl hold -- CMD`): they
     sized something per online CPU and must not see the set change.
  2. C asks to take a CPU offline: the request waits for the leases.
  3. D asks for a lease meanwhile: it waits behind the hotplug (writer
     preference: a stream of new leases cannot starve a hotplug).
  4. A and B finish; the CPU goes offline; only then D gets its lease.
  5. E asks for the CPU back while D holds its lease; F's new lease waits
     for that hotplug; D finishes, the CPU comes back, F gets its lease.
  6. A hotplug state instead of a lease: examples/percpu-pool keeps one
     worker pinned to each online CPU. The pool shrinks before the CPU goes
     (cpuhpd calls its teardown first) and grows after it comes back (its
     startup); `cpuhpctl offline` prints what each state did and how long.
  7. A pool that lets go on the notice: G holds a delay lease around work
     that would take ten minutes (`cpuhpctl hold --delay 5s --on-pending
     HOOK -- ...`). H asks for the CPU: cpuhpd tells G at once that a
     hotplug waits (the watcher sees it pending too), G's hook tells the
     pool to wind down, the lease goes, and the hotplug runs right away;
     without the hook it would have waited out G's delay and revoked it.

Every step waits for an event (a pipe, a process exit, a status answer),
never for a fixed time, so the order is always the same.  The daemon's
state is read with `cpuhpctl --json status` and `cpuhpctl --json leases`,
the machine-readable output a script should use.

Usage: ./run.sh demo [--real]   (or examples/demo.py after building build/)
"""
import argparse
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SOURCE = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get('CPUHP_BUILD_ROOT', SOURCE / 'build'))
CPUHPD = BUILD / 'daemon' / 'cpuhpd' / 'cpuhpd'
CPUHPCTL = BUILD / 'daemon' / 'cpuhpctl' / 'cpuhpctl'
SIMSYSFS = BUILD / 'daemon' / 'simsysfs' / 'cpuhpd-simsysfs'
PERCPU_POOL = BUILD / 'examples' / 'percpu-pool'
GUARD_S = 30  # a stuck step is a bug: give up after this long rather than hang

T0 = time.monotonic()


def say(who, what):
    print(f'[{(time.monotonic() - T0) * 1000:8.1f} ms]  {who:<9} {what}', flush=True)


def pool_main():
    """The command G runs under `cpuhpctl hold`: a pool sized for the online
    CPUs whose work would take ten minutes, and which winds down early when
    its hold's --on-pending hook sends it SIGTERM (a hotplug waits)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    print('pool sized for the online CPUs; working (would take ten minutes)', flush=True)
    got = signal.sigtimedwait({signal.SIGTERM}, 600)
    print('told a hotplug waits: winding down early' if got else 'done', flush=True)
    return 0


def hold_main(ready_fd, go_fd):
    """The command a holder runs under `cpuhpctl hold`: it runs only while the
    lease is held.  It says so on one pipe and waits on another."""
    os.write(ready_fd, b'held\n')
    os.read(go_fd, 1)
    return 0


class Ctl:
    def __init__(self, socket_path):
        self.base = [str(CPUHPCTL), '--socket', str(socket_path)]

    def run(self, *args):
        return subprocess.run(self.base + list(args), capture_output=True, text=True,
                              timeout=GUARD_S)

    def spawn(self, *args, **kw):
        return subprocess.Popen(self.base + list(args), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, **kw)

    def query(self, what):
        """`cpuhpctl --json WHAT`, parsed."""
        r = self.run('--json', what)
        if r.returncode:
            raise SystemExit(f'demo: cpuhpctl {what} failed: {r.stdout}{r.stderr}')
        return json.loads(r.stdout)

    def status(self):
        return self.query('status')

    def holders(self):
        """Who holds leases, as `cpuhpctl leases` names them."""
        return ', '.join(f"{h['who'] or h['comm']} (pid {h['pid']})"
                         for h in self.query('leases')['leases']) or 'nobody'

    def wait_status(self, what, pred):
        """Ask until the daemon's state says @pred: a request sent by another process
        has reached it.  Each answer is a round trip, not a timed wait."""
        deadline = time.monotonic() + GUARD_S
        while time.monotonic() < deadline:
            s = self.status()
            if pred(s):
                return s
        raise SystemExit(f'demo: the daemon never showed {what}')


class Holder:
    """`cpuhpctl hold -- demo.py _hold`: a process that holds a lease until told to stop."""

    def __init__(self, ctl, name):
        self.name = name
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        self.proc = ctl.spawn('hold', '--timeout', str(GUARD_S * 1000), '--who', name,
                              '--why', 'sized its work for the online CPUs', '--',
                              sys.executable,
                              __file__, '_hold', str(ready_w), str(go_r),
                              pass_fds=(ready_w, go_r))
        os.close(ready_w)
        os.close(go_r)
        self.ready, self.go = ready_r, go_w

    def wait_granted(self):
        if os.read(self.ready, 16) != b'held\n':
            out = self.proc.communicate(timeout=GUARD_S)[0]
            raise SystemExit(f'demo: holder {self.name} got no lease: {out}')

    def release(self):
        os.write(self.go, b'x')
        out = self.proc.communicate(timeout=GUARD_S)[0]
        if self.proc.returncode:
            raise SystemExit(f'demo: holder {self.name} failed: {out}')
        os.close(self.ready)
        os.close(self.go)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Watcher:
    """`cpuhpctl watch`: its lines are read at the points where they must have come."""

    def __init__(self, ctl):
        self.proc = ctl.spawn('watch')
        self.line()  # "watching ...": subscribed

    def line(self):
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit('demo: cpuhpctl watch ended early')
        return line.rstrip('\n')

    def show(self, n):
        for _ in range(n):
            say('watch', self.line())

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=GUARD_S)


def hotpluggable(cpu_dir):
    cpus = []
    for f in cpu_dir.glob('cpu[0-9]*/online'):
        n = int(f.parent.name[3:])
        if n != 0 and os.access(f, os.W_OK) and f.read_text().strip() == '1':
            cpus.append(n)
    return sorted(cpus)


def start_daemon(tmp, sysfs_root):
    sock = tmp / 'cpuhpd.sock'
    log = open(tmp / 'cpuhpd.log', 'w')
    notify_path = tmp / 'notify.sock'
    import socket
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(notify_path))
    notify.settimeout(GUARD_S)
    argv = [str(CPUHPD), '--socket', str(sock), '--sysfs-root', str(sysfs_root)]
    if str(sysfs_root) != '/sys':
        argv.append('--no-netlink')
    proc = subprocess.Popen(argv, stderr=log, env=dict(os.environ, NOTIFY_SOCKET=str(notify_path)))
    try:
        while b'READY=1' not in notify.recv(4096):  # sd_notify: listening now
            pass
    except socket.timeout:
        proc.kill()
        raise SystemExit(f'demo: cpuhpd did not start:\n{(tmp / "cpuhpd.log").read_text()}')
    finally:
        notify.close()
    return proc, sock


def fmt(cpus):
    """A JSON CPU array as a range list: [0, 1, 2, 5] -> 0-2,5."""
    out, run = [], []
    for c in cpus + [None]:
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f'{run[0]}-{run[-1]}')
        run = [c]
    return ','.join(out) or '(none)'


def story(ctl, cpu, read_state):
    w = Watcher(ctl)
    a, b = Holder(ctl, 'A'), Holder(ctl, 'B')
    holders = [a, b]
    try:
        a.wait_granted()
        say('A', 'holds a lease  (cpuhpctl hold -- ...: sized its work for the online CPUs)')
        b.wait_granted()
        say('B', 'holds a lease')

        c = ctl.spawn('offline', '--timeout', str(GUARD_S * 1000), str(cpu))
        say('C', f'asks: cpuhpctl offline {cpu}')
        say('watch', w.line())  # the notice: cpuhpd has counted the leases it waits for
        s = ctl.wait_status('the hotplug waiting', lambda s: s['writer'] == 'waiting')
        say('status', f'writer {s["writer"]}, leases held {s["leases_held"]}, '
                      f'online {fmt(s["online"])}  -> C waits for A and B')
        say('leases', f'held by {ctl.holders()}')

        d = Holder(ctl, 'D')
        holders.append(d)
        say('D', 'asks for a lease')
        s = ctl.wait_status('the lease waiting', lambda s: s['pending_leases'] == 1)
        say('status', f'pending {s["pending_leases"]} lease request(s), '
                      f'{s["pending_hotplugs"]} hotplug(s)  -> D waits behind the hotplug '
                      '(writer preference)')

        a.release()
        say('A', 'done: lease released')
        s = ctl.wait_status('one lease left', lambda s: s['leases_held'] == 1)
        say('status', f'writer {s["writer"]}, leases held {s["leases_held"]}  '
                      f'-> still waiting for {ctl.holders()}')
        b.release()
        say('B', 'done: lease released')

        out = c.communicate(timeout=GUARD_S)[0].strip()
        say('C', f'{out}  (exit {c.returncode})')
        w.show(3)
        d.wait_granted()
        say('D', f'holds a lease, granted after the hotplug: CPU {cpu} is {read_state()}')
        s = ctl.status()
        say('status', f'online {fmt(s["online"])}, offline {fmt(s["offline"])}, '
                      f'leases held {s["leases_held"]}')

        e = ctl.spawn('online', '--timeout', str(GUARD_S * 1000), str(cpu))
        say('E', f'asks: cpuhpctl online {cpu}')
        say('watch', w.line())
        s = ctl.wait_status('the hotplug waiting', lambda s: s['writer'] == 'waiting')
        say('status', f'writer {s["writer"]}, leases held {s["leases_held"]}  '
                      f'-> E waits for {ctl.holders()}')
        f = Holder(ctl, 'F')
        holders.append(f)
        say('F', 'asks for a lease')
        ctl.wait_status('the lease waiting', lambda s: s['pending_leases'] == 1)
        say('status', 'F waits behind the hotplug')
        d.release()
        say('D', 'done: lease released')
        out = e.communicate(timeout=GUARD_S)[0].strip()
        say('E', f'{out}  (exit {e.returncode})')
        w.show(3)
        f.wait_granted()
        say('F', f'holds a lease, granted after the hotplug: CPU {cpu} is {read_state()}')
        f.release()
        say('F', 'done: lease released')
        s = ctl.status()
        say('status', f'online {fmt(s["online"])}, leases held {s["leases_held"]}, '
                      f'writer {s["writer"]}')
        if c.returncode or e.returncode:
            raise SystemExit('demo: a hotplug failed')
    finally:
        for h in holders:
            h.kill()
        w.stop()


def notice_story(ctl, cpu, read_state):
    w = Watcher(ctl)
    g = ctl.spawn('hold', '--delay', '5s', '--who', 'G', '--why', 'pool sized for the online CPUs',
                  '--on-pending', 'echo "hook: hotplug #$CPUHP_HOTPLUG ($CPUHP_ACTION '
                  '$CPUHP_CPUS) waits: telling the pool"; kill -TERM $CPUHP_HOLD_PID',
                  '--', sys.executable, __file__, '_pool')

    def line():
        got = g.stdout.readline()
        if not got:
            raise SystemExit(f'demo: G ended early (exit {g.wait()})')
        return got.rstrip('\n').removeprefix('cpuhpctl hold: ')
    try:
        say('G', line())
        say('leases', ', '.join(f"{x['who']} ({x['mode']}, {x['delay_ms']} ms)"
                                for x in ctl.query('leases')['leases']))
        h = ctl.spawn('offline', '--timeout', str(GUARD_S * 1000), str(cpu))
        say('H', f'asks: cpuhpctl offline {cpu}')
        say('watch', w.line())
        for _ in range(3):  # the notice, the hook's line, the pool's (G is one process tree)
            say('G', line())
        out = h.communicate(timeout=GUARD_S)[0].strip()
        say('H', f'{out}  (exit {h.returncode}): at once, not after G\'s 5 s delay')
        w.show(3)
        if g.wait(timeout=GUARD_S):
            raise SystemExit('demo: G failed')
        say('files', f'CPU {cpu} is {read_state()}')
        r = ctl.run('online', str(cpu))
        if h.returncode or r.returncode:
            raise SystemExit(f'demo: a hotplug failed: {r.stderr}')
        say('ctl', r.stdout.strip())
    finally:
        if g.poll() is None:
            g.kill()
            g.wait()
        w.stop()


def pool_story(ctl, cpu, read_state):
    pool = subprocess.Popen([str(PERCPU_POOL), '--socket', ctl.base[2]], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)

    def line():
        got = pool.stdout.readline()
        if not got:
            raise SystemExit(f'demo: percpu-pool ended (exit {pool.wait()})')
        return got.rstrip('\n').removeprefix('percpu-pool: ')
    try:
        while True:
            got = line()
            say('pool', got)
            if 'registered' in got:
                break
        say('states', ', '.join(f"{s['name']} (priority {s['priority']}, pid {s['pid']}) on "
                                f"CPUs {fmt(s['cpus'])}" for s in ctl.query('states')['states']))
        for verb in ('offline', 'online'):
            r = ctl.run(verb, str(cpu))
            # The pool's line was printed inside the callback, before cpuhpd answered.
            say('pool', line())
            for out in r.stdout.splitlines():
                say('ctl', out)
            say('files', f'CPU {cpu} is {read_state()}')
            if r.returncode:
                raise SystemExit(f'demo: cpuhpctl {verb} {cpu} failed: {r.stderr}')
        out = pool.communicate('', timeout=GUARD_S)[0]
        for got in out.splitlines():
            say('pool', got.removeprefix('percpu-pool: '))
        if pool.returncode:
            raise SystemExit('demo: percpu-pool failed')
    finally:
        if pool.poll() is None:
            pool.kill()
            pool.wait()


def main():
    if len(sys.argv) == 4 and sys.argv[1] == '_hold':
        return hold_main(int(sys.argv[2]), int(sys.argv[3]))
    if len(sys.argv) == 2 and sys.argv[1] == '_pool':
        return pool_main()
    ap = argparse.ArgumentParser(description='cpuhpd demo: leases and a CPU hotplug that '
                                 'waits for them (see the top of examples/demo.py).')
    ap.add_argument('--real', action='store_true',
                    help='run against the real /sys (root only): a CPU really goes offline '
                         'and comes back')
    args = ap.parse_args()
    for prog in (CPUHPD, CPUHPCTL, SIMSYSFS, PERCPU_POOL):
        if not os.access(prog, os.X_OK):
            raise SystemExit(f'demo: {prog} is missing: build first (./run.sh demo does)')

    tmp = pathlib.Path(tempfile.mkdtemp(prefix='cpuhpd-demo-'))
    proc = None
    restore = None
    try:
        if args.real:
            if os.geteuid() != 0:
                raise SystemExit('demo: --real needs root (it writes '
                                 '/sys/devices/system/cpu/cpuN/online)')
            root = pathlib.Path('/sys')
            cpus = hotpluggable(root / 'devices/system/cpu')
            if not cpus:
                raise SystemExit('demo: --real: no online CPU other than 0 has a writable '
                                 'online file on this machine')
            cpu = cpus[-1]
            online_file = root / f'devices/system/cpu/cpu{cpu}/online'

            def restore():
                if online_file.read_text().strip() != '1':
                    online_file.write_text('1\n')
                    print(f'demo: restored CPU {cpu} online')
            say('setup', f'REAL mode: /sys, CPU {cpu} will really go offline and come back')
        else:
            root = tmp / 'sys'
            subprocess.run([str(SIMSYSFS), str(root)], check=True)
            cpus = hotpluggable(root / 'devices/system/cpu')
            note = 'mirroring this machine'
            if not cpus:
                shutil.rmtree(root)
                subprocess.run([str(SIMSYSFS), '--cpus', '0-1', str(root)], check=True)
                cpus, note = [1], 'this machine has no hotpluggable CPU: CPUs 0-1 invented'
            cpu = cpus[-1]
            online_file = root / f'devices/system/cpu/cpu{cpu}/online'
            say('setup', f'simulated sysfs in {root} ({note}); CPU {cpu} plays the hotplugged one')

        def read_state():
            return 'online' if online_file.read_text().strip() == '1' else 'offline'

        proc, sock = start_daemon(tmp, root)
        ctl = Ctl(sock)
        s = ctl.status()
        say('cpuhpd', f'listening on {sock}; online CPUs {fmt(s["online"])}')
        story(ctl, cpu, read_state)
        pool_story(ctl, cpu, read_state)
        notice_story(ctl, cpu, read_state)
    finally:
        if proc:
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=GUARD_S)
            say('cpuhpd', f'stopped by SIGTERM (exit {rc}); socket removed: '
                          f'{not (tmp / "cpuhpd.sock").exists()}')
            print('\ncpuhpd\'s log:')
            print((tmp / 'cpuhpd.log').read_text(), end='')
        if restore:
            restore()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
