#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Sum meson's testlog.json of several build dirs into one line:
"N passed, N failed, N skipped" (exit 1 on any failure or if nothing ran)."""
import json
import sys
from pathlib import Path

PASS = {"OK", "EXPECTEDFAIL"}
SKIP = {"SKIP"}


def main(dirs):
    passed = failed = skipped = 0
    for d in dirs:
        log = Path(d) / "meson-logs" / "testlog.json"
        if not log.exists():
            print(f"summary: {log} missing: that build ran no test", file=sys.stderr)
            failed += 1
            continue
        for line in log.read_text().splitlines():
            result = json.loads(line)["result"]
            if result in PASS:
                passed += 1
            elif result in SKIP:
                skipped += 1
            else:
                failed += 1
    line = f"{passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
