#!/bin/bash
# Packs what tools/gpu_check.sh needs on a GPU machine into .gpu/ (ignored by git): joule and
# test_cuda from build/, the repo's tools, and the Debian shared libraries they link (xz tarball),
# except glibc, libstdc++ and CUDA's own libraries, which the GPU machine has.
set -e
cd "$(dirname "$0")/.."
rm -rf .gpu && mkdir -p .gpu/lib
cp build/joule build/tests/test_cuda .gpu/
strip .gpu/joule .gpu/test_cuda
for f in $( (ldd build/joule; ldd build/tests/test_cuda) | awk '/=>/ {print $3}' | sort -u); do
  case "$(basename "$f")" in
    libc.so*|libm.so*|libpthread*|libdl.so*|librt.so*|libresolv*|libstdc++*|libgcc_s*|libcu*|libcudnn*|libnvidia*) ;;
    *) cp -L "$f" .gpu/lib/ ;;
  esac
done
tar cJf .gpu/libs.tar.xz -C .gpu lib && rm -rf .gpu/lib
du -sh .gpu/*
E=$(git rev-parse --git-path info/exclude); mkdir -p "$(dirname "$E")"; grep -qx '/.gpu/' "$E" 2>/dev/null || echo '/.gpu/' >> "$E"
