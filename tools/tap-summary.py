#!/usr/bin/env python3
"""Sums the TAP results of a meson test run (meson-logs/testlog.json) and
prints the closing line 'N passed, N failed, N skipped'. Exits 1 when a
test failed, crashed or a whole test program broke."""
import json
import re
import sys

log = sys.argv[1]
passed = failed = skipped = 0
broken = []
with open(log) as f:
    for line in f:
        t = json.loads(line)
        out = t.get("stdout") or ""
        n_ok = n_fail = n_skip = 0
        for l in out.splitlines():
            if re.match(r"^not ok\b", l):
                n_fail += 1
            elif re.match(r"^ok\b", l):
                if re.search(r"#\s*skip", l, re.I):
                    n_skip += 1
                else:
                    n_ok += 1
        passed += n_ok
        failed += n_fail
        skipped += n_skip
        if t.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL") and n_fail == 0:
            broken.append(t.get("name"))
            failed += 1
for b in broken:
    print(f"test program {b} failed outside its test cases", file=sys.stderr)
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
