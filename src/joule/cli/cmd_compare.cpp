// joule compare: the accuracy-vs-cost table. For the FP32 model and each quantization config:
// accuracy on labelled data, latency (QDQ patterns on integer kernels with --int8 real), energy
// per inference with its source (a named sensor, or the named estimator), and weight size.
#include <fmt/format.h>

#include <filesystem>

#include "joule/cli/commands.h"
#include "joule/cli/quant_flow.h"
#include "joule/cli/util.h"
#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/passes/pass.h"
#include "joule/profile/profiler.h"

namespace joule::cli {

namespace {

struct CompareArgs {
  QuantArgs q;
  std::vector<std::string> configs;
  std::string energy = "none", energy_profile;
  int runs = 20, warmup = 3;
};

struct Row {
  std::string name, config;
  std::optional<data::EvalResult> eval;
  profile::Stats ms;
  std::optional<profile::EnergyResult> energy;
  double weight_bytes = 0;
  size_t integer_nodes = 0, fake_quant_nodes = 0;
};

// Layers of a profile that ran on integer kernels (what --int8 real buys).
size_t integer_nodes(const profile::ProfileResult& pr) {
  size_t n = 0;
  for (const profile::LayerResult& l : pr.layers)
    for (const char* op : {"QConv", "QMatMul", "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger"})
      n += l.op == op;
  return n;
}

nlohmann::json row_json(const Row& r) {
  nlohmann::json j{{"model", r.name},
                   {"latency_ms", profile::to_json(r.ms)},
                   {"weight_bytes", r.weight_bytes},
                   {"integer_nodes", r.integer_nodes},
                   {"fake_quant_nodes", r.fake_quant_nodes}};
  if (!r.config.empty()) j["config"] = r.config;
  if (r.eval) j["eval"] = r.eval->to_json();
  if (r.energy)
    j["energy"] = {{"source", r.energy->source},
                   {"joules_per_inference", r.energy->joules_per_inference},
                   {"dynamic_joules_per_inference", r.energy->dynamic_joules_per_inference},
                   {"note", r.energy->note}};
  return j;
}

}  // namespace

Action add_compare(CLI::App& app) {
  auto a = std::make_shared<CompareArgs>();
  add_common(app, a->q, /*with_config=*/false);
  app.add_option("--configs", a->configs, "quantization configs to compare with FP32 (comma-separated YAML files)")
      ->required()
      ->delimiter(',');
  app.add_option("--runs", a->runs, "timed runs per model")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--warmup", a->warmup, "untimed runs first")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--energy", a->energy, "none, auto (rapl, perf, nvml, then the estimator), rapl, perf, nvml, estimate")
      ->capture_default_str();
  app.add_option("--energy-profile", a->energy_profile, "device profile JSON for the estimator");
  app.add_option("-o,--output", a->q.out, "directory for compare.json and compare.csv");
  return [a] {
    const QuantArgs& q = a->q;
    if (q.calib.empty()) fail("compare: --calib is required (calibration data for the configs)");
    for (const std::string& c : a->configs)
      if (!std::filesystem::exists(c)) fail("--configs: " + c + ": no such file");
    Prepared p = prepare(q, a->configs.front());
    std::unique_ptr<data::Dataset> eval_set;
    if (!q.eval.empty()) eval_set = open_data(q.eval, p.graph, p.path, q.data);
    std::unique_ptr<data::Dataset> calib_set = open_data(q.calib, p.graph, p.path, q.data);
    const runtime::TensorMap probe = load_samples(eval_set ? *eval_set : *calib_set, p.graph.inputs[0], 1).inputs.at(0);

    std::vector<std::string> pipeline = passes::default_pipeline();
    if (q.int8 == "real") pipeline = passes::int8_pipeline(pipeline);
    profile::ProfileOptions po;
    po.threads = q.threads;
    po.runs = a->runs;
    po.warmup = a->warmup;
    po.energy = a->energy;
    po.meter.estimate_profile = a->energy_profile;
    po.layer_energy = false;
    po.passes = pipeline;

    auto measure = [&](Row& r, const ir::Graph& g) {
      progress_line(q.quiet, "compare: timing " + r.name);
      po.model_name = r.name;
      profile::ProfileResult pr = profile::profile_model(g, po, &probe);
      r.ms = pr.plain_ms;
      r.energy = pr.energy;
      if (eval_set) r.eval = eval_graph(g, *eval_set, q, r.name);
      r.integer_nodes = integer_nodes(pr);
      r.fake_quant_nodes = joule_op_nodes(g).size();
    };
    std::vector<Row> rows(1);
    rows[0].name = "fp32";
    rows[0].weight_bytes = quant::weight_bytes(p.graph, quant::QuantPlan{});
    measure(rows[0], p.graph);
    for (const std::string& config : a->configs) {
      Prepared c{p.path, p.graph, plan_for(p, config)};
      QuantArgs ca = q;
      ca.config = config;
      run_calibration(ca, c, nullptr);
      Row r;
      r.name = std::filesystem::path(config).stem().string();
      r.config = config;
      r.weight_bytes = quant::weight_bytes(c.graph, c.plan);
      measure(r, quant::insert_qdq(c.graph, c.plan));
      rows.push_back(std::move(r));
    }
    progress_end(q.quiet);

    nlohmann::json j{{"model", p.path}, {"threads", q.threads}, {"int8", q.int8}, {"int8_note", int8_note(q.int8)},
                     {"calibration", q.calib}, {"calibration_samples", q.calib_samples}};
    if (eval_set) j["data"] = eval_set->describe();
    for (const Row& r : rows) j["rows"].push_back(row_json(r));
    if (!q.out.empty()) {
      std::filesystem::create_directories(q.out);
      write_file_atomic(q.out + "/compare.json", j.dump(2) + "\n");
      std::string csv = profile::csv_line({"model", "config", "top1", "top5", "samples", "latency_median_ms",
                                           "latency_p90_ms", "energy_j_per_inference", "energy_source", "weight_bytes",
                                           "integer_nodes"});
      for (const Row& r : rows)
        csv += profile::csv_line(
            {r.name, r.config, r.eval ? fmt::format("{:.6f}", r.eval->top1_rate()) : "",
             r.eval && r.eval->classes >= 5 ? fmt::format("{:.6f}", r.eval->top5_rate()) : "",
             r.eval ? std::to_string(r.eval->samples) : "", fmt::format("{:.4f}", r.ms.median),
             fmt::format("{:.4f}", r.ms.p90), r.energy ? fmt::format("{:.6g}", r.energy->joules_per_inference) : "",
             r.energy ? r.energy->source : "", fmt::format("{:.0f}", r.weight_bytes), std::to_string(r.integer_nodes)});
      write_file_atomic(q.out + "/compare.csv", csv);
    }
    if (q.format == "json") {
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("{}: FP32 vs {} config(s), {} thread(s); {}\n", p.path, a->configs.size(), q.threads, int8_note(q.int8));
    if (eval_set)
      fmt::print("accuracy on {}{}\n", eval_set->describe(),
                 rows[0].eval ? fmt::format(" ({} samples evaluated)", rows[0].eval->samples) : "");
    fmt::print("{:<16} {:>8} {:>8} {:>8} {:>12} {:>8} {:>14} {:>10} {:>8}\n", "model", "top-1", "top-5", "drop",
               "latency ms", "speedup", "energy mJ/inf", "weights", "int8 ops");
    const double fp32_top1 = rows[0].eval ? 100 * rows[0].eval->top1_rate() : 0;
    for (const Row& r : rows) {
      const bool top5 = r.eval && r.eval->classes >= 5;
      fmt::print("{:<16} {:>8} {:>8} {:>8} {:>12.3f} {:>7.2f}x {:>14} {:>10} {:>8}\n", r.name,
                 r.eval ? fmt::format("{:.2f}%", 100 * r.eval->top1_rate()) : "-",
                 top5 ? fmt::format("{:.2f}%", 100 * r.eval->top5_rate()) : "-",
                 r.eval ? fmt::format("{:+.2f}", fp32_top1 - 100 * r.eval->top1_rate()) : "-", r.ms.median,
                 rows[0].ms.median / r.ms.median,
                 r.energy ? fmt::format("{:.3f}", 1e3 * r.energy->joules_per_inference) : "-",
                 human_bytes(r.weight_bytes), r.integer_nodes);
    }
    if (rows[0].energy)
      fmt::print("energy source: {} ({})\n", rows[0].energy->source, rows[0].energy->description);
    else
      fmt::print("energy: not measured (--energy auto|rapl|perf|nvml|estimate)\n");
    fmt::print("latency: median of {} runs on one sample; drop in top-1 points against fp32\n", a->runs);
    if (!q.out.empty()) fmt::print("wrote {}/compare.json and compare.csv\n", q.out);
    return 0;
  };
}

}  // namespace joule::cli
