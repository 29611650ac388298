// int8_channels_last: keeps the activations between integer convolutions in N,H,W,C, the
// layout oneDNN's int8 kernels compute in, so no reorder runs between them (ORT's NHWC layout
// transformation for QLinearConv, in the small).
//  1. Every 2-D QConv becomes channels_last: Transpose(to NHWC) before its input, Transpose(to
//     NCHW) after its output. The graph computes exactly what it did.
//  2. A to-NCHW Transpose sinks below layout-free ops: elementwise ops (ReLU, Clip, ...),
//     per-tensor QuantizeLinear/DequantizeLinear, and Add/Sub/Mul/Div whose other operand is a
//     to-NCHW Transpose of the same shape or a one-element constant. The op then runs on the
//     N,H,W,C tensor and one Transpose follows it.
//  3. A to-NHWC Transpose of a to-NCHW Transpose's output is the original tensor.
// What remains are Transposes at the edges of the integer region (the input image, MaxPool,
// the global pooling before the classifier). Element values are not changed anywhere.
#include <set>

#include "joule/core/error.h"
#include "joule/passes/infer_shapes.h"
#include "joule/passes/pass.h"

namespace joule::passes {

namespace {

const std::vector<int64_t> kToNhwc{0, 2, 3, 1}, kToNchw{0, 3, 1, 2};

bool is_transpose(const ir::Node* n, const std::vector<int64_t>& perm) {
  return n && n->op_type == "Transpose" && n->domain.empty() && n->attr_ints("perm") == perm;
}

bool layout_free_unary(const ir::Node& n) {
  static const std::set<std::string> ops{"Relu", "LeakyRelu", "Clip",     "Sigmoid", "Tanh", "HardSigmoid",
                                         "HardSwish", "Elu", "Identity", "Abs",     "Neg",  "Floor", "Ceil",
                                         "Round", "Sqrt", "Exp"};
  return n.domain.empty() && ops.count(n.op_type);
}

class Sinker {
 public:
  explicit Sinker(ir::Graph& g) : g_(g) {}

  int wrap_convs() {
    int n = 0;
    const size_t count = g_.nodes.size();
    for (size_t i = 0; i < count; ++i) {
      ir::Node& c = *g_.nodes[i];
      if (c.op_type != "QConv" || c.domain != "joule" || c.attr_int("channels_last", 0)) continue;
      const ir::TensorType* t = g_.type_of(c.inputs[0]);
      if (!t || !t->has_shape || t->dims.size() != 4) continue;
      const std::string x = add_transpose(c.inputs[0], kToNhwc, "");
      g_.nodes[i]->inputs[0] = x;
      const std::string y = g_.nodes[i]->outputs[0];
      const std::string y_nhwc = g_.unique_name(y + "_nhwc");
      g_.nodes[i]->outputs[0] = y_nhwc;
      g_.nodes[i]->attrs["channels_last"] = int64_t{1};
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
          replace_uses(op.outputs[0], src->inputs[0]);
          ++n;
        }
        continue;
      }
      std::vector<size_t> moved;  // inputs that are to-NCHW transposes
      if (!sinkable(op, &moved)) continue;
      for (size_t k : moved) op.inputs[k] = producer(op.inputs[k])->inputs[0];
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
    const bool qdq = op.domain.empty() && (op.op_type == "QuantizeLinear" || op.op_type == "DequantizeLinear");
    const bool binary = op.domain.empty() && (op.op_type == "Add" || op.op_type == "Sub" || op.op_type == "Mul" ||
                                              op.op_type == "Div");
    if (!qdq && !binary && !layout_free_unary(op)) return false;
    const ir::TensorType* shape0 = nullptr;
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const std::string& v = op.inputs[k];
      if (v.empty()) continue;
      const bool data = k == 0 || binary;  // Q/DQ scale and zero point, Clip bounds: parameters
      if (!data) {
        if (!one_element_constant(v)) return false;  // per-channel parameters follow the layout
        continue;
      }
      if (is_transpose(producer(v), kToNchw)) {
        const ir::TensorType* t = g_.type_of(v);
        if (!t || !t->is_static()) return false;
        if (shape0 && shape0->static_shape() != t->static_shape()) return false;  // no broadcasting
        shape0 = t;
        moved->push_back(k);
      } else if (!(binary && one_element_constant(v))) {
        return false;
      }
    }
    return !moved->empty();
  }

  std::string add_transpose(const std::string& in, const std::vector<int64_t>& perm, std::string out) {
    if (out.empty()) out = g_.unique_name(in + (perm == kToNhwc ? "_nhwc" : "_nchw"));
    ir::Node t;
    t.name = g_.unique_name(out + "_Transpose");
    t.op_type = "Transpose";
    t.inputs = {in};
    t.outputs = {out};
    t.attrs["perm"] = perm;
    if (const ir::TensorType* ty = g_.type_of(in); ty && ty->has_shape && ty->dims.size() == 4) {
      ir::TensorType r = *ty;
      for (size_t i = 0; i < 4; ++i) r.dims[i] = ty->dims[static_cast<size_t>(perm[i])];
      g_.types[out] = r;
    }
    g_.add_node(std::move(t));
    return out;
  }

  void replace_uses(const std::string& from, const std::string& to) {
    for (auto& n : g_.nodes)
      for (auto& in : n->inputs)
        if (in == from) in = to;
    for (auto& o : g_.outputs)
      if (o == from) {
        // A graph output keeps its name: a copy through Identity.
        ir::Node id;
        id.name = g_.unique_name(from + "_Identity");
        id.op_type = "Identity";
        id.inputs = {to};
        id.outputs = {from};
        g_.add_node(std::move(id));
        return;
      }
  }

  ir::Graph& g_;
  std::unordered_map<std::string, size_t> producers_;
};

}  // namespace

PassResult int8_channels_last(ir::Graph& g, const PassOptions& o) {
  PassResult r;
  try {
    infer_shapes(g);
  } catch (const Error& e) {
    if (e.kind() == Error::Kind::Internal) throw;
  }
  Sinker s(g);
  const int convs = s.wrap_convs();
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
  r.info = {{"qconv_channels_last", convs}, {"rewrites", rewrites}, {"transposes_left", transposes}};
  return r;
}

}  // namespace joule::passes
