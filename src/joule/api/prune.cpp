#include "joule/api/prune.h"

namespace joule::api {

nlohmann::json PruneResult::to_json() const {
  nlohmann::json j = report.to_json();
  j["model"] = model.path().empty() ? model.name() : model.path();
  return j;
}

PruneResult prune(const Model& m, const prune::PruneOptions& o) {
  ir::Graph g = m.graph();
  PruneResult r{Model(), prune::prune_graph(g, o)};
  r.model = Model(std::move(g), m.path(), m.name());
  return r;
}

}  // namespace joule::api
