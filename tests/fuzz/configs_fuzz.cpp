// The other YAML files a user writes, chosen by the first byte: 0 a pruning config (resolved
// against the bundled CNN), 1 a search space, 2 an operator-sweep config (its sanity points built
// as graphs), 3 an experiment file (expanded into its points).
#include "fuzz.h"
#include "joule/api/model.h"
#include "joule/experiment/spec.h"
#include "joule/opdb/collect.h"
#include "joule/prune/prune.h"
#include "joule/search/space.h"

using namespace joule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const api::Model model = api::Model::load("default");
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string path = fuzz::write_scratch("config.yaml", data + 1, size - 1);
  fuzz::expect_clean([&] {
    switch (data[0] % 4) {
      case 0: (void)prune::PruneConfig::parse(text, "prune.yaml").resolve(model.graph()); break;
      case 1: (void)search::SearchSpace::parse(text, "space.yaml"); break;
      case 2: (void)opdb::sweep_cases(opdb::load_sweep_config(path), "sanity"); break;
      case 3: (void)experiment::expand(experiment::read_experiment(path)); break;
    }
  });
  return 0;
}
