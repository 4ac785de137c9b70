#!/usr/bin/env bash
# Seeds for fuzz_unpack: the first byte picks the mode (0 rootfs tar,
# 1 image layer, 2 OCI index.json, 3 docker manifest.json).
set -euo pipefail
out=$1
mkdir -p "$out"
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
mkdir -p "$w/r/etc" "$w/r/opq"
echo hi > "$w/r/etc/f"; ln -s /etc/passwd "$w/r/lnk"; ln "$w/r/etc/f" "$w/r/hl"
: > "$w/r/.wh.gone"; : > "$w/r/opq/.wh..wh..opq"
tar --numeric-owner -C "$w/r" -cf "$w/r.tar" .
gzip -nc "$w/r.tar" > "$w/r.tar.gz"
{ printf '\0'; cat "$w/r.tar"; } > "$out/seed-tar"
{ printf '\0'; cat "$w/r.tar.gz"; } > "$out/seed-tgz"
{ printf '\1'; cat "$w/r.tar"; } > "$out/seed-layer"
h=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
printf '\2{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"sha256:%s","platform":{"os":"linux","architecture":"amd64"}}]}' $h > "$out/seed-index"
printf '\3[{"Config":"c.json","Layers":["a/layer.tar","../x"]}]' > "$out/seed-docker"
