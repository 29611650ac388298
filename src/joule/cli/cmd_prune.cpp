#include <fmt/core.h>

#include "joule/api/prune.h"
#include "joule/cli/commands.h"
#include "joule/cli/util.h"
#include "joule/core/error.h"

namespace joule::cli {

Action add_prune(CLI::App& app) {
  struct Args {
    std::string model, out, format = "table", store, data, out_dir, config;
    prune::PruneOptions opt;
    bool sensitivity = false;
    api::PruneSensitivityOptions sens;
    std::string ft_data, ft_val;
    api::TrainOptions ft;
  };
  auto a = std::make_shared<Args>();
  add_model_arg(app, a->model);
  auto* ratio = app.add_option("--ratio", a->opt.ratio,
                               "share removed: of each layer's weights, or (--structured) output channels");
  app.add_option("--config", a->config,
                 "pruning config YAML (default: ratio, structured, criterion...; rules by type/name/regex with their "
                 "ratio or skip), instead of the flags");
  auto* acts = app.add_option("--activations", a->opt.activations,
                              "activation pruning: zero this share of each sample's inputs of every Conv, Gemm and MatMul at run "
                              "time (a joule PruneActivation node in front: the model then runs on joule only)");
  app.add_flag("--structured", a->opt.structured,
               "remove whole output channels of convolutions and output features of Gemm/MatMul layers, carried through the layers that read them");
  app.add_option("--criterion", a->opt.criterion, "l1, l2, bn (|BatchNorm scale|, structured) or random")
      ->capture_default_str();
  app.add_option("--scope", a->opt.scope, "local (each layer its ratio) or global (one threshold; unstructured)")
      ->capture_default_str();
  app.add_option("--seed", a->opt.seed, "for --criterion random")->capture_default_str();
  app.add_option("-o,--output", a->out, "write the pruned model (ONNX)");
  app.add_flag("--sensitivity", a->sensitivity,
               "instead: each prunable layer pruned alone at each --ratios, the output compared with the unpruned model's");
  app.add_option("--ratios", a->sens.ratios, "--sensitivity: ratios, e.g. 0.25,0.5,0.75")->delimiter(',');
  app.add_option("--data", a->data, "--sensitivity: samples SPEC (labelled: top-1 too); default seeded random inputs");
  app.add_option("--samples", a->sens.samples, "--sensitivity: samples compared over")->capture_default_str();
  app.add_option("--out-dir", a->out_dir, "--sensitivity: write prune_sensitivity.json, .csv, .svg here");
  add_data_options(app, a->sens.preprocess);
  app.add_option("--finetune-data", a->ft_data,
                 "fine-tune the pruned model on this labelled data (unstructured: the pruned weights stay zero; for every training option, "
                 "joule train on the output)");
  app.add_option("--finetune-val", a->ft_val, "labelled data evaluated after each fine-tuning epoch");
  app.add_option("--finetune-epochs", a->ft.epochs, "fine-tuning epochs")->capture_default_str();
  app.add_option("--finetune-lr", a->ft.optimizer.lr, "fine-tuning learning rate (AdamW)")->capture_default_str();
  app.add_option("--finetune-batch", a->ft.batch, "fine-tuning batch size")->capture_default_str();
  app.add_option("--finetune-threads", a->ft.threads, "fine-tuning threads (0: every core)")->capture_default_str();
  app.add_option("--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  add_store_option(app, a->store);
  return [a, ratio, acts] {
    const api::Model m = api::Model::load(a->model);
    if (!a->config.empty()) a->opt = prune::PruneConfig::load(a->config).resolve(m.graph());
    if (a->sensitivity) {
      a->sens.structured = a->opt.structured;
      a->sens.criterion = a->opt.criterion;
      a->sens.out_dir = a->out_dir;
      if (!a->data.empty()) a->sens.data = api::DataSource::from_spec(a->data);
      const api::PruneSensitivityResult r = api::prune_sensitivity(m, a->sens, terminal_hooks());
      end_status();
      record_run(a->store, "prune_sensitivity", m.name(), r.json);
      if (a->format == "json") {
        fmt::print("{}\n", r.json.dump(2));
        return 0;
      }
      fmt::print("{}: one layer pruned at a time ({}, {}), output SQNR over {} samples of {}\n{}", m.name(),
                 a->sens.structured ? "output channels" : "weights", a->sens.criterion, r.json["samples"].get<size_t>(),
                 r.json["data"].get<std::string>(), r.table);
      if (!a->out_dir.empty()) fmt::print("wrote {0}/prune_sensitivity.json, .csv, .svg\n", a->out_dir);
      return 0;
    }
    if (a->out.empty()) fail("prune: -o OUT.onnx is required (or --sensitivity)");
    if (a->config.empty() && ratio->count() == 0 && acts->count() == 0)
      fail("prune: give --ratio R, --activations R or --config P.yaml");
    if (a->config.empty() && ratio->count() == 0) a->opt.ratio = 0;  // activations only
    const bool finetune = !a->ft_data.empty();
    if (finetune) {
      a->ft.data = api::DataSource::from_spec(a->ft_data);
      if (!a->ft_val.empty()) a->ft.val = api::DataSource::from_spec(a->ft_val);
      a->ft.optimizer.name = "adamw";
    }
    const api::PruneResult r = api::prune(m, a->opt, finetune ? &a->ft : nullptr, terminal_hooks());
    end_status();
    r.model.save(a->out, /*allow_joule_ops=*/!r.report.activation_pruning.empty());  // PruneActivation: joule's op
    nlohmann::json j = r.to_json();
    j["output"] = a->out;
    record_run(a->store, "prune", m.name(), j);
    if (a->format == "json") {
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("{}", r.report.table());
    if (finetune && r.finetune.contains("epochs") && !r.finetune["epochs"].empty()) {
      const auto& e = r.finetune["epochs"].back();
      fmt::print("fine-tuned {} epoch(s): loss {}{}\n", r.finetune["epochs"].size(), e.value("loss", nlohmann::json()).dump(),
                 e.contains("val_top1") ? fmt::format(", validation top-1 {:.2f}%", 100 * e["val_top1"].get<double>()) : "");
    }
    fmt::print("wrote {}\n", a->out);
    return 0;
  };
}

}  // namespace joule::cli
