#!/bin/bash
# Packs what tools/gpu_check.sh needs on a GPU machine into .gpu/ (ignored by git): binaries from
# build/ (default: joule and tests/test_cuda; or those named, e.g. tests/test_onnx), the Debian
# shared libraries they link (xz tarball) except glibc, libstdc++ and CUDA's own, which the GPU
# machine has, and with ONNX_DATA=1 the libonnx-testdata suites (onnxdata.tar.xz).
#   tools/gpu_pack.sh [BINARY...]
set -e
cd "$(dirname "$0")/.."
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=(joule tests/test_cuda)
rm -rf .gpu && mkdir -p .gpu/lib
for b in "${bins[@]}"; do cp "build/$b" .gpu/ && strip ".gpu/$(basename "$b")"; done
for f in $(for b in "${bins[@]}"; do ldd "build/$b"; done | awk '/=>/ {print $3}' | sort -u); do
  case "$(basename "$f")" in
    libc.so*|libm.so*|libpthread*|libdl.so*|librt.so*|libresolv*|libstdc++*|libgcc_s*|libcu*|libcudnn*|libnvidia*) ;;
    *) cp -L "$f" .gpu/lib/ ;;
  esac
done
tar cJf .gpu/libs.tar.xz -C .gpu lib && rm -rf .gpu/lib
[ "${ONNX_DATA:-0}" = 1 ] && tar cJf .gpu/onnxdata.tar.xz -C /usr/share/libonnx-testdata data/node data/simple data/pytorch-converted data/pytorch-operator
du -sh .gpu/*
E=$(git rev-parse --git-path info/exclude); mkdir -p "$(dirname "$E")"; grep -qx '/.gpu/' "$E" 2>/dev/null || echo '/.gpu/' >> "$E"
