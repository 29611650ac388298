#pragma once
// AutoMP: mixed precision by fallback. Quantize everything at the config's formats, rank the
// layers by isolated sensitivity, move the most damaging up a precision ladder until the
// accuracy drop (or the final-output SQNR) is within bounds; FP32, all-quantized and the result
// side by side, and the config that reproduces it.
#include <string>
#include <vector>

#include "joule/api/quantize.h"

namespace joule::api {

struct AutoMpOptions {
  QuantOptions quant;                 // config, calib (required), eval (required unless sqnr_target)
  double max_drop = 0.1;              // allowed top-1 drop in percentage points against FP32
  double sqnr_target = 0;             // > 0: without labels, reach this final-output SQNR (dB) instead
  std::vector<std::string> ladder{"int16", "bf16", "fp32"};  // higher precisions, lowest first
  std::string strategy = "greedy";    // greedy | bisect
  size_t samples = 32;                // samples for the ranking (and the SQNR score)
  std::string out_dir;                // "" writes nothing; else automp.yaml, automp.json, calib_cache.json
};

struct AutoMpReport {
  nlohmann::json json;   // what `joule automp --format json` prints
  std::string yaml;      // the config that reproduces the result (the original plus one rule per moved layer)
  Model model;           // the mixed-precision QDQ model
  nlohmann::json to_json() const { return json; }
};

AutoMpReport automp(const Model& m, const AutoMpOptions& o, const Hooks& hooks = {});

}  // namespace joule::api
