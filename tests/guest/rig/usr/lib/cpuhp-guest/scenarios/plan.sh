# SPDX-License-Identifier: LGPL-2.1-or-later
# The declared plan (cpuhpd.conf(5)) on a real kernel under the hardened
# unit: a drop-in with SMT off and CPUs 2-3 offline is in force as soon as
# cpuhpd starts the way a boot starts it (the service enabled, every CPU
# online and SMT on as the kernel boots them); an `echo 1` into cpu2/online
# behind cpuhpd's back is undone by a hotplug of cpuhpd's own, which runs the
# state's teardown, and the journal warns of it; `cpuhpctl online --persist`
# writes its drop-in under ProtectSystem=strict.  The initramfs root does
# not survive a reboot of the guest, so the boot is made by hand.
. /usr/lib/cpuhp-guest/lib.sh

D=/etc/cpuhpd.conf.d
fresh
check "the drop-in directory is installed" test -d $D
printf 'offline-cpus = 2-3\nsmt = off\n' >$D/20-guest-plan.conf

# --- a boot: cpuhpd down, the CPUs as the kernel boots them, then systemd starts it ---
systemctl stop cpuhpd.socket cpuhpd.service
echo on >$CPU/smt/control
for c in $CPU/cpu[0-9]*/online; do echo 1 >"$c"; done
expect "before cpuhpd: every CPU online" "$(cat $CPU/online)" 0-3
check "cpuhpd.service can be enabled (WantedBy=multi-user.target)" systemctl enable cpuhpd.service
expect "... and is" "$(systemctl is-enabled cpuhpd.service)" enabled
mark_journal
check "systemd starts cpuhpd.socket and cpuhpd.service" systemctl start cpuhpd.socket cpuhpd.service
# Type=notify: started means READY=1, sent once the plan's hotplugs were queued;
# the first request of a client is answered after them.
check "a first lease is granted" cpuhpctl hold --timeout 30s -- true
expect "the plan is in force: CPU 0 alone online" "$(cat $CPU/online)" 0
expect "... SMT control off" "$(cat $CPU/smt/control)" off
expect "cpuhpctl plan says it is in force" "$(cpuhpctl plan --json | jq -c '[.in_force, .offline_cpus, .smt]')" \
	'[true,[2,3],"off"]'
wait_for 10 logged_since_mark 'plan at start: offline-cpus = 2-3 from /etc/cpuhpd.conf.d/20-guest-plan.conf:1' &&
	ok "the journal says where the plan came from" ||
	fail "no 'plan at start' line: $(journal_since_mark | head -20 | tr '\n' '|')"

# --- echo 1 into cpu2/online behind cpuhpd's back ---
state_hook guest-plan 0 --nocalls
state=$STATE_PID
mark_journal
echo 1 >$CPU/cpu2/online
wait_for 30 sh -c "[ \$(cat $CPU/cpu2/online) = 0 ]" &&
	ok "cpuhpd takes CPU 2 offline again" || fail "CPU 2 stays online: $(cat $CPU/online)"
wait_for 30 grep -q '^teardown 2 ' "$TMPD/guest-plan.log"
expect "its hotplug ran the state's startup (the echo's, external) then its teardown" \
	"$(cat "$TMPD/guest-plan.log")" \
	"startup 2 online=1 smt=off external=1 rollback=0
teardown 2 online=1 smt=off external=0 rollback=0"
wait_for 10 logged_since_mark "plan contradicted behind cpuhpd's back: CPU 2 came online" -p warning &&
	ok "the journal warns of the conflict" ||
	fail "no conflict warning: $(journal_since_mark | tr '\n' '|')"
expect "cpuhpctl plan counts it" "$(cpuhpctl plan --json | jq -c '[.conflicts, .in_force]')" '[1,true]'

# --- --persist under the hardened unit ---
check "cpuhpctl online --persist 2 (cpuhpd writes its drop-in)" cpuhpctl online --persist 2
expect "CPU 2 is online" "$(cat $CPU/cpu2/online)" 1
expect "the drop-in takes CPU 2 out of offline-cpus" \
	"$(grep '^offline-cpus' $D/50-cpuhpctl.conf)" "offline-cpus = 3"
expect "no temporary file is left" "$(ls -A $D | tr '\n' ' ')" "20-guest-plan.conf 50-cpuhpctl.conf "

# --- back to no plan, for the scenarios after this one ---
stop_bg $state
rm -f $D/20-guest-plan.conf $D/50-cpuhpctl.conf
check "systemctl reload cpuhpd" systemctl reload cpuhpd
wait_for 30 sh -c "cpuhpctl plan --json | jq -e '[.settings[].source] == [\"\",\"\",\"\"]'" &&
	ok "the reload leaves no plan" || fail "the plan after the reload: $(cpuhpctl plan)"
systemctl disable cpuhpd.service
