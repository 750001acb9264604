#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# lock-only.sh [--python] SOURCE_ROOT
# The lock library on its own: configure SOURCE_ROOT in a temporary build
# directory with the client, daemon and Python parts switched off, check in
# meson's log that none of libuv, protobuf-c, libsmartcols was looked up,
# build, and run the unit and stress suites there.  A machine without them
# can build and test libcpuhp this way.  --python: the same with
# the Python binding on (-Dpython=enabled): only its lock half is built,
# and the python suite runs (the lock tests, and test_no_client.py).
set -eu
python=disabled
if [ "${1:-}" = --python ]; then
	python=enabled
	shift
fi
case "${1:-}" in
"" | -h | --help)
	sed -n '3,10p' "$0" | sed 's/^# \{0,1\}//'
	[ -n "${1:-}" ] && exit 0
	exit 2
	;;
esac
src=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/cpuhp-lock-only.XXXXXX")
trap 'rm -rf "$work"' EXIT

meson setup "$work/build" "$src" -Dclient=disabled -Ddaemon=disabled -Dpython=$python \
	-Ddebug_checks=true >"$work/setup.out" 2>&1 || {
	cat "$work/setup.out"
	echo "lock-only: meson setup failed with the client and daemon parts off (python $python)" >&2
	exit 1
}
log=$work/build/meson-logs/meson-log.txt
# Any probe names the package: "Run-time dependency libuv found: ...",
# "Program protoc-c found: ...", pkg-config command lines.
if grep -Ein 'libuv|protobuf|protoc-c|smartcols' "$log"; then
	echo "lock-only: meson looked up libuv, protobuf-c or libsmartcols (lines above, from $log)" >&2
	exit 1
fi
grep -q 'Run-time dependency liburcu-memb found: YES' "$log" || {
	echo "lock-only: meson's log does not show liburcu-memb being found; is $log a configure log?" >&2
	exit 1
}
echo "lock-only: configured without looking up libuv or protobuf-c"
ninja -C "$work/build" >"$work/ninja.out" 2>&1 || {
	cat "$work/ninja.out"
	echo "lock-only: the lock library alone does not build (python $python)" >&2
	exit 1
}
for t in client cpuhpd cpuhpctl; do
	if [ -n "$(find "$work/build" -name "*$t*" -type f -perm -u+x | head -n 1)" ]; then
		echo "lock-only: built $t with the client and daemon parts off" >&2
		exit 1
	fi
done
if [ $python = enabled ]; then
	[ -n "$(find "$work/build/bindings/python/cpuhp" -name '_cpuhp.*.so' | head -n 1)" ] || {
		echo "lock-only: -Dpython=enabled built no cpuhp._cpuhp extension" >&2
		exit 1
	}
	exec meson test -C "$work/build" --suite python --num-processes 2 --print-errorlogs
fi
meson test -C "$work/build" --suite unit --suite stress --num-processes 2 --print-errorlogs
