# What tests/e2b/run.sh (the JS SDK) and tests/e2b/python/run.sh (the
# Python SDK) share, sourced by both: a fresh aboxd for the run, the flow
# files' TAP gathered into one plan, and the check that the run left no
# sandbox behind.
#   e2b_start BUILD LOG OUT  starts BUILD's aboxd on a free port with a key
#       made for the run (its stderr to LOG), waits until it answers, and
#       exports E2B_API_KEY, E2B_API_URL and E2B_SANDBOX_URL for the SDKs;
#       it is stopped when the shell exits. The gathered TAP goes to OUT.
#   e2b_add NAME FILE  adds FILE's TAP (a flow file's) to the run: its tests
#       numbered on and named "NAME: ...", its plan dropped, any other line
#       a comment
#   e2b_end STATUS  prints the run's TAP and the check that nothing of it
#       is left, then exits: STATUS, or 1 if something was left
# aboxd inherits the environment (ABOXD_LIMIT_*). Run by hand (not by
# meson, which sets them) it keeps its state in BUILD's own folders, never
# the machine's /var/lib/abox and /run/abox.

e2b_start() {
  e2b_build=$1
  export ABOX_ROOT=${ABOX_ROOT:-$e2b_build/test-state} ABOX_RUNTIME_DIR=${ABOX_RUNTIME_DIR:-$e2b_build/test-run}
  e2b_key=e2b_$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')
  e2b_port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  e2b_conf=$(mktemp /tmp/aboxd-test.XXXXXX.json)
  # no "domain": the flows check what getHost() gives by default; no egress
  # (sandboxes with networking are tests/net/'s, in a world of their own)
  printf '{"port": %s, "adminPort": 0, "apiKeys": ["%s"], "network": {"default": "none"}}\n' "$e2b_port" "$e2b_key" > "$e2b_conf"
  "$e2b_build/aboxd" --config "$e2b_conf" 2>"$2" &
  e2b_daemon=$!
  trap e2b_stop EXIT
  for _ in $(seq 50); do
    curl -s -o /dev/null "http://127.0.0.1:$e2b_port/health" && break
    sleep 0.1
  done
  export E2B_API_KEY=$e2b_key E2B_API_URL=http://127.0.0.1:$e2b_port E2B_SANDBOX_URL=http://127.0.0.1:$e2b_port
  e2b_out=$3
  e2b_n=0
  : > "$e2b_out"
}

# the expiry flow leaves a dead sandbox's record (and its automatic pause
# layer) for the daemon's gc, which runs every 10 s: collect it now
e2b_stop() {
  kill "$e2b_daemon" 2>/dev/null || true; wait "$e2b_daemon" 2>/dev/null || true; rm -f "$e2b_conf"
  "$e2b_build/abox" gc -q >/dev/null 2>&1 || true
}

e2b_add() {
  local k
  # a flow that ended before its plan has printed nothing to count
  k=$(grep -m1 -E '^1\.\.[0-9]+' "$2" | sed 's/^1\.\.//' || true)
  { grep -v -E '^1\.\.[0-9]+$' "$2" || true; } |
    awk -v off="$e2b_n" -v f="$1" '/^(not )?ok [0-9]+/ { p = ($1 == "not") ? 3 : 2; $p = $p + off; sub(/ - /, " - " f ": ") ; print; next } { print "# " $0 }' |
    sed 's/^# # /# /' >> "$e2b_out"
  e2b_n=$((e2b_n + ${k:-0}))
}

e2b_end() {
  local status=$1 left
  echo "1..$((e2b_n + 1))"
  cat "$e2b_out"
  # nothing of the run may stay: every sandbox it made is gone
  left=$(curl -s -H "X-API-Key: $e2b_key" "http://127.0.0.1:$e2b_port/v2/sandboxes?state=running,paused")
  if [ "$left" = "[]" ]; then
    echo "ok $((e2b_n + 1)) - no sandbox of the run is left"
  else
    echo "not ok $((e2b_n + 1)) - sandboxes left: $left"
    status=1
  fi
  exit "$status"
}
