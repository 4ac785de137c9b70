#!/usr/bin/env bash
# Runs tests/e2b/flows.mjs, and every other .mjs file beside it (or only
# the FLOW named, a path below tests/e2b/), with one version of the
# official E2B JS SDK against a fresh aboxd on a free port, with a key made
# for the run; aboxd inherits the environment (ABOXD_LIMIT_*).
# Output is TAP (meson reads it). The SDK is installed from the npm
# registry into the build folder once per version.
#   usage: run.sh BUILD_DIR SDK_VERSION [FLOW]
set -euo pipefail
build=$(cd "$1" && pwd)
# run by hand (not by meson, which sets them): the build's own state and
# runtime folders, never the machine's /var/lib/abox and /run/abox
export ABOX_ROOT=${ABOX_ROOT:-$build/test-state} ABOX_RUNTIME_DIR=${ABOX_RUNTIME_DIR:-$build/test-run}
ver=$2
script=${3:-flows.mjs}
src=$(cd "$(dirname "$0")" && pwd)
dir=$build/e2b-sdk-$ver
if [ ! -f "$dir/node_modules/@e2b/code-interpreter/package.json" ]; then
  mkdir -p "$dir"
  (cd "$dir" && npm init -y >/dev/null &&
    npm install --no-audit --no-fund --loglevel=error "e2b@$ver" "@e2b/code-interpreter@${ABOX_E2B_CI_VERSION:-2.8.0}" >/dev/null)
fi
# flows.mjs and every other scripted flow file beside it, or the one named
# (flows that need a daemon set up their own way live in folders below)
if [ -n "${3:-}" ]; then
  flows=("$src/$3")
else
  flows=("$src"/*.mjs)
fi
cp "${flows[@]}" "$dir/"

key=e2b_$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
conf=$(mktemp /tmp/aboxd-test.XXXXXX.json)
# no "domain": host.mjs checks what getHost() gives by default
printf '{"port": %s, "adminPort": 0, "apiKeys": ["%s"]}\n' "$port" "$key" > "$conf"
"$build/aboxd" --config "$conf" 2>"$dir/aboxd-$(basename "${3:-all}" .mjs).log" &
daemon=$!
# the expiry flow leaves a dead sandbox's record (and its automatic pause
# layer) for the daemon's gc, which runs every 10 s: collect it now
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
# each file's TAP, numbered on into one plan
n=0
out=$dir/all.tap
: > "$out"
for f in "${flows[@]}"; do
  f=$(basename "$f")
  (cd "$dir" && node "$f") > "$dir/${f%.mjs}.tap" || status=1
  k=$(head -n1 "$dir/${f%.mjs}.tap" | sed 's/^1\.\.//')
  tail -n +2 "$dir/${f%.mjs}.tap" |
    awk -v off="$n" -v f="$f" '/^(not )?ok [0-9]+/ { p = ($1 == "not") ? 3 : 2; $p = $p + off; sub(/ - /, " - " f ": ") } { print }' >> "$out"
  n=$((n + ${k:-0}))
done
echo "1..$((n + 1))"
cat "$out"
# nothing of the run may stay: every sandbox it made is gone
left=$(curl -s -H "X-API-Key: $key" "http://127.0.0.1:$port/v2/sandboxes?state=running,paused")
if [ "$left" = "[]" ]; then
  echo "ok $((n + 1)) - no sandbox of the run is left"
else
  echo "not ok $((n + 1)) - sandboxes left: $left"
  status=1
fi
exit $status
