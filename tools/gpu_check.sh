#!/bin/bash
# joule's GPU check, run on a GPU machine from the repository root over a package made by
# tools/gpu_pack.sh (.gpu/: joule, test_cuda and the Debian libraries they link). PyTorch (CUDA)
# there is the peer; results go to $OUT (or /tmp/gpu_out).
#   tools/gpu_check.sh               the models: correctness, latency, algorithms, energy
#   tools/gpu_check.sh conformance   the ONNX conformance suites on the GPU (pack: ONNX_DATA=1
#                                    tools/gpu_pack.sh tests/test_onnx)
#   tools/gpu_check.sh auto          test_cuda, then --algo auto against guess (a short check)
#   tools/gpu_check.sh half          test_cuda, then --gpu-math fp16 / bf16: outputs against
#                                    PyTorch FP32, latency against PyTorch FP16 / BF16 eager
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu_check.log") 2>&1
cd .gpu || exit 2
[ -d lib ] || tar xJf libs.tar.xz
libdir() { dirname "$(find /opt /usr/local /usr/lib -name "$1" 2>/dev/null | head -1)"; }
export LD_LIBRARY_PATH=$PWD/lib:$(libdir libcudnn.so.9):$(libdir libcublas.so.13):$(libdir libcublasLt.so.13):$(libdir libnvidia-ml.so.1)
export JOULE_TUNING_CACHE=/tmp/joule_tuning.json PYTHONUNBUFFERED=1
J=$PWD/joule
if [ "$1" = conformance ]; then
  [ -d data ] || tar xJf onnxdata.tar.xz
  JOULE_ONNX_TESTDATA=$PWD/data JOULE_CONFORMANCE_DEVICE=cuda timeout 300 ./test_onnx --gtest_filter='Conformance.*' > "$OUT/conformance.log" 2>&1
  grep -E "conformance:|on cuda|FAILED|Failure" -A2 "$OUT/conformance.log" | grep -v "^--$" | head -150
  exit 0
fi
M=/tmp/gpu_models
step() { echo; echo "=== $* ($(date +%T))"; }
bench() {  # MODEL BATCH ARGS...: the median of joule bench
  local m=$1 b=$2; shift 2
  echo -n "joule $m b$b $*: "
  timeout 120 $J bench $M/$m.onnx -i $M/${m}_in$b.npy --device cuda --runs 50 --warmup 10 --format json "$@" |
    python3 -c "import json,sys; l=json.load(sys.stdin)['latency_ms']; print('median %.3f ms  min %.3f  p90 %.3f  cv %.3f' % (l['median'], l['min'], l['p90'], l['cv']))"
}
if [ "$1" = half ]; then
  step test_cuda
  timeout 90 ./test_cuda --gtest_brief=1 --gtest_filter=-CudaCli.* 2>&1 | grep -v "^\[" | tail -40
  step export
  timeout 150 python3 ../tools/gpu_torch.py export $M 2>&1 | grep -v Warning
  step plan
  for math in fp16 bf16; do
    timeout 60 $J info $M/vit_b_16.onnx --plan --device cuda --gpu-math $math --input-shape input=32,3,224,224 2>&1 | grep -E "^device|^algorithms|fallback|cpu" | head -8
  done
  step correctness
  for math in fp32 fp16 bf16; do for m in resnet50 mobilenet_v2 vit_b_16; do for b in 1 32; do
    timeout 60 $J run $M/$m.onnx -i $M/${m}_in$b.npy -o /tmp/jo_$math/${m}_b$b --device cuda --gpu-math $math 2>&1 >/dev/null | tail -3
  done; done; echo "-- $math"; python3 ../tools/gpu_torch.py compare $M /tmp/jo_$math $math; done
  step "fp16 with the first convolution and the classifier kept in float32 (--gpu-fp32)"
  K=/conv1/Conv,/fc/Gemm
  for b in 1 32; do timeout 60 $J run $M/resnet50.onnx -i $M/resnet50_in$b.npy -o /tmp/jo_keep/resnet50_b$b --device cuda --gpu-math fp16 --gpu-fp32 $K 2>&1 >/dev/null | tail -3; done
  python3 ../tools/gpu_torch.py compare $M /tmp/jo_keep fp16 | grep resnet50
  bench resnet50 32 --gpu-math fp16 --gpu-fp32 $K
  step latency
  for m in resnet50 mobilenet_v2 vit_b_16; do for b in 1 32; do for math in fp16 bf16; do bench $m $b --gpu-math $math; done; done; done
  [ "$TORCH_TIMES" != 0 ] && timeout 150 python3 ../tools/gpu_torch.py time $M fp16,bf16
  [ -n "$PROFILES" ] && for m in vit_b_16 mobilenet_v2; do
    timeout 60 $J profile $M/$m.onnx -i $M/${m}_in32.npy --device cuda --gpu-math fp16 --runs 10 --top 12 2>&1 | sed -n '/^node/,/cover/p'
  done
  exit 0
fi
if [ "$1" = auto ]; then
  timeout 60 ./test_cuda --gtest_brief=1 --gtest_filter=-CudaCli.* 2>&1 | tail -4
  timeout 100 python3 ../tools/gpu_torch.py export $M 2>&1 | grep -v Warning
  for m in resnet50 mobilenet_v2; do for b in 1 32; do bench $m $b; bench $m $b --algo auto; done; done
  exit 0
fi
step devices
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
$J devices; $J devices --format json > "$OUT/devices.json"
step test_cuda
timeout 120 ./test_cuda --gtest_brief=1 --gtest_filter=-CudaCli.* 2>&1 | tail -30  # (CudaCli runs build/joule)
step export
timeout 150 python3 ../tools/gpu_torch.py export $M 2>&1 | grep -v Warning || exit 1
step correctness
for m in resnet50 mobilenet_v2 vit_b_16; do for b in 1 32; do for math in fp32 tf32; do
  timeout 60 $J run $M/$m.onnx -i $M/${m}_in$b.npy -o /tmp/jo_$math/${m}_b$b --device cuda --gpu-math $math >/dev/null || echo "joule run $m b$b $math failed"
done; done; done
echo "-- fp32"; python3 ../tools/gpu_torch.py compare $M /tmp/jo_fp32 fp32
echo "-- tf32"; python3 ../tools/gpu_torch.py compare $M /tmp/jo_tf32 tf32
step plan
$J info $M/vit_b_16.onnx --plan --device cuda --input-shape input=32,3,224,224 | grep -E "^device|^algorithms" 
$J info $M/mobilenet_v2.onnx --plan --device cuda --input-shape input=32,3,224,224 --format json > /tmp/mb.json && python3 -c "
import json; p=json.load(open('/tmp/mb.json'))['plan']; print(p['algorithms'], p.get('cuda_graphs'))"
step latency
for m in resnet50 mobilenet_v2 vit_b_16; do for b in 1 32; do for math in fp32 tf32; do bench $m $b --gpu-math $math; done; done; done
JOULE_CUDA_GRAPHS=0 bench resnet50 1 --gpu-math fp32
JOULE_CUDA_GRAPHS=0 bench mobilenet_v2 1 --gpu-math fp32
for m in resnet50 mobilenet_v2; do for b in 1 32; do bench $m $b --gpu-math fp32 --algo auto; done; done
timeout 240 python3 ../tools/gpu_torch.py time $M
step algorithms
timeout 120 $J info $M/mobilenet_v2.onnx --plan --device cuda --algo auto --input-shape input=32,3,224,224 --format json > "$OUT/mobilenet_v2_b32_auto_plan.json" || echo "auto plan failed"
step profiles
timeout 100 $J profile $M/mobilenet_v2.onnx -i $M/mobilenet_v2_in32.npy --device cuda --runs 10 --top 15 2>&1 | sed -n '/^node/,/cover/p'
timeout 100 $J profile $M/vit_b_16.onnx -i $M/vit_b_16_in32.npy --device cuda --runs 10 --top 20 2>&1 | sed -n '/^node/,/cover/p'
step profile+energy
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv
timeout 200 $J profile $M/resnet50.onnx -i $M/resnet50_in32.npy --device cuda --energy nvml --energy-window 0.5 --runs 30 --top 12 -o "$OUT/profile_resnet50_b32" 2>&1 | tail -42
timeout 200 $J profile $M/resnet50.onnx -i $M/resnet50_in32.npy --device cuda --gpu-math fp16 --energy nvml --energy-window 0.5 --runs 30 --top 0 -o "$OUT/profile_resnet50_b32_fp16" 2>&1 | grep -A8 "^energy"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv
