# SPDX-License-Identifier: LGPL-2.1-or-later
# The declared plan (cpuhpd.conf(5)) on a real kernel under the hardened
# unit, across a real reboot of the guest: `cpuhpctl offline 2-3 --persist`
# and `smt off --persist` write cpuhpd's drop-in, cpuhpd.service is enabled,
# and the guest reboots (its reset ends QEMU, the host boots a new one on
# the same disk: /etc is kept).  After
# the reboot, before any client connected, systemd started cpuhpd and the
# plan is in force; an `echo 1` into cpu2/online behind cpuhpd's back is
# undone by a hotplug of cpuhpd's own, which runs the state's teardown, and
# is counted and warned of; `cpuhpctl online --persist` writes its drop-in
# under ProtectSystem=strict.  The scenario runs last: its reboot costs the
# others nothing.
. /usr/lib/cpuhp-guest/lib.sh

D=/etc/cpuhpd.conf.d
BOOT1=/etc/cpuhp-guest-plan-boot

if [ -z "${CPUHP_RESUMED:-}" ]; then
	fresh
	expect "/etc is an overlay on the guest's disk" \
		"$(findmnt -n -o FSTYPE,SOURCE /etc) $(findmnt -n -o FSTYPE /var/lib/cpuhp-guest-disk)" \
		"overlay overlay ext4"
	check "the drop-in directory is installed" test -d $D
	check "cpuhpctl offline 2-3 --persist" cpuhpctl offline --persist 2-3
	check "cpuhpctl smt off --persist" cpuhpctl smt off --persist
	expect "the plan's drop-in" "$(grep -E '^(offline-cpus|smt) ' $D/50-cpuhpctl.conf | sort)" \
		"offline-cpus = 2-3
smt = off"
	expect "CPU 0 alone online, SMT off" "$(cat $CPU/online) $(cat $CPU/smt/control)" "0 off"
	check "cpuhpd.service can be enabled (WantedBy=multi-user.target)" systemctl enable cpuhpd.service
	cat /proc/sys/kernel/random/boot_id >$BOOT1
	sync
	reboot_guest
fi

# --- after the reboot: nothing of this script has connected to cpuhpd yet ---
section plan-after-reboot
expect_no_match "this is another boot" "$(cat /proc/sys/kernel/random/boot_id)" "^$(cat $BOOT1)\$"
wait_for 120 sh -c '[ "$(systemctl is-active cpuhpd.service)" = active ]' &&
	ok "systemd started cpuhpd.service at boot (enabled, WantedBy=multi-user.target)" ||
	fail "cpuhpd.service after the reboot: $(systemctl status cpuhpd.service 2>&1 | head -5 | tr '\n' '|')"
# Type=notify: active means READY=1, sent once the plan's hotplugs were queued.
wait_for 60 sh -c "[ \$(cat $CPU/online) = 0 ]" &&
	ok "the plan is in force with no client: CPU 0 alone online" ||
	fail "online after the reboot: $(cat $CPU/online)"
expect "... SMT control off" "$(cat $CPU/smt/control)" off
expect_match "the journal says where the plan came from" \
	"$(journalctl -b -q -o cat -u cpuhpd.service)" \
	'plan at start: offline-cpus = 2-3 from /etc/cpuhpd.conf.d/50-cpuhpctl.conf'
expect "cpuhpctl plan says it is in force" \
	"$(cpuhpctl plan --json | jq -c '[.in_force, .offline_cpus, .smt, .conflicts]')" \
	'[true,[2,3],"off",0]'

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
end_section

# --- --persist under the hardened unit ---
check "cpuhpctl online --persist 2 (cpuhpd writes its drop-in)" cpuhpctl online --persist 2
expect "CPU 2 is online" "$(cat $CPU/cpu2/online)" 1
expect "the drop-in takes CPU 2 out of offline-cpus" \
	"$(grep '^offline-cpus' $D/50-cpuhpctl.conf)" "offline-cpus = 3"
expect "no temporary file is left" "$(ls -A $D | tr '\n' ' ')" "50-cpuhpctl.conf "

# --- back to no plan, for any scenario after this one ---
stop_bg $state
rm -f $D/50-cpuhpctl.conf $BOOT1
check "systemctl reload cpuhpd" systemctl reload cpuhpd
wait_for 30 sh -c "cpuhpctl plan --json | jq -e '[.settings[].source] == [\"\",\"\",\"\"]'" &&
	ok "the reload leaves no plan" || fail "the plan after the reload: $(cpuhpctl plan)"
systemctl disable cpuhpd.service
