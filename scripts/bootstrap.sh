#!/usr/bin/env bash
# Installs what abox needs on Debian 12 (as root) and builds it into build/.
# Idempotent: re-running only rebuilds what changed.
#   ABOX_BUILD_DIR   build folder (default: build)
#   ABOX_SKIP_APT=1  do not call apt-get (packages already there)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential meson ninja-build pkg-config
  libseccomp-dev libcap-dev libmnl-dev libnftnl-dev libjson-c-dev libcriterion-dev libarchive-dev libmicrohttpd-dev libcurl4-openssl-dev zlib1g-dev
  musl-tools clang clang-format cmake gperf
  python3 strace gdb debootstrap
  iproute2 nftables conntrack openssl
  # a filesystem that cannot be mounted idmapped, for the tests of
  # sandboxes without a user namespace where that is so
  bindfs
  # the pull tests: a registry server, a client that pushes into it and
  # a static busybox for the images they build
  docker-registry skopeo busybox-static
  # the OCI runtime mode's peers: the configs they write must read; the
  # engine that drives it in its tests, its network plugins and the gRPC
  # tools its Kubernetes (CRI) client is generated with
  crun runc containerd containernetworking-plugins python3-grpcio python3-grpc-tools
  golang-github-gogo-protobuf-dev
  # the OCI runtime-tools validation suite, built offline from Debian's
  # Go and Go libraries (tests/oci/validation.py)
  golang-go golang-github-google-uuid-dev golang-github-hashicorp-go-multierror-dev
  golang-github-mrunalp-fileutils-dev golang-github-opencontainers-specs-dev golang-github-opencontainers-selinux-dev
  golang-github-sirupsen-logrus-dev golang-gocapability-dev golang-golang-x-sys-dev golang-github-urfave-cli-dev
  golang-github-cpuguy83-go-md2man-v2-dev golang-github-russross-blackfriday-v2-dev
)

if [ "${ABOX_SKIP_APT:-0}" != 1 ]; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "bootstrap: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

build=${ABOX_BUILD_DIR:-build}
# json-c and libseccomp for the musl CLI (see scripts/musl-deps.sh); without
# them the CLI is built on glibc, which starts slower
fresh_deps=0
if [ ! -f .deps/musl/lib/libseccomp.a ] || [ ! -f .deps/musl/lib/libjson-c.a ]; then
  if bash scripts/musl-deps.sh; then
    fresh_deps=1
  else
    echo "bootstrap: the musl libraries could not be built; the CLI is built on glibc" >&2
  fi
fi
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" >/dev/null
elif [ "$fresh_deps" = 1 ]; then
  meson setup --reconfigure "$build" >/dev/null
fi
ninja -C "$build" >/dev/null
echo "bootstrap: built $build/abox"
