#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""percpu_pool.py: examples/percpu-pool.c in Python.

A pool of worker threads, one pinned to each online CPU, kept right across
CPU hotplug by a cpuhpd hotplug state: its teardown stops and joins a CPU's
worker before the CPU goes offline, its startup starts one after a CPU came
online.  client.register_state() runs startup for each CPU online now;
leaving the `with` block removes the state, which runs teardown for each.

Each worker checks that it runs on its CPU and that its affinity is still
that one CPU; the summary counts what they saw (both should be 0).  A CPU
that this machine does not have (a simulated sysfs tree) gets an unpinned
worker, which says so and is not checked.

Runs until end of file on standard input, or SIGINT/SIGTERM.

Usage: examples/percpu_pool.py [--socket PATH] [--name NAME] [--priority N]
"""
import argparse
import ctypes
import os
import pathlib
import signal
import sys
import threading

SOURCE = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get('CPUHP_BUILD_ROOT', SOURCE / 'build'))

try:
    import cpuhp
except ImportError:  # not installed: the one in the build tree
    sys.path.insert(0, str(BUILD / 'bindings' / 'python'))
    import cpuhp


# Python has no sched_getcpu(); glibc's, through ctypes.
_sched_getcpu = ctypes.CDLL(None, use_errno=True).sched_getcpu


def say(what):
    print(f'percpu_pool.py: {what}', flush=True)


class Worker(threading.Thread):
    def __init__(self, cpu):
        super().__init__(name=f'worker-{cpu}', daemon=True)
        self.cpu = cpu
        self.stop = threading.Event()
        self.started_ok = threading.Event()
        self.pinned = False
        self.checks = self.wrong_cpu = self.mask_broken = 0

    def run(self):
        try:
            os.sched_setaffinity(0, {self.cpu})   # this thread only (Linux)
            self.pinned = True
        except OSError:
            pass    # not a CPU of this machine: a simulated tree
        self.started_ok.set()
        while not self.stop.wait(0.0002):
            if self.pinned:
                self.checks += 1
                self.wrong_cpu += _sched_getcpu() != self.cpu
                self.mask_broken += os.sched_getaffinity(0) != {self.cpu}


class Pool:
    """Only the state's thread calls startup and teardown: no lock needed."""

    def __init__(self):
        self.workers = {}
        self.checks = self.wrong_cpu = self.mask_broken = self.unpinned = 0

    def show(self, what, cpu):
        say(f'{what} CPU {cpu}; workers on CPUs '
            f'{cpuhp.format_cpulist(self.workers) or "(none)"}')

    def startup(self, cpu):
        w = Worker(cpu)
        w.start()
        w.started_ok.wait()
        self.workers[cpu] = w
        self.unpinned += not w.pinned
        self.show('started a worker on' if w.pinned else 'started an unpinned worker for', cpu)

    def teardown(self, cpu):
        w = self.workers.pop(cpu, None)
        if w is None:
            return
        w.stop.set()
        w.join()
        self.checks += w.checks
        self.wrong_cpu += w.wrong_cpu
        self.mask_broken += w.mask_broken
        self.show('stopped the worker of', cpu)


def main():
    ap = argparse.ArgumentParser(description='One worker pinned per online CPU, kept right '
                                             'by a cpuhpd hotplug state.')
    ap.add_argument('--socket', help="cpuhpd's socket (default: $CPUHP_SOCKET, else "
                                     "the system's)")
    ap.add_argument('--name', default='percpu-pool-py', help="the state's name")
    ap.add_argument('--priority', type=int, default=0, help="the state's priority")
    args = ap.parse_args()

    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()

    pool = Pool()
    try:
        client = cpuhp.Client(args.socket, why='one worker per online CPU')
    except OSError as e:
        sys.exit(f'percpu_pool.py: cannot connect to cpuhpd: {e}; is it running?')
    with client:
        try:
            state = client.register_state(args.name, startup=pool.startup,
                                          teardown=pool.teardown, priority=args.priority)
        except OSError as e:
            sys.exit(f'percpu_pool.py: cannot register the state {args.name}: {e}')
        with state:
            say(f'state {args.name} registered; {len(pool.workers)} worker(s)')
            while not done.wait(1):
                pass
    say(f'done; {pool.checks} check(s) by pinned workers, {pool.wrong_cpu} on a wrong CPU, '
        f'{pool.mask_broken} with their affinity broken, {pool.unpinned} worker(s) unpinned')


if __name__ == '__main__':
    main()
