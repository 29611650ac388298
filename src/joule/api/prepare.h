#pragma once
// From a Model to something that runs: graph passes, int8 lowering and the algorithm choice
// per node, as every command that runs a model does it.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "joule/api/model.h"
#include "joule/api/precision.h"
#include "joule/runtime/session.h"

namespace joule::api {

// --algo / --algo-file / --tuning-cache.
struct AlgoOptions {
  // "guess" (default), "auto", "reference", "CLASS=ALGO[,ALGO..]" (conv, gemm, matmul) or
  // "NODE=ALGO"; later values add rules.
  std::vector<std::string> rules;
  std::string file;          // YAML of TARGET: ALGO | [ALGO, ...] (and default: POLICY)
  std::string tuning_cache;  // "" = $JOULE_TUNING_CACHE or ~/.cache/joule/tuning.json
  kernels::AlgoSpec spec() const;  // BadInput for malformed values
};

struct PrepareOptions {
  int threads = 0;                   // 0: every core available to the process
  std::string passes = "default";    // "none", "default" or comma-separated pass names
  std::string int8 = "real";         // QDQ models: "real" (integer kernels) or "simulated" (apply_int8_mode);
                                     // "none" (internal: training graphs) lowers nothing
  AlgoOptions algo;
  std::string device = "cpu";      // "cpu", "cuda" or "cuda:N": nodes a GPU kernel runs go there
  std::string gpu_math = "fp32";   // GPU arithmetic: "fp32", "tf32", "fp16" or "bf16"
  std::vector<std::string> gpu_fp32{};  // GPU nodes kept float32 under fp16 | bf16
  std::string precision = "fp32";  // "fp32" or "bf16": the arithmetic of Conv/MatMul/Gemm (api/precision.h)
  double bf16_min_sqnr_db = 30;    // bf16: a layer whose isolated output SQNR is below stays fp32 (0: no check)
  runtime::TensorMap check_inputs; // bf16 check input; empty: seeded random inputs at the model's shapes
  // Weights held once: each constant a kernel packed is released from the session once packed
  // (runtime::SessionOptions::release_packed_constants). Memory drops only where nothing else
  // holds the model: pass it as an rvalue (prepare(Model&&), run, bench). Not with node replay.
  bool release_packed = false;
  bool plan_only = false;  // runtime::SessionOptions::plan_only: what would run, nothing prepared
  static PrepareOptions with_threads(int n) {
    PrepareOptions p;
    p.threads = n;
    return p;
  }
};

// BadInput unless `mode` is "real" or "simulated".
void check_int8_mode(const std::string& mode);
// One line on how a QDQ model ran, for reports.
std::string int8_note(const std::string& mode);
// How a QDQ model runs in `mode`: both modes lower its QDQ patterns to the integer plan
// (passes::int8_pipeline prepended to `passes`); "simulated" runs the plan's QConv / QMatMul
// nodes on the `emulated` kernels (the integer kernels' arithmetic in float32), unless `algo`
// already has a rule for them or asks for the reference kernels (which compute it too).
// "none" leaves both alone (training graphs, whose QDQ stays float for the gradients).
void apply_int8_mode(const std::string& mode, std::vector<std::string>& passes, kernels::AlgoSpec& algo);
// Only the algorithm part of apply_int8_mode (the rules "simulated" adds).
void int8_algorithms(const std::string& mode, kernels::AlgoSpec& algo);

// Applies a pass pipeline to `g` before a Session is built, QDQ patterns lowered first
// (passes::int8_pipeline; `int8` is checked). `session`: the options the graph will run
// with (its algorithm choice and threads decide which float convs channels_last moves; null:
// guess on all cores). JOULE_VERIFY_PASSES=1 verifies the graph after every pass. Returns the
// pipeline report (passes::run_pipeline).
nlohmann::json apply_passes(ir::Graph& g, const std::string& passes, const std::string& int8 = "simulated",
                            const runtime::SessionOptions* session = nullptr);

// A compiled model: the session (kernels chosen and prepared, memory planned) and the report
// of the passes that made its graph.
struct Prepared {
  std::unique_ptr<runtime::Session> session;
  nlohmann::json pipeline;
  PrecisionReport precision;  // bf16: the layers on bf16 kernels and those the ladder kept fp32
};
Prepared prepare(const Model& m, const PrepareOptions& o = {});
Prepared prepare(Model&& m, const PrepareOptions& o = {});  // `m` is emptied before the session is built
Prepared prepare(ir::Graph g, const PrepareOptions& o = {});  // a graph the caller made

// The session's plan: algorithm per step (and how it was chosen), oneDNN's implementation, the
// measured times of `auto`, and the activation memory plan.
nlohmann::json plan_json(const runtime::Session& s);

}  // namespace joule::api
