#!/usr/bin/env bash
# scripts/format-check.sh in a scratch repository: a clean change passes,
# a misformatted changed line is caught (and named), an untouched
# misformatted line is not held against the change, a missing base is an
# error of its own. Uses the tree's .clang-format.
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail=0
echo "1..5"
check() { # name, expected exit code, [base]
  local name=$1 want=$2 base=${3:-$base}
  (cd "$t" && bash "$src/scripts/format-check.sh" "$base") >"$t/.out" 2>&1
  local got=$?
  if [ "$got" = "$want" ]; then echo "ok - $name"; else echo "not ok - $name (exit $got, wanted $want)"; cat "$t/.out"; fail=1; fi
}
cd "$t" && git init -q && git config user.email t@example.invalid && git config user.name t
cp "$src/.clang-format" .
# an old line that does not keep to the style: not this change's business
printf 'int  old_line(void) { return 1; }\n' > a.c
git add -A && git commit -qm base
base=$(git rev-parse HEAD)
check "nothing changed" 0
printf '\nint new_line(void)\n{\n\treturn 2;\n}\n' >> a.c
check "a formatted addition" 0
git commit -qam formatted
printf 'int   bad(int a,int b){return a+b;}\n' >> a.c
check "a misformatted addition" 1
if grep -q 'bad' "$t/.out"; then echo "ok - the diff names the line"; else echo "not ok - the diff names the line"; fail=1; fi
git checkout -q a.c
check "a missing base" 2 0123456789abcdef0123456789abcdef01234567
exit $fail
