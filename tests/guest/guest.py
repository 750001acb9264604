#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The guest tests: cpuhpd under a real kernel and a real systemd as PID 1,
with SMT siblings and hot-added vCPUs (QEMU TCG).

    guest.py NAME          the meson test guest-NAME: report scenario NAME
    guest.py --list        the tests' names (meson.build registers them)
    guest.py --boot [NAME...]
                           boot once and print every (or these) scenario's checks
    guest.py --boot adhoc FILE
                           boot once and run the script FILE as a scenario
                           (for debugging: the lib.sh helpers are there)

A boot costs about half a minute under TCG, so one boot runs every scenario
and each meson test reports its own.  The first guest test of a `meson test`
run takes the lock, builds the image, boots it and writes results.json
marked with the run (meson's pid and start time, or $CPUHP_GUEST_SESSION);
the others wait for the lock and read it.  A guest that cannot be built or
booted fails every guest test: none skips for it.
"""
import fcntl
import json
import os
import pathlib
import sys
import time
import traceback

import image
import vm

# The scenarios, in the order they run in one boot.  systemd deploys cpuhpd
# as the README says; the others take that deploy as given (each makes sure
# of it).  Each is a test; a scenario may hold the checks of more tests
# (lib.sh's section), named in TESTS.
# plan reboots the guest (a new QEMU on the same disk): last, so that only
# its own checks pay the second boot.
SCENARIOS = ['systemd', 'restart', 'smt', 'hotplug', 'selftest', 'plan']
# Promises judged apart, each in the situation its scenario made (the
# section in the scenario's script says what it checks).
TESTS = SCENARIOS + [
    'systemd-refusal-names-group',      # the refusal names the socket's group
    'systemd-options-after-cpus',       # offline 3 --timeout 2000
    'systemd-bypass-held-time',         # the bypass warning's "held 0.0 s"
    'restart-kill-in-teardown',         # the killed daemon's late answer taken
    'restart-clean-stop-no-grace',      # a clean stop costs the next start a grace
    'restart-status-connections',       # a stale STATUS= connection count
    'restart-stop-logged',              # every stop logged as a restart
    'smt-teardown-lines',               # smt off/on print no teardown/startup lines
    'hotplug-present-watched',          # present changes invisible to watchers
    'hotplug-ecanceled-explained',      # ECANCELED on a never-booted sibling
    'hotplug-new-cpu-by-cpuhpd',        # a distribution's udev rule onlines it first
    'plan-after-reboot',                # the plan lost, or not applied, at boot
]

BUILD = pathlib.Path(os.environ.get('CPUHP_BUILD_ROOT', image.SOURCE / 'build'))
WORK = BUILD / 'tests' / 'guest'
RESULTS = WORK / 'results.json'
EXIT_SKIP = 77


def session_id():
    env = os.environ.get('CPUHP_GUEST_SESSION')
    if env:
        return env
    ppid = os.getppid()
    try:
        stat = pathlib.Path(f'/proc/{ppid}/stat').read_text()
    except OSError:
        return f'pid {os.getpid()}'
    return f'{ppid}:{stat.rsplit(")", 1)[1].split()[19]}'  # starttime: field 22


def boot(scenarios, by, extra=None):
    """Build the image, boot it, run @scenarios; the results as written to results.json.
    @extra: more files for the image, {path in the image: bytes}."""
    out = {'session': session_id(), 'booted_by': by, 'error': None, 'timings': {},
           'tests': {}}
    t0 = time.monotonic()
    try:
        vmlinuz, cpio, selftest = image.build(BUILD, extra)
        out['timings']['image_s'] = round(time.monotonic() - t0, 1)
        out['selftest'] = selftest
        b = vm.Boot(WORK, vmlinuz, cpio, scenarios)
        try:
            b.run()
        finally:
            out['tests'] = b.results
            out['timings'].update(b.timings)
    except (image.Error, vm.BootError) as e:
        out['error'] = str(e)
    except Exception:  # noqa: BLE001 - written down once, not met again by every test
        out['error'] = traceback.format_exc()
    out['timings']['load_after'] = os.getloadavg()
    RESULTS.write_text(json.dumps(out, indent=1))
    return out


def results_for_session(name):
    """The results of this run, booting if no guest test of this run did yet."""
    WORK.mkdir(parents=True, exist_ok=True)
    with open(WORK / 'session.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            res = json.loads(RESULTS.read_text())
            if res.get('session') == session_id():
                return res
        except (OSError, ValueError):
            pass
        return boot(SCENARIOS, f'guest-{name}')


def report(res, name):
    """Print scenario @name's checks; return the test's exit status."""
    t = res['timings']
    print(f'guest boot run by {res["booted_by"]}: image {t.get("image_s")} s, '
          f'boot {t.get("boot_s")} s (guest uptime {t.get("guest_uptime_at_hello_s")} s '
          f'at the rig), all scenarios {t.get("total_s")} s; load after '
          f'{" ".join(f"{x:.2f}" for x in t.get("load_after", []))}')
    sc = res['tests'].get(name)
    if sc is None:
        print(f'guest-{name}: FAILED: no scenario of this boot reached its checks')
        return 1
    for kind, text in sc['checks']:
        print(f'{kind}: {text}')
    if res['error']:
        print(f'guest-{name}: FAILED: the guest run failed: {res["error"]}')
        return 1
    if sc['status'] != 'ended':
        print(f'guest-{name}: FAILED: scenario {sc["scenario"]} {sc["status"]}')
        return 1
    kinds = [k for k, _ in sc['checks']]
    if 'skip' in kinds and 'fail' not in kinds:
        print(f'guest-{name}: skipped: {dict(sc["checks"])["skip"]}')
        return EXIT_SKIP
    failed = kinds.count('fail')
    print(f'guest-{name}: {kinds.count("ok")} checks passed, {failed} failed (scenario '
          f'{sc["scenario"]}: script exit {sc["rc"]}, {sc["seconds"]} s)')
    if failed or sc['rc'] != 0 or 'ok' not in kinds:
        return 1
    return 0


def main(argv):
    if argv[1:] == ['--list']:
        print(*TESTS, sep='\n')
        return 0
    if argv[1:3] == ['--boot', 'adhoc'] and len(argv) == 4:
        os.environ['CPUHP_GUEST_SESSION'] = f'manual {os.getpid()}'
        script = pathlib.Path(argv[3]).read_bytes()
        res = boot(['adhoc'], 'guest.py --boot adhoc',
                   {'usr/lib/cpuhp-guest/scenarios/adhoc.sh': script})
        return report(res, 'adhoc')
    if argv[1:2] == ['--boot']:
        names = argv[2:] or SCENARIOS
        os.environ['CPUHP_GUEST_SESSION'] = f'manual {os.getpid()}'
        res = boot(names, 'guest.py --boot')
        return max(report(res, n) for n in res['tests'])
    if len(argv) != 2 or argv[1] not in TESTS:
        print(__doc__.split('\n\n')[1], file=sys.stderr)
        return 2
    return report(results_for_session(argv[1]), argv[1])


if __name__ == '__main__':
    sys.exit(main(sys.argv))
