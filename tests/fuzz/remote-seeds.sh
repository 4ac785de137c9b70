#!/usr/bin/env bash
# Seeds for fuzz_remote: a byte for the piece size (and, in its low bit, a
# WatchDir stream rather than process events), then a stream as aboxd
# sends it.
set -euo pipefail
out=$1
mkdir -p "$out"
env() { # flags json
  local n=${#2}
  printf "\\x$(printf %02x "$1")"
  printf "\\x$(printf %02x $(((n >> 24) & 255)))\\x$(printf %02x $(((n >> 16) & 255)))"
  printf "\\x$(printf %02x $(((n >> 8) & 255)))\\x$(printf %02x $((n & 255)))"
  printf '%s' "$2"
}
{
  printf '\x06'
  env 0 '{"event":{"start":{"pid":42}}}'
  env 0 '{"event":{"data":{"stdout":"aGVsbG8K"}}}'
  env 0 '{"event":{"data":{"stderr":"b29wcwo="}}}'
  env 0 '{"event":{"keepalive":{}}}'
  env 0 '{"event":{"end":{"exitCode":-1,"exited":false,"status":"signal: killed","error":"x"}}}'
  env 2 '{}'
} > "$out/seed-stream"
{
  printf '\x0b'
  env 0 '{"start":{}}'
  env 0 '{"filesystem":{"name":"a.txt","type":"EVENT_TYPE_CREATE"}}'
  env 0 '{"filesystem":{"name":"sub/b.txt","type":"EVENT_TYPE_WRITE"}}'
  env 0 '{"keepalive":{}}'
  env 2 '{}'
} > "$out/seed-watch"
{
  printf '\xfe'
  env 2 '{"error":{"code":"not_found","message":"attach: no such process"}}'
} > "$out/seed-error"
