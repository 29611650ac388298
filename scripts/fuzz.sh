#!/usr/bin/env bash
# `make fuzz`: runs every libFuzzer target of the sanitizer build for SECONDS each, one after the
# other, and prints a table (executions, coverage, corpus, findings). Corpora grow in
# BUILD/fuzz/corpus/NAME across runs, seeded from tests/fuzz/seeds/NAME (and the ONNX conformance
# suite for the ONNX readers); a finding is saved to BUILD/fuzz/findings/NAME/ — fix it, then copy
# the input to tests/fuzz/regressions/NAME/, where every `make test` replays it.
# Usage: scripts/fuzz.sh BUILD SECONDS [TARGET...]
# FUZZ_TIMEOUT (seconds, default 30): one input running longer is a finding (a hang). Raise it when
# the targets share the cores with other work: quant_config's entropy calibration takes 0.1-0.3 s
# per input in a release build and over 30 s under ASan beside two other fuzzers on 2 cores.
set -uo pipefail
build=$(cd "$1" && pwd) seconds=$2
shift 2
root="$(cd "$(dirname "$0")/.." && pwd)"
testdata=/usr/share/libonnx-testdata/data/node
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$build"/tests/*_fuzz; do targets+=("$(basename "$f" _fuzz)"); done
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
printf '%-16s %8s %12s %8s %8s %8s %8s %s\n' target seconds execs exec/s cov features corpus findings
failed=0
for t in "${targets[@]}"; do
  bin="$build/tests/${t}_fuzz"
  [ -x "$bin" ] || { echo "$t: no $bin (build the sanitizer build: make fuzz)" >&2; failed=1; continue; }
  corpus="$build/fuzz/corpus/$t" findings="$build/fuzz/findings/$t" log="$build/fuzz/logs/$t.log"
  mkdir -p "$corpus" "$findings" "$(dirname "$log")"
  seeds=("$root/tests/fuzz/seeds/$t")
  [ -d "$root/tests/fuzz/regressions/$t" ] && seeds+=("$root/tests/fuzz/regressions/$t")
  if [ "$t" = onnx_model ] && [ -d "$testdata" ]; then seeds+=("$build/fuzz/conformance_models"); fi
  if [ "$t" = tensor_pb ] && [ -d "$testdata" ]; then seeds+=("$build/fuzz/conformance_tensors"); fi
  if [ "$t" = onnx_model ] || [ "$t" = tensor_pb ]; then
    # The conformance suite's files, flattened (libFuzzer reads seed folders one level deep).
    mkdir -p "$build/fuzz/conformance_models" "$build/fuzz/conformance_tensors"
    for d in "$testdata"/*/; do
      n=$(basename "$d")
      [ -f "$d/model.onnx" ] && ln -sf "$d/model.onnx" "$build/fuzz/conformance_models/$n.onnx"
      for p in "$d"/test_data_set_0/*.pb; do [ -f "$p" ] && ln -sf "$p" "$build/fuzz/conformance_tensors/${n}_$(basename "$p")"; done
    done
  fi
  before=$(ls "$findings" | wc -l)
  start=$(date +%s)
  (cd "$findings" && "$bin" -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-30}" -rss_limit_mb=2560 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$findings/" "$corpus" "${seeds[@]}") >"$log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  eps=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  n=$(ls "$corpus" | wc -l)
  new=$(( $(ls "$findings" | wc -l) - before ))
  printf '%-16s %8s %12s %8s %8s %8s %8s %s\n' "$t" "$took" "${execs:-?}" "${eps:-?}" "${cov:-?}" "${ft:-?}" "$n" \
    "$([ $rc -eq 0 ] && echo 0 || echo "$new (rc $rc, see $log)")"
  [ $rc -eq 0 ] || failed=1
done
exit $failed
