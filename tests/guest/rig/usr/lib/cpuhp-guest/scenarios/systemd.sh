# SPDX-License-Identifier: LGPL-2.1-or-later
# cpuhpd deployed as a package deploys it, under systemd as PID 1: the
# README's steps one by one, then socket activation, READY=1 and STATUS=,
# who may do what, the hardened unit on the real kernel, and the journal's
# priorities.
. /usr/lib/cpuhp-guest/lib.sh

# --- the deploy (the image holds `meson install --prefix=/usr` already) ---
check "installed: /usr/sbin/cpuhpd, /usr/bin/cpuhpctl, the units, sysusers.d, /etc/cpuhpd.conf" \
	test -x /usr/sbin/cpuhpd -a -x /usr/bin/cpuhpctl \
	-a -f /usr/lib/systemd/system/cpuhpd.service -a -f /usr/lib/systemd/system/cpuhpd.socket \
	-a -f /usr/lib/sysusers.d/cpuhpd.conf -a -f /etc/cpuhpd.conf
check "step 1: systemd-sysusers cpuhpd.conf" systemd-sysusers cpuhpd.conf
for g in cpuhp cpuhp-admin; do
	gid=$(getent group $g | cut -d: -f3)
	if [ -n "$gid" ] && [ "$gid" -lt 1000 ]; then
		ok "sysusers made the system group $g (gid $gid)"
	else
		fail "sysusers made no system group $g (getent: '$(getent group $g)')"
	fi
done
check "step 2: systemctl daemon-reload" systemctl daemon-reload
check "step 3: systemctl enable --now cpuhpd.socket" systemctl enable --now cpuhpd.socket
expect "cpuhpd.socket is enabled" "$(systemctl is-enabled cpuhpd.socket)" enabled
expect "cpuhpd.socket is listening" "$(systemctl is-active cpuhpd.socket)" active
expect "cpuhpd.service waits for the first connection" "$(systemctl is-active cpuhpd.service)" \
	inactive
expect "the socket: root:cpuhp 0660" "$(stat -c '%U:%G %a %F' /run/cpuhpd/cpuhpd.sock)" \
	"root:cpuhp 660 socket"
check "step 4: usermod -aG cpuhp alice; usermod -aG cpuhp,cpuhp-admin carol (and bob, in neither)" \
	add_users

# --- socket activation, READY=1, STATUS= ---
t=$(date +%s%N)
check "alice (group cpuhp) asks for the status: the first connection starts cpuhpd" \
	as alice cpuhpctl status
note "socket activation: the first status answered in $(ms_since "$t") ms"
# Type=notify: systemd calls the service active only once READY=1 came.
expect "cpuhpd.service is active (Type=notify: READY=1 came)" \
	"$(systemctl is-active cpuhpd.service)" active
# No --config: cpuhpd reads /etc/cpuhpd.conf when it exists, defaults else.
expect "the service runs cpuhpd, which reads /etc/cpuhpd.conf itself" \
	"$(tr '\0' ' ' </proc/"$(daemon_pid)"/cmdline)" "/usr/sbin/cpuhpd "
expect_match "systemctl status shows cpuhpd's STATUS= line" \
	"$(systemctl show -p StatusText --value cpuhpd.service)" 'lease'

# --- who may do what ---
check "alice takes a lease (cpuhpctl hold -- true)" as alice cpuhpctl hold -- true
out=$(as bob cpuhpctl status 2>&1)
expect "bob (in no group) cannot connect: exit 69" "$?" 69
expect_match "bob is told about the socket's permissions" "$out" 'permission'
section systemd-refusal-names-group
expect_match "bob's refusal names the group that may connect, cpuhp" "$out" "group .?cpuhp\b"
end_section
out=$(as alice cpuhpctl offline 3 2>&1)
expect "alice (cpuhp, not cpuhp-admin) may not hotplug: exit 1" "$?" 1
expect_match "alice's refusal names the group cpuhp-admin" "$out" "cpuhp-admin"
expect "CPU 3 stayed online" "$(cat $CPU/cpu3/online)" 1

# --- the hardened unit on the real kernel ---
check "carol (cpuhp-admin) takes CPU 3 offline: the unit writes cpuN/online" \
	as carol cpuhpctl offline 3
expect "CPU 3 is offline" "$(cat $CPU/cpu3/online)" 0
check "root brings CPU 3 back" cpuhpctl online 3
expect "CPU 3 is online" "$(cat $CPU/cpu3/online)" 1
section systemd-options-after-cpus
check "cpuhpctl offline 3 --timeout 2000: options after the CPU list, as getopt_long allows" \
	cpuhpctl offline 3 --timeout 2000
check "cpuhpctl online 3 --timeout 2000" cpuhpctl online 3 --timeout 2000
end_section
[ "$(cat $CPU/cpu3/online)" = 1 ] || cpuhpctl online 3 >/dev/null
check "root: cpuhpctl smt off (the unit writes smt/control)" cpuhpctl smt off
expect "smt/control says off" "$(cat $CPU/smt/control)" off
check "root: cpuhpctl smt on" cpuhpctl smt on
expect "smt/control says on, every CPU online" "$(cat $CPU/smt/control) $(cat $CPU/online)" \
	"on 0-3"
pid=$(daemon_pid)
expect "cpuhpd runs as root" "$(stat -c %u /proc/"$pid")" 0
expect "with no capability at all (bounding, effective, permitted)" \
	"$(awk '/^Cap(Bnd|Eff|Prm):/ {printf "%s ", $2}' /proc/"$pid"/status)" \
	"0000000000000000 0000000000000000 0000000000000000 "
expect "no new privileges, a seccomp filter" \
	"$(awk '/^(NoNewPrivs|Seccomp):/ {printf "%s ", $2}' /proc/"$pid"/status)" "1 2 "

# --- the journal's priorities: a bypass warns, hotplugs are info ---
mark_journal
bg hold cpuhpctl hold --who guest-bypass -- sleep 600
hold=$BG_PID
wait_for 30 status_is '.leases_held == 1' ||
	fail "the lease of 'cpuhpctl hold' was not granted"
sleep 2 # the lease's age when bypassed (systemd-bypass-held-time), not a wait
echo 0 >$CPU/cpu3/online # behind cpuhpd's back: a bypass of the lease
wait_for 30 logged_since_mark "behind cpuhpd's back" -p warning ||
	fail "no warning about the change behind cpuhpd's back came"
echo 1 >$CPU/cpu3/online
kill $hold
wait $hold
check "root takes CPU 2 offline through cpuhpd and back (info lines)" \
	sh -c 'cpuhpctl offline 2 && cpuhpctl online 2'
warnings=$(journal_since_mark -p warning)
infos=$(journal_since_mark -p info)
expect_match "journalctl -p warning -u cpuhpd shows the bypass" "$warnings" \
	"CPUs changed behind cpuhpd's back.*guest-bypass"
expect_no_match "journalctl -p warning -u cpuhpd shows no info line" "$warnings" \
	'hotplug #[0-9]+ done'
expect_match "journalctl -p info -u cpuhpd shows the hotplugs" "$infos" 'hotplug #[0-9]+ done'
section systemd-bypass-held-time
expect_match "the bypass warning gives the 2 s old lease its age (or says 'since at least')" \
	"$(printf '%s\n' "$warnings" | grep "behind cpuhpd's back")" \
	'held since at least|held (at least )?([2-9]|[1-9][0-9]+)\.[0-9] s'
end_section
