// joule train / finetune / qat: training on joule's engine (api/train.h) -- from the model's
// weights or fresh ones, LoRA adapters merged back, or quantization-aware -- writing the trained
// ONNX model. On a terminal a status line shows epoch, step, loss, learning rate and rate;
// --format json writes one JSON object per step and per epoch to stdout, then the summary.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "joule/api/train.h"
#include "joule/cli/commands.h"
#include "joule/cli/util.h"
#include "joule/train/distributed.h"

namespace joule::cli {

namespace {

struct TrainArgs {
  std::string model, data, val, out, teacher, format = "table";
  bool no_shuffle = false, quiet = false;
  api::TrainOptions opt;
};

// The flags of joule train, shared by finetune and qat.
void add_train_flags(CLI::App& app, TrainArgs& a) {
  api::TrainOptions& o = a.opt;
  add_model_arg(app, a.model);
  app.add_option("--data", a.data, "labelled training data SPEC (.npy + labels, IDX, JPEG class folder, LMDB)")->required();
  app.add_option("--val", a.val, "labelled data evaluated after every epoch");
  app.add_option("--val-samples", o.val_samples, "validate on the first N samples of --val (default all)");
  app.add_option("-o,--output", a.out, "write the trained model (ONNX) here")->required();
  app.add_option("--loss", o.loss, "cross_entropy, mse, l1 (mse and l1 against one-hot labels) or kd (distillation)")
      ->check(CLI::IsMember({"cross_entropy", "mse", "l1", "kd"}))
      ->capture_default_str();
  app.add_option("--teacher", a.teacher, "kd: the teacher model (ONNX) whose scores the student learns");
  app.add_option("--temperature", o.kd_temperature, "kd: softmax temperature")->capture_default_str();
  app.add_option("--kd-alpha", o.kd_alpha, "kd: weight of the cross entropy with the labels (the rest: KL to the teacher)")
      ->capture_default_str();
  app.add_option("--optimizer", o.optimizer.name, "sgd, adam or adamw")
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}))
      ->capture_default_str();
  app.add_option("--lr", o.optimizer.lr, "learning rate")->capture_default_str();
  app.add_option("--momentum", o.optimizer.momentum, "SGD momentum")->capture_default_str();
  app.add_flag("--nesterov", o.optimizer.nesterov, "Nesterov momentum (SGD)");
  app.add_option("--weight-decay", o.optimizer.weight_decay, "L2 (sgd, adam) or decoupled (adamw) weight decay")
      ->capture_default_str();
  app.add_option("--clip-grad-norm", o.optimizer.clip_grad_norm, "scale gradients to this global L2 norm at most");
  app.add_option("--schedule", o.schedule.name, "learning-rate schedule: constant, step or cosine")
      ->check(CLI::IsMember({"constant", "step", "cosine"}))
      ->capture_default_str();
  app.add_option("--warmup-steps", o.schedule.warmup_steps, "linear warm-up steps first");
  app.add_option("--step-size", o.schedule.step_size, "step schedule: multiply the rate by --gamma every N steps");
  app.add_option("--gamma", o.schedule.gamma, "step schedule factor")->capture_default_str();
  app.add_option("--min-lr", o.schedule.min_lr, "cosine schedule: the last step's rate");
  app.add_option("--batch", o.batch, "batch size")->capture_default_str()->check(CLI::PositiveNumber);
  auto* epochs = app.add_option("--epochs", o.epochs, "epochs")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--steps", o.steps, "train this many steps instead of whole epochs")
      ->check(CLI::PositiveNumber)
      ->excludes(epochs);
  app.add_option("--bn", o.bn, "BatchNorm: train (batch statistics) or frozen (running statistics)")
      ->check(CLI::IsMember({"train", "frozen"}))
      ->capture_default_str();
  app.add_flag("--no-shuffle", a.no_shuffle, "keep the data's order");
  app.add_option("--seed", o.seed, "seed of shuffling, augmentation, dropout and --init random")->capture_default_str();
  app.add_flag("--keep-zeros", o.keep_zeros,
               "weights of Conv/Gemm/MatMul that are zero stay zero (fine-tuning after unstructured pruning)");
  app.add_flag("--hflip", o.augment.hflip, "augment: random horizontal flips");
  app.add_option("--crop-padding", o.augment.crop_padding, "augment: random crops of the image padded by N");
  app.add_option("--checkpoint", o.checkpoint, "checkpoint file, written after every epoch (and --checkpoint-every)");
  app.add_option("--checkpoint-every", o.checkpoint_every, "also write the checkpoint every N steps");
  app.add_option("--resume", o.resume, "continue the run from this checkpoint");
  app.add_option("--format", a.format, "table or json (one JSON object per step and epoch)")
      ->check(CLI::IsMember({"table", "json"}));
  app.add_flag("-q,--quiet", a.quiet, "no status line on stderr");
  add_threads_option(app, o.threads);
  add_algo_options(app, o.algo);
  add_data_options(app, o.preprocess);
}

using Workflow = std::function<api::TrainReport(const api::Model&, const api::TrainOptions&, const api::Hooks&)>;

// Runs a training workflow with the status line or JSON records, writes the model and prints the
// summary (and `extra`'s lines).
int run_training(TrainArgs& a, const Workflow& workflow, const std::function<void(const nlohmann::json&)>& extra = {}) {
  api::TrainOptions& o = a.opt;
  o.data = api::DataSource::from_spec(a.data);
  if (!a.val.empty()) o.val = api::DataSource::from_spec(a.val);
  o.shuffle = !a.no_shuffle;
  if (!a.teacher.empty()) o.teacher = api::Model::load(a.teacher);
  api::Hooks hooks = terminal_hooks(a.quiet);
  const bool json = a.format == "json";
  hooks.record = [&](const nlohmann::json& r) {
    if (json) {
      fmt::print("{}\n", r.dump());
      std::fflush(stdout);
    } else if (r.value("event", "") == "epoch") {
      end_status(a.quiet);
      fmt::print("epoch {:>3}  loss {:.4f}  train top-1 {:.2f}%{}  {:.1f} s  {:.0f} samples/s\n",
                 r["epoch"].get<int64_t>() + 1, r["loss"].get<double>(), 100 * r["train_top1"].get<double>(),
                 r.contains("val_top1") ? fmt::format("  val top-1 {:.2f}%", 100 * r["val_top1"].get<double>()) : "",
                 r["seconds"].get<double>(), r["samples_per_s"].get<double>());
    }
  };
  const api::TrainReport r = workflow(api::Model::load(a.model), o, hooks);
  end_status(a.quiet);
  if (train::world().rank != 0) return 0;  // data parallel: rank 0 alone writes and prints
  r.model.save(a.out, /*allow_joule_ops=*/true);
  nlohmann::json j = r.to_json();
  j["output"] = a.out;
  if (json) {
    fmt::print("{}\n", nlohmann::json{{"event", "done"}, {"summary", j}}.dump());
    return 0;
  }
  fmt::print("trained {} of {} values ({} tensors) for {} steps in {:.1f} s; wrote {}\n",
             j["trained_values"].get<int64_t>(), j["model_values"].get<int64_t>(), j["params"].get<size_t>(),
             j["settings"]["steps"].get<int64_t>() - j["resumed_at_step"].get<int64_t>(), j["seconds"].get<double>(),
             a.out);
  if (extra) extra(j);
  return 0;
}

}  // namespace

Action add_train(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  auto graph = std::make_shared<std::string>();
  add_train_flags(app, *a);
  app.add_option("--init", a->opt.init, "keep (the model's weights) or random (seeded Kaiming/Glorot by layer type)")
      ->check(CLI::IsMember({"keep", "random"}))
      ->capture_default_str();
  app.add_option("--export-graph", *graph,
                 "write the training step's graph (loss and gradients; only joule loads it) here instead of training: "
                 "`joule profile FILE --passes none` times a step layer by layer");
  return [a, graph] {
    if (!graph->empty()) {
      a->opt.data = api::DataSource::from_spec(a->data);
      const api::Model g = api::training_graph(api::Model::load(a->model), a->opt);
      g.save(*graph, /*allow_joule_ops=*/true);
      fmt::print("wrote {} ({} nodes; inputs {})\n", *graph, g.graph().nodes.size(), fmt::join(g.input_names(), ", "));
      return 0;
    }
    return run_training(*a, [](const api::Model& m, const api::TrainOptions& o, const api::Hooks& h) {
      return api::train(m, o, h);
    });
  };
}

Action add_finetune(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  auto lora = std::make_shared<train::LoraOptions>();
  add_train_flags(app, *a);
  app.add_option("--lora", lora->rank, "LoRA rank of the adapters")->required()->check(CLI::PositiveNumber);
  app.add_option("--target", lora->target, "regex searched in node names: the layers adapted (default all of --types)");
  app.add_option("--types", lora->types, "op types adapted (MatMul, Gemm, Conv)")->delimiter(',');
  app.add_option("--lora-alpha", lora->alpha, "adapter scale alpha / rank (default alpha = rank)");
  return [a, lora] {
    return run_training(
        *a,
        [lora](const api::Model& m, const api::TrainOptions& o, const api::Hooks& h) {
          return api::finetune(m, api::FinetuneOptions{o, *lora}, h);
        },
        [](const nlohmann::json& j) {
          fmt::print("LoRA rank {} (scale {:g}) on {} layers, merged into their weights\n", j["lora"]["rank"].get<int64_t>(),
                     j["lora"]["scale"].get<double>(), j["lora"]["layers"].size());
        });
  };
}

Action add_qat(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  auto q = std::make_shared<api::QatOptions>();
  auto calib = std::make_shared<std::string>(), eval = std::make_shared<std::string>();
  add_train_flags(app, *a);
  app.add_option("--config", q->quant.config, "quantization config (YAML; see docs/quantization.md)")->required();
  app.add_option("--method", q->method,
                 "ste (scales fixed), lsq (learned step size), pact (learned clipping) or tqt (trained power-of-two thresholds)")
      ->check(CLI::IsMember({"ste", "lsq", "pact", "tqt"}))
      ->capture_default_str();
  app.add_option("--calib", *calib, "calibration data SPEC (default: --data)");
  app.add_option("--calib-samples", q->quant.calib_samples, "calibration samples")->capture_default_str();
  app.add_option("--eval", *eval, "labelled data: FP32, post-training and QAT accuracy side by side");
  app.add_option("--eval-samples", q->quant.eval_samples, "evaluate the first N samples of --eval (default all)");
  add_int8_option(app, q->quant.int8);
  return [a, q, calib, eval] {
    if (!calib->empty()) q->quant.calib = api::DataSource::from_spec(*calib);
    if (!eval->empty()) q->quant.eval = api::DataSource::from_spec(*eval);
    q->quant.threads = a->opt.threads ? a->opt.threads : 1;
    return run_training(
        *a,
        [q](const api::Model& m, const api::TrainOptions& o, const api::Hooks& h) {
          api::QatOptions qo = *q;
          qo.train = o;
          return api::qat(m, qo, h);
        },
        [](const nlohmann::json& j) {
          const nlohmann::json& r = j["qat"];
          fmt::print("QAT ({}) of {}: {} tensors quantized{}\n", r["method"].get<std::string>(), r["config"].get<std::string>(),
                     r["tensors_quantized"].get<size_t>(),
                     r["fake_quant_nodes"].get<size_t>() ? " (formats beyond 8-bit integers as joule FakeQuant nodes)" : "");
          if (r.contains("qat_top1"))
            fmt::print("top-1 on {} samples of {}: fp32 {:.2f}%  post-training {:.2f}%  quantization-aware {:.2f}%\n",
                       r["eval_samples"].get<size_t>(), r["data"].get<std::string>(), 100 * r["fp32_top1"].get<double>(),
                       100 * r["ptq_top1"].get<double>(), 100 * r["qat_top1"].get<double>());
        });
  };
}

}  // namespace joule::cli
