#!/usr/bin/env bash
# Installs CRIU >= 4 as abox's checkpointer into a private prefix, without
# touching the system's packages, and tells abox where it is.
#
# Debian 12's criu (3.17) cannot dump on kernels >= 6.13 (their vDSO
# layout is new to it). CRIU 4.1 from Debian 13 works: its packages and
# their dependencies (Debian 13's libc among them) are downloaded with a
# private apt configuration from this machine's Debian mirror, unpacked
# into PREFIX/root, and run through Debian 13's own dynamic loader by the
# wrapper PREFIX/criu. Nothing is installed into the system.
#
# usage: scripts/criu-setup.sh [PREFIX]     (default /usr/local/lib/abox-criu)
#   ABOX_ROOT       abox's state folder, where `checkpointer` is written
#                   (default /var/lib/abox)
#   ABOX_CRIU_SUITE Debian suite to take CRIU from (default trixie)
#   ABOX_CRIU_FORCE=1  rebuild even when PREFIX/criu already works
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-/usr/local/lib/abox-criu}
root_state=${ABOX_ROOT:-/var/lib/abox}
suite=${ABOX_CRIU_SUITE:-trixie}
say() { echo "criu-setup: $*" >&2; }

if [ "$(id -u)" != 0 ]; then say "run as root"; exit 1; fi
if [ "$(uname -m)" != x86_64 ]; then say "only x86_64 is supported"; exit 1; fi

tell_abox() {
  mkdir -p "$root_state"
  printf '%s\n' "$prefix/criu" > "$root_state/checkpointer.tmp"
  mv "$root_state/checkpointer.tmp" "$root_state/checkpointer"
  say "abox uses $prefix/criu (recorded in $root_state/checkpointer)"
}

# the shim must match this source (see contrib/criu/prlimit_shim.c)
shim_src=contrib/criu/prlimit_shim.c
if [ "${ABOX_CRIU_FORCE:-0}" != 1 ] && [ -x "$prefix/criu" ] && [ "$prefix/prlimit_shim.so" -nt "$shim_src" ] &&
   "$prefix/criu" check >/dev/null 2>&1; then
  say "$prefix/criu already works"
  tell_abox
  exit 0
fi

# the machine's Debian mirror
. scripts/debian-mirror.sh
mirror=$(debian_mirror) || { say "no Debian mirror in this machine's apt sources"; exit 1; }
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || { say "missing $keyring (apt-get install debian-archive-keyring)"; exit 1; }

work=$prefix/apt
rm -rf "$work" "$prefix/root.new"
mkdir -p "$work/etc/apt/sources.list.d" "$work/etc/apt/preferences.d" "$work/etc/apt/apt.conf.d" \
  "$work/var/lib/apt/lists/partial" "$work/var/cache/apt/archives/partial" "$work/var/lib/dpkg"
: > "$work/var/lib/dpkg/status"
cat > "$work/etc/apt/sources.list.d/criu.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $suite
Components: main
Signed-By: $keyring
EOF
apt_private=(-o "Dir=$work" -o "Dir::State::status=$work/var/lib/dpkg/status" -o Debug::NoLocking=1
  -o APT::Architecture=amd64 -o APT::Install-Recommends=0 -o APT::Install-Suggests=0)
say "downloading criu and its libraries from $mirror ($suite)"
apt-get "${apt_private[@]}" -qq update
apt-get "${apt_private[@]}" -qq -y install --download-only criu >/dev/null
mkdir -p "$prefix/root.new"
n=0
for deb in "$work"/var/cache/apt/archives/*.deb; do
  dpkg-deb -x "$deb" "$prefix/root.new"
  n=$((n + 1))
done
say "unpacked $n packages"
rm -rf "$prefix/root"
mv "$prefix/root.new" "$prefix/root"
rm -rf "$work"

loader=$prefix/root/usr/lib64/ld-linux-x86-64.so.2
[ -e "$loader" ] || loader=$prefix/root/lib64/ld-linux-x86-64.so.2
[ -e "$loader" ] || { say "no dynamic loader in the unpacked packages"; exit 1; }
libs=$prefix/root/usr/lib/x86_64-linux-gnu:$prefix/root/lib/x86_64-linux-gnu

cc -shared -fPIC -O2 -Wall -Wextra -o "$prefix/prlimit_shim.so" "$shim_src" -ldl
cat > "$prefix/criu.new" <<EOF
#!/bin/sh
# CRIU from Debian $suite, run with its own loader and libraries (see
# scripts/criu-setup.sh of abox); the shim reads other users' resource
# limits from /proc when the host withholds CAP_SYS_RESOURCE.
exec "$loader" --preload "$prefix/prlimit_shim.so" --library-path "$libs" "$prefix/root/usr/sbin/criu" "\$@"
EOF
chmod 755 "$prefix/criu.new"
mv "$prefix/criu.new" "$prefix/criu"
say "$("$prefix/criu" --version | head -n1)"
if ! out=$("$prefix/criu" check 2>&1); then
  say "criu check failed on this machine:"; echo "$out" | tail -n 5 >&2; exit 1
fi
tell_abox
