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
                # name the failed case in the run's output, so a red run
                # says what broke even when only its tail is kept
                print(f"FAILED {t.get('name')}: {l}", file=sys.stderr)
            elif re.match(r"^ok\b", l):
                if re.search(r"#\s*skip", l, re.I):
                    n_skip += 1
                else:
                    n_ok += 1
        passed += n_ok
        failed += n_fail
        skipped += n_skip
        if t.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL") and n_fail == 0:
            broken.append((t.get("name"), t.get("stderr") or out))
            failed += 1
for name, err in broken:
    print(f"test program {name} failed outside its test cases; its last lines:", file=sys.stderr)
    for l in err.splitlines()[-15:]:
        print(f"  {l}", file=sys.stderr)
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
