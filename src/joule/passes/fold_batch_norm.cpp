// BatchNormalization folding. Inference BN is y = a*x + b per channel of axis 1, with
// a = scale / sqrt(var + eps) and b = B - mean * a. When x comes from
// - Conv: axis 1 is the output channel m, the first axis of W (also grouped/depthwise):
//   W'[m,...] = a[m] W[m,...], bias'[m] = a[m] bias[m] + b[m];
// - Gemm (output [N, M]): axis 1 is the feature axis: column m of B' scaled (B[:, m] for
//   transB=0, B[m, :] for transB=1), C'[m] = a[m] beta C[m] + b[m], beta = 1;
// - MatMul with a 2-D input and a constant 2-D weight [K, M] (output [N, M]): columns of
//   the weight scaled and the BN becomes Add(b). With a rank > 2 input, axis 1 of the output
//   is not the feature axis, so no fold.
// Only when the weights are initializers read by that node alone, the BN parameters are
// constants, and x is read by the BN alone. Arithmetic in double, stored as float32.
#include <cmath>
#include <unordered_set>

#include "joule/passes/infer_shapes.h"
#include "joule/passes/pass.h"

namespace joule::passes {

namespace {

struct Affine {
  std::vector<double> a, b;  // y = a*x + b per channel
};

bool is_f32_initializer(const ir::Graph& g, const std::string& v) {
  auto it = g.initializers.find(v);
  return it != g.initializers.end() && it->second.dtype() == DType::Float32;
}

class Folder {
 public:
  explicit Folder(ir::Graph& g) : g_(g), prod_(g.producers()), cons_(g.consumers()) {
    for (auto& o : g.outputs) graph_outputs_.insert(o);
  }

  // Folds `bn` into its producer; returns "" on success or the reason it was left alone.
  std::string fold(ir::Node& bn) {
    if (bn.attr_int("training_mode", 0) != 0) return "training_mode";
    if (g_.opset(bn.domain) < 9 && bn.attr_int("spatial", 1) == 0) return "spatial=0";
    for (size_t i = 1; i < bn.outputs.size(); ++i)
      if (!bn.outputs[i].empty()) return "training_outputs";
    if (bn.input_count() != 5 || bn.outputs.empty() || bn.outputs[0].empty()) return "malformed";
    const std::string& x = bn.inputs[0];
    if (!single_use(x)) return "input_shared";
    auto p = prod_.find(x);
    if (p == prod_.end()) return "no_producer";
    ir::Node& prod = *g_.nodes[p->second];
    if (!prod.domain.empty() || prod.outputs.size() != 1) return "producer_not_foldable";
    Affine f;
    std::string why = bn_affine(bn, f);
    if (!why.empty()) return why;
    if (prod.op_type == "Conv") why = into_conv(prod, f);
    else if (prod.op_type == "Gemm") why = into_gemm(prod, f);
    else if (prod.op_type == "MatMul") why = into_matmul(prod, bn, f);
    else return "producer_not_foldable";
    if (!why.empty()) return why;
    if (prod.op_type != "MatMul") {
      // The producer now computes the BN's output directly.
      prod.outputs[0] = bn.outputs[0];
      prod_[bn.outputs[0]] = p->second;
      g_.types.erase(x);
      removed_.insert(&bn);
    }
    return "";
  }

  const std::unordered_set<const ir::Node*>& removed() const { return removed_; }

 private:
  bool single_use(const std::string& v) const {
    if (graph_outputs_.count(v)) return false;
    auto c = cons_.find(v);
    return c != cons_.end() && c->second.size() == 1;
  }

  std::string bn_affine(const ir::Node& bn, Affine& f) {
    for (size_t i = 1; i < 5; ++i)
      if (!g_.is_initializer(bn.inputs[i])) return "params_not_constant";
    const Tensor& scale = g_.initializers.at(bn.inputs[1]);
    const Tensor& bias = g_.initializers.at(bn.inputs[2]);
    const Tensor& mean = g_.initializers.at(bn.inputs[3]);
    const Tensor& var = g_.initializers.at(bn.inputs[4]);
    const int64_t c = scale.numel();
    for (const Tensor* t : {&scale, &bias, &mean, &var})
      if (t->rank() != 1 || t->numel() != c) return "params_shape";
    const double eps = bn.attr_float("epsilon", 1e-5f);
    f.a.resize(static_cast<size_t>(c));
    f.b.resize(static_cast<size_t>(c));
    for (int64_t i = 0; i < c; ++i) {
      const double a = scale.value_as_double(i) / std::sqrt(var.value_as_double(i) + eps);
      f.a[static_cast<size_t>(i)] = a;
      f.b[static_cast<size_t>(i)] = bias.value_as_double(i) - mean.value_as_double(i) * a;
    }
    return "";
  }

  // A weight initializer this node alone reads, float32, of the given rank (>= min_rank).
  std::string check_weight(const std::string& w, int min_rank, int max_rank) {
    if (!is_f32_initializer(g_, w)) return "weight_not_constant_f32";
    if (!single_use(w)) return "weight_shared";
    int r = g_.initializers.at(w).rank();
    if (r < min_rank || r > max_rank) return "weight_rank";
    return "";
  }

  // Writes a bias initializer for `node` input `slot`: in place when only it reads the old one.
  void set_bias(ir::Node& node, size_t slot, Tensor t) {
    std::string name;
    if (node.has_input(slot) && single_use(node.inputs[slot])) {
      name = node.inputs[slot];
    } else {
      name = g_.unique_name(node.name + "_bias");
      if (node.inputs.size() <= slot) node.inputs.resize(slot + 1);
      if (!node.inputs[slot].empty()) {
        auto& c = cons_[node.inputs[slot]];
        if (!c.empty()) c.pop_back();  // one use fewer (count only)
      }
      node.inputs[slot] = name;
      cons_[name] = {0};
    }
    g_.types[name] = ir::TensorType::of(t.dtype(), t.shape());
    g_.initializers[name] = std::move(t);
  }

  static Tensor to_f32(const std::vector<double>& v) {
    Tensor t(DType::Float32, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = static_cast<float>(v[i]);
    return t;
  }

  std::string into_conv(ir::Node& conv, const Affine& f) {
    if (!conv.has_input(1)) return "malformed";
    const std::string& wname = conv.inputs[1];
    if (auto why = check_weight(wname, 3, 8); !why.empty()) return why;
    const Tensor& w = g_.initializers.at(wname);
    const int64_t m = w.dim(0);
    if (m != static_cast<int64_t>(f.a.size())) return "channels_mismatch";
    std::vector<double> bias(static_cast<size_t>(m), 0.0);
    if (conv.has_input(2)) {
      if (!is_f32_initializer(g_, conv.inputs[2])) return "bias_not_constant_f32";
      const Tensor& b = g_.initializers.at(conv.inputs[2]);
      if (b.numel() != m) return "bias_shape";
      for (int64_t i = 0; i < m; ++i) bias[static_cast<size_t>(i)] = b.value_as_double(i);
    }
    Tensor nw = w.clone();
    const int64_t per = m == 0 ? 0 : w.numel() / m;
    float* d = nw.data<float>();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < per; ++j)
        d[i * per + j] = static_cast<float>(static_cast<double>(d[i * per + j]) * f.a[static_cast<size_t>(i)]);
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = bias[i] * f.a[i] + f.b[i];
    g_.initializers[wname] = nw;
    set_bias(conv, 2, to_f32(bias));
    return "";
  }

  // Scales column m (of the [K, M] matrix, or row m when transposed) by a[m].
  static Tensor scale_features(const Tensor& w, bool transposed, const std::vector<double>& a) {
    Tensor nw = w.clone();
    float* d = nw.data<float>();
    const int64_t rows = w.dim(0), cols = w.dim(1);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const double s = a[static_cast<size_t>(transposed ? i : j)];
        d[i * cols + j] = static_cast<float>(static_cast<double>(d[i * cols + j]) * s);
      }
    return nw;
  }

  std::string into_gemm(ir::Node& gemm, const Affine& f) {
    const std::string& bname = gemm.inputs[1];
    if (auto why = check_weight(bname, 2, 2); !why.empty()) return why;
    const bool tb = gemm.attr_int("transB", 0) != 0;
    const Tensor& b = g_.initializers.at(bname);
    const int64_t m = b.dim(tb ? 0 : 1);
    if (m != static_cast<int64_t>(f.a.size())) return "channels_mismatch";
    const double beta = gemm.attr_float("beta", 1.f);
    std::vector<double> c(static_cast<size_t>(m), 0.0);
    if (gemm.has_input(2)) {
      if (!is_f32_initializer(g_, gemm.inputs[2])) return "bias_not_constant_f32";
      const Tensor& ct = g_.initializers.at(gemm.inputs[2]);
      const bool scalar = ct.numel() == 1;
      const bool row = ct.numel() == m && (ct.rank() == 1 || (ct.rank() == 2 && ct.dim(0) == 1));
      if (!scalar && !row) return "bias_shape";  // [N, M] or [N, 1]: not per feature
      for (int64_t i = 0; i < m; ++i) c[static_cast<size_t>(i)] = beta * ct.value_as_double(scalar ? 0 : i);
    }
    for (size_t i = 0; i < c.size(); ++i) c[i] = c[i] * f.a[i] + f.b[i];
    g_.initializers[bname] = scale_features(b, tb, f.a);
    set_bias(gemm, 2, to_f32(c));
    gemm.attrs["beta"] = 1.0f;
    return "";
  }

  std::string into_matmul(ir::Node& mm, ir::Node& bn, const Affine& f) {
    // Axis 1 of the output is the feature axis only when the output is 2-D.
    const ir::TensorType* t = g_.type_of(mm.outputs[0]);
    if (!t || !t->has_shape || t->dims.size() != 2) return "matmul_not_2d";
    const std::string& wname = mm.inputs[1];
    if (auto why = check_weight(wname, 2, 2); !why.empty()) return why;
    const Tensor& w = g_.initializers.at(wname);
    if (w.dim(1) != static_cast<int64_t>(f.a.size())) return "channels_mismatch";
    g_.initializers[wname] = scale_features(w, false, f.a);
    // The BN becomes the bias addition.
    const std::string bname = g_.unique_name(bn.name + "_bias");
    Tensor b = to_f32(f.b);
    g_.types[bname] = ir::TensorType::of(b.dtype(), b.shape());
    g_.initializers[bname] = std::move(b);
    bn.op_type = "Add";
    bn.attrs.clear();
    bn.inputs = {mm.outputs[0], bname};
    bn.outputs.resize(1);
    return "";
  }

  ir::Graph& g_;
  std::unordered_map<std::string, size_t> prod_;
  std::unordered_map<std::string, std::vector<size_t>> cons_;
  std::unordered_set<std::string> graph_outputs_;
  std::unordered_set<const ir::Node*> removed_;
};

}  // namespace

PassResult fold_batch_norm(ir::Graph& g, const PassOptions&) {
  PassResult r;
  // Types tell whether a MatMul's output is 2-D; without them MatMul is not folded.
  try_infer_shapes(g);
  Folder folder(g);
  int folded = 0, into_matmul = 0;
  std::map<std::string, int> left;
  for (size_t idx : g.topo_order()) {
    ir::Node& n = *g.nodes[idx];
    if (!n.domain.empty() || n.op_type != "BatchNormalization") continue;
    std::string why = folder.fold(n);
    if (!why.empty()) {
      ++left[why];
      continue;
    }
    ++folded;
    if (n.op_type == "Add") ++into_matmul;
  }
  if (!folder.removed().empty())
    std::erase_if(g.nodes, [&](const std::unique_ptr<ir::Node>& n) { return folder.removed().count(n.get()) != 0; });
  r.changed = folded > 0;
  r.info = {{"folded", folded}, {"matmul_bn_to_add", into_matmul}, {"not_folded", left}};
  return r;
}

}  // namespace joule::passes
