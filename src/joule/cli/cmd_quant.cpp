// joule quantize / joule sensitivity: config -> plan -> calibration -> QDQ simulation graph,
// then the quantized model written as ONNX, its accuracy against FP32, or per-layer damage.
#include <fmt/format.h>

#include "joule/cli/commands.h"
#include "joule/cli/quant_flags.h"

namespace joule::cli {

Action add_quantize(CLI::App& app) {
  auto a = std::make_shared<QuantFlags>();
  auto dry_run = std::make_shared<bool>(false), allow_joule_ops = std::make_shared<bool>(false);
  add_quant_flags(app, *a);
  app.add_option("-o,--output", a->out, "write the quantized model (ONNX QDQ) here");
  app.add_flag("--dry-run", *dry_run, "print the resolved per-node choice and stop (no calibration)");
  app.add_flag("--allow-joule-ops", *allow_joule_ops,
               "let -o write joule's FakeQuant nodes for formats ONNX cannot express (only joule loads them)");
  return [a, dry_run, allow_joule_ops] {
    const api::QuantOptions& o = a->resolved();
    const api::Model m = api::Model::load(a->model);
    if (*dry_run) {
      const api::QuantPlanReport p = api::quant_plan(m, o);
      if (a->format == "json") fmt::print("{}\n", p.plan.dump(2));
      else fmt::print("{}", p.table);
      return 0;
    }
    const api::QuantizeResult r = api::quantize(m, o, terminal_hooks(a->quiet));
    end_status(a->quiet);
    nlohmann::json j = r.to_json();
    if (!a->out.empty()) {
      r.model.save(a->out, *allow_joule_ops);
      j["output"] = a->out;
    }
    record_run(a->store, "quantize", m.name(), j);
    if (a->format == "json") {
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("{}", r.plan_table);
    fmt::print("calibrated on {} samples of {} ({})\n", j["calibration_samples"].get<size_t>(),
               a->calib.empty() ? "-" : a->calib, j["preprocessing"].get<std::string>());
    if (size_t fq = j["fake_quant_nodes"].get<size_t>()) fmt::print("{} tensors simulated with joule FakeQuant nodes\n", fq);
    if (!a->out.empty()) fmt::print("wrote {}\n", a->out);
    if (j.contains("note")) fmt::print("note: {}\n", j["note"].get<std::string>());
    if (j.contains("eval")) {
      const auto& e = j["eval"];
      fmt::print("\naccuracy on {}\n", e["data"].get<std::string>());
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
  auto a = std::make_shared<QuantFlags>();
  auto s = std::make_shared<api::SensitivityOptions>();
  auto top = std::make_shared<size_t>(0);
  add_quant_flags(app, *a);
  app.add_option("--mode", s->mode, "cumulative (whole model quantized) or isolated (one layer at a time)")
      ->capture_default_str();
  app.add_option("--variants", s->variants, "all, weights, activations (comma-separated)")->delimiter(',');
  app.add_option("--samples", s->samples, "samples compared over (from --eval when given, else --calib)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--top", *top, "print only the N most damaged layers");
  app.add_option("-o,--output", s->out_dir, "directory for sensitivity.json/.csv/.svg (default runs/sensitivity/MODEL)");
  return [a, s, top] {
    s->quant = a->resolved();
    const api::Model m = api::Model::load(a->model);
    if (s->out_dir.empty()) s->out_dir = "runs/sensitivity/" + m.name();
    const api::SensitivityResult r = api::sensitivity(m, *s, terminal_hooks(a->quiet));
    end_status(a->quiet);
    record_run(a->store, "sensitivity", m.name(), r.json);
    if (a->format == "json") {
      fmt::print("{}\n", r.json.dump(2));
      return 0;
    }
    const quant::SensitivityReport& rep = r.report;
    fmt::print("{} sensitivity of {} ({} layers, {} samples of {}; calibrated on {})\n", s->mode, m.name(),
               rep.layers.size(), rep.samples, r.json["data"].get<std::string>(),
               r.json["calibration_samples"].get<size_t>());
    fmt::print("{}", rep.table(*top));
    for (auto& [v, mt] : rep.final_output)
      fmt::print("final output, {:<12} SQNR {:.2f} dB  cosine {:.5f}\n", v, mt.sqnr_db, mt.cosine);
    if (rep.fp32_accuracy) {
      fmt::print("top-1 on these samples: fp32 {:.2f}%", 100 * *rep.fp32_accuracy);
      for (auto& [v, acc] : rep.quant_accuracy) fmt::print(", {} {:.2f}%", v, 100 * acc);
      fmt::print("\n");
    }
    fmt::print("wrote {}/sensitivity.json, .csv, .svg\n", s->out_dir);
    return 0;
  };
}

}  // namespace joule::cli
