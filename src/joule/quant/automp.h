#pragma once
// AutoMP: mixed precision by fallback (AIMET's greedy mixed precision, Intel Neural Compressor's
// accuracy-aware tuning, Polygraphy's precision bisection). Start from the config's formats
// everywhere; rank the quantized layers by isolated sensitivity; move the most damaging ones up a
// ladder of higher precisions until the score (accuracy, or final-output SQNR without labels)
// is within the allowed drop.
#include <functional>
#include <string>
#include <vector>

#include "joule/quant/config.h"

namespace joule::quant {

struct AutoMpOptions {
  // Rungs above the config's formats, lowest first: "intN" (same scheme, N bits), "fp16",
  // "bf16", "fp32" (node left in float). The last rung should be fp32 so the search can end.
  std::vector<std::string> ladder{"int16", "bf16", "fp32"};
  double max_drop = 0.001;           // allowed score drop below the reference (same units as the score)
  std::string strategy = "greedy";   // greedy: one layer one rung at a time, most damaging first
                                     // bisect: fewest top-ranked layers moved straight to the last rung
  std::vector<std::string> names;    // node names by start index, for the step log
  std::function<void(const std::string&)> progress;
};

struct AutoMpStep {
  std::string action;  // "all quantized", "node X -> int16", "top 3 -> fp32"
  double score = 0;
  bool met = false;
};

struct AutoMpResult {
  std::vector<NodeChoice> choices;   // the final per-node choice (fp32 nodes removed)
  std::vector<std::string> rung;     // per node of the start choices: "" (config format) or the rung
  std::vector<AutoMpStep> steps;
  double reference = 0, start_score = 0, final_score = 0;
  bool met = false;
  size_t promoted() const;  // nodes not at the config's format
};

// A node's choice moved to a rung (nullopt for fp32). Throws BadInput for an unknown rung.
std::optional<NodeChoice> promote(const NodeChoice& c, const std::string& rung);
void check_ladder(const std::vector<std::string>& ladder);

// `start`: the resolved config; `ranking`: indices into `start`, most damaging first;
// `score(choices)`: the quantized model's score (higher is better); `reference`: the FP32 score.
AutoMpResult automp(const std::vector<NodeChoice>& start, const std::vector<size_t>& ranking,
                    const std::function<double(const std::vector<NodeChoice>&)>& score, double reference,
                    const AutoMpOptions& o);

// The config that reproduces the result: the original YAML (`config_yaml`, from `source`) with
// one rule per promoted node appended (`match: {name: ...}` with the rung's formats, or
// `skip: true` for fp32).
std::string automp_config_yaml(const std::string& config_yaml, const std::string& source, const ir::Graph& g,
                               const std::vector<NodeChoice>& start, const AutoMpResult& r);

}  // namespace joule::quant
