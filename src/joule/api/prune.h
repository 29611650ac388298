#pragma once
// Pruning a model (prune/prune.h): a new Model, the input left as it was.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "joule/api/data.h"
#include "joule/api/hooks.h"
#include "joule/api/model.h"
#include "joule/api/train.h"
#include "joule/prune/prune.h"

namespace joule::api {

struct PruneResult {
  Model model;
  prune::PruneReport report;
  nlohmann::json finetune;         // the training report when fine-tuned (else null)
  nlohmann::json to_json() const;  // what `joule prune --format json` prints (but "output")
};

// Prunes, then (finetune given) trains the pruned model (api::train); after unstructured pruning
// the zeroed weights stay zero while it trains (TrainOptions::keep_zeros).
PruneResult prune(const Model& m, const prune::PruneOptions& o, const TrainOptions* finetune = nullptr,
                  const Hooks& hooks = {});

// Pruning sensitivity: each prunable layer pruned alone at each ratio (a conv of a residual group
// with its whole group), the model's first output compared with the unpruned model's (SQNR,
// cosine) over samples, and top-1 with labels.
struct PruneSensitivityOptions {
  std::vector<double> ratios = {0.25, 0.5, 0.75};
  bool structured = true;
  std::string criterion = "l1";
  DataSource data;          // samples (with labels: top-1 too); empty: seeded random inputs
  DataOptions preprocess;
  size_t samples = 16;
  int threads = 1;
  std::string out_dir;      // "" writes nothing; else prune_sensitivity.json, .csv, .svg
};
struct PruneSensitivityResult {
  nlohmann::json json;      // layers: node, op, params, by ratio: sqnr_db, cosine, top1, params_removed
  std::string table;        // layers by damage at the middle ratio
  std::string svg;          // SQNR per layer, one bar per ratio
  nlohmann::json to_json() const { return json; }
};
PruneSensitivityResult prune_sensitivity(const Model& m, const PruneSensitivityOptions& o, const Hooks& hooks = {});

}  // namespace joule::api
