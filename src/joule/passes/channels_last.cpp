// channels_last: keeps the activations between convolutions in N,H,W,C, the layout oneDNN's
// kernels compute in without reorders (ORT's NHWC/NCHWc layout transformation, in the small).
// Depthwise convs gain most: in N,C,H,W a 7..56-pixel row wastes vector lanes, in N,H,W,C the
// lanes run across channels.
//  1. Every 2-D convolution that has an N,H,W,C kernel becomes channels_last: Transpose(to NHWC)
//     before its input (and residual), Transpose(to NCHW) after its output. The graph computes
//     exactly what it did. Integer QConv always; float32 Conv/FusedConv (a Conv becomes a
//     FusedConv without epilogue) when it is chained to another conv through layout-free ops
//     (alone it would gain nothing) and PassOptions::channels_last_conv wants the node — only
//     the onednn algorithm computes N,H,W,C, so the CLI wants it where the user's --algo
//     choice for the node is onednn, or guess/auto and the estimates favour oneDNN on N,H,W,C
//     over the N,C,H,W algorithms (depthwise and 1x1 convs, not Winograd's large 3x3 ones).
//  2. A to-NCHW Transpose sinks below layout-free ops: elementwise ops (ReLU, Clip, ...),
//     per-tensor QuantizeLinear/DequantizeLinear, and Add/Sub/Mul/Div whose other operand is a
//     to-NCHW Transpose too (broadcasting included: both are permuted alike) or a one-element
//     constant. The op then runs on the N,H,W,C tensor and one Transpose follows it. A
//     GlobalAveragePool becomes ReduceMean over H and W of the N,H,W,C tensor (squeeze-and-
//     excitation blocks: the pooled [N,1,1,C] gate multiplies the N,H,W,C activations).
//     A Concat along the channels whose inputs are all to-NCHW Transposes concatenates the
//     N,H,W,C tensors along axis 3 (SqueezeNet's Fire modules, Inception blocks, DenseNet).
//     A float32 2-D MaxPool/AveragePool (a MaxPool of int8/uint8 codes too) becomes the
//     joule-domain pool of that name with channels_last = 1 (the pools between GoogLeNet's, Inception's and SqueezeNet's blocks), an
//     inference BatchNormalization the joule-domain one (DenseNet's BN after each Concat).
//  3. A to-NHWC Transpose of a to-NCHW Transpose's output is the original tensor.
// What remains are Transposes at the edges of the conv regions (the input image, the pooled
// features before the classifier) and before ops with no N,H,W,C form. Element values are
// not changed anywhere (the ReduceMean sums in another order).
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

// Ops a to-NCHW Transpose may sink below (given suitable other operands, see Sinker::sinkable).
bool layout_free(const ir::Node& n) {
  const bool qdq = n.domain.empty() && (n.op_type == "QuantizeLinear" || n.op_type == "DequantizeLinear");
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
      std::vector<size_t> moved;  // inputs that are to-NCHW transposes
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
      } else if (!sinkable(op, &moved)) {
        continue;
      }
      for (size_t k : moved) op.inputs[k] = producer(op.inputs[k])->inputs[0];
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
    for (const ir::Node* c : convs) {
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
          } else if (((layout_free(u) || is_global_average_pool(u)) && u.outputs.size() == 1) || is_spatial_pool(u) ||
                     (is_inference_batch_norm(u) && u.inputs[0] == v)) {
            todo.push_back(u.outputs[0]);
          }
        }
      }
    }
    return linked;
  }

  // GlobalAveragePool of N,C,H,W is ReduceMean over axes 1, 2 (keepdims) of N,H,W,C.
  void to_reduce_mean_nhwc(ir::Node& op) {
    op.op_type = "ReduceMean";
    op.attrs.clear();
    op.attrs["keepdims"] = int64_t{1};
    const Ints axes{1, 2};
    if (g_.opset("") >= 18) {  // axes became an input
      const std::string a = g_.unique_name(op.name + "_axes");
      g_.initializers[a] = Tensor::from_vector(axes, {2});
      g_.types[a] = ir::TensorType::of(DType::Int64, {2});
      op.inputs.push_back(a);
    } else {
      op.attrs["axes"] = axes;
    }
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

  // Does `op` compute the same on N,H,W,C inputs? `moved` gets its to-NCHW transpose inputs.
  bool sinkable(const ir::Node& op, std::vector<size_t>* moved) const {
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
      } else if (!(binary && one_element_constant(v))) {
        return false;
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
  std::unordered_map<std::string, std::string> nhwc_of_;  // tensor -> its to-NHWC Transpose
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
