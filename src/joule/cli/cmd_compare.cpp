// joule compare: the accuracy-vs-cost table (api/compare.h) for FP32 and each config.
#include <fmt/format.h>

#include "joule/api/compare.h"
#include "joule/cli/commands.h"
#include "joule/cli/quant_flags.h"

namespace joule::cli {

Action add_compare(CLI::App& app) {
  auto a = std::make_shared<QuantFlags>();
  auto o = std::make_shared<api::CompareOptions>();
  add_quant_flags(app, *a, /*with_config=*/false);
  app.add_option("--configs", o->configs, "quantization configs to compare with FP32 (comma-separated YAML files)")
      ->required()
      ->delimiter(',');
  app.add_option("--runs", o->runs, "timed runs per model")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--warmup", o->warmup, "untimed runs first")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--energy", o->energy, "none, auto (rapl, perf, nvml, then the estimator), rapl, perf, nvml, estimate")
      ->capture_default_str();
  app.add_option("--energy-profile", o->energy_profile, "device profile JSON for the estimator");
  app.add_option("-o,--output", o->out_dir, "directory for compare.json and compare.csv");
  return [a, o] {
    o->quant = a->resolved();
    const api::CompareReport r = api::compare(api::Model::load(a->model), *o, terminal_hooks(a->quiet));
    end_status(a->quiet);
    if (a->format == "json") {
      fmt::print("{}\n", r.to_json().dump(2));
      return 0;
    }
    const api::QuantOptions& q = o->quant;
    fmt::print("{}: FP32 vs {} config(s), {} thread(s); {}\n", r.model, o->configs.size(), q.threads,
               api::int8_note(q.int8));
    const api::CompareRow& fp32 = r.rows.at(0);
    if (!r.data.empty())
      fmt::print("accuracy on {}{}\n", r.data, fp32.eval ? fmt::format(" ({} samples evaluated)", fp32.eval->samples) : "");
    fmt::print("{:<16} {:>8} {:>8} {:>8} {:>12} {:>8} {:>14} {:>10} {:>8}\n", "model", "top-1", "top-5", "drop",
               "latency ms", "speedup", "energy mJ/inf", "weights", "int8 ops");
    const double fp32_top1 = fp32.eval ? 100 * fp32.eval->top1_rate() : 0;
    for (const api::CompareRow& row : r.rows) {
      const bool top5 = row.eval && row.eval->classes >= 5;
      fmt::print("{:<16} {:>8} {:>8} {:>8} {:>12.3f} {:>7.2f}x {:>14} {:>10} {:>8}\n", row.name,
                 row.eval ? fmt::format("{:.2f}%", 100 * row.eval->top1_rate()) : "-",
                 top5 ? fmt::format("{:.2f}%", 100 * row.eval->top5_rate()) : "-",
                 row.eval ? fmt::format("{:+.2f}", fp32_top1 - 100 * row.eval->top1_rate()) : "-",
                 row.latency_ms.median, fp32.latency_ms.median / row.latency_ms.median,
                 row.energy ? fmt::format("{:.3f}", 1e3 * row.energy->joules_per_inference) : "-",
                 human_bytes(row.weight_bytes), row.integer_nodes);
    }
    if (fp32.energy)
      fmt::print("energy source: {} ({})\n", fp32.energy->source, fp32.energy->description);
    else
      fmt::print("energy: not measured (--energy auto|rapl|perf|nvml|estimate)\n");
    fmt::print("latency: median of {} runs on one sample; drop in top-1 points against fp32\n", o->runs);
    if (!o->out_dir.empty()) fmt::print("wrote {}/compare.json and compare.csv\n", o->out_dir);
    return 0;
  };
}

}  // namespace joule::cli
