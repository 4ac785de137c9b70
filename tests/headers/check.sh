#!/usr/bin/env bash
# Every public header compiles alone, as strict C99 and as C++ (callers
# include one part without the others, and from C++), with every warning
# an error. Output is TAP.
#   usage: check.sh SOURCE_DIR
set -u
inc=$1/include
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
headers=("$inc"/abox/*.h)
echo "1..$(( ${#headers[@]} * 2 ))"
n=0
for h in "${headers[@]}"; do
  name=abox/$(basename "$h")
  printf '#include <%s>\nint abox_header_test_%s;\n' "$name" "$(basename "$h" .h)" >"$tmp/t.c"
  cp "$tmp/t.c" "$tmp/t.cc"
  n=$((n + 1))
  if out=$(cc -std=c99 -pedantic -Wall -Wextra -Werror -I"$inc" -c "$tmp/t.c" -o "$tmp/t.o" 2>&1); then
    echo "ok $n - $name alone as C99 -pedantic"
  else
    echo "not ok $n - $name alone as C99 -pedantic"; printf '%s\n' "$out" | sed 's/^/# /'
  fi
  n=$((n + 1))
  if out=$(c++ -std=c++11 -pedantic -Wall -Wextra -Werror -I"$inc" -c "$tmp/t.cc" -o "$tmp/t.o" 2>&1); then
    echo "ok $n - $name alone as C++11 -pedantic"
  else
    echo "not ok $n - $name alone as C++11 -pedantic"; printf '%s\n' "$out" | sed 's/^/# /'
  fi
done
