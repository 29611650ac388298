#include "joule/api/train.h"

#include <fmt/format.h>

#include <set>

#include <chrono>
#include <filesystem>
#include <cmath>
#include <set>

#include "joule/api/evaluate.h"
#include "joule/api/run.h"
#include "joule/core/error.h"
#include "joule/train/checkpoint.h"
#include "joule/train/distributed.h"
#include "joule/train/init.h"
#include "joule/train/train_graph.h"

namespace joule::api {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// One-hot float targets [B, C] of integer labels (mse and l1 on classification data).
Tensor one_hot(const Tensor& labels, const Shape& out) {
  Tensor t(DType::Float32, out);
  const int64_t c = out.at(1);
  for (int64_t i = 0; i < labels.numel(); ++i) {
    const int64_t l = labels.data<int64_t>()[i];
    if (l < 0 || l >= c) fail("training: label " + std::to_string(l) + " is outside the model's " + std::to_string(c) + " outputs");
    t.data<float>()[i * c + l] = 1.f;
  }
  return t;
}

// How many rows of [B, C] scores have their largest value at the label.
int64_t correct(const Tensor& scores, const Tensor& labels) {
  if (scores.rank() != 2 || scores.dtype() != DType::Float32) return 0;
  const int64_t b = scores.dim(0), c = scores.dim(1);
  int64_t n = 0;
  for (int64_t i = 0; i < b; ++i) {
    const float* row = scores.data<float>() + i * c;
    n += std::max_element(row, row + c) - row == labels.data<int64_t>()[i];
  }
  return n;
}

// The state a run carries from step to step, and checkpoints.
struct Run {
  train::TrainGraph tg;
  std::vector<Tensor> params, state;
  int64_t step = 0;  // the next step to run
};

train::Checkpoint to_checkpoint(const Run& r, const train::Optimizer& opt, const nlohmann::json& settings) {
  train::Checkpoint c;
  c.meta = {{"step", r.step}, {"optimizer_steps", opt.steps_taken()}, {"settings", settings},
            {"params", r.tg.params}};
  for (size_t i = 0; i < r.params.size(); ++i) c.tensors["param/" + r.tg.params[i]] = r.params[i];
  for (size_t i = 0; i < r.state.size(); ++i) c.tensors["state/" + r.tg.state[i].input] = r.state[i];
  for (auto& [k, t] : opt.state()) c.tensors["opt/" + k] = t;
  return c;
}

void from_checkpoint(Run& r, train::Optimizer& opt, const std::string& path, const nlohmann::json& settings) {
  const train::Checkpoint c = train::load_checkpoint(path);
  for (const char* k : {"batch", "seed", "shuffle", "loss", "bn", "optimizer"})
    if (c.meta["settings"].value(k, nlohmann::json()) != settings.value(k, nlohmann::json()))
      fail(path + ": the checkpoint's " + k + " is " + c.meta["settings"].value(k, nlohmann::json()).dump() +
           ", this run's " + settings.value(k, nlohmann::json()).dump());
  if (c.meta.value("params", nlohmann::json()) != nlohmann::json(r.tg.params))
    fail(path + ": the checkpoint trains other weights than this run");
  auto take = [&](const std::string& key, Tensor& into) {
    auto it = c.tensors.find(key);
    if (it == c.tensors.end() || it->second.shape() != into.shape() || it->second.dtype() != into.dtype())
      fail(path + ": tensor '" + key + "' is missing or of another shape");
    into = it->second.clone();
  };
  for (size_t i = 0; i < r.params.size(); ++i) take("param/" + r.tg.params[i], r.params[i]);
  for (size_t i = 0; i < r.state.size(); ++i) take("state/" + r.tg.state[i].input, r.state[i]);
  std::map<std::string, Tensor> os;
  for (auto& [k, t] : c.tensors)
    if (k.rfind("opt/", 0) == 0) os[k.substr(4)] = t;
  opt.load_state(os, c.meta.value("optimizer_steps", int64_t{0}), r.params.size());
  r.step = c.meta.value("step", int64_t{0});
}

// The model with the run's weights and statistics.
Model export_model(const Model& base, const Run& r) {
  ir::Graph g = base.graph();
  for (size_t i = 0; i < r.params.size(); ++i) g.initializers[r.tg.params[i]] = r.params[i].clone();
  for (size_t i = 0; i < r.state.size(); ++i) g.initializers[r.tg.state[i].input] = r.state[i].clone();
  return base.derived(std::move(g), base.name() + "_trained");
}

// What train() and training_graph() share: the options checked, the model untied (and freshly
// initialised), the data opened, and the training graph's options at this batch.
struct Setup {
  Model base;
  std::unique_ptr<data::Dataset> data;
  std::string how;
  std::string input;
  Shape in_shape;  // the batch, then a sample's shape
  train::TrainGraphOptions tgo;
};

Setup setup(const Model& model, const TrainOptions& o) {
  train::check(o.optimizer);
  train::check(o.schedule);
  if (o.init != "keep" && o.init != "random") fail("training: init '" + o.init + "' (keep or random)");
  if (o.batch < 1) fail("training: batch must be at least 1");
  if (o.epochs < 1 && o.steps < 1) fail("training: give a positive number of epochs or steps");
  if (o.data.empty()) fail("training: no training data");
  if (o.checkpoint_every < 0) fail("training: checkpoint_every must not be negative");
  if (o.augment.crop_padding < 0) fail("training: crop padding must not be negative");
  if (model.input_names().size() != 1) fail("training: the model has " + std::to_string(model.input_names().size()) +
                                            " inputs; training feeds single-input models");
  Setup st;
  st.base = model;
  {
    ir::Graph g = model.graph();
    const bool untied = train::untie_initializers(g) > 0;
    if (o.init == "random") train::initialize_weights(g, o.seed);
    if (untied || o.init == "random") st.base = model.derived(std::move(g), model.name());
  }
  st.data = open_data(o.data, st.base, o.preprocess, &st.how, false);  // the trainer makes the batches
  st.input = st.base.input_names()[0];
  st.in_shape = {o.batch};
  const data::Sample s = st.data->get(0);
  if (!s.error.empty()) fail("training data: " + s.error);
  st.in_shape.insert(st.in_shape.end(), s.input.shape().begin(), s.input.shape().end());
  st.tgo.loss = o.loss;
  st.tgo.bn = o.bn;
  st.tgo.kd_temperature = o.kd_temperature;
  st.tgo.kd_alpha = o.kd_alpha;
  st.tgo.input_shapes = {{st.input, st.in_shape}};
  st.tgo.trainable = o.trainable;
  st.tgo.frozen = o.frozen;
  return st;
}

}  // namespace

Model training_graph(const Model& model, const TrainOptions& o) {
  Setup st = setup(model, o);
  return model.derived(train::build_train_graph(st.base.graph(), st.tgo).graph, model.name() + "_training_step");
}

TrainReport train(const Model& model, const TrainOptions& o, const Hooks& hooks) {
  Setup st = setup(model, o);
  const Model& base = st.base;
  const std::unique_ptr<data::Dataset>& data = st.data;
  const std::string& how = st.how;
  std::unique_ptr<data::Dataset> val;
  if (!o.val.empty()) val = open_data(o.val, base, o.preprocess);  // one run per sample, or per stack of a fixed batch
  // Data parallel across ranks: each global batch of batch * ranks samples is split into the
  // ranks' batches, and the gradients are averaged.
  const train::World& world = train::world();
  const bool lead = world.rank == 0;
  const int64_t global_batch = o.batch * world.size;
  const int64_t n = static_cast<int64_t>(data->size()), per_epoch = n / global_batch;
  if (per_epoch < 1)
    fail(fmt::format("training: {} samples make no batch of {}", n, global_batch));
  const int64_t total = o.steps > 0 ? o.steps : o.epochs * per_epoch;
  const std::string& input = st.input;
  const Shape& in_shape = st.in_shape;
  Run r;
  r.tg = train::build_train_graph(base.graph(), st.tgo);
  const train::TrainGraph& tg = r.tg;
  if (tg.params.empty()) fail("training: no weight of the model affects the loss");
  for (const std::string& p : tg.params) r.params.push_back(base.graph().initializers.at(p).clone());
  for (const auto& s : tg.state) r.state.push_back(base.graph().initializers.at(s.input).clone());
  for (const Tensor& p : r.params)
    if (p.dtype() != DType::Float32) fail("training: weights must be float32, got " + p.describe());
  // keep_zeros: a mask per layer weight holding zeros (empty: not masked).
  std::vector<std::vector<uint8_t>> masks(r.params.size());
  int64_t masked = 0;
  if (o.keep_zeros) {
    std::set<std::string> weights;
    for (const auto& n : base.graph().nodes)
      if ((n->op_type == "Conv" || n->op_type == "ConvTranspose" || n->op_type == "Gemm" || n->op_type == "MatMul") &&
          n->inputs.size() > 1)
        weights.insert(n->inputs[1]);
    for (size_t i = 0; i < r.params.size(); ++i) {
      if (!weights.count(tg.params[i])) continue;
      const float* w = r.params[i].data<float>();
      std::vector<uint8_t> m(static_cast<size_t>(r.params[i].numel()));
      int64_t zeros = 0;
      for (size_t k = 0; k < m.size(); ++k) zeros += !(m[k] = w[k] != 0.0f);
      if (zeros > 0) {
        masks[i] = std::move(m);
        masked += zeros;
      }
    }
  }
  auto apply_masks = [&](std::vector<Tensor>& ts) {
    for (size_t i = 0; i < ts.size(); ++i) {
      if (masks[i].empty()) continue;
      float* v = ts[i].data<float>();
      for (size_t k = 0; k < masks[i].size(); ++k)
        if (!masks[i][k]) v[k] = 0.0f;
    }
  };
  PrepareOptions po;
  po.threads = o.threads;
  po.passes = "none";
  po.int8 = "none";
  po.algo = o.algo;
  Prepared prep = prepare(ir::Graph(tg.graph), po);
  runtime::Session& session = *prep.session;
  std::unique_ptr<runtime::Session> teacher;  // kd: scores the same batches
  if (o.loss == "kd") {
    if (o.teacher.empty()) fail("training: the kd loss needs a teacher model");
    if (o.teacher.input_names().size() != 1) fail("training: the teacher must take one input");
    PrepareOptions tp = PrepareOptions::with_threads(o.threads);
    teacher = prepare(o.teacher.with_input_shapes({{o.teacher.input_names()[0], in_shape}}), tp).session;
  }

  const nlohmann::json settings = {
      {"loss", o.loss}, {"bn", o.bn}, {"init", o.init}, {"kd_temperature", o.kd_temperature},
      {"kd_alpha", o.kd_alpha}, {"optimizer", o.optimizer.name}, {"lr", o.optimizer.lr},
      {"momentum", o.optimizer.momentum}, {"nesterov", o.optimizer.nesterov},
      {"weight_decay", o.optimizer.weight_decay}, {"schedule", o.schedule.name},
      {"warmup_steps", o.schedule.warmup_steps}, {"clip_grad_norm", o.optimizer.clip_grad_norm},
      {"batch", o.batch}, {"steps", total}, {"steps_per_epoch", per_epoch}, {"shuffle", o.shuffle},
      {"seed", o.seed}, {"keep_zeros", o.keep_zeros}, {"hflip", o.augment.hflip}, {"crop_padding", o.augment.crop_padding},
      {"threads", session.threads()}, {"ranks", world.size}, {"global_batch", global_batch}};
  train::Optimizer opt(o.optimizer);
  if (!o.resume.empty()) from_checkpoint(r, opt, o.resume, settings);
  if (r.step > total)
    fail(o.resume + ": the checkpoint is at step " + std::to_string(r.step) + ", past this run's " + std::to_string(total));

  TrainReport rep;
  rep.json = {{"model", model_label(model)}, {"data", data->describe()}, {"preprocessing", how},
              {"settings", settings}, {"params", tg.params.size()}, {"resumed_at_step", r.step}};
  int64_t trained = 0;
  for (const Tensor& p : r.params) trained += p.numel();
  rep.json["trained_values"] = trained;
  rep.json["model_values"] = base.graph().parameter_count();
  if (o.keep_zeros) rep.json["masked_values"] = masked;  // zero weights kept zero

  const auto t_start = Clock::now();
  std::unique_ptr<train::BatchLoader> loader;
  int64_t loader_epoch = -1;
  double epoch_loss = 0, epoch_seconds = 0;
  int64_t epoch_steps = 0, epoch_correct = 0, epoch_samples = 0;
  nlohmann::json last;
  auto save = [&] {
    if (lead && !o.checkpoint.empty()) train::save_checkpoint(o.checkpoint, to_checkpoint(r, opt, settings));
  };
  while (r.step < total) {
    const int64_t epoch = r.step / per_epoch, in_epoch = r.step % per_epoch;
    if (epoch != loader_epoch) {
      // This rank's share of every global batch of the epoch, in order.
      const std::vector<size_t> order = train::epoch_order(static_cast<size_t>(n), o.shuffle, o.seed, epoch);
      std::vector<size_t> mine;
      for (int64_t k = 0; k < per_epoch; ++k)
        for (int64_t j = 0; j < o.batch; ++j) mine.push_back(order[static_cast<size_t>(k * global_batch + world.rank * o.batch + j)]);
      loader = std::make_unique<train::BatchLoader>(*data, std::move(mine), o.batch, o.augment, o.seed, epoch,
                                                    static_cast<size_t>(in_epoch));
      loader_epoch = epoch;
    }
    const auto t0 = Clock::now();
    std::optional<train::Batch> batch = loader->next();
    if (!batch) fail_internal("training: the epoch ended early");
    runtime::TensorMap in{{input, batch->inputs}};
    in[tg.target] = o.loss == "cross_entropy" || o.loss == "kd"
                        ? batch->labels
                        : one_hot(batch->labels, tg.graph.type_of(tg.output)->static_shape());
    if (teacher) in[tg.teacher] = teacher->run({{teacher->input_names()[0], batch->inputs}}).at(teacher->output_names()[0]);
    for (size_t i = 0; i < r.params.size(); ++i) in[tg.params[i]] = r.params[i];
    for (size_t i = 0; i < r.state.size(); ++i) in[tg.state[i].input] = r.state[i];
    if (!tg.dropout_seed.empty())
      in[tg.dropout_seed] = Tensor::scalar<int64_t>(static_cast<int64_t>(
          mix(o.seed ^ mix(static_cast<uint64_t>(r.step) * 0x10001ull + static_cast<uint64_t>(world.rank)))));
    const runtime::TensorMap out = session.run(in);
    const double loss = train::allreduce_mean(out.at(tg.loss).value_as_double(0));
    if (!std::isfinite(loss))
      fail(fmt::format("training diverged at step {}: the loss is {} (lower the learning rate, or clip gradients)", r.step, loss));
    std::vector<Tensor> grads;
    for (const std::string& g : tg.grads) grads.push_back(out.at(g));
    train::allreduce_mean(grads);
    const double lr = train::learning_rate(o.optimizer.lr, o.schedule, r.step, total);
    if (masked > 0) apply_masks(grads);
    const double norm = opt.step(r.params, grads, lr, &session.pool());
    if (masked > 0) apply_masks(r.params);
    for (size_t i = 0; i < r.state.size(); ++i) r.state[i] = out.at(tg.state[i].output);
    train::allreduce_mean(r.state);  // the replicas keep one set of BatchNorm statistics
    const double dt = seconds_since(t0);
    ++r.step;
    epoch_loss += loss;
    epoch_seconds += dt;
    ++epoch_steps;
    epoch_samples += global_batch;
    epoch_correct += std::llround(train::allreduce_mean(static_cast<double>(correct(out.at(tg.output), batch->labels))) * world.size);
    last = {{"event", "step"}, {"step", r.step - 1}, {"epoch", epoch}, {"loss", loss}, {"lr", lr},
            {"grad_norm", norm}, {"samples_per_s", static_cast<double>(global_batch) / dt}};
    const bool epoch_end = in_epoch == per_epoch - 1 || r.step == total;
    if (epoch_end || (o.checkpoint_every > 0 && r.step % o.checkpoint_every == 0)) save();
    if (lead && hooks.record) hooks.record(last);  // after the checkpoint: a step whose record was seen is kept
    if (epoch_end) {
      nlohmann::json e = {{"event", "epoch"}, {"epoch", epoch}, {"steps", epoch_steps},
                          {"loss", epoch_loss / static_cast<double>(epoch_steps)},
                          {"train_top1", static_cast<double>(epoch_correct) / static_cast<double>(epoch_samples)},
                          {"seconds", epoch_seconds},
                          {"samples_per_s", static_cast<double>(epoch_samples) / epoch_seconds}};
      if (val && lead) {
        hooks.report("validating", 0, 0, fmt::format("epoch {}: validating", epoch + 1));
        PrepareOptions vp;
        vp.threads = o.threads;
        Prepared vs = prepare(export_model(base, r), vp);
        const data::EvalResult ev = evaluate_session(*vs.session, *val, o.val_samples, hooks, "validating");
        e["val_top1"] = ev.top1_rate();
        e["val_samples"] = ev.samples;
      }
      if (lead && hooks.record) hooks.record(e);
      rep.json["epochs"].push_back(e);
      epoch_loss = epoch_seconds = 0;
      epoch_steps = epoch_correct = epoch_samples = 0;
    }
    if (lead)
      hooks.report("training", static_cast<size_t>(r.step), static_cast<size_t>(total),
                   fmt::format("epoch {} step {}/{}  loss {:.4f}  lr {:.3g}  {:.0f} samples/s", epoch + 1, r.step,
                               total, loss, lr, static_cast<double>(global_batch) / dt));
    else
      hooks.check();
  }
  rep.json["last_step"] = last;
  rep.json["seconds"] = seconds_since(t_start);
  rep.model = export_model(base, r);
  return rep;
}

TrainReport finetune(const Model& model, const FinetuneOptions& o, const Hooks& hooks) {
  if (o.train.init != "keep") fail("finetune: LoRA adapts the model's own weights (init keep)");
  if (!o.train.trainable.empty()) fail("finetune: LoRA trains its adapters only (no trainable list)");
  ir::Graph g = model.graph();
  train::untie_initializers(g);
  const train::LoraGraph lora = train::add_lora(g, o.lora);
  TrainOptions t = o.train;
  t.trainable = lora.trainable();
  TrainReport r = train(model.derived(lora.graph, model.name()), t, hooks);
  train::LoraGraph trained = lora;
  trained.graph = r.model.graph();
  r.model = model.derived(train::merge_lora(g, trained), model.name() + "_lora");
  nlohmann::json layers = nlohmann::json::array();
  for (const train::LoraAdapter& a : lora.adapters) layers.push_back(a.node);
  r.json["lora"] = {{"rank", o.lora.rank}, {"scale", lora.adapters.front().scale}, {"layers", layers},
                    {"target", o.lora.target}, {"types", o.lora.types}};
  r.json["model_values"] = g.parameter_count();
  return r;
}

TrainReport qat(const Model& model, const QatOptions& o, const Hooks& hooks) {
  if (o.method != "ste" && o.method != "lsq" && o.method != "pact" && o.method != "tqt")
    fail("qat: method '" + o.method + "' (ste, lsq, pact or tqt)");
  if (o.train.init != "keep") fail("qat: quantization-aware training starts from the model's weights (init keep)");
  QuantOptions qo = o.quant;
  if (qo.calib.empty()) qo.calib = o.train.data;
  qo.preprocess = o.train.preprocess;
  QuantModel q = plan_model(model, qo, qo.config);
  calibrate(q, qo, hooks);
  std::vector<std::string> scales;
  quant::QdqOptions sim;
  sim.fake_quant = true;
  sim.qat_method = o.method;
  sim.scale_names = &scales;
  TrainOptions t = o.train;
  ir::Graph sim_graph = quant::insert_qdq(q.graph, q.plan, sim);
  // Learned scales train as their logarithm (scale = Exp(log scale); tqt: 2^ceil(log2 scale),
  // powers of two): an optimizer step then changes a scale by a ratio, never past zero, whatever
  // its magnitude (Adam's steps are about the learning rate in size).
  const bool tqt = o.method == "tqt";
  std::vector<std::string> log_scales(scales.size());
  for (size_t i = 0; i < scales.size(); ++i) {
    if (scales[i].empty()) continue;
    if (o.method == "ste") {
      t.frozen.push_back(scales[i]);
      continue;
    }
    Tensor s = sim_graph.initializers.at(scales[i]).clone();
    for (int64_t k = 0; k < s.numel(); ++k) s.data<float>()[k] = tqt ? std::log2(s.data<float>()[k]) : std::log(s.data<float>()[k]);
    log_scales[i] = sim_graph.unique_name(scales[i] + (tqt ? "/log2" : "/log"));
    sim_graph.initializers.erase(scales[i]);
    sim_graph.initializers[log_scales[i]] = s;
    sim_graph.types[log_scales[i]] = ir::TensorType::of(DType::Float32, s.shape());
    ir::Node e;
    e.name = sim_graph.unique_name(scales[i] + (tqt ? "/pow2" : "/exp"));
    e.op_type = tqt ? "Pow2Ceil" : "Exp";
    if (tqt) e.domain = "joule";
    e.inputs = {log_scales[i]};
    e.outputs = {scales[i]};
    sim_graph.add_node(std::move(e));
  }
  sim_graph.sort_topologically();
  TrainReport r = train(q.model.derived(std::move(sim_graph), q.model.name()), t, hooks);

  // The trained weights and scales into the prepared graph and the plan, exported as quantize does.
  const ir::Graph& trained = r.model.graph();
  ir::Graph g = q.graph;
  for (auto& [name, w] : g.initializers)
    if (auto it = trained.initializers.find(name); it != trained.initializers.end() && it->second.shape() == w.shape())
      w = it->second;
  quant::QuantPlan plan = q.plan;
  for (size_t i = 0; i < plan.points.size(); ++i) {
    if (log_scales[i].empty()) continue;
    const Tensor& s = trained.initializers.at(log_scales[i]);
    for (int64_t k = 0; k < s.numel(); ++k) {
      const double v = s.value_as_double(k);
      plan.points[i].q.scale.at(static_cast<size_t>(k)) = static_cast<float>(tqt ? std::exp2(std::ceil(v)) : std::exp(v));
    }
  }
  const std::string stem = read_config(qo.config).label == "inline config" ? "quant" : std::filesystem::path(qo.config).stem().string();
  r.model = q.model.derived(quant::insert_qdq(g, plan), q.model.name() + "_qat_" + stem);
  nlohmann::json j = {{"method", o.method}, {"config", read_config(qo.config).label},
                      {"tensors_quantized", plan.points.size()}, {"fake_quant_nodes", r.model.joule_op_nodes().size()}};
  if (!qo.eval.empty()) {
    const std::unique_ptr<data::Dataset> ev = open_data(qo.eval, q.model, qo.preprocess);
    j["data"] = ev->describe();
    const data::EvalResult fp32 = evaluate_graph(q.graph, *ev, qo, hooks, "fp32");
    j["fp32_top1"] = fp32.top1_rate();
    j["ptq_top1"] = evaluate_graph(quant::insert_qdq(q.graph, q.plan), *ev, qo, hooks, "post-training").top1_rate();
    j["qat_top1"] = evaluate_graph(r.model.graph(), *ev, qo, hooks, "qat").top1_rate();
    j["eval_samples"] = fp32.samples;
  }
  r.json["qat"] = j;
  return r;
}

GradientsResult gradients(const Model& model, const GradientsOptions& o) {
  ir::Graph untied = model.graph();
  train::untie_initializers(untied);
  const Model m = model.derived(std::move(untied), model.name());
  train::TrainGraphOptions tgo;
  tgo.loss = o.loss;
  tgo.bn = o.bn;
  tgo.trainable = o.trainable;
  tgo.frozen = o.frozen;
  for (const std::string& in : m.input_names()) {
    auto it = o.inputs.find(in);
    if (it == o.inputs.end()) fail("gradients: missing input '" + in + "'");
    tgo.input_shapes[in] = it->second.shape();
  }
  const train::TrainGraph tg = train::build_train_graph(m.graph(), tgo);
  PrepareOptions po = PrepareOptions::with_threads(o.threads);
  po.passes = "none";
  po.int8 = "none";
  Prepared p = prepare(ir::Graph(tg.graph), po);
  runtime::TensorMap in = o.inputs;
  in[tg.target] = o.target;
  for (const std::string& w : tg.params) in[w] = m.graph().initializers.at(w);
  for (const auto& s : tg.state) in[s.input] = m.graph().initializers.at(s.input);
  if (!tg.dropout_seed.empty()) in[tg.dropout_seed] = Tensor::scalar<int64_t>(static_cast<int64_t>(o.seed));
  const runtime::TensorMap out = p.session->run(in);
  GradientsResult r;
  r.loss = out.at(tg.loss).value_as_double(0);
  r.output = out.at(tg.output);
  for (size_t i = 0; i < tg.params.size(); ++i) r.grads[tg.params[i]] = out.at(tg.grads[i]);
  for (const auto& s : tg.state) r.running_stats[s.input] = out.at(s.output);
  return r;
}

}  // namespace joule::api
