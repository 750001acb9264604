# SPDX-License-Identifier: LGPL-2.1-or-later
# The kernel's own CPU-hotplug selftest, cpu-on-off-test.sh (from Debian's
# linux-source, put in the cache by run.sh), its hotplugs done through
# cpuhpctl (kselftest-cpuhpctl) while a state is registered: it passes, in
# its default and its full (-a) mode, every change went through cpuhpd, and
# the state was called around each.
. /usr/lib/cpuhp-guest/lib.sh
script=/usr/lib/cpuhp-guest/kselftest/cpu-on-off-test.sh
if [ ! -f $script ]; then
	skip "the kernel's cpu-on-off-test.sh is not in the image: run.sh takes it from" \
		"Debian's linux-source into the cache (tests/guest/image.py fetch)"
	exit 0
fi
note "cpu-on-off-test.sh from $(cat $script.version)"
fresh
state_hook guest-kselftest 0 --nocalls
state=$STATE_PID
mark_journal
for mode in default -a; do
	t=$(date +%s%N)
	/usr/lib/cpuhp-guest/kselftest-cpuhpctl $script ${mode#default} >"$TMPD/kst.out" 2>&1
	expect "cpu-on-off-test.sh ($mode) passes with cpuhpctl doing its hotplugs: exit 0" "$?" 0
	note "cpu-on-off-test.sh ($mode): $(ms_since "$t") ms"
	log "cpu-on-off-test.sh $mode" <"$TMPD/kst.out"
	expect_match "... its own online_cpu and offline_cpu were replaced" "$(cat "$TMPD/kst.out")" \
		'online_cpu: readonly function'
done
expect "CPUs 0-3 online after it" "$(cat $CPU/online)" 0-3
expect "the state was called around each of its hotplugs: default (CPU 3), then -a (1, 2)" \
	"$(cut -d' ' -f1-2 "$TMPD/guest-kselftest.log" | tr '\n' ',')" \
	"teardown 3,startup 3,teardown 1,teardown 2,startup 1,startup 2,"
journal=$(journal_since_mark)
expect "cpuhpd made each of its 6 hotplugs" "$(printf '%s\n' "$journal" | grep -c 'hotplug #[0-9]* done')" 6
expect_no_match "none was made behind cpuhpd's back" "$journal" 'changed outside cpuhpd'
stop_bg $state
