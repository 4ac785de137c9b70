#!/bin/sh
# Prints a gcc specs file for static-pie binaries on musl, made from the
# one musl-gcc uses: its start file Scrt1.o becomes rcrt1.o (which
# relocates the binary itself) and the link needs no dynamic loader. The
# CLI is linked this way: no loader to start, and ASLR kept.
set -eu
specs=$(sed -n 's/.*-specs "\{0,1\}\([^" ]*\)"\{0,1\}.*/\1/p' "$(command -v musl-gcc)" | head -1)
[ -f "$specs" ] || { echo "musl-specs: no specs file found in musl-gcc" >&2; exit 1; }
dir=$(dirname "$specs")
[ -f "$dir/rcrt1.o" ] || { echo "musl-specs: $dir/rcrt1.o is missing (a musl without static-pie)" >&2; exit 1; }
awk -v dir="$dir" '
  prev == "*startfile:" { print dir "/rcrt1.o " dir "/crti.o crtbeginS.o%s"; prev = ""; next }
  prev == "*link:" { print "-nostdlib -static -pie --no-dynamic-linker -z text"; prev = ""; next }
  { print; prev = $0 }
' "$specs"
