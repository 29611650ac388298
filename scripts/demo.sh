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
echo
fm=/usr/share/datasets/fashion-mnist
echo "== joule quantize: W8A8 (examples/quant/w8a8.yaml), percentile calibration on 256 training images,"
echo "   FP32 vs INT8 accuracy on the 10 000 test images -> $run_dir/fashion_cnn_w8a8.onnx"
"$joule" quantize default --config "$here/examples/quant/w8a8.yaml" --calib "$fm:train" --calib-samples 256 \
  --eval "$fm:test" -o "$run_dir/fashion_cnn_w8a8.onnx" --quiet | sed -n '/^accuracy/,$p'
echo
echo "== joule compare: FP32, W8A8 (integer kernels) and W4A8 side by side on 2 000 test images:"
echo "   accuracy, latency, energy (estimated, named model) and weight size"
"$joule" compare default --configs "$here/examples/quant/w8a8.yaml,$here/examples/quant/w4a8.yaml" \
  --calib "$fm:train" --calib-samples 256 --eval "$fm:test" --eval-samples 2000 --energy estimate --quiet
echo
echo "== joule sensitivity: the five most sensitive layers (isolated, W8A8), picture -> $run_dir/sensitivity"
"$joule" sensitivity default --config "$here/examples/quant/w8a8.yaml" --calib "$fm:train" --calib-samples 256 \
  --eval "$fm:test" --samples 1000 --mode isolated --top 5 -o "$run_dir/sensitivity" --quiet
echo
echo "== Python: examples/python/quickstart.py (the same workflows from import joule)"
PYTHONPATH="$here/$build/python" /usr/bin/python3 "$here/examples/python/quickstart.py" "$run_dir/python"
echo
echo "== joule train: 300 steps from random weights (AdamW, batch 64), validated on 2 000 test images"
"$joule" train default --init random --data "$fm:train" --val "$fm:test" --val-samples 2000 --steps 300 \
  --batch 64 --optimizer adamw --lr 3e-3 --hflip --threads 2 -o "$run_dir/fashion_cnn_trained.onnx" --quiet
echo
echo "== joule qat: W4A4 with learned step sizes (LSQ), one epoch: FP32, post-training and QAT top-1 on the 10 000 test images"
"$joule" qat default --config "$here/examples/quant/w4a4.yaml" --data "$fm:train" --eval "$fm:test" \
  --epochs 1 --batch 128 --optimizer adamw --lr 2e-4 --weight-decay 0 --schedule cosine --hflip --threads 2 \
  -o "$run_dir/fashion_cnn_w4a4_qat.onnx" --quiet
