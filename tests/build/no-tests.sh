#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# no-tests.sh SOURCE_ROOT
# A packager's build: configure SOURCE_ROOT with -Dtests=disabled in a
# temporary directory (every other part on), check that meson registered no
# test and no benchmark, build, and check that no test, benchmark or example
# program was built.
set -eu
case "${1:-}" in
"" | -h | --help)
	sed -n '3,7p' "$0" | sed 's/^# \{0,1\}//'
	[ -n "${1:-}" ] && exit 0
	exit 2
	;;
esac
src=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/cpuhp-no-tests.XXXXXX")
trap 'rm -rf "$work"' EXIT

meson setup "$work/build" "$src" -Dtests=disabled -Dclient=enabled -Ddaemon=enabled \
	-Dpython=disabled >"$work/setup.out" 2>&1 || {
	cat "$work/setup.out"
	echo "no-tests: meson setup -Dtests=disabled failed" >&2
	exit 1
}
for kind in tests benchmarks; do
	n=$(meson introspect "$work/build" --$kind | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
	if [ "$n" != 0 ]; then
		meson introspect "$work/build" --$kind >&2
		echo "no-tests: -Dtests=disabled still registers $n $kind" >&2
		exit 1
	fi
done
ninja -C "$work/build" >"$work/ninja.out" 2>&1 || {
	cat "$work/ninja.out"
	echo "no-tests: the build with -Dtests=disabled fails" >&2
	exit 1
}
# What was built: the libraries and the three programs, nothing from tests/ or examples/.
for d in tests examples; do
	if [ -d "$work/build/$d" ] && [ -n "$(find "$work/build/$d" -type f | head -n 1)" ]; then
		find "$work/build/$d" -type f >&2
		echo "no-tests: -Dtests=disabled built files under $d/" >&2
		exit 1
	fi
done
[ -x "$work/build/daemon/cpuhpd/cpuhpd" ] || {
	echo "no-tests: cpuhpd was not built; is this the build it should be?" >&2
	exit 1
}
echo "no-tests: -Dtests=disabled registers no test or benchmark and builds none"
