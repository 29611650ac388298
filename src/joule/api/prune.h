#pragma once
// Pruning a model (prune/prune.h): a new Model, the input left as it was.
#include <nlohmann/json.hpp>

#include "joule/api/model.h"
#include "joule/prune/prune.h"

namespace joule::api {

struct PruneResult {
  Model model;
  prune::PruneReport report;
  nlohmann::json to_json() const;  // what `joule prune --format json` prints (but "output")
};

PruneResult prune(const Model& m, const prune::PruneOptions& o);

}  // namespace joule::api
