// joule automp: mixed precision by fallback (api/automp.h); prints the ranking, the precision
// each layer ended at, and FP32 / all-quantized / AutoMP side by side.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "joule/api/automp.h"
#include "joule/cli/commands.h"
#include "joule/cli/quant_flags.h"

namespace joule::cli {

Action add_automp(CLI::App& app) {
  auto a = std::make_shared<QuantFlags>();
  auto o = std::make_shared<api::AutoMpOptions>();
  add_quant_flags(app, *a);
  app.add_option("--max-drop", o->max_drop, "allowed top-1 drop in percentage points against FP32")
      ->capture_default_str();
  app.add_option("--sqnr-target", o->sqnr_target,
                 "without labels: the final-output SQNR (dB) to reach instead of an accuracy bound");
  app.add_option("--ladder", o->ladder, "higher precisions to climb, lowest first (intN, fp16, bf16, fp32)")
      ->delimiter(',');
  app.add_option("--strategy", o->strategy, "greedy (one layer one rung at a time) or bisect (top-k layers to the "
                                            "last rung)")
      ->capture_default_str();
  app.add_option("--samples", o->samples, "samples for the sensitivity ranking (and the SQNR target)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("-o,--output", o->out_dir, "directory for automp.yaml and automp.json (default runs/automp/MODEL)");
  return [a, o] {
    o->quant = a->resolved();
    const api::Model m = api::Model::load(a->model);
    if (o->out_dir.empty()) o->out_dir = "runs/automp/" + m.name();
    const api::AutoMpReport r = api::automp(m, *o, terminal_hooks(a->quiet));
    end_status(a->quiet);
    const nlohmann::json& j = r.json;
    record_run(a->store, "automp", m.name(), j);
    if (a->format == "json") {
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    const bool by_sqnr = o->sqnr_target > 0;
    fmt::print("AutoMP on {}: {} {} within {} of {:.2f} ({} strategy, ladder {})\n", m.name(),
               by_sqnr ? "final-output SQNR" : "top-1", j["met"].get<bool>() ? "met" : "NOT met",
               j["max_drop"].get<double>(), j["reference"].get<double>(), o->strategy, fmt::join(o->ladder, ","));
    std::vector<nlohmann::json> layers(j["layers"].begin(), j["layers"].end());
    std::sort(layers.begin(), layers.end(),
              [](const nlohmann::json& x, const nlohmann::json& y) { return x["rank"] < y["rank"]; });
    fmt::print("{:<44} {:<8} {:>12} {}\n", "layer (most sensitive first)", "op", "isolated dB", "precision");
    for (const auto& l : layers) {
      const std::string p = l["precision"].get<std::string>();
      fmt::print("{:<44} {:<8} {:>12.2f} {}\n", l["node"].get<std::string>(), l["op"].get<std::string>(),
                 l["isolated_sqnr_db"].get<double>(), p == "config" ? "config format" : p);
    }
    fmt::print("\n{:<16} {:>12} {:>12} {:>12}\n", "model", by_sqnr ? "SQNR dB" : "top-1 %", "weights", "latency ms*");
    for (const auto& row : j["summary"])
      fmt::print("{:<16} {:>12} {:>12} {:>12.3f}\n", row["model"].get<std::string>(),
                 row["score"].is_string() ? "ref" : fmt::format("{:.2f}", row["score"].get<double>()),
                 human_bytes(row["weight_bytes"].get<double>()), row["latency_ms"].get<double>());
    fmt::print("* median of 15 runs on one sample, {} thread(s); {}\n", a->opt.threads, api::int8_note(a->opt.int8));
    fmt::print("{} of {} layers moved to higher precision; {} evaluations; wrote {}/automp.yaml and automp.json\n",
               j["promoted"].get<size_t>(), layers.size(), j["steps"].size(), o->out_dir);
    return 0;
  };
}

}  // namespace joule::cli
