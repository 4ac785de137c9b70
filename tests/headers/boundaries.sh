#!/usr/bin/env bash
# The tree's boundaries (docs/hacking.md), checked on every run, so that
# they hold by more than habit. Output is TAP.
#   1. no #include "../": a file reaches another folder's headers only
#      through its target's include directories
#   2. src/cli/ and src/daemon/ use the library only through its public
#      headers (abox/) and the abox-base and abox-e2b libraries (base/,
#      e2b/), besides their own headers and the build's config.h
#   3. no source file over 600 lines (one idea a file)
#   usage: boundaries.sh SOURCE_DIR
set -u
cd "$1" || exit 2
echo "1..3"
up=$(grep -rn --include='*.[ch]' '#include "\.\./' src include tests bench 2>/dev/null)
if [ -z "$up" ]; then echo "ok 1 - no #include of a parent folder's file"; else
  echo "not ok 1 - #include \"../ found"; printf '# %s\n' "$up" | head -20; fi
bad=$(grep -rn '#include "' src/cli src/daemon | grep -vE '#include "((abox|base|e2b)/|config\.h")' |
  while IFS= read -r l; do
    f=${l%%:*}; h=$(printf '%s' "$l" | sed 's/.*#include "//; s/".*//')
    [ -e "$(dirname "$f")/$h" ] || [ -e "src/daemon/$h" ] || printf '%s\n' "$l"
  done)
if [ -z "$bad" ]; then echo "ok 2 - the CLI and aboxd include only abox/, base/, e2b/ and their own headers"; else
  echo "not ok 2 - the CLI or aboxd reach into the library"; printf '# %s\n' "$bad" | head -20; fi
big=$(find src include -name '*.[ch]' -exec wc -l {} + | awk '$2 != "total" && $1 > 600 {print $2 ": " $1 " lines"}')
if [ -z "$big" ]; then echo "ok 3 - no source file over 600 lines"; else
  echo "not ok 3 - source files over 600 lines"; printf '# %s\n' "$big"; fi
