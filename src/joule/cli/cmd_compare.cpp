// joule compare: the accuracy-vs-cost table (api/compare.h) for FP32 and each config; with
// --agreement, a quantized model's simulated plan against its integer plan (api/agreement.h).
#include <fmt/format.h>

#include <cmath>

#include "joule/api/agreement.h"
#include "joule/api/compare.h"
#include "joule/api/run.h"
#include "joule/cli/commands.h"
#include "joule/cli/quant_flags.h"

namespace joule::cli {

namespace {

int print_agreement(const api::AgreementReport& r, size_t top) {
  size_t quantized = 0, differing = 0;
  for (const api::TensorAgreement& t : r.tensors) {
    quantized += t.codes();
    differing += t.codes() && t.differ > 0;
  }
  fmt::print("{}: simulated plan (--int8 simulated) vs integer plan (--int8 real), {} thread(s), {} integer nodes\n",
             r.model, r.threads, r.integer_nodes);
  if (!r.note.empty()) fmt::print("no integer kernel ran: {}\n", r.note);
  fmt::print("quantized tensors compared: {}; with codes that differ: {}; within one step: {:.4f}% at worst\n",
             quantized, differing, 100 * r.min_within_one);
  fmt::print("first difference: {}; first beyond one step: {}\n",
             r.first_difference.empty() ? "none" : r.first_difference,
             r.first_beyond_one.empty() ? "none" : r.first_beyond_one);
  for (const api::TensorAgreement& t : r.outputs)
    if (!t.codes())
      fmt::print("output {}: SQNR of the integer plan against the simulation {}\n", t.tensor,
                 std::isfinite(t.sqnr_db) ? fmt::format("{:.1f} dB", t.sqnr_db) : "identical (inf)");
  if (!differing) return 0;
  fmt::print("\n{:<40} {:<10} {:>10} {:>9} {:>9} {:>6}\n", "quantized tensor (integer plan's order)", "op",
             "elements", "differ%", ">1 step%", "max");
  size_t shown = 0;
  for (const api::TensorAgreement& t : r.tensors) {
    if (!t.codes() || !t.differ) continue;
    if (top && shown++ == top) {
      fmt::print("... {} more (--top 0 shows all)\n", differing - top);
      break;
    }
    fmt::print("{:<40} {:<10} {:>10} {:>9.4f} {:>9.4f} {:>6}\n", shorten(t.tensor, 40), shorten(t.op, 10), t.elements,
               100.0 * t.differ / t.elements, 100.0 * t.beyond_one / t.elements, t.max_steps);
  }
  return 0;
}

}  // namespace

Action add_compare(CLI::App& app) {
  auto a = std::make_shared<QuantFlags>();
  auto o = std::make_shared<api::CompareOptions>();
  add_quant_flags(app, *a, /*with_config=*/false);
  app.add_option("--configs", o->configs, "quantization configs to compare with FP32 (comma-separated YAML files)")
      ->delimiter(',');
  auto agreement = std::make_shared<bool>(false);
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto top = std::make_shared<size_t>(20);
  app.add_flag("--agreement", *agreement,
               "MODEL is quantized (QDQ): run its simulated and its integer plan on one input and compare every "
               "quantized tensor (codes that differ, by how many steps) and the outputs (SQNR)");
  app.add_option("-i,--input", *inputs, "--agreement: input FILE or NAME=FILE; default: seeded random inputs");
  app.add_option("--top", *top, "--agreement: differing tensors listed (0: all)")->capture_default_str();
  app.add_option("--runs", o->runs, "timed runs per model")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--warmup", o->warmup, "untimed runs first")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--energy", o->energy, "none, auto (rapl, perf, nvml, then the estimator), rapl, perf, nvml, estimate")
      ->capture_default_str();
  app.add_option("--energy-profile", o->energy_profile, "device profile JSON for the estimator");
  app.add_option("-o,--output", o->out_dir, "directory for compare.json and compare.csv");
  app.add_flag("--bf16", o->bf16, "add a bf16 row: the FP32 model at --precision bf16 (its ladder, output SQNR vs fp32)");
  app.add_option("--bf16-min-sqnr", o->bf16_min_sqnr_db, "--bf16: layers below this isolated SQNR (dB) stay fp32")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  return [a, o, agreement, inputs, top] {
    o->quant = a->resolved();
    if (*agreement) {
      const api::Model m = api::Model::load(a->model);
      const runtime::TensorMap in = inputs->empty() ? runtime::TensorMap{} : api::read_inputs(*inputs, m.input_names());
      const api::AgreementReport r = api::simulation_agreement(m, in, o->quant.threads);
      if (a->format == "json") return fmt::print("{}\n", r.to_json().dump(2)), 0;
      return print_agreement(r, *top);
    }
    const api::Model m = api::Model::load(a->model);
    const api::CompareReport r = api::compare(m, *o, terminal_hooks(a->quiet));
    end_status(a->quiet);
    record_run(a->store, "compare", m.name(), r.to_json());
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
    for (const api::CompareRow& row : r.rows)
      if (row.precision)
        fmt::print("{}; output SQNR against fp32 {:.1f} dB on the timing sample\n", row.precision->summary(),
                   row.output_sqnr_db.value_or(0));
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
