# SPDX-License-Identifier: LGPL-2.1-or-later
"""Ctrl-C ends a cpuhp.Client call that waits with no timeout: a child
Python blocks in lease(), set_online(), freeze() or watch(), gets SIGINT, and exits
with KeyboardInterrupt; the daemon forgets what it was waiting for.

"Blocked" is observed, never slept for: the daemon shows the request
queued (a second connection's status), and the child's main thread is
asleep in the kernel (/proc/PID/stat).  The only bound is the generous
guard on the child's exit."""
import signal
import subprocess
import sys

import pytest

from conftest import GUARD_S, wait_until
from test_client import Bg, writer_is

CHILD = '''
import sys, cpuhp
c = cpuhp.Client(sys.argv[1])
what = sys.argv[2]
if what == 'watch':
    events = c.watch()
print('ready', flush=True)
try:
    if what == 'lease':
        c.lease()
    elif what == 'set_online':
        c.set_online(2, False)
    elif what == 'freeze':
        c.freeze()
    else:
        next(events)
except KeyboardInterrupt:
    # Still connected: the parent looks at the daemon, then lets us go.
    print('interrupted', flush=True)
    sys.stdin.readline()
    raise
print('returned', flush=True)
'''


def asleep(pid):
    with open(f'/proc/{pid}/stat') as f:
        return f.read().rsplit(')', 1)[1].split()[0] == 'S'


class Child:
    def __init__(self, daemon, what):
        self.p = subprocess.Popen([sys.executable, '-c', CHILD, daemon.socket, what],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        assert self.p.stdout.readline() == 'ready\n'

    def interrupt(self):
        wait_until('the child asleep in its call', lambda: asleep(self.p.pid))
        self.p.send_signal(signal.SIGINT)
        assert self.p.stdout.readline() == 'interrupted\n'

    def finish(self):
        out, err = self.p.communicate('\n', timeout=GUARD_S)
        # Python ends on an uncaught KeyboardInterrupt by dying of SIGINT.
        assert self.p.returncode == -signal.SIGINT, (out, err)
        assert 'KeyboardInterrupt' in err and 'returned' not in out

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


@pytest.fixture
def child(daemon):
    made = []

    def start(what):
        made.append(Child(daemon, what))
        return made[-1]
    yield start
    for c in made:
        c.kill()


# What the daemon counts while the request waits, and once it would be granted.
WAITING_THEN_HELD = {
    'lease': (lambda s: s.pending_leases, lambda s: s.leases_held),
    'freeze': (lambda s: s.freezes, lambda s: s.freezes),
}


@pytest.mark.parametrize('what', WAITING_THEN_HELD)
def test_ctrl_c_ends_a_request_waiting_behind_a_hotplug_and_nothing_comes_of_it(
        cpuhp, daemon, observer, child, what):
    waiting, held_now = WAITING_THEN_HELD[what]
    held = observer.lease()
    with cpuhp.Client(daemon.socket) as h:
        # Bounded: a call deaf to SIGINT until granted fails the test, not hangs it.
        hp = Bg(h.set_online, 1, False, GUARD_S)
        wait_until('the hotplug waiting', writer_is(cpuhp, observer, cpuhp.WriterState.WAITING))
        c = child(what)
        wait_until(f'the {what} queued', lambda: waiting(observer.status()) == 1)
        c.interrupt()
        wait_until('the request forgotten', lambda: waiting(observer.status()) == 0)
        held.release()
        assert hp.join().changed == {1}
        # The child is still connected: had its request stayed queued, it
        # would hold it now.
        assert held_now(observer.status()) == 0
        c.finish()


def test_ctrl_c_ends_a_hotplug_waiting_for_leases_and_cancels_it(cpuhp, daemon, sim, observer,
                                                                 child):
    held = observer.lease()
    c = child('set_online')
    wait_until('the hotplug waiting', writer_is(cpuhp, observer, cpuhp.WriterState.WAITING))
    c.interrupt()
    wait_until('the hotplug cancelled', writer_is(cpuhp, observer, cpuhp.WriterState.IDLE))
    s = observer.status()
    assert s.pending_hotplugs == 0 and s.offline == set() and sim.read_online(2) == '1'
    held.release()
    c.finish()


def test_ctrl_c_ends_a_watch_with_no_timeout(cpuhp, daemon, observer, child):
    c = child('watch')
    c.interrupt()
    c.finish()
