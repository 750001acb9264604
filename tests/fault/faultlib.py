# SPDX-License-Identifier: LGPL-2.1-or-later
"""What every fault shares: the rig (one private cpuhpd on a simulated tree
with the sysfs fault shim preloaded), a ledger of requests and replies per
connection, the invariants checked after every fault, and the report.

Nothing here sleeps: the daemon is ready on READY=1, a probe command
returns on its answer, and "every lease of a dead client has ended" is
proved by a hotplug that can only run once no lease is left.
"""
import os
import pathlib
import random
import selectors
import signal
import subprocess
import time

import fixture

BUILD = fixture.BUILD
CHURN = BUILD / 'tests' / 'fault' / 'cpuhpd-churn'
SHIM = BUILD / 'tests' / 'fault' / 'libsysfs-fault.so'
REPORT_PATH = BUILD / 'tests' / 'fault' / 'fault-report.md'

# A request that must wait for something the test controls waits this long at
# most: a guard against a hang, never a synchronisation.
GUARD_MS = 20000
# Small enough to flood, large enough for the many-clients faults.
MAX_CONNECTIONS = 48
# cpuhpd-simsysfs --cpus 0-3: cpu0 has no online file, 1-3 are hotpluggable;
# --smt 2: cores {0,2} and {1,3}, so SMT off takes 2 and 3.
CPUS = '0-3'
HOTPLUGGABLE = (1, 2, 3)
# Admission, small enough for a nobody flood to reach:
# connections and buffered bytes per uid, and the request timeout.
PER_UID = 8
PER_UID_BYTES = '1M'
CLIENT_TIMEOUT_MS = 1000
SMT_SIBLINGS = (2, 3)


def _seed():
    s = os.environ.get('CPUHP_FAULT_SEED')
    return int(s) if s else random.SystemRandom().randrange(2**32)


SEED = _seed()


def rng(fault):
    """Each fault's own generator: a fault reruns alike whatever ran before it."""
    return random.Random(f'{SEED}:{fault}')


def parse_cpus(text):
    """A range list ("0-2,5") as a set: the test's own reading of the status strings."""
    out = set()
    for part in filter(None, text.strip().split(',')):
        lo, _, hi = part.partition('-')
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def sim_online(sim):
    """The simulated CPU state: per-CPU files where they exist, cpu0 always online."""
    online = {0}
    for n in HOTPLUGGABLE:
        if sim.read_online(n) == '1':
            online.add(n)
    return online


# ---- the report ----

class Report:
    """One row per fault: what was injected, what was checked, the numbers."""

    def __init__(self):
        self.rows = {}

    def row(self, nodeid, fault):
        r = {'fault': fault, 'injected': [], 'checked': [], 'numbers': {}, 'result': 'not run'}
        self.rows[nodeid] = r
        return r

    def outcome(self, nodeid, result, detail=''):
        if nodeid in self.rows:
            self.rows[nodeid]['result'] = result + (f': {detail}' if detail else '')

    def markdown(self, seconds):
        out = ['<!-- written by tests/fault/test_faults.py -->',
               '# cpuhpd fault-injection report', '',
               f'Seed {SEED} (rerun: `CPUHP_FAULT_SEED={SEED} meson test -C build '
               f'fault-injection`), {seconds:.1f} s.', '',
               'After every fault: every lease of a dead client ends (a hotplug that needs '
               'zero leases runs), `leases_held` equals the leases live clients hold, every '
               'request of the checking connections is answered exactly once, a new client '
               'is served, and the status online set equals the simulated files.', '',
               '| # | fault | injected | checked | numbers | result |',
               '|---|---|---|---|---|---|']
        for i, r in enumerate(self.rows.values(), 1):
            nums = ', '.join(f'{k} {v}' for k, v in r['numbers'].items())
            out.append(f"| {i} | {r['fault']} | {'; '.join(r['injected'])} | "
                       f"{'; '.join(r['checked'])} | {nums} | {r['result']} |")
        return '\n'.join(out) + '\n'


REPORT = Report()


# ---- requests and replies, counted per id ----

class Ledger:
    """A probe's connections, with every request id sent and every reply received.

    finish() closes a connection and proves that each request was answered
    exactly once: a duplicate reply is still in the stream when it ends, and
    a missing one never arrives.
    """

    def __init__(self, probe):
        self.p = probe
        self.sent = {}      # name -> [ids]
        self.replies = {}   # name -> {id: count}
        self.events = {}    # name -> count
        self.queued = {}    # name -> replies read while waiting for another id
        self.total_requests = 0
        self.total_replies = 0

    def _note_sent(self, name, rid):
        self.sent.setdefault(name, []).append(rid)
        self.total_requests += 1

    def _note_reply(self, name, r):
        if r.get('kind') == 'event':
            self.events[name] = self.events.get(name, 0) + 1
            return
        counts = self.replies.setdefault(name, {})
        counts[r['id']] = counts.get(r['id'], 0) + 1
        self.total_replies += 1

    def connect(self, name):
        r = self.p.connect(name)
        self._note_sent(name, 1)   # the probe's Hello is request 1 of the connection
        self._note_reply(name, r)
        return r

    def send(self, name, *req):
        rid = self.p.send(name, *req)
        self._note_sent(name, rid)
        return rid

    def _wire(self, name):
        r = self.p.recv(name)
        assert 'id' in r, f'{name}: the stream ended while a reply was awaited: {r}'
        self._note_reply(name, r)
        return r

    def recv(self, name):
        q = self.queued.get(name)
        return q.pop(0) if q else self._wire(name)

    def reply(self, name):
        """recv(), past the notices to a lease holder (events with id 0: a
        hotplug pending or cancelled, a lease revoked), which answer nothing."""
        while True:
            r = self.recv(name)
            if not (r['id'] == 0 and r['kind'] == 'event'):
                return r

    def call(self, name, *req):
        rid = self.send(name, *req)
        q = self.queued.setdefault(name, [])
        for i, r in enumerate(q):
            if r['id'] == rid:
                return q.pop(i)
        while True:
            r = self._wire(name)
            if r['id'] == rid or (r['id'] == 0 and r['kind'] == 'error'):
                return r
            q.append(r)

    def status(self, name):
        r = self.call(name, 'status')
        assert r['kind'] == 'status', r
        return r

    def lease(self, name, timeout_ms=0):
        r = self.call(name, 'acquire', timeout_ms)
        assert r['kind'] == 'lease_granted', r
        return r['lease_id']

    def release(self, name, lease):
        r = self.call(name, 'release', lease)
        assert r['kind'] == 'lease_released', r

    def finish(self, name, unanswered=()):
        """Close @name and check every request it sent got exactly one reply
        (ids in @unanswered may have none).  Return: what arrived after the
        last reply read, up to the end of the stream."""
        self.p(f'shutwr {name}')
        end = self.p(f'eof {name}')
        assert end['end'] in ('eof', 'ECONNRESET'), end
        for r in end['responses']:
            self._note_reply(name, r)
        counts = dict(self.replies.get(name, {}))
        counts.pop(0, None)  # connection-level errors concern no request
        sent = self.sent.get(name, [])
        twice = {i: n for i, n in counts.items() if n > 1}
        never = [i for i in sent if i not in counts and i not in unanswered]
        foreign = [i for i in counts if i not in sent]
        assert not twice, f'{name}: requests answered more than once: {twice}'
        assert not never, f'{name}: requests never answered: {never}'
        assert not foreign, f'{name}: replies to ids never sent: {foreign}'
        self.p(f'close {name}')
        return end['responses']


# ---- the rig ----

class Rig:
    """One cpuhpd for the whole suite, with the shim preloaded and idle."""

    def __init__(self, tmp):
        self.tmp = pathlib.Path(tmp)
        os.chmod(self.tmp, 0o755)   # nobody's flood must reach the socket (mode 0666)
        self.sim = fixture.SimSysfs(self.tmp / 'sys', cpus=CPUS, extra=['--smt', '2'])
        self.ctl = self.tmp / 'fault.ctl'
        self.flog = self.tmp / 'fault.log'
        self.ctl.write_text('')
        self.daemon = None
        self.probe = None
        self.checks = 0
        self._n = 0

    def env(self):
        return {'LD_PRELOAD': str(SHIM), 'CPUHP_FAULT_FILE': str(self.ctl),
                'CPUHP_FAULT_LOG': str(self.flog)}

    def start(self, extra=()):
        """@extra: more options (the limits an administrator may set)."""
        self.daemon = fixture.Daemon(self.tmp, self.sim.root,
                                     args=['--max-connections', str(MAX_CONNECTIONS),
                                           '--socket-mode', '0666',
                                           '--max-connections-per-uid', str(PER_UID),
                                           '--max-buffered-bytes-per-uid', PER_UID_BYTES,
                                           '--client-timeout-ms', str(CLIENT_TIMEOUT_MS),
                                           '--admin-group', str(os.getgid()), *extra])
        self.daemon.start(env=self.env())
        self.new_probe()
        return self

    def new_probe(self):
        """A new probe process and ledger: a fault that failed half-way must not
        leave the next one talking to a probe stuck in the middle of a command."""
        if self.probe:
            self.probe.kill()
        self.probe = fixture.Probe(self.daemon.socket)
        self.ledger = Ledger(self.probe)

    def name(self, prefix):
        """A connection name not used before."""
        self._n += 1
        return f'{prefix}{self._n}'

    def injections(self):
        try:
            return self.flog.read_text().splitlines()
        except FileNotFoundError:
            return []

    def churn(self, *args, prefix=()):
        """cpuhpd-churn ARGS; @prefix: run it through that (setpriv: as nobody)."""
        return subprocess.Popen([*prefix, str(CHURN), self.daemon.socket, *map(str, args)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def stop(self):
        if self.probe:
            self.probe.kill()
        if self.daemon:
            self.daemon.kill()


def kill_after(procs, wants):
    """SIGKILL each process once it has printed at least wants[i] lines.

    Every process's output is read as it comes, so none stalls on a full
    pipe while holding a lease (that would only make hotplugs time out).
    Return: each process's whole output, as text.
    """
    out = [b''] * len(procs)
    live = {p.stdout.fileno(): i for i, p in enumerate(procs)}
    sel = selectors.DefaultSelector()
    for fd in live:
        sel.register(fd, selectors.EVENT_READ)
    done = set()

    def kill(i):
        if i not in done:
            done.add(i)
            os.kill(procs[i].pid, signal.SIGKILL)

    for i, want in enumerate(wants):
        if want == 0:
            kill(i)
    while live:
        for key, _ in sel.select():
            i = live[key.fd]
            chunk = os.read(key.fd, 65536)
            if not chunk:
                sel.unregister(key.fd)
                del live[key.fd]
                continue
            out[i] += chunk
            if out[i].count(b'\n') >= wants[i]:
                kill(i)
    sel.close()
    for p in procs:
        p.wait()
        p.stdout.close()
    return [o.decode() for o in out]


def check_invariants(rig, rnd, row):
    """The checks after every fault.  Return: nothing; asserts say what broke."""
    led, sim = rig.ledger, rig.sim
    assert rig.daemon.proc.poll() is None, f'cpuhpd died:\n{rig.daemon.log()}'
    w, h = rig.name('w'), rig.name('h')
    led.connect(w)
    led.connect(h)
    # 0. No freeze outlives its holder.  A freeze refuses hotplugs
    # at once rather than making them wait, so first let the daemon see the
    # killed clients' connections close: ask until none is counted (each
    # ask a round trip; the deadline only against a hang).
    deadline = time.monotonic() + fixture.GUARD_S
    while led.status(h).get('freezes') and time.monotonic() < deadline:
        pass
    assert led.status(h)['freezes'] == 0, 'a freeze outlived its client'
    assert led.call(h, 'leases')['freezes'] == [], 'a freeze of a dead client is still listed'
    # 1. No lease outlives its holder.  With our own lease held, a hotplug
    # waits; once we release it, it can run only when no other lease is
    # left, so every lease of a dead client must have ended.
    mine = led.lease(w, GUARD_MS)
    hp = led.send(h, 'online', '1-3', GUARD_MS)
    s = led.status(h)
    assert s['writer'] == 'WRITER_WAITING' and s['leases_held'] >= 1, s
    led.release(w, mine)
    r = led.recv(h)
    assert r['id'] == hp, r
    assert r['kind'] == 'set_online', \
        f'the hotplug behind our released lease did not run, so a lease outlived its ' \
        f'holder: {r}, status {led.status(w)}'
    assert all(x['ok'] for x in r['results']), r
    s = led.status(h)
    assert (s['leases_held'], s['pending_leases'], s['pending_hotplugs'], s['writer']) == \
        (0, 0, 0, 'WRITER_IDLE'), s
    # 2. leases_held counts exactly the live holders' leases, and ListLeases
    # lists exactly those: no dead holder lingers in the list.
    assert led.call(h, 'leases')['leases'] == [], 'a lease of a dead client is still listed'
    k = rnd.randint(1, 3)
    held = [led.lease(w) for _ in range(k)]
    assert led.status(h)['leases_held'] == k
    listed = led.call(h, 'leases')
    assert sorted(x['lease_id'] for x in listed['leases']) == sorted(held), (listed, held)
    assert listed['hotplugs'] == [], listed
    for lease in held:
        led.release(w, lease)
    # 3. The simulated CPUs are what the daemon reports.
    s = led.status(h)
    assert s['leases_held'] == 0
    assert parse_cpus(s['online']) == sim_online(sim), (s, sim_online(sim))
    assert parse_cpus(s['online']) | parse_cpus(s['offline']) == parse_cpus(s['possible'])
    # 4. A new client, in a new process, is served.
    fresh = fixture.Probe(rig.daemon.socket)
    try:
        fresh.connect('f')
        lease = fresh.lease('f')
        assert fresh.call('f', 'release', lease)['kind'] == 'lease_released'
        assert fresh.call('f', 'watch')['kind'] == 'watch_started'
        assert parse_cpus(fresh.status('f')['online']) == sim_online(sim)
    finally:
        fresh.kill()
    # 5. Every request of the checking connections was answered exactly once.
    led.finish(w)
    led.finish(h)
    rig.checks += 1
    row['numbers']['invariant checks'] = row['numbers'].get('invariant checks', 0) + 1
