#!/usr/bin/env bash
# The official E2B Python SDK's network options against aboxd inside the
# private world of world.py: finds the SDK and its dependencies as
# tests/e2b/python/sdk.sh says, then runs e2b_python.py. Output is TAP.
#   usage: e2b_python.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")" && pwd)
# a missing SDK fails the test: CI must run it, so it is never a skip
fail() { echo "1..1"; echo "not ok 1 - $*"; exit 1; }
. "$src/../e2b/python/sdk.sh"
e2b_python_sdk "$build" "$src" || fail "$e2b_python_why"
# for the flows, run by the system's python3 (the dependencies are its)
export ABOX_E2B_PYTHONPATH=$src:$src/../e2b/python:$sdk:$sdk/stub:$PYTHONPATH
exec python3 "$src/e2b_python.py" "$build"
