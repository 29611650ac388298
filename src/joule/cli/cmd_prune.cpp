#include <fmt/core.h>

#include "joule/api/prune.h"
#include "joule/cli/commands.h"
#include "joule/cli/util.h"

namespace joule::cli {

Action add_prune(CLI::App& app) {
  struct Args {
    std::string model, out, format = "table", store;
    prune::PruneOptions opt;
  };
  auto a = std::make_shared<Args>();
  add_model_arg(app, a->model);
  app.add_option("--ratio", a->opt.ratio, "share removed: of each layer's weights, or (--structured) output channels")
      ->required();
  app.add_flag("--structured", a->opt.structured,
               "remove whole output channels of convolutions, carried through the layers that read them");
  app.add_option("--criterion", a->opt.criterion, "l1, l2, bn (|BatchNorm scale|, structured) or random")
      ->capture_default_str();
  app.add_option("--scope", a->opt.scope, "local (each layer its ratio) or global (one threshold; unstructured)")
      ->capture_default_str();
  app.add_option("--seed", a->opt.seed, "for --criterion random")->capture_default_str();
  app.add_option("-o,--output", a->out, "write the pruned model (ONNX)")->required();
  app.add_option("--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  add_store_option(app, a->store);
  return [a] {
    const api::Model m = api::Model::load(a->model);
    const api::PruneResult r = api::prune(m, a->opt);
    r.model.save(a->out);
    nlohmann::json j = r.to_json();
    j["output"] = a->out;
    record_run(a->store, "prune", m.name(), j);
    if (a->format == "json") {
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("{}", r.report.table());
    fmt::print("wrote {} (fine-tuning after pruning: joule train; not part of this command yet)\n", a->out);
    return 0;
  };
}

}  // namespace joule::cli
