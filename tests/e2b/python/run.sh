#!/usr/bin/env bash
# Runs every *_flows.py beside this file with the official E2B Python SDK
# (sync and async clients, and the code interpreter SDK) against a fresh
# aboxd on a free port, with a key made for the run (see ../aboxd.sh).
# Output is TAP.
#   usage: run.sh BUILD_DIR
# The SDKs and their dependencies are found as sdk.sh says.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")" && pwd)
. "$src/../aboxd.sh"

# a missing SDK fails the test: CI must run it, so it is never a skip
fail() { echo "1..1"; echo "not ok 1 - $*"; exit 1; }

. "$src/sdk.sh"
e2b_python_sdk "$build" "$src" || fail "$e2b_python_why"
export PYTHONPATH=$src:$sdk:$sdk/stub:$PYTHONPATH ABOX_TEST_BUILD=$build

e2b_start "$build" "$build/e2b-python-aboxd.log" "$build/e2b-python.tap"
status=0
for f in "$src"/*_flows.py; do
  name=$(basename "$f")
  /usr/bin/python3 -s "$f" > "$build/${name%.py}.tap" 2>&1 || status=1
  e2b_add "$name" "$build/${name%.py}.tap"
done
e2b_end $status
