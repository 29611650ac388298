// joule automp: mixed precision by fallback. Quantize everything at the config's formats, rank
// the layers by isolated sensitivity, move the most damaging up a precision ladder until the
// accuracy drop (or the final-output SQNR) is within bounds; report FP32, all-quantized and the
// result side by side and save the chosen config as YAML.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>

#include "joule/cli/commands.h"
#include "joule/cli/quant_flow.h"
#include "joule/cli/util.h"
#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/quant/automp.h"
#include "joule/quant/sensitivity.h"

namespace joule::cli {

namespace {

// Median latency of the graph on one input (a QDQ graph as --int8 says).
double median_ms(const ir::Graph& g, const runtime::TensorMap& input, int threads, const std::string& int8) {
  runtime::Session s = fast_session(g, threads, int8);
  for (int i = 0; i < 3; ++i) s.run(input);
  std::vector<double> ms;
  for (int i = 0; i < 15; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    s.run(input);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

Action add_automp(CLI::App& app) {
  auto a = std::make_shared<QuantArgs>();
  add_common(app, *a);
  app.add_option("--max-drop", a->max_drop, "allowed top-1 drop in percentage points against FP32")
      ->capture_default_str();
  app.add_option("--sqnr-target", a->sqnr_target,
                 "without labels: the final-output SQNR (dB) to reach instead of an accuracy bound");
  app.add_option("--ladder", a->ladder, "higher precisions to climb, lowest first (intN, fp16, bf16, fp32)")
      ->delimiter(',');
  app.add_option("--strategy", a->strategy, "greedy (one layer one rung at a time) or bisect (top-k layers to the "
                                            "last rung)")
      ->capture_default_str();
  app.add_option("--samples", a->samples, "samples for the sensitivity ranking (and the SQNR target)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("-o,--output", a->out, "directory for automp.yaml and automp.json (default runs/automp/MODEL)");
  return [a] {
    quant::check_ladder(a->ladder);
    const bool by_sqnr = a->sqnr_target > 0;
    if (!by_sqnr && a->eval.empty()) fail("automp: give --eval labelled data (or --sqnr-target without labels)");
    if (a->calib.empty()) fail("automp: --calib is required");
    Prepared p = prepare(*a);
    std::unique_ptr<data::Dataset> eval_set;
    if (!a->eval.empty()) eval_set = open_data(a->eval, p.graph, p.path, a->data);
    std::unique_ptr<data::Dataset> calib_set = open_data(a->calib, p.graph, p.path, a->data);
    const std::string stem = std::filesystem::path(p.path).stem().string();
    const std::string dir = a->out.empty() ? "runs/automp/" + safe_filename(stem) : a->out;
    std::filesystem::create_directories(dir);
    QuantArgs calib_args = *a;
    if (calib_args.calib_cache.empty()) calib_args.calib_cache = dir + "/calib_cache.json";
    std::string how;
    const size_t calibrated = run_calibration(calib_args, p, &how);
    const std::vector<quant::NodeChoice> start = p.plan.choices;

    // Samples compared over: the ranking, and the score in SQNR mode.
    LoadedSamples s = load_samples(eval_set ? *eval_set : *calib_set, p.graph.inputs[0], a->samples);
    s.labels.clear();
    quant::SensitivityOptions so;
    so.mode = quant::SensitivityMode::Isolated;
    so.variants = {"all"};
    so.threads = a->threads;
    so.progress = [&](const std::string& m) { progress_line(a->quiet, "ranking: " + m); };
    const quant::SensitivityReport sens = quant::sensitivity(p.graph, p.plan, s.inputs, {}, so);
    std::vector<size_t> ranking(start.size());
    for (size_t i = 0; i < ranking.size(); ++i) ranking[i] = i;
    auto sqnr_at = [&](size_t i) {
      auto it = sens.layers[i].metrics.find("all");
      return it == sens.layers[i].metrics.end() ? 1e9 : it->second.sqnr_db;
    };
    std::stable_sort(ranking.begin(), ranking.end(), [&](size_t x, size_t y) { return sqnr_at(x) < sqnr_at(y); });

    std::vector<Tensor> ref_out;
    if (by_sqnr) {
      runtime::Session f = fast_session(p.graph, a->threads, "simulated");
      for (auto& in : s.inputs) ref_out.push_back(f.run(in).at(f.output_names()[0]).clone());
    }
    // Calibrated from the cache file after the first time: only new formats run the model.
    auto quantized_graph = [&](const std::vector<quant::NodeChoice>& choices, double* bytes = nullptr) {
      Prepared q{p.path, p.graph, quant::plan_quantization(p.graph, choices)};
      run_calibration(calib_args, q, nullptr);
      if (bytes) *bytes = quant::weight_bytes(q.graph, q.plan);
      return quant::insert_qdq(q.graph, q.plan);
    };
    auto score = [&](const std::vector<quant::NodeChoice>& choices) {
      ir::Graph q = quantized_graph(choices);
      if (!by_sqnr) return 100 * eval_graph(q, *eval_set, *a, "candidate").top1_rate();
      runtime::Session qs = fast_session(q, a->threads, a->int8);
      quant::MetricsAccumulator acc;
      for (size_t i = 0; i < s.inputs.size(); ++i) acc.add(ref_out[i], qs.run(s.inputs[i]).at(qs.output_names()[0]));
      return acc.result().sqnr_db;
    };
    double reference = a->sqnr_target;
    data::EvalResult fp32_eval;
    if (!by_sqnr) {
      fp32_eval = eval_graph(p.graph, *eval_set, *a, "fp32");
      reference = 100 * fp32_eval.top1_rate();
    }
    quant::AutoMpOptions o;
    o.ladder = a->ladder;
    o.max_drop = by_sqnr ? 0.0 : a->max_drop;
    o.strategy = a->strategy;
    for (auto& c : start) o.names.push_back(p.graph.nodes[c.node]->name);
    o.progress = [&](const std::string& m) { progress_line(a->quiet, "automp: " + m); };
    const quant::AutoMpResult r = quant::automp(start, ranking, score, reference, o);
    progress_end(a->quiet);

    // Side by side: FP32, everything at the config's formats, the AutoMP result.
    const runtime::TensorMap& probe = s.inputs[0];
    double all_bytes = 0, mp_bytes = 0;
    const ir::Graph all_q = quantized_graph(start, &all_bytes);
    const ir::Graph mp_q = quantized_graph(r.choices, &mp_bytes);
    const double fp32_bytes = quant::weight_bytes(p.graph, quant::QuantPlan{});
    struct Row {
      std::string name;
      double score, bytes, ms;
    };
    std::vector<Row> rows{{"fp32", reference, fp32_bytes, median_ms(p.graph, probe, a->threads, a->int8)},
                          {"all " + std::filesystem::path(a->config).stem().string(), r.start_score, all_bytes,
                           median_ms(all_q, probe, a->threads, a->int8)},
                          {"automp", r.final_score, mp_bytes, median_ms(mp_q, probe, a->threads, a->int8)}};
    if (by_sqnr) rows[0].score = std::numeric_limits<double>::infinity();

    const std::string yaml = quant::automp_config_yaml(a->config, p.graph, start, r);
    write_file_atomic(dir + "/automp.yaml", yaml);
    nlohmann::json j{{"model", p.path},
                     {"config", a->config},
                     {"objective", by_sqnr ? "final-output SQNR (dB)" : "top-1 (%)"},
                     {"reference", reference},
                     {"max_drop", o.max_drop},
                     {"strategy", o.strategy},
                     {"ladder", o.ladder},
                     {"met", r.met},
                     {"calibration_samples", calibrated},
                     {"int8", a->int8},
                     {"latency_note", int8_note(a->int8)}};
    for (size_t i = 0; i < start.size(); ++i)
      j["layers"].push_back({{"node", o.names[i]},
                             {"op", p.graph.nodes[start[i].node]->op_type},
                             {"isolated_sqnr_db", sqnr_at(i)},
                             {"precision", r.rung[i].empty() ? "config" : r.rung[i]}});
    for (auto& st : r.steps) j["steps"].push_back({{"action", st.action}, {"score", st.score}, {"met", st.met}});
    for (auto& row : rows)
      j["summary"].push_back({{"model", row.name}, {"score", std::isinf(row.score) ? nlohmann::json("reference") : nlohmann::json(row.score)},
                              {"weight_bytes", row.bytes}, {"latency_ms", row.ms}});
    write_file_atomic(dir + "/automp.json", j.dump(2) + "\n");
    if (a->format == "json") {
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("AutoMP on {}: {} {} within {} of {:.2f} ({} strategy, ladder {})\n", stem,
               by_sqnr ? "final-output SQNR" : "top-1", r.met ? "met" : "NOT met", by_sqnr ? 0.0 : o.max_drop,
               reference, o.strategy, fmt::join(o.ladder, ","));
    fmt::print("{:<44} {:<8} {:>12} {}\n", "layer (most sensitive first)", "op", "isolated dB", "precision");
    for (size_t k : ranking)
      fmt::print("{:<44} {:<8} {:>12.2f} {}\n", o.names[k], p.graph.nodes[start[k].node]->op_type, sqnr_at(k),
                 r.rung[k].empty() ? "config format" : r.rung[k]);
    fmt::print("\n{:<16} {:>12} {:>12} {:>12}\n", "model", by_sqnr ? "SQNR dB" : "top-1 %", "weights", "latency ms*");
    for (auto& row : rows)
      fmt::print("{:<16} {:>12} {:>12} {:>12.3f}\n", row.name, std::isinf(row.score) ? "ref" : fmt::format("{:.2f}", row.score),
                 human_bytes(row.bytes), row.ms);
    fmt::print("* median of 15 runs on one sample, {} thread(s); {}\n", a->threads, int8_note(a->int8));
    fmt::print("{} of {} layers moved to higher precision; {} evaluations; wrote {}/automp.yaml and automp.json\n",
               r.promoted(), start.size(), r.steps.size(), dir);
    return 0;
  };
}

}  // namespace joule::cli
