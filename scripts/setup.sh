#!/usr/bin/env bash
# Installs every Debian package joule needs. Idempotent: does nothing (quietly) when all are present.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler
  libdnnl-dev libopenblas-dev libfftw3-dev
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libfmt-dev libsqlite3-dev
  liblmdb-dev libturbojpeg0-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  graphviz
  python3 python3-numpy python3-torch python3-torchvision python3-onnx
  libonnx-testdata dataset-fashion-mnist
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
