#!/usr/bin/env bash
# Runs every *_flows.py beside this file with the official E2B Python SDK
# (sync and async clients, and the code interpreter SDK) against a fresh
# aboxd on a free port, with a key made for the run. Output is TAP.
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
# run by hand (not by meson, which sets them): the build's own state and
# runtime folders, never the machine's /var/lib/abox and /run/abox
export ABOX_ROOT=${ABOX_ROOT:-$build/test-state} ABOX_RUNTIME_DIR=${ABOX_RUNTIME_DIR:-$build/test-run}
src=$(cd "$(dirname "$0")" && pwd)

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

key=e2b_$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
conf=$(mktemp /tmp/aboxd-test.XXXXXX.json)
# no "domain": the flows see what getHost() gives by default
printf '{"port": %s, "adminPort": 0, "apiKeys": ["%s"]}\n' "$port" "$key" > "$conf"
log=$build/e2b-python-aboxd.log
"$build/aboxd" --config "$conf" 2>"$log" &
daemon=$!
cleanup() {
  kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; rm -f "$conf"
  "$build/abox" gc -q >/dev/null 2>&1 || true
}
trap cleanup EXIT
for _ in $(seq 50); do
  curl -s -o /dev/null "http://127.0.0.1:$port/health" && break
  sleep 0.1
done

export E2B_API_KEY=$key E2B_API_URL=http://127.0.0.1:$port E2B_SANDBOX_URL=http://127.0.0.1:$port
status=0
n=0
out=$build/e2b-python.tap
: > "$out"
for f in "$src"/*_flows.py; do
  name=$(basename "$f")
  /usr/bin/python3 -s "$f" > "$build/${name%.py}.tap" 2>&1 || status=1
  k=$(grep -m1 -E '^1\.\.[0-9]+' "$build/${name%.py}.tap" | sed 's/^1\.\.//')
  grep -v -E '^1\.\.[0-9]+$' "$build/${name%.py}.tap" |
    awk -v off="$n" -v f="$name" '/^(not )?ok [0-9]+/ { p = ($1 == "not") ? 3 : 2; $p = $p + off; sub(/ - /, " - " f ": ") ; print; next } { print "# " $0 }' |
    sed 's/^# # /# /' >> "$out"
  n=$((n + ${k:-0}))
done
echo "1..$((n + 1))"
cat "$out"
left=$(curl -s -H "X-API-Key: $key" "http://127.0.0.1:$port/v2/sandboxes?state=running,paused")
if [ "$left" = "[]" ]; then
  echo "ok $((n + 1)) - no sandbox of the run is left"
else
  echo "not ok $((n + 1)) - sandboxes left: $left"
  status=1
fi
exit $status
