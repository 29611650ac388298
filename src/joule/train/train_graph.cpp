#include "joule/train/train_graph.h"

#include <algorithm>
#include <set>

#include "joule/core/error.h"
#include "joule/passes/infer_shapes.h"
#include "joule/passes/pass.h"
#include "joule/train/grad.h"

namespace joule::train {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// BatchNormalization -> joule.BatchNormTrain: batch statistics, the running ones updated as
// PyTorch does (ONNX's momentum is the share of the old value; PyTorch's that of the batch).
void batch_norms_to_training(ir::Graph& g, TrainGraph& t) {
  for (auto& up : g.nodes) {
    ir::Node& n = *up;
    if (!n.domain.empty() || n.op_type != "BatchNormalization") continue;
    if (n.inputs.size() < 5 || !g.is_initializer(n.inputs[3]) || !g.is_initializer(n.inputs[4]))
      fail_unsupported(n.where() + ": training-mode BatchNorm needs its running statistics as initializers");
    const float onnx_momentum = n.attr_float("momentum", 0.9f);
    n.domain = "joule";
    n.op_type = "BatchNormTrain";
    n.attrs = {{"epsilon", n.attr_float("epsilon", 1e-5f)}, {"momentum", 1.f - onnx_momentum}};
    n.outputs.resize(1);
    for (const char* s : {"/running_mean", "/running_var", "/saved_mean", "/saved_invstd"})
      n.outputs.push_back(g.unique_name(n.name + s));
    for (size_t i = 0; i < 2; ++i) {
      t.state.push_back({n.inputs[3 + i], n.outputs[1 + i]});
      g.types[n.outputs[1 + i]] = *g.type_of(n.inputs[3 + i]);
    }
  }
}

// Dropout -> joule.DropoutTrain with the step's seed (one stream per node).
void dropouts_to_training(ir::Graph& g, TrainGraph& t) {
  int64_t stream = 0;
  for (auto& up : g.nodes) {
    ir::Node& n = *up;
    if (!n.domain.empty() || n.op_type != "Dropout") continue;
    float ratio = n.attr_float("ratio", 0.5f);
    if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
      auto it = g.initializers.find(n.inputs[1]);
      if (it == g.initializers.end()) fail_unsupported(n.where() + ": training Dropout needs a constant ratio");
      ratio = static_cast<float>(it->second.value_as_double(0));
    }
    if (t.dropout_seed.empty()) {
      t.dropout_seed = g.unique_name("dropout_seed");
      g.inputs.push_back(t.dropout_seed);
      g.types[t.dropout_seed] = ir::TensorType::of(DType::Int64, {});
    }
    n.domain = "joule";
    n.op_type = "DropoutTrain";
    n.attrs = {{"ratio", ratio}, {"stream", stream++}};
    n.inputs = {n.inputs[0], t.dropout_seed};
    n.outputs.resize(2);
    if (n.outputs[1].empty()) n.outputs[1] = g.unique_name(n.name + "/mask");
  }
}

void add_loss(ir::Graph& g, TrainGraph& t, const std::string& loss, double kd_t, double kd_alpha) {
  GradBuilder b(g);
  const ir::TensorType& out = b.type(t.output);
  if (!is_floating(out.dtype)) fail("training: the model output '" + t.output + "' is " + out.str() + ", not float");
  const Shape os = b.shape(t.output);
  t.target = g.unique_name(loss == "cross_entropy" || loss == "kd" ? "labels" : "targets");
  g.inputs.push_back(t.target);
  if (loss == "cross_entropy") {
    if (os.size() < 2) fail("training: cross_entropy needs scores [N, C, ...]; the output '" + t.output + "' is " + out.str());
    Shape ls = {os[0]};
    ls.insert(ls.end(), os.begin() + 2, os.end());
    g.types[t.target] = ir::TensorType::of(DType::Int64, ls);
    t.loss = b.add1("SoftmaxCrossEntropyLoss", {t.output, t.target}, {{"reduction", std::string("mean")}}, "", "loss");
  } else if (loss == "mse" || loss == "l1") {
    g.types[t.target] = ir::TensorType::of(out.dtype, os);
    const std::string d = b.add1("Sub", {t.output, t.target});
    const std::string e = loss == "mse" ? b.add1("Mul", {d, d}) : b.add1("Abs", {d});
    const std::string flat = b.reshape(e, {shape_numel(os)});
    t.loss = g.opset("") >= 18 ? b.add1("ReduceMean", {flat, b.ints({0})}, {{"keepdims", int64_t{0}}}, "", "loss")
                               : b.add1("ReduceMean", {flat}, {{"keepdims", int64_t{0}}, {"axes", std::vector<int64_t>{0}}}, "", "loss");
  } else if (loss == "kd") {
    // Hinton et al.: alpha * CE(student, labels) + (1 - alpha) * T^2 * mean over samples of
    // KL(softmax(teacher / T) || softmax(student / T)).
    if (os.size() != 2) fail("training: kd needs scores [N, C]; the output '" + t.output + "' is " + out.str());
    if (!(kd_t > 0) || kd_alpha < 0 || kd_alpha > 1) fail("training: kd needs a positive temperature and alpha in [0, 1]");
    g.types[t.target] = ir::TensorType::of(DType::Int64, {os[0]});
    t.teacher = g.unique_name("teacher_scores");
    g.inputs.push_back(t.teacher);
    g.types[t.teacher] = ir::TensorType::of(out.dtype, os);
    const std::string temp = b.scalar(kd_t, out.dtype);
    const std::map<std::string, ir::Attribute> axis1 = {{"axis", int64_t{1}}};
    const std::string ls = b.add1("LogSoftmax", {b.add1("Div", {t.output, temp})}, axis1);
    const std::string tt = b.add1("Div", {t.teacher, temp});
    const std::string pt = b.add1("Softmax", {tt}, axis1), lpt = b.add1("LogSoftmax", {tt}, axis1);
    const std::string kl = b.reshape(b.add1("Mul", {pt, b.add1("Sub", {lpt, ls})}), {shape_numel(os)});
    const std::string kl_sum = g.opset("") >= 13 ? b.add1("ReduceSum", {kl, b.ints({0})}, {{"keepdims", int64_t{0}}})
                                                 : b.add1("ReduceSum", {kl}, {{"keepdims", int64_t{0}}, {"axes", std::vector<int64_t>{0}}});
    const std::string ce = b.add1("SoftmaxCrossEntropyLoss", {t.output, t.target}, {{"reduction", std::string("mean")}});
    const double w_kl = (1 - kd_alpha) * kd_t * kd_t / static_cast<double>(os[0]);
    t.loss = b.add1("Add", {b.add1("Mul", {ce, b.scalar(kd_alpha, out.dtype)}), b.add1("Mul", {kl_sum, b.scalar(w_kl, out.dtype)})},
                    {}, "", "loss");
  } else {
    fail("training: unknown loss '" + loss + "' (cross_entropy, mse, l1, kd)");
  }
}

}  // namespace

size_t untie_initializers(ir::Graph& g) {
  size_t n = 0;
  for (auto it = g.nodes.begin(); it != g.nodes.end();) {
    const ir::Node& node = **it;
    auto init = node.inputs.empty() ? g.initializers.end() : g.initializers.find(node.inputs[0]);
    if (!node.domain.empty() || node.op_type != "Identity" || init == g.initializers.end() ||
        !is_floating(init->second.dtype()) || contains(g.outputs, node.outputs[0])) {
      ++it;
      continue;
    }
    g.initializers[node.outputs[0]] = init->second.clone();
    g.types[node.outputs[0]] = ir::TensorType::of(init->second.dtype(), init->second.shape());
    it = g.nodes.erase(it);
    ++n;
  }
  if (n) g.remove_dead_nodes();
  return n;
}

TrainGraph build_train_graph(const ir::Graph& model, const TrainGraphOptions& o) {
  if (o.bn != "train" && o.bn != "frozen") fail("training: bn '" + o.bn + "' (train or frozen)");
  TrainGraph t;
  t.graph = model;
  ir::Graph& g = t.graph;
  t.inputs = g.inputs;
  if (g.outputs.empty()) fail("training: the model has no output");
  t.output = o.output.empty() ? g.outputs[0] : o.output;
  if (!contains(g.outputs, t.output)) fail("training: '" + t.output + "' is not an output of the model");
  passes::infer_shapes(g, o.input_shapes);
  for (const std::string& in : t.inputs)
    if (const ir::TensorType* ty = g.type_of(in); !ty || !ty->is_static())
      fail("training: input '" + in + "' is " + (ty ? ty->str() : std::string("untyped")) +
           "; give its static shape (the batch)");
  std::set<std::string> statistics;  // BatchNorm's running statistics: never trained by default
  for (auto& n : g.nodes)
    if (n->domain.empty() && n->op_type == "BatchNormalization" && n->inputs.size() >= 5) {
      statistics.insert(n->inputs[3]);
      statistics.insert(n->inputs[4]);
    }
  if (o.bn == "train") batch_norms_to_training(g, t);
  dropouts_to_training(g, t);

  // The trained initializers become graph inputs.
  for (const std::string& name : o.trainable)
    if (!g.is_initializer(name) || !is_floating(g.initializers.at(name).dtype()))
      fail("training: '" + name + "' is not a float initializer of the model");
  for (auto& [name, w] : g.initializers) {
    const bool chosen = o.trainable.empty() ? !statistics.count(name) : contains(o.trainable, name);
    if (chosen && is_floating(w.dtype()) && !contains(o.frozen, name)) t.params.push_back(name);
  }
  std::map<std::string, Tensor> held;  // the params' values, restored when unused
  for (const std::string& p : t.params) {
    held[p] = g.initializers.at(p);
    g.initializers.erase(p);
    g.inputs.push_back(p);
  }
  for (auto& s : t.state) {
    held[s.input] = g.initializers.at(s.input);
    g.initializers.erase(s.input);
    g.inputs.push_back(s.input);
  }

  // Constant subgraphs (shape computations, Constant nodes) folded into initializers now that
  // nothing computed from a trained weight is constant any more: rules read them as constants.
  passes::run_pipeline(g, {"fold_constants"});
  passes::infer_shapes(g);  // the training ops' outputs
  add_loss(g, t, o.loss, o.kd_temperature, o.kd_alpha);
  const std::map<std::string, std::string> grads = build_backward(g, t.loss, t.params);
  std::vector<std::string> used;
  for (const std::string& p : t.params) {
    if (!grads.at(p).empty()) {
      used.push_back(p);
      continue;
    }
    t.unused.push_back(p);  // back to a constant
    g.inputs.erase(std::find(g.inputs.begin(), g.inputs.end(), p));
    g.initializers[p] = held[p];
  }
  t.params = used;
  GradBuilder b(g);
  g.outputs = {t.loss, t.output};
  for (const std::string& p : t.params) {
    std::string gv = grads.at(p);
    // An output must be a value of its own (not an input, a constant or another output).
    if (g.is_initializer(gv) || contains(g.inputs, gv) || contains(g.outputs, gv)) gv = b.add1("Identity", {gv});
    t.grads.push_back(gv);
    g.outputs.push_back(gv);
  }
  for (auto& s : t.state) g.outputs.push_back(s.output);
  passes::PassOptions po;
  po.verify = true;
  passes::run_pipeline(g, {"fold_constants", "eliminate_dead_code"}, po);
  passes::infer_shapes(g);
  return t;
}

}  // namespace joule::train
