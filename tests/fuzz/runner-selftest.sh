#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# runner-selftest.sh RUN-FUZZER CRASHING-FUZZER
# run-fuzzer.sh on a target that crashes at once must exit 1 (a failed
# meson test), not 0 and not 77 (skipped), and keep the crashing input.
set -eu
case "${1:-}" in
-h | --help)
	sed -n '3,5p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
esac
if [ $# -ne 2 ]; then
	sed -n '3,5p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
fi
runner=$1
fuzzer=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/cpuhp-fuzz-selftest.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
printf 'seed' >"$work/corpus/seed"
artifacts=$(dirname "$fuzzer")/fuzz-artifacts
rm -f "$artifacts/$(basename "$fuzzer")-"crash-*

rc=0
"$runner" "$fuzzer" "$work/corpus" 5 >"$work/out" 2>&1 || rc=$?
if [ "$rc" != 1 ]; then
	cat "$work/out"
	echo "runner-selftest: run-fuzzer.sh exited $rc on a crashing target; want 1" >&2
	exit 1
fi
if ! ls "$artifacts/$(basename "$fuzzer")-"crash-* >/dev/null 2>&1; then
	cat "$work/out"
	echo "runner-selftest: no crash input kept in $artifacts" >&2
	exit 1
fi
rm -f "$artifacts/$(basename "$fuzzer")-"crash-*
echo "runner-selftest: a crash fails the test (exit 1) and its input is kept"
