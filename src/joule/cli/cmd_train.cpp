// joule train: trains a model on joule's engine (api/train.h) and writes the trained ONNX model.
// On a terminal a status line shows epoch, step, loss, learning rate and rate; --format json
// writes one JSON object per step and per epoch to stdout, then the summary.
#include <fmt/format.h>

#include "joule/api/train.h"
#include "joule/cli/commands.h"
#include "joule/cli/util.h"

namespace joule::cli {

namespace {
struct TrainArgs {
  std::string model, data, val, out, format = "table";
  bool no_shuffle = false, quiet = false;
  api::TrainOptions opt;
};
}  // namespace

Action add_train(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  api::TrainOptions& o = a->opt;
  add_model_arg(app, a->model);
  app.add_option("--data", a->data, "labelled training data SPEC (.npy + labels, IDX, JPEG class folder, LMDB)")->required();
  app.add_option("--val", a->val, "labelled data evaluated after every epoch");
  app.add_option("--val-samples", o.val_samples, "validate on the first N samples of --val (default all)");
  app.add_option("-o,--output", a->out, "write the trained model (ONNX) here")->required();
  app.add_option("--loss", o.loss, "cross_entropy, mse or l1 (mse and l1 against one-hot labels)")
      ->check(CLI::IsMember({"cross_entropy", "mse", "l1"}))
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
  app.add_option("--init", o.init, "keep (the model's weights) or random (seeded Kaiming/Glorot by layer type)")
      ->check(CLI::IsMember({"keep", "random"}))
      ->capture_default_str();
  app.add_flag("--no-shuffle", a->no_shuffle, "keep the data's order");
  app.add_option("--seed", o.seed, "seed of shuffling, augmentation, dropout and --init random")->capture_default_str();
  app.add_flag("--hflip", o.augment.hflip, "augment: random horizontal flips");
  app.add_option("--crop-padding", o.augment.crop_padding, "augment: random crops of the image padded by N");
  app.add_option("--checkpoint", o.checkpoint, "checkpoint file, written after every epoch (and --checkpoint-every)");
  app.add_option("--checkpoint-every", o.checkpoint_every, "also write the checkpoint every N steps");
  app.add_option("--resume", o.resume, "continue the run from this checkpoint");
  app.add_option("--format", a->format, "table or json (one JSON object per step and epoch)")
      ->check(CLI::IsMember({"table", "json"}));
  app.add_flag("-q,--quiet", a->quiet, "no status line on stderr");
  add_threads_option(app, o.threads);
  add_algo_options(app, o.algo);
  add_data_options(app, o.preprocess);
  return [a] {
    api::TrainOptions& o = a->opt;
    o.data = api::DataSource::from_spec(a->data);
    if (!a->val.empty()) o.val = api::DataSource::from_spec(a->val);
    o.shuffle = !a->no_shuffle;
    if (o.steps > 0) o.epochs = 0;
    api::Hooks hooks = terminal_hooks(a->quiet);
    const bool json = a->format == "json";
    hooks.record = [&](const nlohmann::json& r) {
      if (json) {
        fmt::print("{}\n", r.dump());
        std::fflush(stdout);
      } else if (r.value("event", "") == "epoch") {
        end_status(a->quiet);
        fmt::print("epoch {:>3}  loss {:.4f}  train top-1 {:.2f}%{}  {:.1f} s  {:.0f} samples/s\n",
                   r["epoch"].get<int64_t>() + 1, r["loss"].get<double>(), 100 * r["train_top1"].get<double>(),
                   r.contains("val_top1") ? fmt::format("  val top-1 {:.2f}%", 100 * r["val_top1"].get<double>()) : "",
                   r["seconds"].get<double>(), r["samples_per_s"].get<double>());
      }
    };
    const api::TrainReport r = api::train(api::Model::load(a->model), o, hooks);
    end_status(a->quiet);
    r.model.save(a->out, /*allow_joule_ops=*/true);
    nlohmann::json j = r.to_json();
    j["output"] = a->out;
    if (json) {
      fmt::print("{}\n", nlohmann::json{{"event", "done"}, {"summary", j}}.dump());
      return 0;
    }
    fmt::print("trained {} of {} values ({} tensors) for {} steps in {:.1f} s; wrote {}\n",
               j["trained_values"].get<int64_t>(), j["model_values"].get<int64_t>(), j["params"].get<size_t>(),
               j["settings"]["steps"].get<int64_t>() - j["resumed_at_step"].get<int64_t>(), j["seconds"].get<double>(),
               a->out);
    return 0;
  };
}

}  // namespace joule::cli
