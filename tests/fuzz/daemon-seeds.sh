#!/usr/bin/env bash
# Seeds for fuzz_daemon: the first byte picks the parser (0 Connect
# envelope + JSON, 1 JSON, 2 metadata filter, 3 sandbox host, 4 Basic auth).
set -euo pipefail
out=$1
mkdir -p "$out"
msg='{"process":{"cmd":"/bin/bash","args":["-l","-c","echo hi"],"envs":{"A":"b"}},"stdin":false}'
{ printf '\0\0'; printf '%08x' ${#msg} | xxd -r -p 2>/dev/null || printf '\0\0\0\x5d'; printf '%s' "$msg"; } > "$out/seed-envelope"
printf '\1{"templateID":"base","metadata":{"k":"v"},"envVars":{"A":"1"},"timeout":30,"secure":true}' > "$out/seed-json"
printf '\2k%%3Dv%%26k2%%3Dv%%2520x' > "$out/seed-metadata"
printf '\03049983-abcdefghij0123456789.abox.test' > "$out/seed-host"
printf '\4Basic cm9vdDo=' > "$out/seed-basic"
