#!/usr/bin/env bash
# Makes the code interpreter's template (rootfs/code-interpreter.recipe,
# what aboxd serves as E2B's code-interpreter-v1) ready in BUILD's test
# state folder, for the tests of the code plane. It is built once into a
# cache outside the clone (ABOX_TEMPLATE_CACHE, default
# /var/cache/abox-test/templates; `abox template build` keeps it there
# until the recipe changes: minutes the first time, nothing after), then
# imported into BUILD/test-state (about half a minute) unless the same
# version is there already. The build's output goes to
# BUILD/code-interpreter-build.log.
#   usage: scripts/code-interpreter-template.sh [BUILD]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cache=${ABOX_TEMPLATE_CACHE:-/var/cache/abox-test/templates}
mkdir -p -m 0700 "$cache" "$build/test-state"
log=$build/code-interpreter-build.log
start=$(date +%s)
echo "code-interpreter template: building or checking it in $cache (log: $log)"
if ! ABOX_ROOT=$cache ABOX_RUNTIME_DIR=$cache/run "$build/abox" template build code-interpreter \
    rootfs/code-interpreter.recipe >"$log" 2>&1; then
  echo "code-interpreter template: the build failed; its last lines:" >&2
  tail -n 15 "$log" >&2
  exit 1
fi
echo "code-interpreter template: $(tail -n 1 "$log") ($(( $(date +%s) - start )) s)"
version=$(readlink "$cache/templates/code-interpreter")
stamp=$build/test-state/.code-interpreter-from
if [ "$(cat "$stamp" 2>/dev/null)" = "$version" ] &&
    ABOX_ROOT=$build/test-state "$build/abox" template inspect code-interpreter >/dev/null 2>&1; then
  echo "code-interpreter template: $version already in $build/test-state"
  exit 0
fi
# the built template's defaults (user, workdir, env) go with the copy
mapfile -t meta < <(ABOX_ROOT=$cache "$build/abox" template inspect --json code-interpreter | python3 -c '
import json, sys
t = json.load(sys.stdin)
if t.get("user"): print("--user"); print(t["user"])
if t.get("workdir"): print("--workdir"); print(t["workdir"])
for e in t.get("env") or []: print("--env"); print(e)')
ABOX_ROOT=$build/test-state ABOX_RUNTIME_DIR=$build/test-run "$build/abox" template import "${meta[@]}" \
  code-interpreter "$cache/templates/code-interpreter/" 2>/dev/null
echo "$version" > "$stamp"
echo "code-interpreter template: $version imported into $build/test-state ($(( $(date +%s) - start )) s)"
