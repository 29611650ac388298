// joule quantize / joule sensitivity: config -> plan -> calibration -> QDQ simulation graph,
// then the quantized model written as ONNX, its accuracy against FP32, or per-layer damage.
#include <fmt/format.h>

#include <filesystem>

#include "joule/cli/commands.h"
#include "joule/cli/quant_flow.h"
#include "joule/cli/util.h"
#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/onnx/model_io.h"
#include "joule/quant/sensitivity.h"

namespace joule::cli {

Action add_quantize(CLI::App& app) {
  auto a = std::make_shared<QuantArgs>();
  add_common(app, *a);
  app.add_option("-o,--output", a->out, "write the quantized model (ONNX QDQ) here");
  app.add_flag("--dry-run", a->dry_run, "print the resolved per-node choice and stop (no calibration)");
  app.add_flag("--allow-joule-ops", a->allow_joule_ops,
               "let -o write joule's FakeQuant nodes for formats ONNX cannot express (only joule loads them)");
  return [a] {
    Prepared p = prepare(*a);
    if (a->dry_run) {
      if (a->format == "json") fmt::print("{}\n", quant::plan_json(p.graph, p.plan).dump(2));
      else fmt::print("{}", quant::describe_plan(p.graph, p.plan));
      return 0;
    }
    std::unique_ptr<data::Dataset> eval_set;
    if (!a->eval.empty()) eval_set = open_data(a->eval, p.graph, p.path, a->data);  // fail early on bad data
    std::string how;
    const size_t calibrated = run_calibration(*a, p, &how);
    ir::Graph q = quant::insert_qdq(p.graph, p.plan);
    const std::vector<std::string> custom = joule_op_nodes(q);
    if (!a->out.empty()) {
      if (!custom.empty() && !a->allow_joule_ops) {
        std::string names;
        for (size_t i = 0; i < custom.size() && i < 8; ++i) names += (i ? ", " : "") + custom[i];
        fail(fmt::format("-o: {} tensors use formats ONNX QuantizeLinear cannot express (FakeQuant nodes {}{}); "
                         "use 8-bit integer formats, or --allow-joule-ops for a file only joule loads",
                         custom.size(), names, custom.size() > 8 ? ", ..." : ""));
      }
      onnx::save_model(q, a->out);
    }
    nlohmann::json j{{"model", p.path},
                     {"config", a->config},
                     {"nodes_quantized", p.plan.choices.size()},
                     {"tensors_quantized", p.plan.points.size()},
                     {"calibration_samples", calibrated},
                     {"preprocessing", how},
                     {"fake_quant_nodes", custom.size()}};
    if (!a->out.empty()) j["output"] = a->out;
    if (eval_set) {
      const data::EvalResult f = eval_graph(p.graph, *eval_set, *a, "fp32");
      const data::EvalResult qr = eval_graph(q, *eval_set, *a, "quantized");
      j["eval"] = {{"data", eval_set->describe()}, {"fp32", f.to_json()}, {"quantized", qr.to_json()},
                   {"top1_drop_points", 100 * (f.top1_rate() - qr.top1_rate())}};
    }
    if (a->format == "json") {
      j["plan"] = quant::plan_json(p.graph, p.plan);
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("{}", quant::describe_plan(p.graph, p.plan));
    fmt::print("calibrated on {} samples of {} ({})\n", calibrated, a->calib.empty() ? "-" : a->calib, how);
    if (!custom.empty()) fmt::print("{} tensors simulated with joule FakeQuant nodes\n", custom.size());
    if (!a->out.empty()) fmt::print("wrote {}\n", a->out);
    if (eval_set) {
      const auto& e = j["eval"];
      fmt::print("\naccuracy on {}\n", eval_set->describe());
      fmt::print("{:<12} {:>8} {:>8} {:>9}\n", "model", "top-1", "top-5", "samples");
      for (const char* k : {"fp32", "quantized"})
        fmt::print("{:<12} {:>7.2f}% {:>8} {:>9}\n", k, 100 * e[k]["top1"].get<double>(),
                   e[k].contains("top5") ? fmt::format("{:.2f}%", 100 * e[k]["top5"].get<double>()) : "-",
                   e[k]["samples"].get<size_t>());
      fmt::print("top-1 drop: {:.2f} points\n", e["top1_drop_points"].get<double>());
    }
    return 0;
  };
}

Action add_sensitivity(CLI::App& app) {
  auto a = std::make_shared<QuantArgs>();
  add_common(app, *a);
  app.add_option("--mode", a->mode, "cumulative (whole model quantized) or isolated (one layer at a time)")
      ->capture_default_str();
  app.add_option("--variants", a->variants, "all, weights, activations (comma-separated)")->delimiter(',');
  app.add_option("--samples", a->samples, "samples compared over (from --eval when given, else --calib)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--top", a->top, "print only the N most damaged layers");
  app.add_option("-o,--output", a->out, "directory for sensitivity.json/.csv/.svg (default runs/sensitivity/MODEL)");
  return [a] {
    quant::SensitivityOptions so;
    so.mode = quant::sensitivity_mode_from_name(a->mode);
    so.variants = a->variants;
    so.threads = a->threads;
    so.progress = [&](const std::string& s) { progress_line(a->quiet, s); };
    Prepared p = prepare(*a);
    const std::string spec = !a->eval.empty() ? a->eval : a->calib;
    if (spec.empty()) fail("sensitivity: give --calib (and optionally --eval) data");
    std::unique_ptr<data::Dataset> d = open_data(spec, p.graph, p.path, a->data);
    std::string how;
    const size_t calibrated = run_calibration(*a, p, &how);
    LoadedSamples s = load_samples(*d, p.graph.inputs[0], a->samples);
    if (a->eval.empty()) s.labels.clear();  // accuracy only on the data given for it
    quant::SensitivityReport r = quant::sensitivity(p.graph, p.plan, s.inputs, s.labels, so);
    progress_end(a->quiet);
    const std::string stem = std::filesystem::path(p.path).stem().string();
    const std::string dir = a->out.empty() ? "runs/sensitivity/" + safe_filename(stem) : a->out;
    std::filesystem::create_directories(dir);
    nlohmann::json j = r.to_json();
    j["model"] = p.path;
    j["config"] = a->config;
    j["calibration_samples"] = calibrated;
    j["data"] = d->describe();
    write_file_atomic(dir + "/sensitivity.json", j.dump(2) + "\n");
    write_file_atomic(dir + "/sensitivity.csv", r.csv());
    write_file_atomic(dir + "/sensitivity.svg", r.svg(stem + ", " + a->mode));
    if (a->format == "json") {
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("{} sensitivity of {} ({} layers, {} samples of {}; calibrated on {})\n", a->mode, stem, r.layers.size(),
               r.samples, d->describe(), calibrated);
    fmt::print("{}", r.table(a->top));
    for (auto& [v, m] : r.final_output)
      fmt::print("final output, {:<12} SQNR {:.2f} dB  cosine {:.5f}\n", v, m.sqnr_db, m.cosine);
    if (r.fp32_accuracy) {
      fmt::print("top-1 on these samples: fp32 {:.2f}%", 100 * *r.fp32_accuracy);
      for (auto& [v, acc] : r.quant_accuracy) fmt::print(", {} {:.2f}%", v, 100 * acc);
      fmt::print("\n");
    }
    fmt::print("wrote {}/sensitivity.json, .csv, .svg\n", dir);
    return 0;
  };
}

}  // namespace joule::cli
