#!/usr/bin/env bash
# Seeds for fuzz_pull: the first byte picks the parser (0 image reference,
# 1 WWW-Authenticate challenge, 2 token answer, 3 docker config, 4 manifest).
set -euo pipefail
out=$1
mkdir -p "$out"
h=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
printf '\0ghcr.io/o/r:v1@sha256:%s' $h > "$out/seed-ref"
printf '\0localhost:5000/a/b_c__d-e.f:tag' > "$out/seed-ref2"
printf '\1Bearer realm="https://auth.example/token",service="reg",scope="repository:x:pull"' > "$out/seed-bearer"
printf '\1Basic realm="r"' > "$out/seed-basic"
printf '\2{"token":"abc","access_token":"def","expires_in":300}' > "$out/seed-token"
printf '\3{"auths":{"localhost:5000":{"auth":"dTpw"},"x":{"username":"u","password":"p"}},"credHelpers":{"a":"b"}}' > "$out/seed-config"
printf '\4{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":10},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":146}]}' $h $h > "$out/seed-manifest"
printf '\4{"schemaVersion":2,"manifests":[{"digest":"sha256:%s","size":5,"platform":{"os":"linux","architecture":"amd64"}},{"digest":"sha256:%s","size":6,"platform":{"os":"linux","architecture":"arm64","variant":"v8"}}]}' $h $h > "$out/seed-index"
