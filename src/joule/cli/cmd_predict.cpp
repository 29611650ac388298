#include <fmt/core.h>

#include <algorithm>

#include "joule/api/opdb.h"
#include "joule/cli/commands.h"
#include "joule/cli/util.h"

namespace joule::cli {

namespace {
struct PredictArgs {
  std::vector<std::string> models;
  api::PredictOptions opt;
  int64_t batch = 0;
  std::string format = "table", store;
  bool validate = false, all_layers = false;
  api::ValidateOptions val;
};
}  // namespace

Action add_predict(CLI::App& app) {
  auto a = std::make_shared<PredictArgs>();
  app.add_option("models", a->models, "ONNX model(s) ('default' = the bundled CNN); several with --validate")->required();
  app.add_option("--db", a->opt.db, "operator database (default $JOULE_OPDB or ~/.cache/joule/opdb.sqlite)");
  add_threads_option(app, a->opt.threads);
  app.add_option("--batch", a->batch, "batch size (dim 0 of every input)")->check(CLI::PositiveNumber);
  app.add_option("--regime", a->opt.predictor.regime,
                 "isolated times used: auto (warm, plus cold weights as far as the model's weights overflow the "
                 "last-level cache), reused (warm), fresh (cold inputs), cold (cold weights), mid (reused x fresh, "
                 "geometric mean)")
      ->check(CLI::IsMember({"reused", "fresh", "mid", "cold", "auto"}))
      ->capture_default_str();
  app.add_option("--passes", a->opt.passes, "graph passes (default: as joule run)")->capture_default_str();
  add_int8_option(app, a->opt.int8);
  add_algo_options(app, a->opt.algo);
  app.add_flag("--validate", a->validate, "also measure each model (joule's profiler) and compare with the prediction");
  app.add_flag("--leave-one-out", a->val.leave_one_out,
               "with --validate: predict each model without the rows only its own layers put in the store");
  app.add_option("--runs", a->val.runs, "with --validate: timed runs per round")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--min-time", a->val.min_time_s, "with --validate: seconds of plain runs per round, at least")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--rounds", a->val.rounds, "with --validate: rounds over the models; the best round's median counts")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_flag("--all", a->all_layers, "table: every layer (default: the 15 slowest)");
  add_store_option(app, a->store);
  app.add_option("--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  return [a] {
    if (a->batch > 0) a->opt.batch = a->batch;
    std::vector<api::Model> ms;
    for (auto& p : a->models) ms.push_back(api::Model::load(p));
    if (a->validate) {
      const api::ValidationReport r = api::validate_predictions(ms, a->opt, a->val, terminal_hooks());
      end_status();
      if (a->format == "json") {
        fmt::print("{}\n", r.to_json().dump(2));
        return 0;
      }
      fmt::print("{:<24} {:>12} {:>12} {:>7} {:>8} {:>14} {:>7} {:>7} {:>9}\n", "model", "predicted ms",
                 "measured ms", "spread", "error", "layer med |e|", "exact", "model", "roofline");
      for (auto& v : r.models) {
        const auto [lo, hi] = std::minmax_element(v.round_ms.begin(), v.round_ms.end());
        fmt::print("{:<24} {:>12.3f} {:>12.3f} {:>6.1f}% {:>7.1f}% {:>13.1f}% {:>6.0f}% {:>6.0f}% {:>8.0f}%\n", v.model,
                   v.predicted_ms, v.measured_ms, *lo > 0 ? 100.0 * (*hi / *lo - 1) : 0.0, v.error_pct,
                   v.layer_median_abs_error_pct, v.coverage_pct.at("exact"), v.coverage_pct.at("model"),
                   v.coverage_pct.at("roofline"));
      }
      fmt::print("measured: the lowest of {} rounds' medians (spread: highest / lowest - 1)\n", r.rounds);
      fmt::print("{} models{}: within 5%: {:.0f}%, within 10%: {:.0f}%, median |error| {:.1f}%\n", r.models.size(),
                 r.leave_one_out ? " (leave-one-out)" : "", r.within_5_pct, r.within_10_pct, r.median_abs_error_pct);
      return 0;
    }
    if (ms.size() != 1) fail("predict takes one model (several only with --validate)");
    const predict::Prediction p = api::predict_model(ms[0], a->opt);
    record_run(a->store, "predict", ms[0].name(), p.to_json());
    if (a->format == "json") {
      fmt::print("{}\n", p.to_json().dump(2));
      return 0;
    }
    fmt::print("{}: predicted {:.3f} ms at {} thread{} ({}; isolated times: {}), store {}\n", p.model, p.latency_ms,
               p.threads, p.threads == 1 ? "" : "s", p.precision, p.regime, p.store);
    if (p.regime == "auto")
      fmt::print("weights {:.1f} MiB: cold-weight share {:.2f} of each layer's cold penalty\n", p.weight_bytes / 1048576.0,
                 p.cold_share);
    if (p.energy_j) fmt::print("energy {:.4g} J per inference ({})\n", *p.energy_j, p.energy_source);
    fmt::print("time from: {}\n", p.coverage_text());
    if (p.expected_error_pct)
      fmt::print("expected error: {:.1f}% of the prediction (the regressor's median error on rows it did not learn "
                 "from, over its layers)\n", *p.expected_error_pct);
    std::vector<const predict::LayerPrediction*> order;
    for (auto& L : p.layers) order.push_back(&L);
    std::stable_sort(order.begin(), order.end(), [](auto* x, auto* y) { return x->latency_ms > y->latency_ms; });
    if (!a->all_layers && order.size() > 15) order.resize(15);
    fmt::print("{:<36} {:<22} {:<16} {:>10} {:>9}\n", "layer", "op", "algorithm", "ms", "source");
    for (auto* L : order)
      fmt::print("{:<36} {:<22} {:<16} {:>10.4f} {:>9}\n", L->name.substr(0, 36), L->op_type.substr(0, 22),
                 L->algorithm.substr(0, 16), L->latency_ms, L->source);
    return 0;
  };
}

}  // namespace joule::cli
