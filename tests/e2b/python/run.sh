#!/usr/bin/env bash
# Runs every *_flows.py beside this file with the official E2B Python SDK
# (sync and async clients, and the code interpreter SDK) against a fresh
# aboxd on a free port, with a key made for the run (see ../aboxd.sh).
# Output is TAP.
#   usage: run.sh BUILD_DIR
# The SDKs are not part of this repository. They are found at
#   ABOX_E2B_PYTHON_SDK      the folder holding e2b/, e2b_connect/ and
#                            e2b_code_interpreter/
# or else beside the checkout this clone came from (its origin, or the main
# worktree): ../shared/reference/e2b-python. Their dependencies are set up
# by the tool found at ABOX_E2B_PYTHON_ENV_TOOL (default: the SDK folder's
# ../../tools/python-sdk-env.sh), unpacked once into ABOX_E2B_PYTHON_ENV
# (default ${XDG_CACHE_HOME:-~/.cache}/abox-e2b-python), outside the clone.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")" && pwd)
. "$src/../aboxd.sh"

# a missing SDK fails the test: CI must run it, so it is never a skip
fail() { echo "1..1"; echo "not ok 1 - $*"; exit 1; }

sdk=${ABOX_E2B_PYTHON_SDK:-}
if [ -z "$sdk" ]; then
  bases=()
  origin=$(git -C "$src" remote get-url origin 2>/dev/null || true)
  origin=${origin#file://}
  if [ -n "$origin" ] && [ -d "$origin" ]; then
    bases+=("$origin")
    # the origin may itself be a worktree: its main checkout too
    oc=$(git -C "$origin" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
    [ -n "$oc" ] && bases+=("$(dirname "$oc")")
  fi
  common=$(git -C "$src" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
  [ -n "$common" ] && bases+=("$(dirname "$common")")
  bases+=("$(git -C "$src" rev-parse --show-toplevel 2>/dev/null || echo "$src/../../..")")
  for b in "${bases[@]}"; do
    c=$b/../shared/reference/e2b-python
    if [ -d "$c/e2b" ]; then sdk=$(cd "$c" && pwd); break; fi
  done
fi
[ -n "$sdk" ] && [ -d "$sdk/e2b" ] ||
  fail "the E2B Python SDK is not found: set ABOX_E2B_PYTHON_SDK (tried beside the origin checkout)"
tool=${ABOX_E2B_PYTHON_ENV_TOOL:-$sdk/../../tools/python-sdk-env.sh}
envdir=${ABOX_E2B_PYTHON_ENV:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/abox-e2b-python}
if [ ! -f "$envdir/env.sh" ]; then
  [ -f "$tool" ] || fail "no dependency set-up tool at $tool (set ABOX_E2B_PYTHON_ENV_TOOL)"
  bash "$tool" "$envdir" >"$build/e2b-python-env.log" 2>&1 ||
    fail "setting up the SDK's dependencies failed (see $build/e2b-python-env.log)"
fi
# the SDK's own env.sh names the SDK folder it was made for; ours comes first
. "$envdir/env.sh"
export PYTHONPATH=$src:$sdk:$sdk/stub:$PYTHONPATH

e2b_start "$build" "$build/e2b-python-aboxd.log" "$build/e2b-python.tap"
status=0
for f in "$src"/*_flows.py; do
  name=$(basename "$f")
  /usr/bin/python3 -s "$f" > "$build/${name%.py}.tap" 2>&1 || status=1
  e2b_add "$name" "$build/${name%.py}.tap"
done
e2b_end $status
