#!/bin/sh
# Prints a header naming this build's seccomp compiler: a hash of its
# sources (meson passes them as arguments). Cached programs are keyed by it.
set -e
rev=$(cat "$@" | sha256sum | cut -c1-16)
printf '#define ABOX_SECCOMP_REV "%s"\n' "$rev"
