#include <fmt/format.h>

#include "joule/api/search.h"
#include "joule/cli/commands.h"
#include "joule/cli/util.h"

namespace joule::cli {

Action add_search(CLI::App& app) {
  struct Args {
    std::string model, data, train, val, format = "table";
    std::vector<std::string> objectives{"accuracy", "latency"};
    api::SearchOptions o;
  };
  auto a = std::make_shared<Args>();
  add_model_arg(app, a->model);
  app.add_option("--space", a->o.space, "search space YAML: per-layer precision choices, pruning ratios, constraints")
      ->required();
  app.add_option("--data", a->data, "calibration samples SPEC (needed when a layer may be quantized)");
  app.add_option("--calib-samples", a->o.calib_samples, "calibration samples per trial")->capture_default_str();
  app.add_option("--train-data", a->train, "labelled training data for the space's finetune of pruned trials");
  app.add_option("--val", a->val, "validation samples SPEC: labelled -> top-1 %, else output SQNR (dB) against FP32")
      ->required();
  app.add_option("--val-samples", a->o.val_samples, "the first N validation samples (0: all)")->capture_default_str();
  app.add_option("--objectives", a->objectives, "of accuracy, latency, energy, size")->delimiter(',')->capture_default_str();
  app.add_option("--cost", a->o.cost, "measured (each trial timed on the engine) or predicted (operator database; "
                                      "the front is measured again at the end)")
      ->check(CLI::IsMember({"measured", "predicted"}))
      ->capture_default_str();
  app.add_option("--opdb", a->o.opdb, "--cost predicted: the operator store (default ~/.cache/joule/opdb.sqlite)");
  app.add_option("--algorithm", a->o.algorithm, "nsga2, moead (pagmo2) or random (seeded baseline)")
      ->check(CLI::IsMember({"nsga2", "moead", "random"}))
      ->capture_default_str();
  app.add_option("--trials", a->o.trials, "distinct configurations measured (baselines included)")->capture_default_str();
  app.add_option("--population", a->o.population, "nsga2/moead population (0: from --trials)")->capture_default_str();
  app.add_option("--seed", a->o.seed, "the algorithm's seed")->capture_default_str();
  app.add_option("--threads", a->o.threads, "threads every trial runs on")->capture_default_str();
  app.add_option("--runs", a->o.runs, "measured cost: timed runs per trial (median)")->capture_default_str();
  app.add_option("--min-time", a->o.min_time_s, "measured cost: seconds of timed runs per trial at least")
      ->capture_default_str();
  app.add_option("--warmup", a->o.warmup, "measured cost: untimed runs per trial")->capture_default_str();
  app.add_option("--energy", a->o.energy, "measured cost: auto, rapl, perf, nvml or estimate")->capture_default_str();
  app.add_option("-o,--out-dir", a->o.out_dir,
                 "output directory: trials.jsonl (resume), trials.csv, front.csv/json/svg, front/N/*.yaml")
      ->required();
  app.add_option("--export", a->o.export_points, "front points (ranks) written as ONNX with their profile")
      ->delimiter(',');
  app.add_option("--name", a->o.name, "the search's name in the store (default search:MODEL)");
  app.add_option("--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  add_data_options(app, a->o.preprocess);
  add_store_option(app, a->o.store);
  return [a] {
    const api::Model m = api::Model::load(a->model);
    a->o.objectives = a->objectives;
    if (!a->data.empty()) a->o.data = api::DataSource::from_spec(a->data);
    a->o.val = api::DataSource::from_spec(a->val);
    if (!a->train.empty()) a->o.train = api::DataSource::from_spec(a->train);
    const api::SearchReport r = api::search(m, a->o, terminal_hooks());
    end_status();
    if (a->format == "json") {
      fmt::print("{}\n", r.json.dump(2));
      return 0;
    }
    size_t resumed = r.json["resumed"].get<size_t>();
    fmt::print("{}: {} trials ({} resumed, {} failed, {} infeasible), {} in {:.1f} s{}; accuracy: {}\n", r.model,
               r.trials.size(), resumed, r.json["failed"].get<size_t>(), r.json["infeasible"].get<size_t>(),
               a->o.algorithm, r.search_s,
               r.remeasure_s > 0 ? fmt::format(" (+{:.1f} s measuring the front)", r.remeasure_s) : "",
               r.json["metric_description"].get<std::string>());
    if (!r.json["energy_source"].is_null())
      fmt::print("energy: {}\n", r.json["energy_source"].get<std::string>());
    fmt::print("\n{}", r.table);
    if (!r.dominating_w8a8.empty())
      fmt::print("\nfront points dominating uniform W8A8 (as accurate, strictly faster or less energy): {}\n",
                 fmt::join(r.dominating_w8a8, ", "));
    else
      fmt::print("\nno front point dominates uniform W8A8\n");
    fmt::print("wrote {0}/front.csv, front.json, front.svg, trials.csv, search.json; configs in {0}/front/N/\n",
               a->o.out_dir);
    return 0;
  };
}

}  // namespace joule::cli
