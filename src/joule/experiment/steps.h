#pragma once
// The steps a point runs, each a library workflow (api/) with its parameters read strictly from
// the experiment file (an unknown parameter is an error naming the known ones), and what a
// step's result contributes to its store row: flat metrics and per-layer times.
#include <string>

#include <nlohmann/json.hpp>

#include "joule/api/hooks.h"
#include "joule/api/model.h"
#include "joule/experiment/spec.h"
#include "joule/experiment/store.h"

namespace joule::experiment {

struct StepContext {
  api::Model model;       // the point's model; a quantize step replaces it for the steps after
  ModelEntry entry;       // default calibration and labelled data
  std::string base_dir;   // relative file names are resolved against it
  std::string run_dir;    // a step writing files writes them under run_dir/<step name>/
  api::Hooks hooks;
};

// Runs one step; returns its result as JSON (what the matching command prints with --format json).
nlohmann::json run_step(const Step& s, StepContext& c);

// Adds the metrics ("<name>.latency_ms", "<name>.top1", ...) and per-layer rows of a step's (or a
// command's) JSON result to `into`. `kind` is the workflow (bench, profile, eval, ...).
void summarize(const std::string& kind, const std::string& name, const nlohmann::json& result, RunRow& into);

}  // namespace joule::experiment
