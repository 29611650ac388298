#pragma once
// Quantization workflows: the resolved plan of a config (dry run), calibration and the QDQ
// simulation model (quantize), and per-layer damage (sensitivity). automp.h and compare.h build
// on the same steps.
#include <optional>
#include <string>
#include <vector>

#include "joule/api/data.h"
#include "joule/api/hooks.h"
#include "joule/api/model.h"
#include "joule/data/evaluate.h"
#include "joule/quant/qdq.h"
#include "joule/quant/sensitivity.h"

namespace joule::api {

// What every quantization workflow takes.
struct QuantOptions {
  // The quantization config: a YAML file, or YAML text itself (anything starting with '{' or
  // holding a newline; JSON is YAML). See docs/quantization.md.
  std::string config;
  DataSource calib;               // calibration samples (needed by formats with activation ranges)
  size_t calib_samples = 128;     // the first N of calib
  std::string calib_cache;        // JSON file of calibration ranges: read when present, then updated
  DataSource eval;                // labelled data for accuracy (optional)
  size_t eval_samples = 0;        // the first N of eval (0: all)
  DataOptions preprocess;
  std::map<std::string, Shape> input_shapes;
  int threads = 1;
  std::string int8 = "real";      // how QDQ graphs run when evaluated or timed: real | simulated
};

// The text of a config given as a file or as YAML text, and a label for reports.
struct ConfigText {
  std::string yaml, label;
};
ConfigText read_config(const std::string& config);

// The model prepared for quantization (BatchNorm folded, constants folded, shapes inferred)
// with a config's plan resolved on it.
struct QuantModel {
  Model model;
  ir::Graph graph;
  quant::QuantPlan plan;
};
QuantModel plan_model(const Model& m, const QuantOptions& o, const std::string& config);
// The same prepared graph with another config's plan.
QuantModel replan(const QuantModel& q, const std::string& config);
// Calibrates q.plan on the first calib_samples of o.calib (through o.calib_cache when set).
// Returns the samples run; `how` receives the preprocessing.
size_t calibrate(QuantModel& q, const QuantOptions& o, const Hooks& hooks, std::string* how = nullptr);

// A session over `g` with the default passes; with int8 "real" QDQ patterns on integer kernels.
std::unique_ptr<runtime::Session> fast_session(const ir::Graph& g, int threads, const std::string& int8);
data::EvalResult evaluate_graph(const ir::Graph& g, const data::Dataset& d, const QuantOptions& o, const Hooks& hooks,
                                const std::string& what);

// --dry-run: the per-node choice a config resolves to.
struct QuantPlanReport {
  nlohmann::json plan;  // quant::plan_json
  std::string table;    // quant::describe_plan
};
QuantPlanReport quant_plan(const Model& m, const QuantOptions& o);

struct QuantizeResult {
  Model model;           // the QDQ model (ONNX Q/DQ for 8-bit integers, joule FakeQuant otherwise)
  nlohmann::json report; // what `joule quantize --format json` prints (but "output")
  std::string plan_table;
  nlohmann::json to_json() const { return report; }
};
QuantizeResult quantize(const Model& m, const QuantOptions& o, const Hooks& hooks = {});

struct SensitivityOptions {
  QuantOptions quant;
  std::string mode = "cumulative";   // cumulative | isolated
  std::vector<std::string> variants = quant::sensitivity_variants();
  size_t samples = 32;               // compared over (from eval when given, else calib)
  std::string out_dir;               // "" writes nothing; else sensitivity.json, .csv, .svg
};
struct SensitivityResult {
  quant::SensitivityReport report;
  nlohmann::json json;  // report plus model, config, calibration and data
  nlohmann::json to_json() const { return json; }
};
SensitivityResult sensitivity(const Model& m, const SensitivityOptions& o, const Hooks& hooks = {});

}  // namespace joule::api
