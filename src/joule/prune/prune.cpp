#include "joule/prune/prune.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <unordered_set>

#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/core/yaml_error.h"
#include "joule/passes/infer_shapes.h"
#include "joule/passes/model_info.h"

namespace joule::prune {

namespace {

bool f32_initializer(const ir::Graph& g, const std::string& v) {
  auto it = g.initializers.find(v);
  return it != g.initializers.end() && it->second.dtype() == DType::Float32;
}

int64_t nonzeros(const ir::Graph& g) {
  int64_t n = 0;
  for (const auto& [k, t] : g.initializers)
    if (t.dtype() == DType::Float32)
      for (int64_t i = 0; i < t.numel(); ++i) n += t.data<float>()[i] != 0.0f;
  return n;
}

// `t` with only the indices `keep` along `axis`.
Tensor take(const Tensor& t, int axis, const std::vector<int64_t>& keep) {
  Shape s = t.shape();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < s.size(); ++i) inner *= s[i];
  const int64_t n = s[static_cast<size_t>(axis)];
  s[static_cast<size_t>(axis)] = static_cast<int64_t>(keep.size());
  Tensor r(DType::Float32, s);
  const float* src = t.data<float>();
  float* dst = r.data<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < keep.size(); ++k)
      std::copy_n(src + (o * n + keep[k]) * inner, inner, dst + (o * static_cast<int64_t>(keep.size()) + static_cast<int64_t>(k)) * inner);
  return r;
}

// The op types whose output channels (features) structured pruning can remove.
bool producer_type(const ir::Node& n) {
  return n.domain.empty() && (n.op_type == "Conv" || n.op_type == "Gemm" || n.op_type == "MatMul");
}
// The axis of a producer's weight that holds its output channels (features): a Conv's
// [M, C/g, k...] and a Gemm's transposed [N, K] axis 0; a MatMul's and a plain Gemm's [K, N] axis 1.
int out_axis(const ir::Node& p) {
  if (p.op_type == "Conv") return 0;
  return p.op_type == "Gemm" && p.attr_int("transB", 0) ? 0 : 1;
}

// Channel spaces: values whose channels must stay aligned (a conv's output through BatchNorm,
// activations, pooling, depthwise convs, and every input and output of a residual Add; a
// Gemm's or MatMul's output features through bias, activations and elementwise ops). The
// channels are on axis 1 of a conv's values and on the last axis of a Gemm's or MatMul's (a
// transformer's [batch, tokens, features]). A space can lose channels when every value in it is
// made by a producer (Conv, Gemm, MatMul with constant weights) or a channel-preserving op and
// read only by ops that can follow (the next conv's input channels, a Gemm's or MatMul's input
// features, a classifier behind global pooling and Flatten).
class Spaces {
 public:
  explicit Spaces(ir::Graph& g) : g_(g), cons_(g.consumers()) {
    for (const auto& v : g.inputs) block(v, "it reaches a graph input");
    for (const auto& v : g.outputs) block(v, "it reaches a graph output");
    for (size_t idx : g.topo_order()) classify(*g.nodes[idx]);
  }

  struct Space {
    std::vector<ir::Node*> producers;                 // convs, gemms, matmuls whose output channels these are
    std::vector<std::pair<std::string, int>> slices;  // initializers sliced along an axis
    std::vector<ir::Node*> depthwise;                 // their group becomes the kept count
    std::vector<const ir::Node*> norms;               // BatchNorms in the space (criterion bn)
    std::string blocked;                              // why the channels stay ("" prunable)
    int64_t channels = -1;
  };

  // The spaces, by root value, with everything recorded on their values gathered.
  std::map<std::string, Space> gather() {
    std::map<std::string, Space> out;
    for (auto& [v, s] : per_value_) {
      Space& t = out[find(v)];
      t.producers.insert(t.producers.end(), s.producers.begin(), s.producers.end());
      t.slices.insert(t.slices.end(), s.slices.begin(), s.slices.end());
      t.depthwise.insert(t.depthwise.end(), s.depthwise.begin(), s.depthwise.end());
      t.norms.insert(t.norms.end(), s.norms.begin(), s.norms.end());
      if (t.blocked.empty()) t.blocked = s.blocked;
      if (s.channels > 0) t.channels = s.channels;
    }
    return out;
  }
  std::string root_of(const std::string& v) { return find(v); }

 private:
  std::string find(const std::string& v) {
    auto it = parent_.find(v);
    if (it == parent_.end() || it->second == v) return v;
    return it->second = find(it->second);
  }
  void unite(const std::string& a, const std::string& b) {
    const std::string ra = find(a), rb = find(b);
    if (ra != rb) parent_[ra] = rb;
    per_value_[a];
    per_value_[b];
  }
  void block(const std::string& v, const std::string& why) {
    Space& s = per_value_[v];
    if (s.blocked.empty()) s.blocked = why;
  }
  bool activation(const std::string& v) const { return !v.empty() && !g_.is_initializer(v); }
  size_t uses(const std::string& v) const {
    auto it = cons_.find(v);
    return (it == cons_.end() ? 0 : it->second.size()) + static_cast<size_t>(std::count(g_.outputs.begin(), g_.outputs.end(), v));
  }
  bool own_f32(const std::string& v) const { return f32_initializer(g_, v) && uses(v) == 1; }
  bool scalar(const std::string& v) const {
    const ir::TensorType* t = g_.type_of(v);
    if (!t || !t->has_shape) return false;
    for (const auto& d : t->dims)
      if (!d.is_static() || d.value != 1) return false;
    return true;
  }
  int rank_of(const std::string& v) const {
    const ir::TensorType* t = g_.type_of(v);
    return t && t->has_shape ? static_cast<int>(t->dims.size()) : -1;
  }
  // The size of `v` along `axis` (-1: unknown).
  int64_t size_on(const std::string& v, int axis) const {
    const ir::TensorType* t = g_.type_of(v);
    return t && t->has_shape && axis >= 0 && static_cast<size_t>(axis) < t->dims.size() &&
                   t->dims[static_cast<size_t>(axis)].is_static()
               ? t->dims[static_cast<size_t>(axis)].value
               : -1;
  }
  // The channel axis of `v`: 1 for a conv's values, the last for a Gemm's or MatMul's, carried
  // through what follows them (-1: unknown, a value of no producer's space).
  int axis_of(const std::string& v) const {
    auto it = axis_.find(v);
    return it == axis_.end() ? -1 : it->second;
  }
  // Values whose channels are on axis 1 (or of no known space): what conv-only ops may read.
  bool on_axis1(const std::string& v) const { return axis_of(v) == -1 || axis_of(v) == 1; }
  static constexpr const char* kLastAxis = " (its input's channels are on the last axis)";
  // A scalar made outside every space (a Constant node's): broadcast, no channels of its own.
  bool outside_scalar(const std::string& v) const { return activation(v) && axis_of(v) < 0 && scalar(v); }
  // `y` keeps `x`'s channels: the same space, on the same axis.
  void follow(const std::string& x, const std::string& y) {
    if (axis_of(x) >= 0) axis_[y] = axis_of(x);
    unite(x, y);
  }
  // Blocks the spaces of every activation `n` reads and makes.
  void opaque(const ir::Node& n, const std::string& why) {
    for (const auto& v : n.inputs)
      if (activation(v)) block(v, "read by " + n.where() + why);
    for (const auto& v : n.outputs)
      if (!v.empty()) block(v, "made by " + n.where());
  }

  void classify(ir::Node& n) {
    const std::string& op = n.op_type;
    if (!n.domain.empty() || n.inputs.empty() || n.outputs.empty()) return opaque(n, "");
    const std::string& x = n.inputs[0];
    const std::string& y = n.outputs[0];
    for (size_t i = 1; i < n.outputs.size(); ++i)
      if (!n.outputs[i].empty()) return opaque(n, " (more than one output)");
    if (op == "Conv") {
      if (n.inputs.size() < 2 || !own_f32(n.inputs[1]) || (n.has_input(2) && !own_f32(n.inputs[2])))
        return opaque(n, " whose weights are not its own constants");
      if (!on_axis1(x)) return opaque(n, kLastAxis);
      const Tensor& w = g_.initializers.at(n.inputs[1]);
      const int64_t group = n.attr_int("group", 1), c = size_on(x, 1);
      axis_[y] = 1;
      if (group == 1 && w.rank() >= 3) {
        Space& in = per_value_[x];
        in.slices.emplace_back(n.inputs[1], 1);
        Space& out = per_value_[y];
        out.producers.push_back(&n);
        out.slices.emplace_back(n.inputs[1], 0);
        if (n.has_input(2)) out.slices.emplace_back(n.inputs[2], 0);
        out.channels = w.shape()[0];
        return;
      }
      if (group > 1 && group == c && w.rank() >= 3 && w.shape()[0] == c && w.shape()[1] == 1) {  // depthwise
        unite(x, y);
        Space& s = per_value_[y];
        s.slices.emplace_back(n.inputs[1], 0);
        if (n.has_input(2)) s.slices.emplace_back(n.inputs[2], 0);
        s.depthwise.push_back(&n);
        return;
      }
      return opaque(n, " (grouped)");
    }
    if (op == "BatchNormalization") {
      if (n.input_count() != 5 || n.attr_int("training_mode", 0) != 0) return opaque(n, "");
      if (!on_axis1(x)) return opaque(n, kLastAxis);
      for (size_t i = 1; i < 5; ++i)
        if (!own_f32(n.inputs[i])) return opaque(n, " with shared or non-constant parameters");
      follow(x, y);
      Space& s = per_value_[y];
      for (size_t i = 1; i < 5; ++i) s.slices.emplace_back(n.inputs[i], 0);
      s.norms.push_back(&n);
      return;
    }
    // Per element: any channel axis; pooling: channels on axis 1 only.
    static const std::set<std::string> unary = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish",
                                                "Elu", "Selu", "Softplus", "Identity", "Mish", "Gelu", "Clip",
                                                "Dropout", "Erf", "Neg", "Abs", "Exp", "Softsign", "Celu", "ThresholdedRelu"};
    static const std::set<std::string> pooling = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool"};
    if (unary.count(op) || pooling.count(op)) {
      if (pooling.count(op) && !on_axis1(x)) return opaque(n, kLastAxis);
      for (size_t i = 1; i < n.inputs.size(); ++i)  // Clip's bounds: scalars (constants or Constant nodes)
        if (activation(n.inputs[i]) && !scalar(n.inputs[i])) return opaque(n, " (bounds that are not scalars)");
      return follow(x, y);
    }
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Max" || op == "Min") {
      // Elementwise over a space's values: activations of the output's rank and channels join its
      // space; constants are scalars or per channel (a [C, 1, 1] or [1, C, 1, 1] beside N,C,H,W,
      // a [F] beside [..., F]: sliced).
      int a = -1;
      for (const auto& v : n.inputs)
        if (activation(v) && axis_of(v) >= 0) {
          if (a >= 0 && axis_of(v) != a) return opaque(n, " (its inputs' channels are on different axes)");
          a = axis_of(v);
        }
      const int want = rank_of(y);
      if (a < 0 || want < 2 || a >= want) return opaque(n, "");
      const int64_t ch = size_on(y, a);
      for (const auto& v : n.inputs) {
        if (outside_scalar(v)) continue;
        if (activation(v)) {
          if (rank_of(v) != want || size_on(v, a) != ch) return opaque(n, " (broadcast over channels)");
          continue;
        }
        const Tensor& c = g_.initializers.at(v);
        if (c.numel() == 1) continue;
        const int r = static_cast<int>(c.rank()), at = a - (want - r);  // broadcasting aligns the last axes
        if (at < 0 || c.shape()[static_cast<size_t>(at)] != ch || c.numel() != ch)
          return opaque(n, " (a constant that is not per channel)");
        if (!own_f32(v)) return opaque(n, " with a shared per-channel constant");
        per_value_[y].slices.emplace_back(v, at);
      }
      axis_[y] = a;
      for (const auto& v : n.inputs)
        if (activation(v) && !outside_scalar(v)) unite(v, y);
      return;
    }
    if (op == "Flatten") {
      // [N, C, 1, 1] -> [N, C]: the channels are the features of the Gemm / MatMul reading it.
      const ir::TensorType* t = g_.type_of(x);
      if (n.attr_int("axis", 1) != 1 || !on_axis1(x) || !t || !t->has_shape || t->dims.size() != 4 || !t->dims[2].is_static() ||
          !t->dims[3].is_static() || t->dims[2].value != 1 || t->dims[3].value != 1)
        return opaque(n, " (not over 1x1 maps)");
      if (std::count(g_.outputs.begin(), g_.outputs.end(), y)) return opaque(n, " (its output is a graph output)");
      for (size_t j : cons_[y]) {
        ir::Node& m = *g_.nodes[j];
        const bool gemm = m.op_type == "Gemm" && m.domain.empty(), matmul = m.op_type == "MatMul" && m.domain.empty();
        if ((!gemm && !matmul) || m.inputs.size() < 2 || m.inputs[0] != y || (gemm && m.attr_int("transA", 0)) ||
            !own_f32(m.inputs[1]) || g_.initializers.at(m.inputs[1]).rank() != 2)
          return opaque(n, " (its features are read by " + m.where() + ")");
        per_value_[x].slices.emplace_back(m.inputs[1], gemm && m.attr_int("transB", 0) ? 1 : 0);
      }
      handled_.insert(y);
      return;
    }
    if (op == "Gemm" || op == "MatMul") return matmul(n);
    opaque(n, "");
  }

  // Gemm / MatMul with its own constant 2-D weight: its input features (the weight's K axis)
  // belong to the input's space, its output features (the N axis, and a Gemm's bias) start one.
  void matmul(ir::Node& n) {
    const bool gemm = n.op_type == "Gemm";
    const std::string& x = n.inputs[0];
    const std::string& y = n.outputs[0];
    if (n.inputs.size() < 2 || !own_f32(n.inputs[1]) || g_.initializers.at(n.inputs[1]).rank() != 2 ||
        (gemm && n.attr_int("transA", 0)))
      return opaque(n, " whose weights are not its own constant matrix");
    const Tensor& w = g_.initializers.at(n.inputs[1]);
    const int oa = out_axis(n), ry = rank_of(y);
    if (ry < 2) return opaque(n, "");
    const int64_t features = w.shape()[static_cast<size_t>(oa)];
    std::optional<int> bias_axis;
    if (gemm && n.has_input(2)) {
      const std::string& c = n.inputs[2];
      if (!g_.is_initializer(c)) return opaque(n, " (a bias that is not a constant)");
      const Tensor& b = g_.initializers.at(c);
      if (b.numel() != 1) {
        if (!own_f32(c) || b.numel() != features || b.shape().back() != features)
          return opaque(n, " (a bias that is not per feature)");
        bias_axis = static_cast<int>(b.rank()) - 1;
      }
    }
    if (!handled_.count(x)) {  // (behind Flatten, the K axis is sliced with the conv's channels)
      if (axis_of(x) >= 0 && axis_of(x) != rank_of(x) - 1) block(x, "read by " + n.where() + " (channels not on the last axis)");
      else per_value_[x].slices.emplace_back(n.inputs[1], 1 - oa);
    }
    axis_[y] = ry - 1;
    Space& out = per_value_[y];
    out.producers.push_back(&n);
    out.slices.emplace_back(n.inputs[1], oa);
    if (bias_axis) out.slices.emplace_back(n.inputs[2], *bias_axis);
    out.channels = features;
  }

  ir::Graph& g_;
  std::unordered_map<std::string, std::vector<size_t>> cons_;
  std::unordered_map<std::string, std::string> parent_;
  std::map<std::string, Space> per_value_;
  std::unordered_set<std::string> handled_;
  std::unordered_map<std::string, int> axis_;  // value -> its channel axis
};

// Per-channel importance of a space: the producers' filter norms summed (or BatchNorm scales,
// or random).
std::vector<double> importance(const ir::Graph& g, const Spaces::Space& s, const PruneOptions& o, std::mt19937& rng) {
  std::vector<double> v(static_cast<size_t>(s.channels), 0);
  if (o.criterion == "random") {
    std::uniform_real_distribution<double> u(0, 1);
    for (auto& x : v) x = u(rng);
    return v;
  }
  if (o.criterion == "bn" && !s.norms.empty()) {
    for (const ir::Node* bn : s.norms) {
      const Tensor& gamma = g.initializers.at(bn->inputs[1]);
      for (int64_t i = 0; i < s.channels; ++i) v[static_cast<size_t>(i)] += std::abs(gamma.value_as_double(i));
    }
    return v;
  }
  for (const ir::Node* p : s.producers) {
    const Tensor& w = g.initializers.at(p->inputs[1]);
    // Channel i's weights: w[o, i, k] over the axes before and after the output axis.
    const int axis = out_axis(*p);
    int64_t outer = 1, inner = 1;
    for (int a = 0; a < axis; ++a) outer *= w.shape()[static_cast<size_t>(a)];
    for (size_t a = static_cast<size_t>(axis) + 1; a < w.shape().size(); ++a) inner *= w.shape()[a];
    const float* d = w.data<float>();
    for (int64_t o2 = 0; o2 < outer; ++o2)
      for (int64_t i = 0; i < s.channels; ++i)
        for (int64_t k = 0; k < inner; ++k) {
          const double x = d[(o2 * s.channels + i) * inner + k];
          v[static_cast<size_t>(i)] += o.criterion == "l2" ? x * x : std::abs(x);
        }
  }
  return v;
}

void structured(ir::Graph& g, const PruneOptions& o, PruneReport& rep) {
  std::mt19937 rng(o.seed);
  Spaces sp(g);
  std::map<std::string, Spaces::Space> spaces = sp.gather();
  std::map<std::string, std::vector<int64_t>> kept;  // space root -> the channels kept
  for (auto& [root, s] : spaces) {
    if (s.producers.empty()) continue;
    bool asked = o.only.empty();
    for (const ir::Node* p : s.producers)
      asked = asked || std::find(o.only.begin(), o.only.end(), p->name) != o.only.end();
    if (!asked) continue;
    for (const ir::Node* p : s.producers)
      if (g.initializers.at(p->inputs[1]).shape()[static_cast<size_t>(out_axis(*p))] != s.channels && s.blocked.empty())
        s.blocked = "its producers disagree on the channel count";
    double ratio = 1;
    for (const ir::Node* p : s.producers) ratio = std::min(ratio, o.ratio_of(p->name));
    const int64_t keep_n = std::max<int64_t>(1, std::llround(static_cast<double>(s.channels) * (1.0 - ratio)));
    if (!s.blocked.empty() || keep_n >= s.channels) continue;
    const std::vector<double> imp = importance(g, s, o, rng);
    std::vector<int64_t> order(static_cast<size_t>(s.channels));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return imp[static_cast<size_t>(a)] > imp[static_cast<size_t>(b)]; });
    std::vector<int64_t> keep(order.begin(), order.begin() + keep_n);
    std::sort(keep.begin(), keep.end());
    kept[root] = std::move(keep);
  }
  // Every space ranked on the unpruned weights, then cut (a layer's ranking does not depend on
  // whether its input channels were cut first).
  for (auto& [root, keep] : kept) {
    Spaces::Space& s = spaces.at(root);
    for (auto& [name, axis] : s.slices) {
      Tensor t = take(g.initializers.at(name), axis, keep);
      g.types[name] = ir::TensorType::of(t.dtype(), t.shape());
      g.initializers[name] = std::move(t);
    }
    for (ir::Node* d : s.depthwise) d->attrs["group"] = static_cast<int64_t>(keep.size());
  }
  // One line per producer of channels (Conv, Gemm, MatMul), in graph order.
  for (size_t idx : g.topo_order()) {
    const ir::Node& n = *g.nodes[idx];
    if (!producer_type(n) || n.outputs.empty()) continue;
    const std::string root = sp.root_of(n.outputs[0]);
    auto it = spaces.find(root);
    if (it == spaces.end() || std::find(it->second.producers.begin(), it->second.producers.end(), &n) ==
                                  it->second.producers.end())
      continue;
    if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), n.name) == o.only.end()) continue;
    const Spaces::Space& s = it->second;
    LayerPruning lp{n.name, n.op_type, s.channels, s.channels, s.blocked, static_cast<int>(s.producers.size())};
    if (kept.count(root)) lp.after = static_cast<int64_t>(kept[root].size());
    rep.layers.push_back(std::move(lp));
  }
}

void unstructured(ir::Graph& g, const PruneOptions& o, PruneReport& rep) {
  std::vector<std::pair<std::string, const ir::Node*>> weights;
  std::set<std::string> seen;
  for (const auto& n : g.nodes)
    if ((n->op_type == "Conv" || n->op_type == "Gemm" || n->op_type == "MatMul") && n->domain.empty() &&
        n->inputs.size() > 1 && f32_initializer(g, n->inputs[1]) && g.initializers.at(n->inputs[1]).rank() >= 2 &&
        (o.only.empty() || std::find(o.only.begin(), o.only.end(), n->name) != o.only.end()) &&
        seen.insert(n->inputs[1]).second)
      weights.emplace_back(n->inputs[1], n.get());
  auto count_nz = [](const Tensor& t) {
    int64_t k = 0;
    for (int64_t i = 0; i < t.numel(); ++i) k += t.data<float>()[i] != 0.0f;
    return k;
  };
  // Global: one magnitude threshold over every weight.
  double global = -1;
  if (o.scope == "global" && o.criterion != "random") {
    std::vector<float> all;
    for (auto& [w, n] : weights) {
      const Tensor& t = g.initializers.at(w);
      for (int64_t i = 0; i < t.numel(); ++i) all.push_back(std::abs(t.data<float>()[i]));
    }
    const size_t k = static_cast<size_t>(std::floor(o.ratio * static_cast<double>(all.size())));
    if (k > 0) {
      std::nth_element(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k - 1), all.end());
      global = all[k - 1];
    }
  }
  std::mt19937 rng(o.seed);
  for (auto& [w, n] : weights) {
    Tensor& t = g.initializers.at(w);
    t = t.clone();  // a copied graph shares its tensors' storage with the original: prune a copy of its own
    float* p = t.data<float>();
    LayerPruning lp{n->name, n->op_type, count_nz(t), 0, ""};
    const int64_t total = t.numel();
    const int64_t k = static_cast<int64_t>(std::floor(o.ratio_of(n->name) * static_cast<double>(total)));
    std::vector<int64_t> idx(static_cast<size_t>(total));
    std::iota(idx.begin(), idx.end(), 0);
    if (o.criterion == "random") {
      std::shuffle(idx.begin(), idx.end(), rng);
      for (int64_t i = 0; i < k; ++i) p[idx[static_cast<size_t>(i)]] = 0.0f;
    } else if (global >= 0) {
      for (int64_t i = 0; i < total; ++i)
        if (std::abs(p[i]) <= global) p[i] = 0.0f;
    } else if (k > 0) {
      std::nth_element(idx.begin(), idx.begin() + (k - 1), idx.end(),
                       [&](int64_t a, int64_t b) { return std::abs(p[a]) < std::abs(p[b]); });
      for (int64_t i = 0; i < k; ++i) p[idx[static_cast<size_t>(i)]] = 0.0f;
    }
    lp.after = count_nz(t);
    rep.layers.push_back(std::move(lp));
  }
}

}  // namespace

nlohmann::json PruneReport::to_json() const {
  nlohmann::json ls = nlohmann::json::array();
  for (const LayerPruning& l : layers) {
    nlohmann::json j = {{"node", l.node}, {"op", l.op}};
    j[options.structured ? "channels_before" : "nonzero_before"] = l.before;
    j[options.structured ? "channels_after" : "nonzero_after"] = l.after;
    if (!l.kept_because.empty()) j["kept_because"] = l.kept_because;
    if (l.group > 1) j["group"] = l.group;
    ls.push_back(std::move(j));
  }
  return {{"ratio", options.ratio},
          {"structured", options.structured},
          {"criterion", options.criterion},
          {"scope", options.structured ? "local" : options.scope},
          {"layers", ls},
          {"params_before", params_before},
          {"params_after", params_after},
          {"nonzero_before", nonzero_before},
          {"nonzero_after", nonzero_after},
          {"flops_before", flops_before},
          {"flops_after", flops_after},
          {"activation_pruning", [&] {
             nlohmann::json a = nlohmann::json::array();
             for (const auto& [node, r] : activation_pruning) a.push_back({{"node", node}, {"ratio", r}});
             return a;
           }()}};
}

std::string PruneReport::table() const {
  size_t w = 4;
  for (const auto& l : layers) w = std::max(w, l.node.size());
  std::string s = fmt::format("{:<{}} {:<10} {:>10} {:>10}  {}\n", "node", w, "op",
                              options.structured ? "channels" : "nonzero", "kept", options.structured ? "note" : "sparsity");
  for (const auto& l : layers) {
    s += fmt::format("{:<{}} {:<10} {:>10} {:>10}  ", l.node, w, l.op, l.before, l.after);
    if (options.structured)
      s += (l.kept_because.empty() ? fmt::format("{:.0f}% removed", 100.0 * (1 - double(l.after) / double(l.before)))
                                   : "kept whole: " + l.kept_because) +
           (l.group > 1 ? fmt::format(" (a residual group of {} layers, pruned alike)", l.group) : "");
    else
      s += fmt::format("{:.1f}%", l.before ? 100.0 * (1 - double(l.after) / double(l.before)) : 0.0);
    s += "\n";
  }
  s += fmt::format("parameters {} -> {} ({:.1f}%), nonzero {} -> {}, FLOPs {:.4g} -> {:.4g} ({:.1f}%)\n", params_before,
                   params_after, 100.0 * double(params_after) / double(std::max<int64_t>(1, params_before)), nonzero_before,
                   nonzero_after, flops_before, flops_after, 100.0 * flops_after / std::max(1.0, flops_before));
  for (const auto& [node, r] : activation_pruning)
    s += fmt::format("{}: {:.0f}% of each sample's inputs zeroed at run time (joule PruneActivation)\n", node, 100 * r);
  return s;
}

double PruneOptions::ratio_of(const std::string& node) const {
  auto it = node_ratio.find(node);
  return it == node_ratio.end() ? ratio : it->second;
}

double PruneOptions::activations_of(const std::string& node) const {
  auto it = node_activations.find(node);
  return it == node_activations.end() ? activations : it->second;
}

namespace {
double checked_ratio(const YAML::Node& v, const std::string& where) {
  double r = 0;
  try {
    r = v.as<double>();
  } catch (const YAML::Exception&) {
    fail(where + ": ratio must be a number in [0, 1)");
  }
  if (!(r >= 0 && r < 1)) fail(fmt::format("{}: ratio {} must be in [0, 1)", where, r));
  return r;
}
}  // namespace

PruneConfig PruneConfig::parse(const std::string& text, const std::string& source) {
  return read_yaml(source, [&] {
    PruneConfig c;
    c.source = source;
    const YAML::Node root = load_yaml(text, source);
    if (!root.IsMap()) fail(source + ": a pruning config is a map (default, rules)");
    for (auto it = root.begin(); it != root.end(); ++it) {
      const std::string k = it->first.as<std::string>();
      const std::string where = fmt::format("{}: line {}", source, it->first.Mark().line + 1);
      if (k == "default") {
        if (!it->second.IsMap()) fail(where + ": default must be a map");
        for (auto f = it->second.begin(); f != it->second.end(); ++f) {
          const std::string fk = f->first.as<std::string>();
          const std::string fw = fmt::format("{}: line {}: default.{}", source, f->first.Mark().line + 1, fk);
          try {
            if (fk == "ratio") c.defaults.ratio = checked_ratio(f->second, fw);
            else if (fk == "structured") c.defaults.structured = f->second.as<bool>();
            else if (fk == "criterion") c.defaults.criterion = f->second.as<std::string>();
            else if (fk == "scope") c.defaults.scope = f->second.as<std::string>();
            else if (fk == "seed") c.defaults.seed = f->second.as<uint32_t>();
            else if (fk == "activations") c.defaults.activations = checked_ratio(f->second, fw);
            else fail(fw + ": unknown key (ratio, structured, criterion, scope, seed, activations)");
          } catch (const YAML::Exception&) {
            fail(fw + ": bad value");
          }
        }
      } else if (k == "rules") {
        if (!it->second.IsSequence()) fail(where + ": rules must be a list");
        const YAML::Node list = it->second;  // (a handle: `it->` is a temporary, too short-lived for a range-for)
        for (const auto& e : list) {
          Rule r;
          r.line = e.Mark().line + 1;
          const std::string rw = fmt::format("{}: rule at line {}", source, r.line);
          if (!e.IsMap()) fail(rw + ": expected a mapping with 'match'");
          for (auto f = e.begin(); f != e.end(); ++f) {
            const std::string fk = f->first.as<std::string>();
            if (fk == "match") {
              r.match.read(f->second, rw);
            } else if (fk == "ratio") {
              r.ratio = checked_ratio(f->second, rw);
            } else if (fk == "skip") {
              r.skip = f->second.as<bool>();
            } else if (fk == "activations") {
              r.activations = checked_ratio(f->second, rw);
            } else {
              fail(rw + ": unknown key '" + fk + "' (match, ratio, activations, skip)");
            }
          }
          if (r.match.empty()) fail(rw + ": needs a match with type, name or regex");
          if (!r.ratio && !r.activations && !r.skip) fail(rw + ": give a ratio, activations or skip: true");
          c.rules.push_back(std::move(r));
        }
      } else {
        fail(where + ": unknown key '" + k + "' (default, rules)");
      }
    }
    return c;
  });
}

PruneConfig PruneConfig::load(const std::string& path) {
  if (!path.empty() && (path[0] == '{' || path.find('\n') != std::string::npos)) return parse(path, "inline config");
  return parse(read_file(path), path);
}

PruneOptions PruneConfig::resolve(const ir::Graph& g) const {
  PruneOptions o = defaults;
  for (const Rule& r : rules) {
    size_t hit = 0;
    for (const auto& n : g.nodes)
      if (r.match.matches(*n, &g)) {
        ++hit;
        if (r.skip || r.ratio) o.node_ratio[n->name] = r.skip ? 0.0 : *r.ratio;
        if (r.skip || r.activations) o.node_activations[n->name] = r.skip ? 0.0 : *r.activations;
      }
    if (hit == 0)
      fail(fmt::format("{}: rule at line {} ({}) matches no node of the model", source, r.line, r.match.describe()));
  }
  if (!o.node_ratio.empty() && !o.structured && o.scope == "global")
    fail(source + ": per-layer rules and scope global contradict (global prunes under one threshold)");
  return o;
}

std::vector<ChannelGroup> channel_groups(const ir::Graph& graph) {
  ir::Graph g = graph;
  Spaces sp(g);
  std::map<std::string, Spaces::Space> spaces = sp.gather();
  std::map<std::string, size_t> at;  // space root -> index in out
  std::vector<ChannelGroup> out;
  for (size_t idx : g.topo_order()) {
    const ir::Node& n = *g.nodes[idx];
    if (!producer_type(n) || n.outputs.empty()) continue;
    const std::string root = sp.root_of(n.outputs[0]);
    auto it = spaces.find(root);
    if (it == spaces.end() || !it->second.blocked.empty() || it->second.channels < 2) continue;
    const auto& prod = it->second.producers;
    if (std::find(prod.begin(), prod.end(), &n) == prod.end()) continue;
    bool agree = true;
    for (const ir::Node* p : prod)
      agree = agree && g.initializers.at(p->inputs[1]).shape()[static_cast<size_t>(out_axis(*p))] == it->second.channels;
    if (!agree) continue;
    auto [pos, fresh] = at.emplace(root, out.size());
    if (fresh) out.push_back({{}, it->second.channels});
    out[pos->second].producers.push_back(n.name);
  }
  return out;
}

namespace {
// A joule PruneActivation in front of the data input of each Conv, Gemm and MatMul with an
// activation ratio (PruneOptions::activations_of).
void prune_activations(ir::Graph& g, const PruneOptions& o, PruneReport& rep) {
  bool any = false;
  const size_t count = g.nodes.size();
  for (size_t i = 0; i < count; ++i) {
    ir::Node& n = *g.nodes[i];
    if ((n.op_type != "Conv" && n.op_type != "Gemm" && n.op_type != "MatMul") || !n.domain.empty() || n.inputs.empty() ||
        (!o.only.empty() && std::find(o.only.begin(), o.only.end(), n.name) == o.only.end()))
      continue;
    const double r = o.activations_of(n.name);
    if (!(r >= 0 && r < 1)) fail(fmt::format("prune: {}: activation ratio {} must be in [0, 1)", n.where(), r));
    if (r == 0) continue;
    ir::Node p;
    p.name = g.unique_name(n.name + "_PruneActivation");
    p.op_type = "PruneActivation";
    p.domain = "joule";
    p.inputs = {n.inputs[0]};
    p.outputs = {g.unique_name(n.inputs[0] + "_pruned")};
    p.attrs["ratio"] = static_cast<float>(r);
    if (const ir::TensorType* t = g.type_of(n.inputs[0])) g.types[p.outputs[0]] = *t;
    n.inputs[0] = p.outputs[0];
    rep.activation_pruning.emplace_back(n.name, r);
    g.add_node(std::move(p));
    any = true;
  }
  if (any) {
    g.opsets["joule"] = std::max<int64_t>(1, g.opset("joule"));
    g.sort_topologically();
  }
}
}  // namespace

namespace {
// Forgets the inferred types of the values inside the graph (its inputs', outputs' and
// constants' stay), for shape inference to run again.
void forget_inner_types(ir::Graph& g) {
  std::unordered_set<std::string> keep(g.inputs.begin(), g.inputs.end());
  keep.insert(g.outputs.begin(), g.outputs.end());
  for (auto it = g.types.begin(); it != g.types.end();)
    it = keep.count(it->first) || g.initializers.count(it->first) ? std::next(it) : g.types.erase(it);
}
}  // namespace

PruneReport prune_graph(ir::Graph& g, const PruneOptions& o) {
  if (!(o.ratio >= 0 && o.ratio < 1)) fail(fmt::format("prune: ratio {} must be in [0, 1)", o.ratio));
  if (o.criterion != "l1" && o.criterion != "l2" && o.criterion != "bn" && o.criterion != "random")
    fail("prune: criterion '" + o.criterion + "': expected l1, l2, bn or random");
  if (o.scope != "local" && o.scope != "global") fail("prune: scope '" + o.scope + "': expected local or global");
  if (o.criterion == "bn" && !o.structured) fail("prune: criterion bn ranks output channels: use it with --structured");
  if (!(o.activations >= 0 && o.activations < 1)) fail(fmt::format("prune: activations {} must be in [0, 1)", o.activations));
  PruneReport rep;
  rep.options = o;
  auto measure = [&](int64_t& params, int64_t& nz, double& flops) {
    // FLOPs at batch 1: the inputs' symbolic dims bound to 1 in a copy, its shapes inferred.
    ir::Graph c = g;
    for (const auto& v : c.inputs)
      if (auto it = c.types.find(v); it != c.types.end())
        for (auto& d : it->second.dims)
          if (!d.is_static()) d = ir::Dim{1, ""};
    forget_inner_types(c);
    const nlohmann::json info = passes::model_info(c);  // (infers the shapes)
    params = info["parameters"].get<int64_t>();
    flops = info["total"]["flops"].get<double>();
    nz = nonzeros(g);
  };
  measure(rep.params_before, rep.nonzero_before, rep.flops_before);
  if (o.structured) {
    passes::infer_shapes(g);  // the channel counts of every value
    structured(g, o, rep);
    forget_inner_types(g);
    passes::infer_shapes(g);
  } else {
    unstructured(g, o, rep);
  }
  prune_activations(g, o, rep);
  measure(rep.params_after, rep.nonzero_after, rep.flops_after);
  return rep;
}

}  // namespace joule::prune
