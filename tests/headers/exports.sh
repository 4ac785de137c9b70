#!/usr/bin/env bash
# libabox exports exactly the symbols of tests/headers/exports.txt: a
# public function that disappears (or an internal one that leaks out) is
# an ABI change, made on purpose by editing that list. Output is TAP.
#   usage: exports.sh LIBABOX.so SOURCE_DIR
set -u
want=$2/tests/headers/exports.txt
got=$(nm -D --defined-only "$1" | awk '$3 ~ /^[a-zA-Z_]/ && $3 !~ /^(_init|_fini|ABOX_)/ {print $3}' | sort)
echo "1..2"
missing=$(comm -23 "$want" <(printf '%s\n' "$got"))
extra=$(comm -13 "$want" <(printf '%s\n' "$got"))
if [ -z "$missing" ]; then echo "ok 1 - every listed symbol is exported"; else
  echo "not ok 1 - symbols gone from libabox"; printf '# %s\n' $missing; fi
if [ -z "$extra" ]; then echo "ok 2 - nothing else is exported"; else
  echo "not ok 2 - exported but not listed (public: add to exports.txt; internal: hide it)"; printf '# %s\n' $extra; fi
