#!/usr/bin/env bash
# Fetches the upstream source of a Debian source package (its orig
# tarball) from another Debian release, with a private apt configuration
# (the system's apt state and packages are never touched), unpacks it and
# prints the folder. Cached: a second call prints the folder at once.
#
# usage: scripts/debian-source.sh PACKAGE SUITE CACHE_DIR
#   e.g. debian-source.sh golang-github-kubernetes-cri-api sid /var/cache/abox-test/src
set -euo pipefail
pkg=$1 suite=$2 cache=$3
here=$(cd "$(dirname "$0")" && pwd)
say() { echo "debian-source: $*" >&2; }
out=$cache/$pkg-$suite
if [ -f "$out/.done" ]; then echo "$out/src"; exit 0; fi
. "$here/debian-mirror.sh"
mirror=$(debian_mirror) || { say "no Debian mirror in this machine's apt sources"; exit 1; }
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
rm -rf "$out"
work=$out/apt
mkdir -p "$work/etc/apt/sources.list.d" "$work/etc/apt/preferences.d" "$work/etc/apt/apt.conf.d" \
  "$work/var/lib/apt/lists/partial" "$work/var/cache/apt/archives/partial" "$work/var/lib/dpkg" "$out/dl"
: > "$work/var/lib/dpkg/status"
cat > "$work/etc/apt/sources.list.d/src.sources" <<EOS
Types: deb-src
URIs: $mirror
Suites: $suite
Components: main
Signed-By: $keyring
EOS
apt_private=(-o "Dir=$work" -o "Dir::State::status=$work/var/lib/dpkg/status" -o Debug::NoLocking=1)
say "fetching the source of $pkg ($suite) from $mirror"
apt-get "${apt_private[@]}" -qq update
# the archive may serve the tarballs and not the .dsc (apt then exits
# non-zero): what counts is the orig tarball
(cd "$out/dl" && apt-get "${apt_private[@]}" -qq source --download-only "$pkg" >/dev/null 2>&1) || true
orig=$(ls "$out"/dl/*.orig.tar.* 2>/dev/null | head -1)
[ -n "$orig" ] || { say "no orig tarball of $pkg came"; exit 1; }
mkdir -p "$out/src"
tar -xf "$orig" -C "$out/src" --strip-components=1
rm -rf "$work"
touch "$out/.done"
echo "$out/src"
