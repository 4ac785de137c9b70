#!/usr/bin/env bash
# Builds container images from a root filesystem folder for the import
# tests: two layers (the second deletes /hello with a whiteout, empties
# /opq with an opaque marker and adds files), as
#   OUT/oci/        an OCI image layout folder
#   OUT/oci.tar     the same layout as one archive
#   OUT/docker.tar  a `docker save` archive (manifest.json, plain layer tars)
#   OUT/tampered/   the OCI layout with its second layer altered
# usage: mkimage.sh ROOTFS OUT
set -euo pipefail
rootfs=$1 out=$2
mkdir -p "$out"
work=$(mktemp -d "$out/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
tarc() { tar --numeric-owner --owner=0 --group=0 --sort=name -C "$1" -cf - .; }

mkdir "$work/l1" "$work/l2"
cp -a "$rootfs/." "$work/l1/"
echo hello > "$work/l1/hello"
mkdir "$work/l1/opq"; echo old > "$work/l1/opq/old"
: > "$work/l2/.wh.hello"
mkdir "$work/l2/opq"; : > "$work/l2/opq/.wh..wh..opq"; echo new > "$work/l2/opq/new"
echo layer2 > "$work/l2/added"
tarc "$work/l1" | gzip -n > "$work/layer1.tar.gz"
tarc "$work/l2" | gzip -n > "$work/layer2.tar.gz"
tarc "$work/l1" > "$work/layer1.tar"
tarc "$work/l2" > "$work/layer2.tar"

sha() { sha256sum "$1" | cut -d' ' -f1; }
size() { stat -c %s "$1"; }
oci=$out/oci
mkdir -p "$oci/blobs/sha256"
blob() { local h; h=$(sha "$1"); cp "$1" "$oci/blobs/sha256/$h"; echo "$h"; }
l1=$(blob "$work/layer1.tar.gz") l2=$(blob "$work/layer2.tar.gz")
printf '{"architecture":"amd64","os":"linux","config":{"User":"root","WorkingDir":"/opq","Env":["PATH=/bin","IMG=oci"]},"rootfs":{"type":"layers","diff_ids":[]}}' > "$work/config.json"
cfg=$(blob "$work/config.json")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s},{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
  "$cfg" "$(size "$work/config.json")" "$l1" "$(size "$work/layer1.tar.gz")" "$l2" "$(size "$work/layer2.tar.gz")" > "$work/manifest.json"
man=$(blob "$work/manifest.json")
printf '{"imageLayoutVersion":"1.0.0"}' > "$oci/oci-layout"
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"}}]}' \
  "$man" "$(size "$work/manifest.json")" > "$oci/index.json"
tar --numeric-owner -C "$oci" -cf "$out/oci.tar" .

d=$work/docker
mkdir -p "$d/l1" "$d/blobs"
cp "$work/layer1.tar" "$d/l1/layer.tar"
cp "$work/layer2.tar" "$d/blobs/l2.tar"
mkdir "$d/l2"; ln -s ../blobs/l2.tar "$d/l2/layer.tar"   # docker links shared layers
printf '{"architecture":"amd64","os":"linux","config":{"User":"1000","WorkingDir":"/tmp","Env":["IMG=docker"]}}' > "$d/cfg.json"
printf '[{"Config":"cfg.json","RepoTags":["tiny:latest"],"Layers":["l1/layer.tar","l2/layer.tar"]}]' > "$d/manifest.json"
tar --numeric-owner -C "$d" -cf "$out/docker.tar" .

cp -a "$oci" "$out/tampered"
printf 'x' >> "$out/tampered/blobs/sha256/$l2"
