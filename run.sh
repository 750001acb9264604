#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The README's two commands:
#   ./run.sh demo [--real]  install missing packages, build, run the demo
#   ./run.sh test           install missing packages, build (plain, TSan, ASan+UBSan),
#                           run every test, end with "N passed, N failed"
set -euo pipefail
cd "$(dirname "$0")"

PKGS=(gcc clang clang-format libclang-rt-14-dev pkg-config meson ninja-build liburcu-dev libuv1-dev
      libprotobuf-c-dev protobuf-c-compiler python3 python3-dev python3-cffi python3-pytest
      python3-pytest-timeout spin valgrind gnuplot-nox util-linux systemd scdoc mandoc
      libseccomp-dev bash-completion python3-prometheus-client python3-mypy
      python3-setuptools python3-venv python3-pip libsmartcols-dev qemu-system-x86 mmdebstrap e2fsprogs
      libck-dev)
PY=/usr/bin/python3

install_missing() {
	local missing=()
	for p in "${PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "run.sh: installing ${missing[*]}" >&2
	local sudo=()
	[ "$(id -u)" -eq 0 ] || sudo=(sudo)
	"${sudo[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
}

# setup DIR ARGS...: configure once, reconfigure if the options changed.
setup() {
	local dir=$1
	shift
	if [ -f "$dir/build.ninja" ]; then
		meson setup --reconfigure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@" >/dev/null
	fi
	ninja -C "$dir" >/dev/null
}

build_main() {
	setup build -Ddebug_checks=true -Dpython=enabled -Ddaemon=enabled
}

cmd_demo() {
	install_missing
	build_main
	echo "== In one process: readers under cpuhp_get_online_cpus() while a writer flips a CPU"
	build/examples/readers
	echo
	echo "== Across processes: cpuhpd, leases and a hotplug"
	exec "$PY" examples/demo.py "$@"
}

# The guest tests' cache (tests/guest/image.py): Debian's kernel, a bookworm
# root, the kernel's cpu-on-off selftest script from linux-source; each once
# per machine (about 2 minutes), so that the tests find them.  Without the
# script guest-selftest skips, saying so; without the rest the guest tests
# build it themselves.
fetch_guest() {
	local sudo=()
	[ "$(id -u)" -eq 0 ] || sudo=(sudo)
	apt-cache show linux-image-amd64 >/dev/null 2>&1 || "${sudo[@]}" apt-get update -qq
	"$PY" tests/guest/image.py fetch ||
		echo "run.sh: the guest tests' cache is not filled (above); they try again" >&2
}

cmd_test() {
	install_missing
	fetch_guest
	echo "run.sh: building build/ (gcc, debug checks), build-tsan/, build-asan/ (clang)" >&2
	build_main
	CC=clang setup build-tsan -Ddebug_checks=true -Dpython=disabled -Db_sanitize=thread \
		-Db_lundef=false
	CC=clang setup build-asan -Ddebug_checks=true -Dpython=disabled \
		-Db_sanitize=address,undefined -Db_lundef=false
	# Real CPU hotplug tests are opt-in (a packager's `meson test` as root must not take a
	# CPU offline); CI runs them where the machine allows (root, a hotpluggable CPU).
	export CPUHP_TEST_REAL_HOTPLUG=${CPUHP_TEST_REAL_HOTPLUG-1}
	local rc=0
	meson test -C build --print-errorlogs --num-processes 2 || rc=1
	meson test -C build-tsan --print-errorlogs --num-processes 2 --suite sanitize || rc=1
	meson test -C build-asan --print-errorlogs --num-processes 2 --suite sanitize || rc=1
	"$PY" tests/summary.py build build-tsan build-asan || rc=1
	return $rc
}

case "${1:-}" in
demo) shift; cmd_demo "$@" ;;
test) shift; cmd_test "$@" ;;
-h | --help | "")
	sed -n '3,6p' "$0" | sed 's/^# \{0,1\}//'
	[ -n "${1:-}" ] || exit 2
	;;
*) echo "run.sh: unknown command '$1' (try: ./run.sh demo, ./run.sh test)" >&2; exit 2 ;;
esac
