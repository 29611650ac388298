#pragma once
// --precision: the arithmetic Conv, MatMul and Gemm run in.
//   fp32 (default)  float32 kernels, chosen by the algorithm policy.
//   bf16            bfloat16 kernels (onednn_bf16: oneDNN's, AVX512-BF16 or AMX-BF16;
//                   winograd_bf16 / winograd_f2_bf16: joule's Winograd with its GEMMs in bf16,
//                   AVX512-BF16; refused with a one-line reason on CPUs without): operands
//                   rounded to bfloat16, products summed in float32, bias, post-ops and outputs
//                   float32; every other op stays float32. Layers no bf16 kernel supports run
//                   float32 under the algorithm policy.
// The fallback ladder (bf16 -> fp32): prepare() runs the bf16 plan once on a check input and
// computes, for every layer on a bf16 kernel, the same layer's float32 kernel on the same inputs;
// a layer whose isolated output SQNR falls below the threshold stays float32. A layer on
// winograd_bf16 (F(4x4), whose output transform magnifies the bf16 rounding) below the threshold
// first tries winograd_f2_bf16 (F(2x2), ~50 dB), checked again; float32 if that falls short too.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "joule/kernels/select.h"
#include "joule/runtime/session.h"

namespace joule::api {

// True when the session chose a bf16 kernel (onednn_bf16, winograd_bf16, winograd_f2_bf16) for node `n`.
bool on_bf16_kernel(const ir::Node& n);

// BadInput unless `precision` is fp32 or bf16, and for bf16 on a CPU without native bfloat16
// products (the reason names the CPU).
void check_precision(const std::string& precision);

// What --precision changes in `algo`: bf16 lets the policies rank the bf16 algorithms (conv,
// matmul, gemm) with the float32 ones, so a layer runs bf16 unless a float32 algorithm is
// estimated (guess) or measured (auto) faster. Rules naming algorithms are obeyed as given.
// fp32 changes nothing.
void precision_algorithms(const std::string& precision, kernels::AlgoSpec& algo);

struct PrecisionReport;
// The ladder's middle rung: rules moving the layers below the threshold on winograd_bf16 to
// winograd_f2_bf16. False when there is none.
bool finer_bf16(const PrecisionReport& r, kernels::AlgoSpec& algo);
// Rules keeping the layers the ladder moved to fp32 there: each on the float32 twin of its bf16
// algorithm (conv: onednn or winograd[_f2], matmul/gemm: onednn_packed), the one the check
// compared with; and the layers on winograd_f2_bf16, where the middle rung may have moved them
// (guess picks it itself on small maps: the rule then repeats its choice).
void keep_fp32(const PrecisionReport& r, kernels::AlgoSpec& algo);

struct LayerPrecision {
  std::string node, op, op_class, algorithm;  // algorithm: the bf16 one the plan chose
  double sqnr_db = 0;  // bf16 kernel against the float32 kernel, same inputs (infinity: equal)
  bool fp32 = false;   // below the threshold: kept float32
};

struct PrecisionReport {
  std::string precision = "fp32";
  double min_sqnr_db = 0;            // 0: no check (every supported layer in bf16)
  std::string check_input;           // "given" or "seeded random"
  std::vector<LayerPrecision> layers;  // execution order: layers the bf16 kernels support
  size_t bf16_layers() const;
  size_t fp32_layers() const;        // kept float32 by the ladder
  nlohmann::json to_json() const;
  // One line: how many layers run bf16, which stay float32 and why.
  std::string summary() const;
};

// The isolated SQNR of every step of `s` on a bf16 kernel (`s` must hold its constants: no
// release_packed_constants), from one run on `inputs`.
std::vector<LayerPrecision> bf16_layer_sqnr(runtime::Session& s, const runtime::TensorMap& inputs);

}  // namespace joule::api
