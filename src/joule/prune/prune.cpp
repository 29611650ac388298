#include "joule/prune/prune.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <unordered_set>

#include "joule/core/error.h"
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

// What removing output channels of one convolution changes.
struct Edits {
  std::vector<std::pair<std::string, int>> slices;  // initializer, axis
  std::vector<ir::Node*> depthwise;                 // their group becomes the kept count
  const ir::Node* bn = nullptr;                     // a BatchNorm reading the conv's output directly
};

class Tracer {
 public:
  explicit Tracer(ir::Graph& g) : g_(g), cons_(g.consumers()) {
    for (const auto& o : g.outputs) outputs_.insert(o);
  }

  // Follows value `v` (C channels on axis 1) to its readers, adding their edits; returns "" or
  // why the channels cannot be removed.
  std::string trace(const std::string& v, int64_t c, Edits& e, bool direct) {
    if (outputs_.count(v)) return "its output reaches a graph output";
    auto it = cons_.find(v);
    if (it == cons_.end() || it->second.empty()) return "";
    for (size_t idx : it->second) {
      ir::Node& n = *g_.nodes[idx];
      if (!n.domain.empty()) return "read by " + n.where();
      if (n.inputs.empty() || n.inputs[0] != v) return "read by " + n.where() + " as a parameter";
      const std::string& op = n.op_type;
      std::string why;
      if (op == "BatchNormalization") {
        if (n.input_count() != 5) return "read by " + n.where() + " (malformed)";
        for (size_t i = 1; i < n.outputs.size(); ++i)
          if (!n.outputs[i].empty()) return "read by " + n.where() + " in training mode";
        for (size_t i = 1; i < 5; ++i) {
          if (!sliceable(n.inputs[i], 0, c)) return "read by " + n.where() + " with shared or non-constant parameters";
          e.slices.emplace_back(n.inputs[i], 0);
        }
        if (direct) e.bn = &n;
        why = trace(n.outputs[0], c, e, false);
      } else if (unary(n)) {
        why = trace(n.outputs[0], c, e, false);
      } else if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool" ||
                 op == "LpPool") {
        if (n.outputs.size() > 1 && !n.outputs[1].empty()) return "read by " + n.where() + " with indices";
        why = trace(n.outputs[0], c, e, false);
      } else if (op == "Conv") {
        if (n.inputs.size() < 2 || !f32_initializer(g_, n.inputs[1]) || uses(n.inputs[1]) != 1)
          return "read by " + n.where() + " whose weights are not its own constant";
        const Tensor& w = g_.initializers.at(n.inputs[1]);
        const int64_t group = n.attr_int("group", 1);
        if (group == 1 && w.rank() >= 3 && w.shape()[1] == c) {
          e.slices.emplace_back(n.inputs[1], 1);
        } else if (group == c && w.rank() >= 3 && w.shape()[0] == c && w.shape()[1] == 1) {
          e.slices.emplace_back(n.inputs[1], 0);
          if (n.has_input(2)) {
            if (!sliceable(n.inputs[2], 0, c)) return "read by " + n.where() + " with a shared bias";
            e.slices.emplace_back(n.inputs[2], 0);
          }
          e.depthwise.push_back(&n);
          why = trace(n.outputs[0], c, e, false);
        } else {
          return "read by the grouped " + n.where();
        }
      } else if (op == "Flatten") {
        // [N, C, 1, 1] -> [N, C]: the channels become the features of a Gemm or MatMul.
        const ir::TensorType* t = g_.type_of(v);
        if (n.attr_int("axis", 1) != 1 || !t || !t->has_shape || t->dims.size() != 4 || !t->dims[2].is_static() ||
            !t->dims[3].is_static() || t->dims[2].value != 1 || t->dims[3].value != 1)
          return "read by " + n.where() + " not over 1x1 maps";
        if (outputs_.count(n.outputs[0])) return "its features reach a graph output";
        for (size_t j : cons_[n.outputs[0]]) {
          ir::Node& m = *g_.nodes[j];
          const bool gemm = m.op_type == "Gemm" && m.domain.empty(), matmul = m.op_type == "MatMul" && m.domain.empty();
          if ((!gemm && !matmul) || m.inputs[0] != n.outputs[0] || m.inputs.size() < 2 || (gemm && m.attr_int("transA", 0)))
            return "its features are read by " + m.where();
          if (!f32_initializer(g_, m.inputs[1]) || uses(m.inputs[1]) != 1 || g_.initializers.at(m.inputs[1]).rank() != 2)
            return "its features are read by " + m.where() + " whose weights are not its own constant";
          const int axis = gemm && m.attr_int("transB", 0) ? 1 : 0;
          if (g_.initializers.at(m.inputs[1]).shape()[static_cast<size_t>(axis)] != c)
            return "its features are read by " + m.where() + " of another width";
          e.slices.emplace_back(m.inputs[1], axis);
        }
      } else {
        return "read by " + n.where();
      }
      if (!why.empty()) return why;
    }
    return "";
  }

  size_t uses(const std::string& v) const {
    auto it = cons_.find(v);
    return (it == cons_.end() ? 0 : it->second.size()) + outputs_.count(v);
  }

 private:
  static bool unary(const ir::Node& n) {
    static const std::set<std::string> ops = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish",
                                              "Elu",  "Selu",      "Softplus", "Identity", "Mish", "Gelu"};
    if (ops.count(n.op_type)) return true;
    if (n.op_type == "Dropout") return n.outputs.size() < 2 || n.outputs[1].empty();
    // Clip with scalar bounds (attributes, or scalar inputs).
    return n.op_type == "Clip";
  }
  bool sliceable(const std::string& v, int axis, int64_t c) const {
    if (!f32_initializer(g_, v) || uses(v) != 1) return false;
    const Tensor& t = g_.initializers.at(v);
    return t.rank() > axis && t.shape()[static_cast<size_t>(axis)] == c;
  }
  ir::Graph& g_;
  std::unordered_map<std::string, std::vector<size_t>> cons_;
  std::unordered_set<std::string> outputs_;
};

std::vector<double> importance(const ir::Graph& g, const Tensor& w, const Edits& e, const PruneOptions& o,
                               std::mt19937& rng) {
  const int64_t m = w.shape()[0], per = w.numel() / std::max<int64_t>(1, m);
  std::vector<double> s(static_cast<size_t>(m), 0);
  if (o.criterion == "random") {
    std::uniform_real_distribution<double> u(0, 1);
    for (auto& x : s) x = u(rng);
    return s;
  }
  if (o.criterion == "bn" && e.bn) {
    const Tensor& gamma = g.initializers.at(e.bn->inputs[1]);
    for (int64_t i = 0; i < m; ++i) s[static_cast<size_t>(i)] = std::abs(gamma.value_as_double(i));
    return s;
  }
  const float* p = w.data<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < per; ++j) {
      const double v = p[i * per + j];
      s[static_cast<size_t>(i)] += o.criterion == "l2" ? v * v : std::abs(v);
    }
  return s;
}

void structured(ir::Graph& g, const PruneOptions& o, PruneReport& rep) {
  std::mt19937 rng(o.seed);
  for (size_t idx : g.topo_order()) {
    ir::Node& n = *g.nodes[idx];
    if (n.op_type != "Conv" || !n.domain.empty() || n.attr_int("group", 1) != 1 || n.inputs.size() < 2 ||
        !f32_initializer(g, n.inputs[1]))
      continue;
    if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), n.name) == o.only.end()) continue;
    const Tensor& w = g.initializers.at(n.inputs[1]);
    LayerPruning lp{n.name, n.op_type, w.shape()[0], w.shape()[0], ""};
    Tracer tr(g);
    Edits e;
    if (tr.uses(n.inputs[1]) != 1) lp.kept_because = "its weights are shared";
    if (lp.kept_because.empty() && n.has_input(2) && (!f32_initializer(g, n.inputs[2]) || tr.uses(n.inputs[2]) != 1))
      lp.kept_because = "its bias is shared or not constant";
    if (lp.kept_because.empty()) lp.kept_because = tr.trace(n.outputs[0], w.shape()[0], e, true);
    const int64_t m = w.shape()[0];
    const int64_t keep_n = std::max<int64_t>(1, std::llround(static_cast<double>(m) * (1.0 - o.ratio)));
    if (lp.kept_because.empty() && keep_n < m) {
      const std::vector<double> s = importance(g, w, e, o, rng);
      std::vector<int64_t> order(static_cast<size_t>(m));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return s[static_cast<size_t>(a)] > s[static_cast<size_t>(b)]; });
      std::vector<int64_t> keep(order.begin(), order.begin() + keep_n);
      std::sort(keep.begin(), keep.end());
      e.slices.emplace_back(n.inputs[1], 0);
      if (n.has_input(2)) e.slices.emplace_back(n.inputs[2], 0);
      for (auto& [name, axis] : e.slices) {
        Tensor t = take(g.initializers.at(name), axis, keep);
        g.types[name] = ir::TensorType::of(t.dtype(), t.shape());
        g.initializers[name] = std::move(t);
      }
      for (ir::Node* d : e.depthwise) d->attrs["group"] = keep_n;
      lp.after = keep_n;
    }
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
    float* p = t.data<float>();
    LayerPruning lp{n->name, n->op_type, count_nz(t), 0, ""};
    const int64_t total = t.numel();
    const int64_t k = static_cast<int64_t>(std::floor(o.ratio * static_cast<double>(total)));
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
          {"flops_after", flops_after}};
}

std::string PruneReport::table() const {
  size_t w = 4;
  for (const auto& l : layers) w = std::max(w, l.node.size());
  std::string s = fmt::format("{:<{}} {:<10} {:>10} {:>10}  {}\n", "node", w, "op",
                              options.structured ? "channels" : "nonzero", "kept", options.structured ? "note" : "sparsity");
  for (const auto& l : layers) {
    s += fmt::format("{:<{}} {:<10} {:>10} {:>10}  ", l.node, w, l.op, l.before, l.after);
    if (options.structured)
      s += l.kept_because.empty() ? fmt::format("{:.0f}% removed", 100.0 * (1 - double(l.after) / double(l.before)))
                                  : "kept whole: " + l.kept_because;
    else
      s += fmt::format("{:.1f}%", l.before ? 100.0 * (1 - double(l.after) / double(l.before)) : 0.0);
    s += "\n";
  }
  s += fmt::format("parameters {} -> {} ({:.1f}%), nonzero {} -> {}, FLOPs {:.4g} -> {:.4g} ({:.1f}%)\n", params_before,
                   params_after, 100.0 * double(params_after) / double(std::max<int64_t>(1, params_before)), nonzero_before,
                   nonzero_after, flops_before, flops_after, 100.0 * flops_after / std::max(1.0, flops_before));
  return s;
}

PruneReport prune_graph(ir::Graph& g, const PruneOptions& o) {
  if (!(o.ratio >= 0 && o.ratio < 1)) fail(fmt::format("prune: ratio {} must be in [0, 1)", o.ratio));
  if (o.criterion != "l1" && o.criterion != "l2" && o.criterion != "bn" && o.criterion != "random")
    fail("prune: criterion '" + o.criterion + "': expected l1, l2, bn or random");
  if (o.scope != "local" && o.scope != "global") fail("prune: scope '" + o.scope + "': expected local or global");
  if (o.criterion == "bn" && !o.structured) fail("prune: criterion bn ranks output channels: use it with --structured");
  PruneReport rep;
  rep.options = o;
  auto measure = [&](int64_t& params, int64_t& nz, double& flops) {
    const nlohmann::json info = passes::model_info(g);
    params = info["parameters"].get<int64_t>();
    flops = info["total"]["flops"].get<double>();
    nz = nonzeros(g);
  };
  measure(rep.params_before, rep.nonzero_before, rep.flops_before);
  if (o.structured) {
    structured(g, o, rep);
    // Shapes again: forget the inferred types of values inside the graph.
    std::unordered_set<std::string> keep(g.inputs.begin(), g.inputs.end());
    keep.insert(g.outputs.begin(), g.outputs.end());
    for (auto it = g.types.begin(); it != g.types.end();)
      it = keep.count(it->first) || g.initializers.count(it->first) ? std::next(it) : g.types.erase(it);
    passes::infer_shapes(g);
  } else {
    unstructured(g, o, rep);
  }
  measure(rep.params_after, rep.nonzero_after, rep.flops_after);
  return rep;
}

}  // namespace joule::prune
