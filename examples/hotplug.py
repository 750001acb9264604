#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""hotplug.py: cpuhpd from Python with the cpuhp package.

It shows the daemon's status, holds a reader lease while another connection
asks to take a CPU offline (the request waits for the lease, and cpuhpd
tells the holder so: HotplugPending), lets the hotplug happen, brings the
CPU back, and prints the events a watcher saw.

By default it plays against a simulated sysfs tree: it builds one with
cpuhpd-simsysfs (CPUs 0-3) in a temporary directory and starts a private
cpuhpd on it, so nothing on this machine changes.  With --socket it talks to
a running cpuhpd instead; on a daemon that drives the real /sys, a CPU
really goes offline and comes back (and you must be root or in cpuhpd's
admin group).

Usage: examples/hotplug.py [--socket PATH] [--cpu N]
       (after building build/; CPUHP_BUILD_ROOT names another build dir)
"""
import argparse
import os
import pathlib
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading

SOURCE = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get('CPUHP_BUILD_ROOT', SOURCE / 'build'))
GUARD_S = 30  # a step that takes longer than this is a bug: stop rather than hang
CPUHPD = BUILD / 'daemon' / 'cpuhpd' / 'cpuhpd'
SIMSYSFS = BUILD / 'daemon' / 'simsysfs' / 'cpuhpd-simsysfs'

try:
    import cpuhp
except ImportError:  # not installed: the one in the build tree
    sys.path.insert(0, str(BUILD / 'bindings' / 'python'))
    import cpuhp


def say(what):
    print(f'hotplug.py: {what}', flush=True)


def fmt(cpus):
    return cpuhp.format_cpulist(cpus) or '(none)'


class PrivateDaemon:
    """cpuhpd on a simulated tree of CPUs 0-3, in a temporary directory."""

    def __init__(self):
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix='cpuhp-example-'))
        self.socket = str(self.tmp / 'cpuhpd.sock')
        self.proc = None
        for prog in (CPUHPD, SIMSYSFS):
            if not os.access(prog, os.X_OK):
                raise SystemExit(f'hotplug.py: {prog} is missing: build '
                                 'first (meson setup build && ninja -C build), or pass '
                                 '--socket to use a running cpuhpd')

    def start(self):
        root = self.tmp / 'sys'
        subprocess.run([str(SIMSYSFS), '--cpus', '0-3', str(root)],
                       check=True)
        # cpuhpd says READY=1 on $NOTIFY_SOCKET (sd_notify) once it listens.
        notify_path = str(self.tmp / 'notify.sock')
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
            notify.bind(notify_path)
            self.log = open(self.tmp / 'cpuhpd.log', 'w')
            self.proc = subprocess.Popen(
                [str(CPUHPD), '--socket', self.socket, '--sysfs-root',
                 str(root), '--no-netlink'],
                stderr=self.log, env=dict(os.environ, NOTIFY_SOCKET=notify_path))
            while True:
                ready, _, _ = select.select([notify], [], [], GUARD_S)
                if not ready or self.proc.poll() is not None:
                    raise SystemExit('hotplug.py: cpuhpd did not start:\n'
                                     + (self.tmp / 'cpuhpd.log').read_text())
                if b'READY=1' in notify.recv(4096):
                    break
        say(f'started a private cpuhpd on a simulated tree of CPUs 0-3 in {root}')
        return self.socket

    def stop(self):
        if self.proc:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=GUARD_S)
            self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def describe(ev):
    if isinstance(ev, cpuhp.HotplugPending):
        return (f'hotplug #{ev.id} of CPUs {fmt(ev.cpus)} {"online" if ev.online else "offline"}'
                ' pending: it waits for the leases held')
    if isinstance(ev, cpuhp.HotplugStarted):
        return f'hotplug of CPUs {fmt(ev.cpus)} {"online" if ev.online else "offline"} started'
    if isinstance(ev, cpuhp.HotplugFinished):
        return (f'hotplug of CPUs {fmt(ev.cpus)} finished: '
                + ('ok' if ev.ok else f'CPUs {fmt(ev.failed)} failed'))
    if isinstance(ev, cpuhp.OnlineChanged):
        return (f'online CPUs now {fmt(ev.online_cpus)}'
                + (' (changed outside cpuhpd)' if ev.external else ''))
    return repr(ev)


def show_events(events, n):
    for _ in range(n):
        ev = next(events, None)
        if ev is None:
            raise SystemExit(f'hotplug.py: no event from cpuhpd within {GUARD_S} s')
        say(f'watcher: {describe(ev)}')


def show_status(client):
    s = client.status()
    say(f'status: online {fmt(s.online)}, offline {fmt(s.offline)}, possible '
        f'{fmt(s.possible)}; {s.leases_held} lease(s) held, writer {s.writer.name.lower()}')
    return s


def story(path, cpu):
    with cpuhp.Client(path) as me, cpuhp.Client(path) as admin, cpuhp.Client(path) as watcher:
        events = watcher.watch(timeout=GUARD_S)
        s = show_status(me)
        if cpu is None:
            candidates = sorted(s.online - {0})
            if not candidates:
                raise SystemExit('hotplug.py: no online CPU other than 0 to take offline')
            cpu = candidates[-1]
        elif cpu not in s.online:
            raise SystemExit(f'hotplug.py: CPU {cpu} is not online (online: {fmt(s.online)})')

        with me.lease() as lease:
            say(f'holding lease {lease.id}: the online CPUs stay {fmt(s.online)} meanwhile')
            # Another connection (the admin) asks for the CPU; it has to wait for us.
            outcome = {}

            def ask():
                try:
                    outcome['result'] = admin.set_online(cpu, False, timeout=GUARD_S)
                except OSError as e:
                    outcome['error'] = e
            asker = threading.Thread(target=ask)
            asker.start()
            # The holder is told that a hotplug waits for it (it need not watch).
            ev = me.next_event(GUARD_S)
            if not isinstance(ev, cpuhp.HotplugPending):
                raise SystemExit(f'hotplug.py: expected the notice that a hotplug waits, got {ev}')
            say(f'told: {describe(ev)}')
            s = show_status(me)
            say(f'admin asked to take CPU {cpu} offline: writer {s.writer.name.lower()}, '
                f'{s.leases_held} lease held -> it waits for our lease')
            say('leaving the critical section: the lease is released on the way out')
        asker.join(GUARD_S)
        if 'error' in outcome:
            raise outcome['error']
        for r in outcome['result'].results:
            say(f'admin: CPU {r.cpu} {"went offline" if r.changed else "was already offline"}')
        show_events(events, 4)  # it waited for our lease: announced pending first
        show_status(me)

        r = admin.set_online(cpu, True, timeout=GUARD_S)
        say(f'admin: CPU {cpu} {"back online" if r.changed else "was already online"}')
        show_events(events, 3)
        return show_status(me)


def main():
    ap = argparse.ArgumentParser(
        description='cpuhpd from Python: status, a lease, a CPU offline and back (see the '
                    'top of examples/hotplug.py).')
    ap.add_argument('--socket', metavar='PATH',
                    help='use the cpuhpd listening there instead of starting a private one '
                         'on a simulated tree (on a real cpuhpd a CPU REALLY goes offline)')
    ap.add_argument('--cpu', type=int, metavar='N',
                    help='the CPU to take offline and back (default: the highest online one '
                         'but 0)')
    args = ap.parse_args()
    if args.cpu is not None and args.cpu < 0:
        ap.error('--cpu wants a CPU number (0 or more)')

    daemon = None if args.socket else PrivateDaemon()
    try:
        path = args.socket or daemon.start()
        story(path, args.cpu)
    except OSError as e:
        raise SystemExit(f'hotplug.py: {e}') from None
    finally:
        if daemon:
            daemon.stop()
    say('done')
    return 0


if __name__ == '__main__':
    sys.exit(main())
