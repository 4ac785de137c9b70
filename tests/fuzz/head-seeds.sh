#!/usr/bin/env bash
# Seeds for fuzz_head: request heads as clients (and smugglers) send them.
set -euo pipefail
out=$1
mkdir -p "$out"
printf 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n' > "$out/plain"
printf 'POST /files?path=a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc' > "$out/body"
printf 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd' > "$out/two-lengths"
printf 'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n' > "$out/coding"
printf 'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n' > "$out/chunked"
printf 'GET /files?path=/etc/passwd%%00.txt HTTP/1.1\r\nHost: x\r\n\r\n' > "$out/pct00"
printf 'GET /a\x00b HTTP/1.1\r\nHost: x\r\n\r\n' > "$out/raw-nul-target"
printf 'GET / HTTP/1.1\r\nX-API-Key: k\x00junk\r\nHost: x\r\n\r\n' > "$out/raw-nul-header"
printf 'GET / HTTP/1.1\r\nX-A: a\r\n b\r\nHost: x\r\n\r\n' > "$out/folded"
