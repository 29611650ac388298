#!/usr/bin/env bash
# The main job on the bundled example model (a CNN trained on Fashion-MNIST):
# summary, one run with outputs written, and a timing.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
joule="$here/$build/joule"
run_dir="$here/runs/demo"
mkdir -p "$run_dir"
echo "== joule info (bundled Fashion-MNIST CNN)"
"$joule" info default
echo
echo "== joule run: one test image, outputs to $run_dir"
"$joule" run default -i "$here/models/fashion_cnn_input.npy" -o "$run_dir" --repeat 50 --threads 1
echo
echo "== joule graph -> $run_dir/fashion_cnn.svg"
"$joule" graph default -o "$run_dir/fashion_cnn.svg"
echo
echo "== joule profile: per-layer latency, attribution, op types -> $run_dir/profile"
if [ -f "$here/models/fashion_cnn.onnx" ]; then
  "$joule" profile default --top 10 -o "$run_dir/profile" --threads 1
else
  echo "(skipped: models/fashion_cnn.onnx is not there)"
fi
