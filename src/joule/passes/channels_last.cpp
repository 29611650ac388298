// channels_last: keeps the activations between convolutions in N,H,W,C, the layout oneDNN's
// kernels compute in without reorders (ORT's NHWC/NCHWc layout transformation, in the small).
// Depthwise convs gain most: in N,C,H,W a 7..56-pixel row wastes vector lanes, in N,H,W,C the
// lanes run across channels.
//  1. Every 2-D convolution that has an N,H,W,C kernel becomes channels_last: Transpose(to NHWC)
//     before its input (and residual), Transpose(to NCHW) after its output. The graph computes
//     exactly what it did. Integer QConv always; float32 Conv/FusedConv (a Conv becomes a
//     FusedConv without epilogue) when it is chained through layout-free ops to another conv
//     or to one of the model's own N,C,H,W <-> N,H,W,C permutes (ConvNeXt; alone it would gain
//     nothing), and PassOptions::channels_last_conv wants the node — only the algorithms of
//     channels_last_conv_algorithms() compute N,H,W,C, so the CLI wants it where the user's
//     --algo choice for the node is one of them, or guess/auto and the estimates favour them
//     on N,H,W,C over the N,C,H,W algorithms (depthwise and 1x1 convs, not Winograd's large
//     3x3 ones).
//  2. A to-NCHW Transpose sinks below layout-free ops: elementwise ops (ReLU, Clip, ...),
//     per-tensor QuantizeLinear/DequantizeLinear, joule LookupTable, and Add/Sub/Mul/Div whose other operand is a
//     to-NCHW Transpose too (broadcasting included: both are permuted alike) or a constant (of
//     rank 1 to 4, permuted alike into a new initializer: ConvNeXt's layer scale [C,1,1]). The
//     op then runs on the N,H,W,C tensor and one Transpose follows it. A
//     GlobalAveragePool becomes ReduceMean over H and W of the N,H,W,C tensor (squeeze-and-
//     excitation blocks: the pooled [N,1,1,C] gate multiplies the N,H,W,C activations), and so
//     does a ReduceMean over H and W (without keepdims, [N,C] needs no Transpose after it).
//     A Concat along the channels whose inputs are all to-NCHW Transposes concatenates the
//     N,H,W,C tensors along axis 3 (SqueezeNet's Fire modules, Inception blocks, DenseNet).
//     A float32 2-D MaxPool/AveragePool (a MaxPool of int8/uint8 codes too) becomes the
//     joule-domain pool of that name with channels_last = 1 (the pools between GoogLeNet's,
//     Inception's and SqueezeNet's blocks), an inference BatchNormalization the joule-domain
//     one (DenseNet's BN after each Concat).
//     A Slice with constant axes slices the N,H,W,C tensor along the permuted axes (ShuffleNet's
//     channel split). A channel shuffle — Reshape [N,C,H,W] to [N,g,C/g,H,W], Transpose
//     (0,2,1,3,4), Reshape back, with elementwise ops (QuantizeLinear) anywhere between — runs
//     as Reshape [N,H,W,g,C/g], Transpose (0,1,2,4,3), Reshape [N,H,W,C] (ShuffleNet's units).
//  3. A to-NHWC Transpose of a to-NCHW Transpose's output is the original tensor.
// What remains are Transposes at the edges of the conv regions (the input image, the pooled
// features before the classifier) and before ops with no N,H,W,C form. Element values are
// not changed anywhere (the ReduceMean sums in another order).
#include <algorithm>
#include <set>

#include "joule/ops/conv_util.h"
#include "joule/ops/movement_util.h"
#include "joule/passes/infer_shapes.h"
#include "joule/passes/pass.h"

namespace joule::passes {

namespace {

const std::vector<int64_t>& kToNhwc = ops::movement::kNchwToNhwc;
const std::vector<int64_t>& kToNchw = ops::movement::kNhwcToNchw;

bool is_transpose(const ir::Node* n, const std::vector<int64_t>& perm) {
  return n && n->op_type == "Transpose" && n->domain.empty() && n->attr_ints("perm") == perm;
}

bool layout_free_unary(const ir::Node& n) {
  static const std::set<std::string> ops{"Relu", "LeakyRelu", "Clip",     "Sigmoid", "Tanh", "HardSigmoid",
                                         "HardSwish", "Elu", "Identity", "Abs",     "Neg",  "Floor", "Ceil",
                                         "Round", "Sqrt", "Exp", "Gelu", "Softplus", "Erf", "Log", "Reciprocal",
                                         "Selu", "Celu", "Mish", "Softsign", "SiLU"};
  // joule's HardSwish and Gelu stand in for ONNX's before their opsets, SiLU has none (the fuse passes).
  return (n.domain.empty() ? n.op_type != "SiLU"
                           : n.domain == "joule" && (n.op_type == "HardSwish" || n.op_type == "Gelu" || n.op_type == "SiLU")) &&
         ops.count(n.op_type);
}

using Ints = std::vector<int64_t>;

bool is_global_average_pool(const ir::Node& n) {
  return n.domain.empty() && n.op_type == "GlobalAveragePool" && n.inputs.size() == 1 && n.outputs.size() == 1;
}

bool is_binary(const ir::Node& n) {
  return n.domain.empty() && (n.op_type == "Add" || n.op_type == "Sub" || n.op_type == "Mul" || n.op_type == "Div");
}

// A Concat of rank-4 tensors along the channels (axis 1 or -3): along axis 3 in N,H,W,C.
bool is_channel_concat(const ir::Node& n) {
  if (!n.domain.empty() || n.op_type != "Concat" || n.outputs.size() != 1) return false;
  const int64_t axis = n.attr_int("axis", 0);
  return axis == 1 || axis == -3;
}

// A 2-D MaxPool/AveragePool without Indices (float32; a MaxPool of 8-bit codes too): the
// joule-domain pool of the same name computes it on N,H,W,C (channels_last = 1).
bool is_spatial_pool(const ir::Node& n) {
  if (!n.domain.empty() || (n.op_type != "MaxPool" && n.op_type != "AveragePool") || n.inputs.size() != 1) return false;
  if (n.outputs.empty() || (n.outputs.size() > 1 && !n.outputs[1].empty())) return false;
  return n.attr_ints("kernel_shape").size() == 2;
}

// An inference BatchNormalization over the channels (one output used): joule's of that name
// with channels_last = 1 computes it on N,H,W,C.
bool is_inference_batch_norm(const ir::Node& n) {
  if (!n.domain.empty() || n.op_type != "BatchNormalization" || n.inputs.size() != 5 || n.outputs.empty()) return false;
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty()) return false;
  return n.attr_int("training_mode", 0) == 0 && n.attr_int("spatial", 1) == 1;
}

bool is_slice(const ir::Node& n) { return n.domain.empty() && n.op_type == "Slice" && n.outputs.size() == 1; }

// An axis of N,C,H,W as the same axis of N,H,W,C.
int64_t nhwc_axis(int64_t a) {
  static constexpr int64_t kMap[4] = {0, 3, 1, 2};
  return kMap[a < 0 ? a + 4 : a];
}

// Ops a to-NCHW Transpose may sink below (given suitable other operands, see Sinker::sinkable).
bool layout_free(const ir::Node& n) {
  const bool qdq = (n.domain.empty() && (n.op_type == "QuantizeLinear" || n.op_type == "DequantizeLinear")) ||
                   (n.domain == "joule" && n.op_type == "QuantizeLinear" && !n.has_input(3)) ||  // (not with a fused B)
                   (n.domain == "joule" && n.op_type == "LookupTable");
  return qdq || is_binary(n) || layout_free_unary(n) || is_channel_concat(n);
}

class Sinker {
 public:
  explicit Sinker(ir::Graph& g) : g_(g) {}

  int wrap_convs(const PassOptions& o) {
    int n = 0;
    const size_t count = g_.nodes.size();
    std::set<const ir::Node*> convs;
    for (size_t i = 0; i < count; ++i)
      if (wanted(*g_.nodes[i], o)) convs.insert(g_.nodes[i].get());
    const std::set<const ir::Node*> linked = chained(convs);
    for (size_t i = 0; i < count; ++i) {
      ir::Node& c = *g_.nodes[i];
      if (!convs.count(&c) || (c.op_type != "QConv" && !linked.count(&c))) continue;
      if (c.op_type == "QConv") {
        c.attrs["channels_last"] = int64_t{1};
      } else {
        ops::make_channels_last(c);  // a Conv becomes a FusedConv without epilogue
        g_.opsets["joule"] = 1;
      }
      const bool residual = c.op_type == "FusedConv" && c.inputs.size() > 3 && !c.inputs[3].empty();
      const std::string x = add_transpose(c.inputs[0], kToNhwc, "");
      g_.nodes[i]->inputs[0] = x;
      if (residual) {
        const std::string z = add_transpose(g_.nodes[i]->inputs[3], kToNhwc, "");
        g_.nodes[i]->inputs[3] = z;
      }
      const std::string y = g_.nodes[i]->outputs[0];
      const std::string y_nhwc = g_.unique_name(y + "_nhwc");
      g_.nodes[i]->outputs[0] = y_nhwc;
      add_transpose(y_nhwc, kToNchw, y);
      ++n;
    }
    return n;
  }

  // One sweep of sinking and cancelling; returns the rewrites made.
  int sweep() {
    int n = 0;
    producers_ = g_.producers();
    const size_t count = g_.nodes.size();
    for (size_t i = 0; i < count; ++i) {
      ir::Node& op = *g_.nodes[i];
      if (is_transpose(&op, kToNhwc)) {
        if (const ir::Node* src = producer(op.inputs[0]); is_transpose(src, kToNchw)) {
          // Its users read the original; counted only while some were left (a graph output
          // keeps its Transpose).
          if (passes::replace_uses(g_, op.outputs[0], src->inputs[0])) ++n;
        }
        continue;
      }
      std::vector<size_t> moved;      // inputs that are to-NCHW transposes
      std::vector<size_t> constants;  // a binary op's constants of rank 1 to 4, to permute alike
      if (is_global_average_pool(op) && is_transpose(producer(op.inputs[0]), kToNchw)) {
        to_reduce_mean_nhwc(op);
        moved.push_back(0);
      } else if ((is_spatial_pool(op) || is_inference_batch_norm(op)) &&
                 transposed_type(producer(op.inputs[0]), op.op_type == "MaxPool")) {
        op.domain = "joule";
        op.outputs.resize(1);
        op.attrs["channels_last"] = int64_t{1};
        g_.opsets["joule"] = 1;
        moved.push_back(0);
      } else if (spatial_mean(op) && transposed_type(producer(op.inputs[0]), false)) {
        set_reduce_axes(op, {1, 2});
        if (!op.attr_int("keepdims", 1)) {  // [N,C] either way: no Transpose after it
          op.inputs[0] = producer(op.inputs[0])->inputs[0];
          ++n;
          continue;
        }
        moved.push_back(0);
      } else if (is_slice(op) && is_transpose(producer(op.inputs[0]), kToNchw) && slice_on_nhwc(op)) {
        moved.push_back(0);
      } else if (op.op_type == "Reshape" && op.domain.empty() && is_transpose(producer(op.inputs[0]), kToNchw)) {
        n += shuffle_on_nhwc(i);
        continue;
      } else if (!sinkable(op, &moved, &constants)) {
        continue;
      }
      for (size_t k : moved) op.inputs[k] = producer(op.inputs[k])->inputs[0];
      for (size_t k : constants) op.inputs[k] = constant_on_nhwc(op.inputs[k]);
      if (is_channel_concat(op)) op.attrs["axis"] = int64_t{3};
      const std::string y = op.outputs[0];
      const std::string y_nhwc = g_.unique_name(y + "_nhwc");
      op.outputs[0] = y_nhwc;
      add_transpose(y_nhwc, kToNchw, y);
      producers_[y_nhwc] = i;  // keep the map current without rebuilding it
      producers_[y] = g_.nodes.size() - 1;
      ++n;
    }
    return n;
  }

 private:
  // A 2-D convolution with a static rank-4 input, not yet channels_last, whose kernels compute
  // N,H,W,C: QConv, and float32 Conv/FusedConv with a constant weight that `o` allows.
  bool wanted(const ir::Node& c, const PassOptions& o) const {
    if (c.attr_int("channels_last", 0) || c.outputs.size() != 1 || c.inputs.size() < 2) return false;
    const bool qconv = c.op_type == "QConv" && c.domain == "joule";
    const bool fconv = (c.op_type == "Conv" && c.domain.empty()) || (c.op_type == "FusedConv" && c.domain == "joule");
    if (!qconv && !fconv) return false;
    const ir::TensorType* t = g_.type_of(c.inputs[0]);
    if (!t || !t->is_static() || t->dims.size() != 4) return false;
    if (qconv) return true;
    return t->dtype == DType::Float32 && g_.initializers.count(c.inputs[1]) &&
           (!o.channels_last_conv || o.channels_last_conv(g_, c));
  }

  // The convs of `convs` that reach another one, or are reached from one, through ops the
  // Transposes can sink below: alone, a float conv gains nothing from N,H,W,C and would lose
  // joule's N,C,H,W algorithms.
  std::set<const ir::Node*> chained(const std::set<const ir::Node*>& convs) const {
    std::set<const ir::Node*> linked;
    const auto consumers = g_.consumers();
    const auto producers = g_.producers();
    for (const ir::Node* c : convs) {
      // The model's own permutes count as a neighbour in N,H,W,C: a conv read from a to-NCHW
      // Transpose, or whose output reaches a to-NHWC one (ConvNeXt's depthwise conv between
      // permutes around its LayerNorm and MLP), loses both Transposes in N,H,W,C.
      if (auto p = producers.find(c->inputs[0]); p != producers.end() && is_transpose(g_.nodes[p->second].get(), kToNchw))
        linked.insert(c);
      std::vector<std::string> todo{c->outputs[0]};
      std::set<std::string> seen;
      while (!todo.empty()) {
        const std::string v = todo.back();
        todo.pop_back();
        if (!seen.insert(v).second) continue;
        auto it = consumers.find(v);
        if (it == consumers.end()) continue;
        for (size_t k : it->second) {
          const ir::Node& u = *g_.nodes[k];
          const bool residual = u.op_type == "FusedConv" && u.inputs.size() > 3 && u.inputs[3] == v;
          const bool data_input = u.inputs[0] == v || residual;
          if (convs.count(&u) && data_input) {
            linked.insert(c);
            linked.insert(&u);
          } else if (is_transpose(&u, kToNhwc)) {
            linked.insert(c);
          } else if (((layout_free(u) || is_global_average_pool(u)) && u.outputs.size() == 1) || is_spatial_pool(u) ||
                     (spatial_mean(u) && u.attr_int("keepdims", 1)) ||
                     ((is_inference_batch_norm(u) || is_slice(u)) && u.inputs[0] == v) || shuffle_step(u)) {
            todo.push_back(u.outputs[0]);
          }
        }
      }
    }
    return linked;
  }

  // A Reshape or Transpose with a rank-5 output: a step of a channel shuffle (for chained()).
  bool shuffle_step(const ir::Node& u) const {
    if (!u.domain.empty() || (u.op_type != "Reshape" && u.op_type != "Transpose") || u.outputs.size() != 1) return false;
    const ir::TensorType* t = g_.type_of(u.outputs[0]);
    return t && t->has_shape && t->dims.size() == 5;
  }

  // Points a Slice of an N,C,H,W tensor at the same axes of N,H,W,C (a new axes constant);
  // false when its axes are not constant.
  bool slice_on_nhwc(ir::Node& op) {
    std::vector<int64_t> axes;
    const bool attrs = g_.opset("") < 10;  // starts/ends/axes were attributes
    if (attrs) {
      const size_t k = op.attr_ints("starts").size();
      axes = op.has_attr("axes") ? op.attr_ints("axes") : std::vector<int64_t>{};
      if (!op.has_attr("axes"))
        for (size_t a = 0; a < k; ++a) axes.push_back(static_cast<int64_t>(a));
    } else {
      if (op.inputs.size() < 3) return false;
      const Tensor* starts = g_.initializers.count(op.inputs[1]) ? &g_.initializers.at(op.inputs[1]) : nullptr;
      if (!starts || starts->rank() != 1) return false;
      if (op.inputs.size() > 3 && !op.inputs[3].empty()) {
        auto it = g_.initializers.find(op.inputs[3]);
        if (it == g_.initializers.end() || it->second.rank() != 1) return false;
        for (int64_t a = 0; a < it->second.numel(); ++a) axes.push_back(it->second.value_as_int(a));
      } else {
        for (int64_t a = 0; a < starts->numel(); ++a) axes.push_back(a);
      }
    }
    for (int64_t a : axes)
      if (a < -4 || a > 3) return false;
    for (int64_t& a : axes) a = nhwc_axis(a);
    if (attrs) {
      op.attrs["axes"] = axes;
      return true;
    }
    const std::string name = int64_constant(op.name + "_axes_nhwc", axes);
    if (op.inputs.size() < 4) op.inputs.resize(4);
    op.inputs[3] = name;
    return true;
  }

  // The channel shuffle starting at Reshape node i (its input a to-NCHW Transpose): Reshape to
  // [N,g,C/g,H,W], Transpose (0,2,1,3,4), Reshape to [N,C,H,W], each value read by the next step
  // only, with single-consumer elementwise ops (layout_free, not Concat or a two-input binary)
  // allowed between. Rewritten on N,H,W,C; returns 1 when it was.
  int shuffle_on_nhwc(size_t i) {
    ir::Node& r1 = *g_.nodes[i];
    const ir::TensorType* xt = g_.type_of(r1.inputs[0]);
    const ir::TensorType* t1 = g_.type_of(r1.outputs[0]);
    if (!xt || !xt->is_static() || xt->dims.size() != 4 || !t1 || !t1->is_static() || t1->dims.size() != 5) return 0;
    const Shape x = xt->static_shape(), s5 = t1->static_shape();
    const int64_t N = x[0], C = x[1], H = x[2], W = x[3], G = s5[1];
    if (s5 != Shape{N, G, C / std::max<int64_t>(G, 1), H, W} || G < 1 || C % G) return 0;
    const auto consumers = g_.consumers();
    std::set<std::string> outs(g_.outputs.begin(), g_.outputs.end());
    auto next = [&](const std::string& v) -> ir::Node* {
      auto it = consumers.find(v);
      if (outs.count(v) || it == consumers.end() || it->second.size() != 1) return nullptr;
      return g_.nodes[it->second[0]].get();
    };
    auto elementwise = [&](const ir::Node& u) {
      if (u.outputs.size() != 1 || !layout_free(u) || is_channel_concat(u) || is_binary(u)) return false;
      for (size_t k = 1; k < u.inputs.size(); ++k)
        if (!u.inputs[k].empty() && !one_element_constant(u.inputs[k])) return false;
      return true;
    };
    std::vector<ir::Node*> mid1, mid2;
    ir::Node* u = next(r1.outputs[0]);
    std::string v = r1.outputs[0];
    for (; u && elementwise(*u) && u->inputs[0] == v; u = next(v)) mid1.push_back(u), v = u->outputs[0];
    if (!u || !is_transpose(u, {0, 2, 1, 3, 4}) || u->inputs[0] != v) return 0;
    ir::Node* tr = u;
    v = tr->outputs[0];
    for (u = next(v); u && elementwise(*u) && u->inputs[0] == v; u = next(v)) mid2.push_back(u), v = u->outputs[0];
    if (!u || u->op_type != "Reshape" || !u->domain.empty() || u->inputs[0] != v) return 0;
    ir::Node* r2 = u;
    const ir::TensorType* t2 = g_.type_of(r2->outputs[0]);
    if (!t2 || !t2->is_static() || t2->static_shape() != x) return 0;

    auto retype = [&](const std::string& value, const Shape& shape) {
      const ir::TensorType* t = g_.type_of(value);
      g_.types[value] = ir::TensorType::of(t ? t->dtype : DType::Float32, shape);
    };
    const Shape a5 = {N, H, W, G, C / G}, b5 = {N, H, W, C / G, G};
    r1.inputs[0] = producer(r1.inputs[0])->inputs[0];
    r1.inputs[1] = int64_constant(r1.name + "_shape_nhwc", a5);
    retype(r1.outputs[0], a5);
    for (ir::Node* m : mid1) retype(m->outputs[0], a5);
    tr->attrs["perm"] = std::vector<int64_t>{0, 1, 2, 4, 3};
    retype(tr->outputs[0], b5);
    for (ir::Node* m : mid2) retype(m->outputs[0], b5);
    r2->inputs[1] = int64_constant(r2->name + "_shape_nhwc", {N, H, W, C});
    const std::string y = r2->outputs[0];
    const std::string y_nhwc = g_.unique_name(y + "_nhwc");
    r2->outputs[0] = y_nhwc;
    retype(y_nhwc, {N, H, W, C});
    add_transpose(y_nhwc, kToNchw, y);
    producers_ = g_.producers();
    return 1;
  }

  // A new 1-D int64 initializer (axes, shapes) named after `base`; returns its name.
  std::string int64_constant(const std::string& base, const std::vector<int64_t>& values) {
    const std::string name = g_.unique_name(base);
    g_.initializers[name] = Tensor::from_vector(values, {static_cast<int64_t>(values.size())});
    g_.types[name] = ir::TensorType::of(DType::Int64, {static_cast<int64_t>(values.size())});
    return name;
  }

  // GlobalAveragePool of N,C,H,W is ReduceMean over axes 1, 2 (keepdims) of N,H,W,C.
  void to_reduce_mean_nhwc(ir::Node& op) {
    op.op_type = "ReduceMean";
    op.attrs.clear();
    op.attrs["keepdims"] = int64_t{1};
    set_reduce_axes(op, {1, 2});
  }

  void set_reduce_axes(ir::Node& op, const Ints& axes) {
    if (g_.opset("") >= 18) {  // axes became an input
      op.inputs.resize(1);
      op.inputs.push_back(int64_constant(op.name + "_axes", axes));
    } else {
      op.attrs["axes"] = axes;
    }
  }

  // A ReduceMean over H and W of a rank-4 tensor (MNASNet's head, x.mean([2, 3])): over axes
  // 1, 2 of N,H,W,C. Without keepdims both give [N,C].
  bool spatial_mean(const ir::Node& op) const {
    if (!op.domain.empty() || op.op_type != "ReduceMean" || op.outputs.size() != 1 || op.inputs.empty()) return false;
    Ints axes;
    if (g_.opset("") >= 18) {
      auto it = op.inputs.size() > 1 ? g_.initializers.find(op.inputs[1]) : g_.initializers.end();
      if (it == g_.initializers.end() || it->second.rank() != 1) return false;
      axes = it->second.to_int_vector();
    } else {
      axes = op.attr_ints("axes");
    }
    for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
    std::sort(axes.begin(), axes.end());
    return axes == Ints{2, 3};
  }

  // A to-NCHW Transpose of a static float32 tensor (or int8/uint8 codes when `codes`: what a
  // MaxPool takes once lower_int8 moved its QuantizeLinear above it).
  bool transposed_type(const ir::Node* t, bool codes) const {
    if (!is_transpose(t, kToNchw)) return false;
    const ir::TensorType* ty = g_.type_of(t->outputs[0]);
    return ty && ty->is_static() &&
           (ty->dtype == DType::Float32 || (codes && (ty->dtype == DType::UInt8 || ty->dtype == DType::Int8)));
  }

  const ir::Node* producer(const std::string& v) const {
    auto it = producers_.find(v);
    return it == producers_.end() ? nullptr : g_.nodes[it->second].get();
  }

  bool one_element_constant(const std::string& v) const {
    auto it = g_.initializers.find(v);
    return it != g_.initializers.end() && it->second.numel() == 1;
  }

  // A binary op's constant operand of rank 1 to 4 (ConvNeXt's per-channel layer scale [C,1,1]):
  // broadcast against an N,C,H,W tensor, it is permuted with it (leading 1s added first).
  bool permutable_constant(const std::string& v) const {
    auto it = g_.initializers.find(v);
    return it != g_.initializers.end() && it->second.rank() >= 1 && it->second.rank() <= 4;
  }

  // The constant `v` as a new initializer of rank 4 in N,H,W,C order (made once, however many
  // ops read it); returns its name.
  std::string constant_on_nhwc(const std::string& v) {
    if (auto it = nhwc_of_constant_.find(v); it != nhwc_of_constant_.end()) return it->second;
    const Tensor& c = g_.initializers.at(v);
    Shape s(static_cast<size_t>(4 - c.rank()), 1);
    s.insert(s.end(), c.shape().begin(), c.shape().end());
    const std::string name = g_.unique_name(v + "_nhwc");
    g_.initializers[name] = ops::movement::transpose_tensor(c.reshaped(s), kToNhwc);
    g_.types[name] = ir::TensorType::of(c.dtype(), g_.initializers[name].shape());
    return nhwc_of_constant_[v] = name;
  }

  // Does `op` compute the same on N,H,W,C inputs? `moved` gets its to-NCHW transpose inputs,
  // `constants` a binary op's constants that must be permuted alike.
  bool sinkable(const ir::Node& op, std::vector<size_t>* moved, std::vector<size_t>* constants) const {
    if (op.outputs.size() != 1 || op.inputs.empty()) return false;
    if (!layout_free(op)) return false;
    const bool binary = is_binary(op), concat = is_channel_concat(op);
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const std::string& v = op.inputs[k];
      if (v.empty()) continue;
      if (concat && !is_transpose(producer(v), kToNchw)) return false;  // every input in N,H,W,C
      const bool data = k == 0 || binary || concat;  // Q/DQ scale and zero point, Clip bounds: parameters
      if (!data) {
        if (!one_element_constant(v)) return false;  // per-channel parameters follow the layout
        continue;
      }
      if (is_transpose(producer(v), kToNchw)) {
        const ir::TensorType* t = g_.type_of(v);
        if (!t || !t->is_static()) return false;
        // Both operands permuted alike (both rank 4): broadcasting is unchanged.
        moved->push_back(k);
      } else if (!binary) {
        return false;
      } else if (!one_element_constant(v)) {  // (one element broadcasts alike in any layout)
        if (!permutable_constant(v)) return false;
        constants->push_back(k);
      }
    }
    return !moved->empty();
  }

  // A Transpose of `in` by `perm` into `out` ("": a new name). The convs reading one tensor
  // share its to-NHWC Transpose.
  std::string add_transpose(const std::string& in, const std::vector<int64_t>& perm, std::string out) {
    const bool shared = out.empty() && perm == kToNhwc;
    if (shared) {
      if (auto it = nhwc_of_.find(in); it != nhwc_of_.end()) return it->second;
      out = nhwc_of_[in] = g_.unique_name(in + "_nhwc");
    }
    if (out.empty()) out = g_.unique_name(in + "_nchw");
    ir::Node t;
    t.name = g_.unique_name(out + "_Transpose");
    t.op_type = "Transpose";
    t.inputs = {in};
    t.outputs = {out};
    t.attrs["perm"] = perm;
    if (const ir::TensorType* ty = g_.type_of(in); ty && ty->has_shape && ty->dims.size() == 4)
      g_.types[out] = ops::movement::permute_type(*ty, perm);
    g_.add_node(std::move(t));
    return out;
  }

  ir::Graph& g_;
  std::unordered_map<std::string, size_t> producers_;
  std::unordered_map<std::string, std::string> nhwc_of_;           // tensor -> its to-NHWC Transpose
  std::unordered_map<std::string, std::string> nhwc_of_constant_;  // constant -> its permuted copy
};

}  // namespace

PassResult channels_last(ir::Graph& g, const PassOptions& o) {
  PassResult r;
  try_infer_shapes(g);
  Sinker s(g);
  const int convs = s.wrap_convs(o);
  int rewrites = 0;
  if (convs) {
    for (int pass = 0; pass < 1000; ++pass) {
      const int n = s.sweep();
      rewrites += n;
      if (!n) break;
    }
    g.sort_topologically();
    eliminate_dead_code(g, o);
    infer_shapes(g);
  }
  int transposes = 0;
  for (auto& n : g.nodes) transposes += n->op_type == "Transpose";
  r.changed = convs > 0;
  r.info = {{"convs_channels_last", convs}, {"rewrites", rewrites}, {"transposes_left", transposes}};
  return r;
}

}  // namespace joule::passes
