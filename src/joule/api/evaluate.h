#pragma once
// Accuracy of a classifier on labelled data (top-1, top-5), on the same engine as everything else.
#include <string>

#include "joule/api/data.h"
#include "joule/api/hooks.h"
#include "joule/api/prepare.h"
#include "joule/data/evaluate.h"

namespace joule::api {

struct EvalOptions {
  DataSource data;                           // required, with labels
  DataOptions preprocess;
  size_t limit = 0;                          // the first N samples (0: all)
  std::map<std::string, Shape> input_shapes;  // resolve symbolic dims (key "": the only input)
  PrepareOptions prepare = PrepareOptions::with_threads(1);
  // Count NaN and Inf in every node's outputs over all samples and report the first node that
  // has any (runtime::NumericsObserver; the samples then run node by node).
  bool check_numerics = false;
};

struct EvalReport {
  std::string model, data, preprocessing;
  data::EvalResult result;
  PrecisionReport precision;  // bf16: the ladder's check runs on seeded random inputs
  nlohmann::json numerics;       // check_numerics: NumericsObserver::to_json(); else null
  std::string numerics_summary;  // its one line
  nlohmann::json to_json() const;  // what `joule eval --format json` prints
};

EvalReport evaluate(const Model& m, const EvalOptions& o, const Hooks& hooks = {});

// Evaluates `s` on `d` (first `limit` samples), reporting progress as `stage`.
data::EvalResult evaluate_session(runtime::Session& s, const data::Dataset& d, size_t limit, const Hooks& hooks,
                                  const std::string& stage);

}  // namespace joule::api
