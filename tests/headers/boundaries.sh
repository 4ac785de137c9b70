#!/usr/bin/env bash
# The tree's boundaries (docs/hacking.md), checked on every run, so that
# they hold by more than habit. Output is TAP.
#   1. no #include "../": a file reaches another folder's headers only
#      through its target's include directories
#   2. src/cli/ and src/daemon/ use the library only through its public
#      headers (abox/) and the abox-base and abox-e2b libraries (base/,
#      e2b/), besides their own headers and the build's config.h
#   3. no source file over 600 lines (one idea a file)
#   4. no circle between the library's folders (src/lib/*), nor between
#      the files of src/init/ or src/daemon/, by their includes
#   usage: boundaries.sh SOURCE_DIR
set -u
cd "$1" || exit 2
echo "1..4"
up=$(grep -rnE --include='*.[ch]' '#include [<"]\.\./' src include tests bench 2>/dev/null)
if [ -z "$up" ]; then echo "ok 1 - no #include of a parent folder's file"; else
  echo "not ok 1 - #include \"../ found"; printf '# %s\n' "$up" | head -20; fi
bad=$(grep -rn '#include "' src/cli src/daemon |
  grep -vE '#include [<"]((abox|base|e2b)/|config\.h[">])' |
  while IFS= read -r l; do
    f=${l%%:*}; h=$(printf '%s' "$l" | sed 's/.*#include [<"]//; s/[">].*//')
    top=${f#src/}; top=src/${top%%/*}
    # its own folder's headers, or its program's (aboxd's envd/ sees src/daemon/)
    [ -e "$(dirname "$f")/$h" ] || [ -e "$top/$h" ] || printf '%s\n' "$l"
  done)
# a system header that names a folder of the library is reaching in too
bad+=$(grep -rnE '#include <(api|local|remote|handle|spawn|mount|cgroup|seccomp|caps|net|proto|store|layer|disk)/' src/cli src/daemon)
if [ -z "$bad" ]; then echo "ok 2 - the CLI and aboxd include only abox/, base/, e2b/ and their own headers"; else
  echo "not ok 2 - the CLI or aboxd reach into the library"; printf '# %s\n' "$bad" | head -20; fi
big=$(find src include -name '*.[ch]' -exec wc -l {} + | awk '$2 != "total" && $1 > 600 {print $2 ": " $1 " lines"}')
if [ -z "$big" ]; then echo "ok 3 - no source file over 600 lines"; else
  echo "not ok 3 - source files over 600 lines"; printf '# %s\n' "$big"; fi
circles=$(python3 - <<'PY'
import os, re, sys
inc = re.compile(r'#include "([^"]+)"')
def graph(files, node_of, target_of):
    g = {}
    for f in files:
        a = node_of(f)
        for line in open(f, errors="replace"):
            m = inc.match(line)
            if m:
                b = target_of(f, m.group(1))
                if b and b != a:
                    g.setdefault(a, set()).add(b)
    return g
def cycle(g):
    state, stack = {}, []
    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(g.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if not state.get(m):
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
    for n in sorted(g):
        if not state.get(n):
            c = visit(n)
            if c:
                return c
def walk(top):
    for d, _, fs in os.walk(top):
        for f in fs:
            if f.endswith((".c", ".h")):
                yield os.path.join(d, f)
lib = "src/lib"
folders = {d for d in os.listdir(lib) if os.path.isdir(os.path.join(lib, d))}
def lib_node(f):
    rest = os.path.relpath(f, lib).split(os.sep)
    return rest[0] if len(rest) > 1 else None
def lib_target(f, h):
    first = h.split("/")[0]
    return first if "/" in h and first in folders else None
out = []
c = cycle(graph([f for f in walk(lib) if lib_node(f)], lib_node, lib_target))
if c:
    out.append("src/lib folders: " + " -> ".join(c))
for top in ("src/init", "src/daemon"):
    def node(f, top=top):
        return os.path.splitext(os.path.relpath(f, top))[0]
    def target(f, h, top=top):
        for base in (os.path.dirname(f), top):
            p = os.path.join(base, h)
            if os.path.exists(p):
                return os.path.splitext(os.path.relpath(p, top))[0]
    c = cycle(graph(list(walk(top)), node, target))
    if c:
        out.append(top + ": " + " -> ".join(c))
print("\n".join(out))
PY
)
if [ -z "$circles" ]; then echo "ok 4 - no include circle between the library's folders, nor in init or aboxd"; else
  echo "not ok 4 - an include circle"; printf '# %s\n' "$circles"; fi
