# SPDX-License-Identifier: LGPL-2.1-or-later
# What every scenario script sources: the results port (fd 3, opened by
# run), checks, waits with a deadline, the users, and the deploy.
#
# A check prints "@@ ok TEXT" or "@@ fail TEXT" on the results port; the
# host's meson test for the scenario fails on any "fail", or if the script
# stops before its last check.

CPU=/sys/devices/system/cpu
TMPD=/run/cpuhp-guest
mkdir -p "$TMPD"
# Where run notes the scenario to go on with after a reboot (in /etc: it
# persists on the guest's disk).
RESUME=/etc/cpuhp-guest-resume

# say KIND TEXT: one line on the results port (TEXT's newlines as " | ").
say() {
	local line="$*"
	printf '@@ %s\n' "${line//$'\n'/ | }" >&3
}

ok() { say ok "$*"; }
fail() { say fail "$*"; }
note() { say note "$*"; }
skip() { say skip "$*"; }

# section NAME: the checks from here to end_section are the test guest-NAME's,
# not the scenario's: a promise judged apart in the situation the scenario
# made.
section() {
	say test "$1"
}
end_section() {
	say test "$SCENARIO"
}

# log PREFIX < lines: show lines on the host (they go into the test's output).
log() {
	local line
	while IFS= read -r line; do
		say log "$1: $line"
	done
}

# check TEXT CMD...: ok if CMD succeeds, else fail with its exit status and output.
check() {
	local what=$1 rc
	shift
	"$@" >"$TMPD/check.out" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		ok "$what"
	else
		fail "$what [$* exited $rc: $(head -c 400 "$TMPD/check.out" | tr '\n' ' ')]"
	fi
	return $rc
}

# expect TEXT ACTUAL EXPECTED: ok if the two strings are equal.
expect() {
	if [ "$2" = "$3" ]; then
		ok "$1 ($2)"
	else
		fail "$1: got '$2', expected '$3'"
	fi
}

# expect_match TEXT STRING ERE: ok if STRING matches the extended regex ERE.
expect_match() {
	if printf '%s\n' "$2" | grep -Eq -- "$3"; then
		ok "$1"
	else
		fail "$1: '$(printf '%s' "$2" | head -c 600 | tr '\n' '|')' does not match /$3/"
	fi
}

# expect_no_match TEXT STRING ERE
expect_no_match() {
	if printf '%s\n' "$2" | grep -Eq -- "$3"; then
		fail "$1: '$(printf '%s' "$2" | grep -E -- "$3" | head -c 600 | tr '\n' '|')' matches /$3/"
	else
		ok "$1"
	fi
}

# wait_for SECONDS CMD...: poll CMD (every 0.1 s) until it succeeds; fail after
# SECONDS.  For what the guest cannot be told of (systemd's view of a unit, a
# file the kernel changes): a bound on a hang, never a measurement.
wait_for() {
	local limit=$1 start
	shift
	start=$(date +%s%N)
	until "$@" >/dev/null 2>&1; do
		if [ $(($(date +%s%N) - start)) -gt $((limit * 1000000000)) ]; then
			return 1
		fi
		sleep 0.1
	done
}

# wait_line SECONDS FILE ERE: wait until a line of FILE matches ERE.
wait_line() {
	wait_for "$1" grep -Eq -- "$3" "$2"
}

# ms_since START_NS: milliseconds since START_NS (date +%s%N).
ms_since() {
	echo $((($(date +%s%N) - $1) / 1000000))
}

# ask VERB ARGS: have the host do it (QMP); 0 if it answered "ok".
ask() {
	local answer
	say ask "$*"
	IFS= read -r answer <&3
	[ "$answer" = ok ] || {
		fail "host: $*: $answer"
		return 1
	}
}

# reboot_guest: end the scenario's script here and reboot the guest for real
# (its reset ends QEMU; the host boots the same kernel and initramfs in a new
# QEMU, /etc kept on the disk); its script then runs again with CPUHP_RESUMED=1.
reboot_guest() {
	touch "$RESUME"
	exit "${1:-0}"
}

# as USER CMD...: run CMD as USER with USER's groups (as after a login).
as() {
	local user=$1
	shift
	setpriv --reuid="$user" --regid="$user" --init-groups -- "$@"
}

# The users of the scenarios: alice may take leases (group cpuhp), carol
# may hotplug too (cpuhp-admin), bob is in neither.
add_users() {
	id alice >/dev/null 2>&1 && return 0
	useradd alice && usermod -aG cpuhp alice &&
		useradd carol && usermod -aG cpuhp,cpuhp-admin carol &&
		useradd bob
}

# The deploy of a package (the README's steps), for a scenario that runs
# without the systemd scenario before it; that one checks each step.
deploy() {
	systemctl is-enabled --quiet cpuhpd.socket && id alice >/dev/null 2>&1 && return 0
	systemd-sysusers cpuhpd.conf &&
		systemctl daemon-reload &&
		systemctl enable --now cpuhpd.socket &&
		add_users
}

# A scenario's starting point: the deploy made, no leftover client of an
# earlier scenario, cpuhpd running and idle, SMT on, every present CPU online.
fresh() {
	deploy || fail "deploy: the README's steps failed"
	pkill -f '^cpuhpctl' 2>/dev/null
	wait_for 10 sh -c '! pgrep -f "^cpuhpctl" >/dev/null'
	systemctl reset-failed cpuhpd.service cpuhpd.socket 2>/dev/null
	systemctl start cpuhpd.socket
	if [ -e $CPU/smt/control ] && [ "$(cat $CPU/smt/control)" != on ]; then
		echo on >$CPU/smt/control
	fi
	local c
	for c in $CPU/cpu[0-9]*/online; do
		[ "$(cat "$c")" = 1 ] || echo 1 >"$c"
	done
	rm -f "$TMPD"/*.log "$TMPD"/*.out
}

# bg NAME CMD...: start CMD in the background, its output in $TMPD/NAME.out;
# the pid in $BG_PID.
bg() {
	local name=$1
	shift
	"$@" >"$TMPD/$name.out" 2>&1 &
	BG_PID=$!
}

# cpuhpd's main pid, 0 if it does not run.
daemon_pid() {
	systemctl show -p MainPID --value cpuhpd.service
}

# daemon_replaced PID: whether another cpuhpd than PID runs and is ready.
daemon_replaced() {
	local now
	now=$(daemon_pid)
	[ "$now" != "$1" ] && [ "$now" != 0 ] &&
		[ "$(systemctl is-active cpuhpd.service)" = active ]
}

# journal_since_mark [ARGS]: cpuhpd.service's journal since mark_journal, as
# `journalctl -o cat ARGS` prints it.  (By time: journalctl 252 finds nothing
# after a cursor once -p filters the entries.)
mark_journal() {
	date +%s.%6N >"$TMPD/since"
}
journal_since_mark() {
	journalctl -q -o cat -u cpuhpd.service --since "@$(cat "$TMPD/since")" "$@"
}

# logged_since_mark ERE [ARGS]: whether a line of journal_since_mark ARGS matches
# ERE (for wait_for).
logged_since_mark() {
	local ere=$1
	shift
	journal_since_mark "$@" | grep -Eq -- "$ere"
}

# status_is JQ / leases_is JQ / states_is JQ: whether cpuhpd's JSON answer
# makes the jq expression true (for wait_for).
status_is() { cpuhpctl status --json | jq -e "$1" >/dev/null; }
leases_is() { cpuhpctl leases --json | jq -e "$1" >/dev/null; }
states_is() { cpuhpctl states --json | jq -e "$1" >/dev/null; }

# watched JQ: whether an event of $TMPD/watch.out (cpuhpctl watch --json)
# makes the jq expression true (for wait_for).
watched() {
	grep -h '^{.*}$' "$TMPD/watch.out" | jq -s -e "any(.[]; $1)" >/dev/null
}

# What a restart must keep, in one line: the leases (ids, kinds, counts,
# names; by name, since a new cpuhpd may list them in another order), the hotplugs waiting (CPUs, state, who asked), the freezes (a
# pending one is asked again of the next cpuhpd, under a new id: its client
# learns the id only when it is held), the states (ids, names, CPUs).
held_summary() {
	cpuhpctl leases --json | jq -c '[[.leases[] | [.lease_id, .kind, .count, .who]] | sort_by(.[3]),
		[.hotplugs[] | [.action, .cpus, .state, .pid]],
		[.freezes[] | [.state, .who, .pid]]]'
	cpuhpctl states --json | jq -c '[.states[] | [.id, .name, .pid, .cpus]]'
}

# A state whose calls append "PHASE CPU online=O smt=S external=E rollback=R"
# to $TMPD/NAME.log (O: the CPU's online file when the call began), then
# "end PHASE CPU online=O" after SLEEP seconds (none for 0); started in the background by
# state_hook NAME SLEEP [cpuhpctl state options...].
state_hook() {
	local name=$1 sleep=$2
	shift 2
	local cmd="l=$TMPD/$name.log; o() { cat $CPU/cpu\$1/online 2>/dev/null || echo gone; };"
	cmd+=" echo \"\$CPUHP_PHASE \$1 online=\$(o \$1) smt=\$(cat $CPU/smt/control)"
	cmd+=" external=\$CPUHP_EXTERNAL rollback=\$CPUHP_ROLLBACK\" >>\$l;"
	[ "$sleep" = 0 ] ||
		cmd+=" sleep $sleep; echo \"end \$CPUHP_PHASE \$1 online=\$(o \$1)\" >>\$l"
	bg "state-$name" cpuhpctl state "$name" --deadline 20000 "$@" \
		--teardown "$cmd" --startup "$cmd"
	STATE_PID=$BG_PID
	wait_for 30 states_is "any(.states[]; .name == \"$name\")" ||
		fail "state $name was not registered: $(cat "$TMPD/state-$name.out")"
}

# stop_bg PID...: end background clients (SIGTERM) and reap them.
stop_bg() {
	kill "$@" 2>/dev/null
	wait "$@" 2>/dev/null
}

# hotadd CORE THREAD: have the host hot-add that vCPU, wait until the kernel
# made it present; its CPU number in $NEW_CPU.  QEMU 7.2 (TCG) crashes
# ("double free or corruption") on a device_add after a vCPU's device_del:
# every hot-add of a boot must come before its first eject.
hotadd() {
	local before after
	before=$(cat $CPU/present)
	ask hotadd "$1" "$2" || return 1
	wait_for 60 sh -c "[ \"\$(cat $CPU/present)\" != $before ]" || {
		fail "the vCPU of core $1 thread $2 did not become present"
		return 1
	}
	after=$(cat $CPU/present)
	NEW_CPU=$(jq -n --argjson a "$(cpulist_json "$before")" --argjson b "$(cpulist_json "$after")" \
		'($b - $a)[0]')
}

# eject CORE THREAD: have the host eject that vCPU, and wait until QEMU let it go.
eject() {
	ask eject "$1" "$2" && ask deleted "$1" "$2"
}

# cpulist_json LIST: a CPU list ("0-3,5") as a JSON array.
cpulist_json() {
	echo "$1" | jq -R 'split(",") | map(split("-") | map(tonumber) |
		if length == 2 then [range(.[0]; .[1] + 1)] else . end) | add // []'
}
