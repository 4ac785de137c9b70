#!/usr/bin/env bash
# Checks that the C lines changed since the format base are laid out as
# .clang-format says. The tree is not mass-formatted (that would bury
# `git blame`): only lines a change touches are held to the style, so the
# base is the commit from which the rule holds (.ci/format-base).
# Run from the top of a git checkout:
#   scripts/format-check.sh [BASE]   prints what `git clang-format BASE`
#                                    would change; exit 1 if anything
# Uncommitted changes count too. Fix with `git clang-format BASE`.
set -uo pipefail
base=${1:-$(cat .ci/format-base 2>/dev/null)}
if [ -z "$base" ]; then
  echo "format-check: no base commit given and no .ci/format-base" >&2
  exit 2
fi
if ! command -v git-clang-format >/dev/null || ! command -v clang-format >/dev/null; then
  echo "format-check: git-clang-format and clang-format are needed (Debian: clang-format)" >&2
  exit 2
fi
if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
  echo "format-check: base $base is not in this clone's history (a shallow clone?)" >&2
  exit 2
fi
out=$(git clang-format --diff --extensions c,h "$base" -- 2>&1)
rc=$?
case "$out" in
  "no modified files to format"*|"clang-format did not modify any files"*|"")
    echo "format-check: the lines changed since ${base:0:12} keep to .clang-format"
    exit 0 ;;
esac
if [ $rc -ne 0 ] && ! printf '%s\n' "$out" | grep -q '^diff '; then
  printf '%s\n' "$out" >&2
  echo "format-check: git clang-format failed" >&2
  exit 2
fi
printf '%s\n' "$out"
echo "format-check: lines changed since ${base:0:12} differ from .clang-format (fix: git clang-format $base)" >&2
exit 1
