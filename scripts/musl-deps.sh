#!/usr/bin/env bash
# Builds json-c and libseccomp as static musl archives into a private
# prefix (default: .deps/musl), so that the CLI can be linked against musl
# (see meson.build: its start-up skips glibc's cpuid probes, which trap to
# the hypervisor on virtual machines: ≈ 0.2 ms instead of ≈ 0.5 per
# command). The sources are Debian's own source packages of the versions
# the system has, fetched by apt with a private configuration made from
# the system's package sources (their "deb" entries read as "deb-src");
# the system's apt state is not touched.
# Idempotent: does nothing when the prefix is complete. Exits non-zero on
# failure; meson then builds the CLI on glibc.
#   $1  prefix (default: .deps/musl in the source tree)
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(realpath -m "${1:-.deps/musl}")
if [ -f "$prefix/lib/libjson-c.a" ] && [ -f "$prefix/lib/libseccomp.a" ]; then
  exit 0
fi
for t in musl-gcc cmake gperf apt-get; do
  command -v "$t" >/dev/null || { echo "musl-deps: $t is missing" >&2; exit 1; }
done

work=$(mktemp -d /tmp/abox-musl-deps.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/apt/parts" "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/src"

# deb-src entries for every deb entry of the system, both file formats
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && sed -E 's/^Types:.*/Types: deb-src/' "$f" > "$work/apt/parts/$(basename "$f")"
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] && sed -nE 's/^deb(\s)/deb-src\1/p' "$f" > "$work/apt/parts/$(basename "$f")"
done
apt=(apt-get -q -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$work/apt/parts"
     -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache=$work/apt/cache"
     -o APT::Sandbox::User=root)
echo "musl-deps: fetching the json-c and libseccomp sources"
"${apt[@]}" update >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; exit 1; }
(cd "$work/src" && "${apt[@]}" source --download-only json-c libseccomp >>"$work/apt.log" 2>&1) ||
  { cat "$work/apt.log" >&2; exit 1; }
(cd "$work/src" && for t in *.orig.tar.*; do case $t in *.asc) ;; *) tar xf "$t" ;; esac; done)

# linux's uapi headers, which musl's include path leaves out
mkdir -p "$work/kh"
ln -s /usr/include/linux "$work/kh/linux"
ln -s /usr/include/asm-generic "$work/kh/asm-generic"
ln -s "/usr/include/$(gcc -dumpmachine)/asm" "$work/kh/asm"

echo "musl-deps: building json-c"
jc=$(find "$work/src" -maxdepth 1 -type d -name 'json-c-*' | head -1)
mkdir -p "$work/jc"
(cd "$work/jc" && CC=musl-gcc cmake "$jc" -DBUILD_SHARED_LIBS=OFF -DBUILD_STATIC_LIBS=ON \
   -DCMAKE_BUILD_TYPE=Release -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DDISABLE_EXTRA_LIBS=ON \
   -DBUILD_TESTING=OFF -DCMAKE_INSTALL_PREFIX="$prefix" && make -j"$(nproc)" install) \
  >"$work/json-c.log" 2>&1 || { tail -30 "$work/json-c.log" >&2; exit 1; }

echo "musl-deps: building libseccomp"
sc=$(find "$work/src" -maxdepth 1 -type d -name 'libseccomp-*' | head -1)
(cd "$sc" && CC="musl-gcc -idirafter $work/kh" ./configure --prefix="$prefix" --enable-static \
   --disable-shared --with-pic && make -j"$(nproc)" -C src install && make -C include install) \
  >"$work/libseccomp.log" 2>&1 || { tail -30 "$work/libseccomp.log" >&2; exit 1; }
echo "musl-deps: ready in $prefix"
