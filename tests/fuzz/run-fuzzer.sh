#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# run-fuzzer.sh FUZZER CORPUS [SECONDS]
# Fuzz for a bounded time (default 15 s) starting from a copy of CORPUS, so
# the inputs libFuzzer adds never land in the source tree.  A crash, leak,
# hang or OOM exits 1 (a failed test), and its input is kept beside FUZZER
# as fuzz-artifacts/fuzz-<target>-<kind>-<sha1>.
set -eu
usage() { sed -n '3,7p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in
-h | --help) usage; exit 0 ;;
esac
if [ $# -lt 2 ]; then
	usage >&2
	exit 2
fi
fuzzer=$1
corpus=$2
seconds=${3:-15}

work=$(mktemp -d "${TMPDIR:-/tmp}/cpuhp-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -R "$corpus/." "$work/"
artifacts=$(dirname "$fuzzer")/fuzz-artifacts
mkdir -p "$artifacts"

# -timeout: one input taking 10 s is a hang worth reporting, not a slow run.
# libFuzzer's own exit code for a crash or a leak is 77, which meson (and
# automake) read as "skipped": a found bug would pass unseen.  So every
# finding exits 1, and anything but 0 is reported as a failure here.
rc=0
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	-error_exitcode=1 -timeout_exitcode=1 \
	-artifact_prefix="$artifacts/$(basename "$fuzzer")-" "$work" || rc=$?
if [ "$rc" != 0 ]; then
	echo "run-fuzzer: $(basename "$fuzzer") failed (exit $rc); its input is in $artifacts/" \
		"(see tests/fuzz/README.md, 'A crash becomes a regression input')" >&2
	exit 1
fi
