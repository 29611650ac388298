#!/usr/bin/env bash
# Installs every Debian package joule needs. Idempotent: does nothing (quietly) when all are present.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache
  clang libclang-rt-dev libomp-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libdnnl-dev libopenblas-dev libfftw3-dev
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libfmt-dev libsqlite3-dev libxgboost-dev libpagmo-dev libcpp-httplib-dev sqlite3 libpq-dev postgresql slurm-wlm munge
  liblmdb-dev libturbojpeg0-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  graphviz nodejs chromium
  python3 python3-dev python3-numpy python3-torch python3-torchvision python3-onnx
  pybind11-dev python3-pytest python3-pandas
  libopenmpi-dev openmpi-bin
  libonnx-testdata dataset-fashion-mnist
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ONNX Runtime (npm onnxruntime-node, pinned in tools/peers/package-lock.json): the peer the
# QDQ export is checked in and benchmarked against. Its install script would download CUDA
# parts; the CPU library is in the package, so scripts are skipped.
# (The image's Node.js build ships npm; Debian's own nodejs needs the separate npm package.)
if ! command -v npm >/dev/null; then
  $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
peers="$(cd "$(dirname "$0")/../tools/peers" && pwd)"
if [ ! -f "$peers/node_modules/onnxruntime-node/package.json" ] || [ ! -f "$peers/node_modules/playwright-core/package.json" ]; then
  echo "setup: installing onnxruntime-node and playwright-core (npm) in tools/peers" >&2
  (cd "$peers" && npm ci --ignore-scripts --no-audit --no-fund --silent >/dev/null)
fi
