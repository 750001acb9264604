#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every C source and header in git is as the checked-in .clang-format says:
# clang-format --dry-run prints nothing.  Fails naming each file to run
# `clang-format -i` on.
set -euo pipefail
cd "$1"
command -v clang-format >/dev/null || { echo "format: clang-format not found (run.sh installs it)" >&2; exit 1; }
# The files git tracks; outside a git work tree (a release tarball) every
# .c and .h below the source root but build directories.
files() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files '*.c' '*.h'
	else
		find . -path './build*' -prune -o -name '*.[ch]' -print | sed 's|^\./||' | sort
	fi
}
bad=0
while IFS= read -r f; do
	if [ -n "$(clang-format --dry-run "$f" 2>&1)" ]; then
		echo "format: $f differs from .clang-format: clang-format -i $f" >&2
		bad=$((bad + 1))
	fi
done < <(files)
n=$(files | wc -l)
echo "format: $((n - bad)) of $n C files formatted"
[ "$bad" -eq 0 ]
