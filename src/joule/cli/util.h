#pragma once
// Small helpers shared by CLI commands (formatting, model loading).
#include <string>

#include <CLI/CLI.hpp>

#include "joule/ir/graph.h"
#include "joule/runtime/session.h"

namespace joule::cli {

std::string human_count(double v);   // 1.82G, 11.7M, 932
std::string human_bytes(double v);   // 44.6 MB
// Loads an ONNX model; "default" (or "fashion_cnn") names the bundled example model.
ir::Graph load_model_or_default(const std::string& path);
std::string resolve_model_path(const std::string& path);
// Binds "-i FILE" (next unbound graph input, in order) and "-i NAME=FILE" (.npy or .pb).
// Every input must be bound.
runtime::TensorMap bind_inputs(const std::vector<std::string>& specs, const std::vector<std::string>& names);

// Applies "--input-shape NAME=1,3,224,224" (or "1,3,224,224" for a one-input model) to the
// graph's declared input types, resolving symbolic dims for inference and cost analysis.
void apply_input_shapes(ir::Graph& g, const std::vector<std::string>& specs);

// Replaces characters outside [A-Za-z0-9._-] with '_' (output file names).
std::string safe_filename(const std::string& s);

// Applies a pass pipeline ("none", "default" or comma-separated pass names) to `g`, before a
// Session is built. Returns the pipeline report (node counts before/after, per-pass info).
// JOULE_VERIFY_PASSES=1 verifies the graph after every pass. Unknown names: BadInput.
// `int8 == "real"` runs passes::int8_pipeline: QDQ patterns (Q/DQ around Conv, Gemm, MatMul)
// run on integer kernels, in N,H,W,C between them; "simulated" leaves them to the float engine (exactly the QDQ arithmetic).
// `session`: the options the graph will run with; its algorithm choice and threads decide which
// float convs channels_last moves (null: the defaults, guess on all cores).
nlohmann::json apply_passes(ir::Graph& g, const std::string& spec, const std::string& int8 = "simulated",
                            const runtime::SessionOptions* session = nullptr);

// --int8 real|simulated (default real), on every command that runs a model.
void add_int8_option(CLI::App& app, std::string& mode);
// One line on how a QDQ model ran, for reports.
std::string int8_note(const std::string& mode);

// --algo / --algo-file / --tuning-cache, shared by run, bench, profile and info --plan.
struct AlgoFlags {
  std::vector<std::string> algo;
  std::string file, tuning_cache;
  kernels::AlgoSpec spec() const;  // BadInput for malformed values
};
void add_algo_options(CLI::App& app, AlgoFlags& f);

}  // namespace joule::cli
