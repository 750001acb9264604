# SPDX-License-Identifier: LGPL-2.1-or-later
# vCPU hot-add and eject (QMP device_add/device_del, done by the host): a
# hot-added CPU becomes present, and with online-new-cpus cpuhpd brings it
# online itself through the states, before a distribution's udev rule that
# onlines every new CPU could (the project's rule makes udev wait); a sibling thread hot-added while SMT is off is
# refused by the kernel and ejects while offline; an eject of an online vCPU
# is the kernel offlining it behind cpuhpd's back: watchers hear it, the
# state's teardown runs (external), a lease held meanwhile is told it was
# bypassed.  (Every hot-add comes before the first eject: see hotadd.)
. /usr/lib/cpuhp-guest/lib.sh

# heard_present_change CPU WHAT LINES: test guest-hotplug-present-watched's
# checks that watchers and the journal heard that CPU WHAT (LINES: the
# length of $TMPD/watch.out before).
heard_present_change() {
	local cpu=$1 what=$2 lines=$3
	section hotplug-present-watched
	wait_for 10 sh -c "[ \$(wc -l <$TMPD/watch.out) -gt $lines ]" &&
		ok "a watcher hears that CPU $cpu $what: $(tail -n +$((lines + 1)) "$TMPD/watch.out")" ||
		fail "a watcher (cpuhpctl watch --json) heard nothing of CPU $cpu that $what"
	wait_for 10 logged_since_mark "CPU $cpu\b" -p info && ok "cpuhpd logs that CPU $cpu $what" ||
		fail "cpuhpd logged nothing above debug about CPU $cpu that $what" \
			"(journalctl -p info: $(journal_since_mark | tr '\n' '|'))"
	end_section
}
fresh
state_hook guest-hot 0 --nocalls
state=$STATE_PID
bg watch cpuhpctl watch --json
watch=$BG_PID
wait_for 30 watched '.event == "watching"' || fail "cpuhpctl watch did not start"

# --- hot-add of a new core's first thread, online-new-cpus on ---
section hotplug-new-cpu-by-cpuhpd
# What Fedora, RHEL and SUSE ship in some form: every added CPU onlined at
# once by udev, behind cpuhpd's back.  The project's 10-cpuhpd-new-cpus.rules
# comes first and waits for cpuhpd.
printf 'SUBSYSTEM=="cpu", ACTION=="add", TEST=="online", ATTR{online}="1"\n' \
	>/etc/udev/rules.d/40-guest-distro-online.rules
udevadm control --reload
check "the project's udev rule is installed" test -e /usr/lib/udev/rules.d/10-cpuhpd-new-cpus.rules
printf 'online-new-cpus = yes\n' >/etc/cpuhpd.conf.d/20-guest-new.conf
check "systemctl reload cpuhpd" systemctl reload cpuhpd
wait_for 30 test -e /run/cpuhpd/online-new-cpus && ok "cpuhpd asks the udev rule to wait for it" ||
	fail "no /run/cpuhpd/online-new-cpus after the reload: $(cpuhpctl plan)"
end_section
lines=$(wc -l <"$TMPD/watch.out")
mark_journal
t=$(date +%s%N)
hotadd 2 0 || exit 1
note "hot-add: CPU $NEW_CPU present $(ms_since "$t") ms after device_add was asked"
heard_present_change 4 "became present" "$lines"
expect "the hot-added vCPU is CPU 4" "$NEW_CPU" 4
wait_for 30 status_is '.present == [0,1,2,3,4]' && ok "cpuhpd sees CPU 4 present" ||
	fail "cpuhpd's view: $(cpuhpctl status --json | jq -c '{present, online}')"
section hotplug-new-cpu-by-cpuhpd
wait_for 60 grep -q '^startup 4 ' "$TMPD/guest-hot.log"
expect "cpuhpd brought CPU 4 up itself: the state's startup ran, not after the fact" \
	"$(cat "$TMPD/guest-hot.log")" "startup 4 online=1 smt=on external=0 rollback=0"
wait_for 10 logged_since_mark 'cpuhpd itself \(new CPU\) asks CPUs 4 online' &&
	ok "the journal names cpuhpd's own hotplug of CPU 4" ||
	fail "no hotplug of cpuhpd's own: $(journal_since_mark | tr '\n' '|')"
# Without the project's rule the distribution's wins: "CPU 4 is already online".
expect_no_match "the distribution's rule did not online it first" \
	"$(journal_since_mark)" 'CPU 4 is already online'
rm /etc/udev/rules.d/40-guest-distro-online.rules /etc/cpuhpd.conf.d/20-guest-new.conf
udevadm control --reload
systemctl reload cpuhpd
wait_for 30 test ! -e /run/cpuhpd/online-new-cpus ||
	fail "/run/cpuhpd/online-new-cpus stays after online-new-cpus went"
end_section
check "cpuhpctl online 4: it is up" cpuhpctl online 4
expect "CPU 4 is online" "$(cat $CPU/cpu4/online)" 1
wait_for 30 watched '.event == "online_changed" and .online == [0,1,2,3,4] and .external == false' &&
	ok "watchers hear CPU 4 come online" || fail "watchers did not hear CPU 4 come online"

# --- its sibling thread, hot-added while SMT is off: never booted ---
check "smt off" cpuhpctl smt off
hotadd 2 1 || exit 1
expect "the hot-added sibling is CPU 5 and waits offline" "$NEW_CPU $(cat $CPU/cpu5/online)" "5 0"
wait_for 30 status_is '.present == [0,1,2,3,4,5]' && ok "cpuhpd sees CPU 5 present" ||
	fail "cpuhpd's view: $(cpuhpctl status --json | jq -c '{present, online}')"
cpuhpctl online 5 >"$TMPD/first.out" 2>&1
expect "its first online while SMT is off fails: exit 1" "$?" 1
section hotplug-ecanceled-explained
# The kernel boots a never-booted sibling once and parks it: ECANCELED.
expect_match "the first refusal is explained: an SMT sibling while SMT is off" \
	"$(cat "$TMPD/first.out")" 'SMT is off'
expect_no_match "... not as a bare 'Operation canceled' or a shutdown" "$(cat "$TMPD/first.out")" \
	': Operation canceled \(|shutting down'
end_section
expect "... and it stays offline" "$(cat $CPU/cpu5/online)" 0
cpuhpctl online 5 >"$TMPD/second.out" 2>&1
expect "a second try fails too: exit 1" "$?" 1
expect_match "... explained: an SMT sibling while SMT is off" "$(cat "$TMPD/second.out")" \
	'SMT is off'
: >"$TMPD/guest-hot.log"
lines=$(wc -l <"$TMPD/watch.out")
mark_journal
t=$(date +%s%N)
eject 2 1 && ok "QEMU ejected the offline vCPU 5"
note "eject of an offline vCPU: $(ms_since "$t") ms"
heard_present_change 5 "was removed while offline" "$lines"
expect "CPU 5 is no longer present" "$(cat $CPU/present)" 0-4
wait_for 30 status_is '.present == [0,1,2,3,4]' && ok "cpuhpd sees CPU 5 gone" ||
	fail "cpuhpd's view: $(cpuhpctl status --json | jq -c '{present, online}')"
check "smt on" cpuhpctl smt on
expect "CPUs 0-4 online" "$(cat $CPU/online)" 0-4

# --- eject of an online vCPU, a lease held ---
bg hold cpuhpctl hold --who guest-eject -- sleep 600
hold=$BG_PID
wait_for 30 status_is '.leases_held == 1' || fail "the lease was not granted"
mark_journal
: >"$TMPD/guest-hot.log"
t=$(date +%s%N)
eject 2 0 && ok "QEMU ejected the online vCPU 4 (device_del; the guest let it go)"
note "eject of an online vCPU: $(ms_since "$t") ms"
expect "CPU 4 is no longer present" "$(cat $CPU/present)" 0-3
wait_for 30 status_is '.present == [0,1,2,3] and .online == [0,1,2,3]' &&
	ok "cpuhpd sees CPU 4 gone" ||
	fail "cpuhpd's view: $(cpuhpctl status --json | jq -c '{present, online}')"
wait_for 30 watched '.event == "online_changed" and .online == [0,1,2,3] and .external == true' &&
	ok "watchers hear CPU 4 go, as a change behind cpuhpd's back" ||
	fail "watchers did not hear CPU 4 go"
wait_for 30 test -s "$TMPD/guest-hot.log"
expect "the state's teardown ran for CPU 4 (external: the kernel took it)" \
	"$(cat "$TMPD/guest-hot.log")" "teardown 4 online=gone smt=on external=1 rollback=0"
wait_for 30 logged_since_mark "behind cpuhpd's back.*guest-eject" -p warning &&
	ok "cpuhpd warns that the eject bypassed the lease" ||
	fail "no bypass warning: $(journal_since_mark | tr '\n' '|')"
wait_line 30 "$TMPD/hold.out" "changed behind cpuhpd's back" &&
	ok "the lease holder is told" || fail "the lease holder was not told: $(cat "$TMPD/hold.out")"
stop_bg $hold $watch $state
