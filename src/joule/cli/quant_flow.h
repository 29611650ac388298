#pragma once
// What quantize, sensitivity, automp and compare share: their common flags, the prepared model
// with its resolved plan, calibration, and evaluating a graph on labelled data.
#include <memory>
#include <string>
#include <vector>

#include "joule/cli/data_flags.h"
#include "joule/data/evaluate.h"
#include "joule/quant/qdq.h"
#include "joule/runtime/session.h"

namespace joule::cli {

struct QuantArgs {
  std::string model, config, calib, eval, calib_cache, out, format = "table";
  std::vector<std::string> input_shapes;
  size_t calib_samples = 128, eval_samples = 0;
  int threads = 1;
  bool dry_run = false, allow_joule_ops = false, quiet = false;
  std::string int8 = "real";  // how QDQ graphs run when evaluated or timed: real | simulated
  DataFlags data;
  // sensitivity
  std::string mode = "cumulative";
  std::vector<std::string> variants{"all", "weights", "activations"};
  size_t samples = 32, top = 0;
  // automp
  double max_drop = 0.1, sqnr_target = 0;
  std::vector<std::string> ladder{"int16", "bf16", "fp32"};
  std::string strategy = "greedy";
};

// model, --calib, --calib-samples, --calib-cache, --eval, --eval-samples, --input-shape,
// --threads, --format, --quiet and the data flags. `with_config`: --config (required).
void add_common(CLI::App& app, QuantArgs& a, bool with_config = true);

struct Prepared {
  std::string path;
  ir::Graph graph;  // prepared FP32 graph (BatchNorm folded, shapes inferred)
  quant::QuantPlan plan;
};
// Loads and prepares the model; resolves `config` (default: --config) into a plan.
Prepared prepare(const QuantArgs& a, const std::string& config = "");
// The same prepared graph with another config's plan.
quant::QuantPlan plan_for(const Prepared& p, const std::string& config);

void progress_line(bool quiet, const std::string& s);
void progress_end(bool quiet);

// Calibrates the plan on the first --calib-samples of --calib (through --calib-cache when given).
// Returns the samples run; `how` receives the preprocessing description.
size_t run_calibration(const QuantArgs& a, Prepared& p, std::string* how);

// Names of the joule-domain nodes of a graph (FakeQuant: formats ONNX cannot express).
std::vector<std::string> joule_op_nodes(const ir::Graph& g);

// A session over `g` with the default passes, and with `int8 == "real"` the QDQ patterns
// lowered to integer kernels.
runtime::Session fast_session(const ir::Graph& g, int threads, const std::string& int8);

data::EvalResult eval_graph(const ir::Graph& g, const data::Dataset& d, const QuantArgs& a, const std::string& what);

}  // namespace joule::cli
