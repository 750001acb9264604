# SPDX-License-Identifier: LGPL-2.1-or-later
# SMT control on the real kernel (two cores of two threads: siblings 1 and
# 3): `cpuhpctl smt off` behind a lease waits for it, runs the state's
# teardown for each sibling while it is still online and SMT still on, then
# writes smt/control; `smt on` runs the startups after; `forceoff` is
# refused without --force.
. /usr/lib/cpuhp-guest/lib.sh
fresh
expect "the kernel has SMT: control on, CPU 0's siblings 0-1" \
	"$(cat $CPU/smt/control) $(cat $CPU/cpu0/topology/thread_siblings_list)" "on 0-1"
state_hook guest-smt 0 --nocalls
state=$STATE_PID
bg hold cpuhpctl hold --who guest-smt-lease -- sleep 600
hold=$BG_PID
wait_for 30 status_is '.leases_held == 1' || fail "the lease was not granted"
bg smt cpuhpctl smt --timeout 120000 off
smt=$BG_PID
wait_for 30 leases_is '.hotplugs[0].state == "waiting"' ||
	fail "smt off is not waiting for the lease"
expect "behind the lease: SMT still on, every CPU online, no teardown yet" \
	"$(cat $CPU/smt/control) $(cat $CPU/online) $(cat "$TMPD/guest-smt.log" 2>/dev/null)" "on 0-3 "
stop_bg $hold
wait $smt
expect "smt off succeeds once the lease ends" "$?" 0
expect "smt/control says off, CPUs 0 and 2 online" "$(cat $CPU/smt/control) $(cat $CPU/online)" \
	"off 0,2"
expect "a teardown for each sibling, while it was online and SMT on" \
	"$(cat "$TMPD/guest-smt.log")" \
	"teardown 1 online=1 smt=on external=0 rollback=0
teardown 3 online=1 smt=on external=0 rollback=0"
expect "smt off says which CPUs it took" \
	"$(grep -o 'CPU [0-9]* disabled' "$TMPD/smt.out" | tr '\n' ' ')" "CPU 1 disabled CPU 3 disabled "
expect_match "... and the control word" "$(cat "$TMPD/smt.out")" 'SMT control: off'
: >"$TMPD/guest-smt.log"
check "smt on" cpuhpctl smt on
section smt-teardown-lines
# cpuhpctl(8): the output is as for offline, whose lines name each call.
expect "smt off prints the teardown of state guest-smt for each sibling, as offline does" \
	"$(grep -c 'teardown of state guest-smt' "$TMPD/smt.out")" 2
expect "smt on prints the startup of state guest-smt for each sibling, as online does" \
	"$(grep -c 'startup of state guest-smt' "$TMPD/check.out")" 2
end_section
expect "smt/control says on, every CPU online" "$(cat $CPU/smt/control) $(cat $CPU/online)" "on 0-3"
expect "a startup for each sibling after it came back (with SMT on)" \
	"$(cat "$TMPD/guest-smt.log")" \
	"startup 1 online=1 smt=on external=0 rollback=0
startup 3 online=1 smt=on external=0 rollback=0"
out=$(cpuhpctl smt forceoff 2>&1)
rc=$?
[ $rc -ne 0 ] && ok "smt forceoff without --force is refused (exit $rc)" ||
	fail "smt forceoff without --force succeeded"
expect_match "... saying --force is needed" "$out" '--force'
expect "SMT is still on" "$(cat $CPU/smt/control)" on
stop_bg $state
