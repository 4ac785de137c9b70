#!/usr/bin/env bash
# Runs every test of abox: unit, privileged and integration suites (real
# sandboxes: run as root), then the sanitizer build of the unit suites and
# a short run of each fuzz target. Ends with 'N passed, N failed'.
#   ABOX_FUZZ_SECONDS  seconds per fuzz target (default 20; 0 = skip)
#   ABOX_NO_ASAN=1     skip the sanitizer build
#   ABOX_SKIP_CRIU=1   do not install CRIU (the checkpoint tests then fail)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${ABOX_BUILD_DIR:-build}
status=0

# the checkpoint tests run with a real checkpointer: CRIU 4 in a private
# prefix (Debian 12's CRIU cannot dump on this kernel generation)
# (recorded in the tests' own state folder: meson runs every test with
# ABOX_ROOT=<build>/test-state, see meson.build)
if [ "${ABOX_SKIP_CRIU:-0}" != 1 ]; then
  mkdir -p -m 0700 "$build/test-state"
  ABOX_ROOT=$(cd "$build/test-state" && pwd) bash scripts/criu-setup.sh ||
    { echo "criu setup failed: the checkpoint tests will fail"; status=1; }
fi

# the code interpreter's template for the tests of the code plane (built
# once into a cache outside the clone, then imported into the tests' state)
bash scripts/code-interpreter-template.sh "$build" ||
  { echo "the code-interpreter template is missing: the code plane's tests will fail"; status=1; }
bash scripts/code-interpreter-template.sh "$build" code-interpreter-full rootfs/code-interpreter-full.recipe ||
  { echo "the code-interpreter-full template is missing: the R and Java cells' tests will fail"; status=1; }

meson test -C "$build" --print-errorlogs --num-processes 1 >"$build/test-output.txt" 2>&1 || status=1
tail -n 15 "$build/test-output.txt"
python3 scripts/tap-summary.py "$build/meson-logs/testlog.json" > "$build/summary-main.txt" || status=1
main_line=$(tail -n 1 "$build/summary-main.txt")
echo "main suites: $main_line"

extra_pass=0
extra_fail=0

if [ "${ABOX_NO_ASAN:-0}" != 1 ]; then
  asan=${build}-asan
  if [ ! -f "$asan/build.ninja" ]; then
    meson setup "$asan" -Db_sanitize=address,undefined -Db_lundef=false -Dinit_musl=enabled >/dev/null
  fi
  if ninja -C "$asan" >/dev/null; then
    if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        meson test -C "$asan" --suite unit --print-errorlogs >"$asan/test-output.txt" 2>&1; then
      :
    else
      status=1
      tail -n 30 "$asan/test-output.txt"
    fi
    python3 scripts/tap-summary.py "$asan/meson-logs/testlog.json" > "$asan/summary.txt" || status=1
    echo "sanitizer unit suites: $(tail -n 1 "$asan/summary.txt")"
    read -r p _ f _ < <(tail -n 1 "$asan/summary.txt" | tr -d ',')
    extra_pass=$((extra_pass + p)); extra_fail=$((extra_fail + f))
  else
    echo "sanitizer build failed"; status=1; extra_fail=$((extra_fail + 1))
  fi
fi

secs=${ABOX_FUZZ_SECONDS:-20}
if [ "$secs" != 0 ]; then
  fz=${build}-fuzz
  if [ ! -f "$fz/build.ninja" ]; then
    CC=clang meson setup "$fz" -Dfuzz=true -Dtests=false -Db_lundef=false -Dinit_musl=enabled >/dev/null
  fi
  if ninja -C "$fz" >/dev/null; then
    for t in fuzz_policy fuzz_frame fuzz_mountinfo fuzz_unpack fuzz_daemon fuzz_remote fuzz_multipart fuzz_head fuzz_listing fuzz_accounts fuzz_dns fuzz_sni fuzz_netpolicy fuzz_relay fuzz_sudo fuzz_pull fuzz_dockerfile fuzz_tbuild fuzz_ocispec; do
      corpus="$fz/corpus-$t"
      mkdir -p "$corpus"
      [ "$t" = fuzz_policy ] && cp policies/*.json "$corpus/" 2>/dev/null
      [ "$t" = fuzz_unpack ] && tests/fuzz/unpack-seeds.sh "$corpus" 2>/dev/null
      [ "$t" = fuzz_pull ] && tests/fuzz/pull-seeds.sh "$corpus" 2>/dev/null
      [ "$t" = fuzz_dockerfile ] && cp tests/fuzz/dockerfile-seed "$corpus/" 2>/dev/null
      [ "$t" = fuzz_ocispec ] && cp tests/fuzz/ocispec-seed.json tests/fuzz/ocispec-process-seed.json "$corpus/" 2>/dev/null
      [ "$t" = fuzz_tbuild ] && cp tests/fuzz/tbuild-seed.json "$corpus/" 2>/dev/null
      [ "$t" = fuzz_daemon ] && tests/fuzz/daemon-seeds.sh "$corpus" 2>/dev/null
      [ "$t" = fuzz_remote ] && tests/fuzz/remote-seeds.sh "$corpus" 2>/dev/null
      [ "$t" = fuzz_head ] && tests/fuzz/head-seeds.sh "$corpus" 2>/dev/null
      [ "$t" = fuzz_dns ] && tests/fuzz/net-seeds.sh dns "$corpus" 2>/dev/null
      [ "$t" = fuzz_sni ] && tests/fuzz/net-seeds.sh sni "$corpus" 2>/dev/null
      [ "$t" = fuzz_netpolicy ] && tests/fuzz/net-seeds.sh policy "$corpus" 2>/dev/null
      [ "$t" = fuzz_relay ] && tests/fuzz/net-seeds.sh relay "$corpus" 2>/dev/null
      [ "$t" = fuzz_sudo ] && printf 'ABOXSUDO1\000u=root\000c=/tmp\000f=i\000a=id\000a=-u\000e=TERM=xterm\000' >"$corpus/seed"
      [ "$t" = fuzz_accounts ] && printf '\000agent:x:1001:1001::/home/agent:/bin/sh\nsudo:x:27:agent,user\n' >"$corpus/seed"
      if "$fz/tests/fuzz/$t" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 "$corpus" >"$fz/$t.log" 2>&1; then
        echo "fuzz $t: ok ($(grep -c . "$fz/$t.log") log lines)"
        extra_pass=$((extra_pass + 1))
      else
        echo "fuzz $t: FAILED"; tail -n 40 "$fz/$t.log"; status=1
        extra_fail=$((extra_fail + 1))
      fi
    done
  else
    echo "fuzz build failed"; status=1; extra_fail=$((extra_fail + 1))
  fi
fi

# the C lines changed since .ci/format-base keep to .clang-format
if bash scripts/format-check.sh >"$build/format-check.txt" 2>&1; then
  echo "format of changed lines: ok"
  extra_pass=$((extra_pass + 1))
else
  echo "format of changed lines: FAILED"; tail -n 60 "$build/format-check.txt"
  status=1; extra_fail=$((extra_fail + 1))
fi

read -r mp _ mf _ ms _ < <(echo "$main_line" | tr -d ',')
total_pass=$((mp + extra_pass))
total_fail=$((mf + extra_fail))
[ "$total_fail" -gt 0 ] && status=1
echo "${total_pass} passed, ${total_fail} failed, ${ms} skipped"
exit $status
