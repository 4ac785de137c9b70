#!/usr/bin/env bash
# Prints this machine's Debian mirror: the first non-security source apt
# uses (deb822 .sources files first, then sources.list). Sourced or run by
# the scripts that fetch from other Debian releases with a private apt
# configuration (criu-setup.sh, debian-source.sh).
debian_mirror() {
  local f m=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    m=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f")
    [ -n "$m" ] && break
  done
  if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
    m=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^(https?|file):/ && $i !~ /security/) { print $i; exit } }' /etc/apt/sources.list)
  fi
  [ -n "$m" ] && printf '%s\n' "$m"
}
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  debian_mirror || { echo "no Debian mirror in this machine's apt sources" >&2; exit 1; }
fi
