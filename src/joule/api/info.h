#pragma once
// What a model is (inputs, outputs, op histogram, parameters, MACs/FLOPs, unsupported ops),
// what the passes make of it, the plan a session would run, and a picture of its graph.
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "joule/api/prepare.h"

namespace joule::api {

struct InfoOptions {
  std::map<std::string, Shape> input_shapes;  // resolve symbolic dims (key "": the only input)
  std::string after_passes;                   // "": the model as loaded; else a pipeline ("default", ...)
  bool plan = false;                          // compile a session: algorithm per node, memory plan
  int threads = 0;                            // threads the plan is made for (0: every core)
  AlgoOptions algo;
  std::string device = "cpu", gpu_math = "fp32";  // the plan's device (--device) and GPU arithmetic
  std::vector<std::string> gpu_fp32{};              // GPU nodes kept float32 under fp16 | bf16
  std::string precision = "fp32";             // the plan's: fp32 or bf16 (api/precision.h)
  double bf16_min_sqnr_db = 30;               // bf16: the ladder, on seeded random inputs (0: none)
};

// What `joule info --format json` prints: passes::model_info, plus "passes" (the pipeline
// report) when after_passes is set, "plan" (plan_json) when plan is, and "precision" (the bf16
// ladder's report) for a bf16 plan.
nlohmann::json info(const Model& m, const InfoOptions& o = {});

// Writes the graph as .svg/.png/.pdf (through Graphviz `dot`), .dot or .txt. Returns the node count.
size_t draw_graph(const Model& m, const std::string& out);
// DOT text rendered by Graphviz `dot` as `format` (svg, png, pdf); BadInput when dot fails.
std::string render_dot(const std::string& dot, const std::string& format);

}  // namespace joule::api
