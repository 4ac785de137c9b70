#!/usr/bin/env bash
# Seeds for the egress fuzz targets: a DNS query and an answer, a TLS
# ClientHello and an HTTP request, stored and listed policies, the
# relay's HTTP proxy and SOCKS5 requests.
#   usage: net-seeds.sh dns|sni|policy|relay CORPUS_DIR
set -eu
kind=$1 dir=$2
mkdir -p "$dir"
case $kind in
dns)
  # a query for allowed.test (A, RD), and an answer with one A record
  printf '\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07allowed\x04test\x00\x00\x01\x00\x01' >"$dir/query"
  printf '\x12\x34\x81\x80\x00\x01\x00\x01\x00\x00\x00\x00\x07allowed\x04test\x00\x00\x01\x00\x01\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\xcb\x00\x71\x0a' >"$dir/answer"
  ;;
sni)
  printf 'GET / HTTP/1.1\r\nHost: allowed.test:8080\r\nUser-Agent: x\r\n\r\n' >"$dir/http"
  # a minimal TLS 1.2 ClientHello with server_name allowed.test
  python3 - "$dir/tls" <<'PY'
import struct, sys
name = b"allowed.test"
sni = struct.pack("!HBH", len(name) + 3, 0, len(name)) + name
ext = struct.pack("!HH", 0, len(sni)) + sni
body = b"\x03\x03" + bytes(32) + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00" + struct.pack("!H", len(ext)) + ext
hs = b"\x01" + struct.pack("!I", len(body))[1:] + body
open(sys.argv[1], "wb").write(b"\x16\x03\x01" + struct.pack("!H", len(hs)) + hs)
PY
  ;;
policy)
  printf '{"mode":"filtered","allowOut":["allowed.test","*.other.test","203.0.113.10"],"denyOut":["0.0.0.0/0"]}' >"$dir/stored"
  printf '\x01allowed.test\x00\x01*.x.test\x00\x020.0.0.0/0\x00\x0210.0.0.0/8' >"$dir/lists"
  ;;
relay)
  printf 'CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n' >"$dir/connect"
  printf 'GET http://allowed.test:8080/a?b#c HTTP/1.1\r\nHost: allowed.test\r\n\r\n' >"$dir/forward"
  printf '\x05\x01\x00\x05\x01\x00\x03\x0callowed.test\x01\xbb' >"$dir/socks-name"
  printf '\x05\x01\x00\x01\xcb\x00\x71\x0a\x00\x50' >"$dir/socks-addr"
  ;;
esac
