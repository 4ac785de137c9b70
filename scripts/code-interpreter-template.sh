#!/usr/bin/env bash
# Makes the code interpreter's template (rootfs/code-interpreter.recipe,
# what aboxd serves as E2B's code-interpreter-v1; or NAME from RECIPE, its
# variant with R, say) ready in BUILD's test state folder, for the tests
# of the code plane. It is built once into a
# cache outside the clone (ABOX_TEMPLATE_CACHE, default
# /var/cache/abox-test/templates; `abox template build` keeps it there
# until the recipe changes: minutes the first time, nothing after), then
# imported into BUILD/test-state (about half a minute) unless the same
# version is there already. The build's output goes to
# BUILD/NAME-build.log.
#   usage: scripts/code-interpreter-template.sh [BUILD [NAME RECIPE]]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
name=${2:-code-interpreter}
recipe=${3:-rootfs/code-interpreter.recipe}
cache=${ABOX_TEMPLATE_CACHE:-/var/cache/abox-test/templates}
mkdir -p -m 0700 "$cache" "$build/test-state"
log=$build/$name-build.log
start=$(date +%s)
echo "$name template: building or checking it in $cache (log: $log)"
if ! ABOX_ROOT=$cache ABOX_RUNTIME_DIR=$cache/run "$build/abox" template build "$name" \
    "$recipe" >"$log" 2>&1; then
  echo "$name template: the build failed; its last lines:" >&2
  tail -n 15 "$log" >&2
  exit 1
fi
echo "$name template: $(tail -n 1 "$log") ($(( $(date +%s) - start )) s)"
version=$(readlink "$cache/templates/$name")
stamp=$build/test-state/.$name-from
if [ "$(cat "$stamp" 2>/dev/null)" = "$version" ] &&
    ABOX_ROOT=$build/test-state "$build/abox" template inspect "$name" >/dev/null 2>&1; then
  echo "$name template: $version already in $build/test-state"
  exit 0
fi
# the built template's defaults (user, workdir, env) go with the copy
mapfile -t meta < <(ABOX_ROOT=$cache "$build/abox" template inspect --json "$name" | python3 -c '
import json, sys
t = json.load(sys.stdin)
if t.get("user"): print("--user"); print(t["user"])
if t.get("workdir"): print("--workdir"); print(t["workdir"])
for e in t.get("env") or []: print("--env"); print(e)')
ABOX_ROOT=$build/test-state ABOX_RUNTIME_DIR=$build/test-run "$build/abox" template import "${meta[@]}" \
  "$name" "$cache/templates/$name/" 2>/dev/null
echo "$version" > "$stamp"
echo "$name template: $version imported into $build/test-state ($(( $(date +%s) - start )) s)"
