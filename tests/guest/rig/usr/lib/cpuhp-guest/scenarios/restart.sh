# SPDX-License-Identifier: LGPL-2.1-or-later
# A restart under the real PID 1 keeps every client: a socket lease, a fast
# lease, a registered state, a pending freeze and a queued hotplug survive
# `systemctl restart cpuhpd`; the hotplug still waits for the leases, then
# runs the state's teardown.  Then what `systemctl kill -s KILL` keeps, with
# the unit's Restart=on-failure bringing the next cpuhpd up: the leases and
# the state (no call in flight), and a hotplug asked afterwards waits for them.
. /usr/lib/cpuhp-guest/lib.sh
fresh
cpuhpctl status >/dev/null # socket activation

# --- the clients ---
bg sock env CPUHP_CLIENT_FAST_PATH=0 cpuhpctl hold --who guest-socket -- sleep 600
sock=$BG_PID
bg fast cpuhpctl hold --who guest-fast -- sleep 600
fast=$BG_PID
state_hook guest-restart 0 --nocalls
state=$STATE_PID
wait_for 30 leases_is '[.leases[].kind] | sort == ["fast", "socket"]' ||
	fail "the socket and the fast lease were not both granted"
bg offline cpuhpctl offline --timeout 120000 3
offline=$BG_PID
wait_for 30 leases_is '.hotplugs[0].state == "waiting"' ||
	fail "the offline of CPU 3 is not waiting for the leases"
bg freeze cpuhpctl freeze --who guest-freeze -- sleep 600
freeze=$BG_PID
wait_for 30 leases_is '.freezes[0].state == "pending"' ||
	fail "the freeze is not pending behind the queued offline"
before=$(held_summary)
printf '%s\n' "$before" | log "held before the restart"

# --- systemctl restart ---
pid=$(daemon_pid)
t=$(date +%s%N)
check "systemctl restart cpuhpd" systemctl restart cpuhpd.service
note "systemctl restart cpuhpd took $(ms_since "$t") ms with 5 clients"
new=$(daemon_pid)
[ "$new" != "$pid" ] && [ "$new" != 0 ] && ok "a new cpuhpd runs (pid $pid, now $new)" ||
	fail "no new cpuhpd: pid $pid before, $new after"
expect "the leases (same ids), the waiting offline, the pending freeze and the state are kept" \
	"$(held_summary)" "$before"
expect_match "the state text says the new cpuhpd took the clients over" \
	"$(journalctl -q -o cat -u cpuhpd.service _PID="$new")" 'took over [0-9]+ client'
kill -0 $sock $fast $state $offline $freeze 2>/dev/null &&
	ok "every client still runs (none saw its connection end)" ||
	fail "a client ended across the restart"
expect "CPU 3 is still online: the offline waits" "$(cat $CPU/cpu3/online)" 1
expect_no_match "the hold clients were told nothing" "$(cat "$TMPD/sock.out" "$TMPD/fast.out")" \
	'lost|revoked|warning'

# --- the queued offline runs once the leases end, teardown first ---
stop_bg $sock
wait_for 30 leases_is '[.leases[].kind] == ["fast"]' || fail "the socket lease did not end"
expect "the fast lease still holds the offline back" "$(cat $CPU/cpu3/online)" 1
stop_bg $fast
wait $offline
expect "the offline asked before the restart succeeds after the leases end" "$?" 0
expect "CPU 3 is offline" "$(cat $CPU/cpu3/online)" 0
expect "the state's teardown ran for CPU 3 while it was still online" \
	"$(cat "$TMPD/guest-restart.log")" "teardown 3 online=1 smt=on external=0 rollback=0"
wait_for 30 leases_is '.freezes[0].state == "held"' ||
	fail "the freeze asked before the restart was not granted after the offline"
out=$(cpuhpctl online 3 2>&1)
expect "a hotplug while the freeze is held fails at once: exit 1" "$?" 1
expect_match "... saying who froze it" "$out" 'frozen by .*guest-freeze'
stop_bg $freeze
check "after the thaw CPU 3 comes back" cpuhpctl online 3
expect_match "... and the state's startup runs for it" "$(tail -n 1 "$TMPD/guest-restart.log")" \
	'^startup 3 online=1'

# --- systemctl kill -s KILL: Restart=on-failure starts the next one ---
bg sock env CPUHP_CLIENT_FAST_PATH=0 cpuhpctl hold --who guest-socket -- sleep 600
sock=$BG_PID
bg fast cpuhpctl hold --who guest-fast -- sleep 600
fast=$BG_PID
wait_for 30 leases_is '[.leases[].kind] | sort == ["fast", "socket"]' ||
	fail "the leases were not granted before the kill"
before=$(held_summary)
pid=$(daemon_pid)
t=$(date +%s%N)
check "systemctl kill -s KILL cpuhpd" systemctl kill -s KILL cpuhpd.service
wait_for 60 daemon_replaced "$pid" ||
	fail "Restart= did not bring cpuhpd back within 60 s"
note "after SIGKILL the next cpuhpd was ready in $(ms_since "$t") ms"
expect "the leases (same ids) and the state are kept across SIGKILL" "$(held_summary)" "$before"
bg offline cpuhpctl offline --timeout 120000 3
offline=$BG_PID
wait_for 30 leases_is '.hotplugs[0].state == "waiting"' ||
	fail "an offline asked after the kill does not wait for the leases taken before it"
expect "CPU 3 is online while they are held" "$(cat $CPU/cpu3/online)" 1
stop_bg $sock $fast
wait $offline
expect "the offline runs once they end" "$?" 0
expect "the state's teardown ran for CPU 3 before it went" \
	"$(tail -n 1 "$TMPD/guest-restart.log")" "teardown 3 online=1 smt=on external=0 rollback=0"
stop_bg $state
cpuhpctl online 3 >/dev/null

# --- SIGKILL during a state's teardown ---
section restart-kill-in-teardown
# The next cpuhpd runs the offline again and calls the teardown again; the
# killed one's late answer must not count for it (cpuhpd's README, Restart).
# The teardown lasts 8 s, so that the next cpuhpd is up before it ends (a
# restart took up to 7.8 s at load average 13).
state_hook guest-slow 8 --nocalls
slow=$STATE_PID
bg offline cpuhpctl offline --timeout 120000 3
offline=$BG_PID
wait_line 30 "$TMPD/guest-slow.log" '^teardown 3' || fail "the teardown did not begin"
pid=$(daemon_pid)
check "systemctl kill -s KILL cpuhpd while the state's 8 s teardown of CPU 3 runs" \
	systemctl kill -s KILL cpuhpd.service
wait_for 60 daemon_replaced "$pid" || fail "Restart= did not bring cpuhpd back within 60 s"
grep -q '^end teardown' "$TMPD/guest-slow.log" &&
	fail "the situation was not made: the first teardown ended before the next cpuhpd was up" ||
	ok "the next cpuhpd is up while the killed one's teardown call still runs"
wait $offline
expect "the offline asked before the kill succeeds" "$?" 0
log "the state's calls" <"$TMPD/guest-slow.log"
expect_no_match "no teardown ended with CPU 3 already offline" "$(cat "$TMPD/guest-slow.log")" \
	'^end teardown 3 online=0'
expect "CPU 3 went offline only after the last teardown ended" \
	"$(tail -n 1 "$TMPD/guest-slow.log") / online $(cat $CPU/cpu3/online)" \
	"end teardown 3 online=1 / online 0"
stop_bg $slow
cpuhpctl online 3 >/dev/null
end_section

# --- a clean stop with nothing held ---
section restart-clean-stop-no-grace
check "systemctl stop cpuhpd, nothing held" systemctl stop cpuhpd.service
mark_journal
expect "the next cpuhpd (socket activation) holds no hotplug for a restart grace" \
	"$(cpuhpctl status --json | jq .restart_grace_ms)" 0
check "cpuhpctl offline --timeout 2000 3 runs at once" cpuhpctl offline --timeout 2000 3
cpuhpctl online 3 >/dev/null
expect_no_match "... and it does not warn that the last cpuhpd left its clients behind" \
	"$(journal_since_mark)" 'without handing'
end_section

# --- STATUS= after a client leaves ---
section restart-status-connections
bg watch cpuhpctl watch --json
watch=$BG_PID
wait_for 30 watched '.event == "watching"' || fail "cpuhpctl watch did not start"
# A socket lease: a change STATUS= is made again for, with the watcher connected.
CPUHP_CLIENT_FAST_PATH=0 cpuhpctl hold -- true
status_counts_some() {
	systemctl show -p StatusText --value cpuhpd.service | grep -Eq '[1-9][0-9]* connection'
}
status_counts_none() {
	! status_counts_some
}
wait_for 10 status_counts_some &&
	ok "with the watcher connected, STATUS= counts it: $(systemctl show -p StatusText --value cpuhpd.service)" ||
	fail "STATUS= counts no connection with the watcher connected: $(systemctl show -p StatusText --value cpuhpd.service)"
stop_bg $watch
wait_for 10 status_counts_none && ok "once the watcher left, STATUS= counts no connection" ||
	fail "STATUS= still says '$(systemctl show -p StatusText --value cpuhpd.service)' with no client"
end_section

# --- what a stop is logged as ---
section restart-stop-logged
bg hold cpuhpctl hold --who guest-stop -- sleep 600
hold=$BG_PID
wait_for 30 status_is '.leases_held == 1' || fail "the lease was not granted"
mark_journal
check "systemctl stop cpuhpd, a lease held" systemctl stop cpuhpd.service
journal=$(journal_since_mark)
printf '%s\n' "$journal" | log "the stop"
# systemd empties the fd store after a stop: the lease ended, the log must say so.
expect_match "the journal says the stop ended the lease" "$journal" \
	'lease.*\b(end|ended|ends|lost|gone)\b|\b(end|ended|ends|lose|lost)\b.*lease'
stop_bg $hold
end_section
