#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Instructions per operation, exactly: run `EXE --callgrind-loop DESIGN N`
# under callgrind for two N and print
#   DESIGN (Ir(N2) - Ir(N1)) / (N2 - N1)
# per design: a read lock+unlock pair for bench-locks, a write lock+unlock
# with no reader for bench-peers (`bench-peers --list`).  Start-up,
# registration and exit cost the same in both runs and cancel out.  Under
# valgrind, glibc cannot register rseq (the rseq designs count their atomic
# fallback) and liburcu may see no membarrier.
#
# Usage: callgrind.sh EXE [DESIGN...]   (default: every design)
set -eu

if [ $# -lt 1 ] || [ "$1" = --help ]; then
	sed -n '3,12p' "$0" | sed 's/^# \{0,1\}//'
	exit $(($# < 1 ? 2 : 0))
fi
exe=$1
shift
if ! command -v valgrind >/dev/null 2>&1; then
	echo "callgrind.sh: valgrind not found; install it: apt-get install valgrind" >&2
	exit 1
fi
[ $# -gt 0 ] || set -- $("$exe" --list | awk '{ print $1 }')

n1=200000
n2=600000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Total instructions of one run of N operations.
ir() {
	if ! valgrind --tool=callgrind --callgrind-out-file="$tmp/out" \
		"$exe" --callgrind-loop "$1" "$2" >/dev/null 2>"$tmp/err"; then
		cat "$tmp/err" >&2
		echo "callgrind.sh: valgrind failed on $1" >&2
		return 1
	fi
	sed -n 's/^==[0-9]*== Collected : *\([0-9]*\).*/\1/p' "$tmp/err"
}

for d in "$@"; do
	a=$(ir "$d" $n1)
	b=$(ir "$d" $n2)
	awk -v d="$d" -v a="$a" -v b="$b" -v n1=$n1 -v n2=$n2 \
		'BEGIN { printf "%s %.2f\n", d, (b - a) / (n2 - n1) }'
done
