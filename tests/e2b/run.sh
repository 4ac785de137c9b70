#!/usr/bin/env bash
# Runs tests/e2b/flows.mjs, and every other .mjs file beside it (or only
# the FLOW named, a path below tests/e2b/), with one version of the
# official E2B JS SDK against a fresh aboxd on a free port, with a key made
# for the run (see aboxd.sh); aboxd inherits the environment (ABOXD_LIMIT_*).
# Output is TAP (meson reads it). The SDK is installed from the npm
# registry into the build folder once per version.
#   usage: run.sh BUILD_DIR SDK_VERSION [FLOW]
set -euo pipefail
build=$(cd "$1" && pwd)
ver=$2
src=$(cd "$(dirname "$0")" && pwd)
. "$src/aboxd.sh"
dir=$build/e2b-sdk-$ver
if [ ! -f "$dir/node_modules/@e2b/code-interpreter/package.json" ]; then
  mkdir -p "$dir"
  (cd "$dir" && npm init -y >/dev/null &&
    npm install --no-audit --no-fund --loglevel=error "e2b@$ver" "@e2b/code-interpreter@${ABOX_E2B_CI_VERSION:-2.8.0}" >/dev/null)
fi
# flows.mjs and every other scripted flow file beside it, or the one named
# (flows that need a daemon set up their own way live in folders below),
# as paths below tests/e2b/; lib.mjs is what they share, no flow
if [ -n "${3:-}" ]; then
  flows=("$3")
else
  flows=()
  for f in "$src"/*.mjs; do
    [ "$(basename "$f")" = lib.mjs ] || flows+=("$(basename "$f")")
  done
fi
# copied beside the SDK as they lie below tests/e2b/, so that their imports
# of lib.mjs hold
for f in lib.mjs "${flows[@]}"; do
  mkdir -p "$(dirname "$dir/$f")"
  cp "$src/$f" "$dir/$f"
done

export ABOX_TEST_BUILD=$build
e2b_start "$build" "$dir/aboxd-$(basename "${3:-all}" .mjs).log" "$dir/all.tap"
status=0
# each file's TAP, numbered on into one plan
for f in "${flows[@]}"; do
  tap=$dir/$(basename "$f" .mjs).tap
  (cd "$dir" && node "$f") > "$tap" || status=1
  e2b_add "$(basename "$f")" "$tap"
done
e2b_end $status
