#include "joule/train/lora.h"

#include <cmath>
#include <random>
#include <regex>

#include "joule/core/error.h"
#include "joule/passes/infer_shapes.h"

namespace joule::train {

namespace {

using Ints = std::vector<int64_t>;

Tensor uniform(const Shape& s, double bound, std::mt19937_64& rng) {
  Tensor t(DType::Float32, s);
  std::uniform_real_distribution<double> u(-bound, bound);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(u(rng));
  return t;
}

const Tensor* float_weight(const ir::Graph& g, const ir::Node& n, size_t i, size_t rank) {
  if (i >= n.inputs.size()) return nullptr;
  auto it = g.initializers.find(n.inputs[i]);
  if (it == g.initializers.end() || it->second.dtype() != DType::Float32 || it->second.rank() != static_cast<int>(rank))
    return nullptr;
  return &it->second;
}

}  // namespace

std::vector<std::string> LoraGraph::trainable() const {
  std::vector<std::string> v;
  for (const LoraAdapter& a : adapters) {
    v.push_back(a.a);
    v.push_back(a.b);
  }
  return v;
}

LoraGraph add_lora(const ir::Graph& g, const LoraOptions& o) {
  if (o.rank < 1) fail("LoRA: the rank must be positive, got " + std::to_string(o.rank));
  std::regex re;
  try {
    re = std::regex(o.target.empty() ? ".*" : o.target);
  } catch (const std::regex_error& e) {
    fail("LoRA: target '" + o.target + "' is not a regular expression: " + e.what());
  }
  LoraGraph r;
  r.graph = g;
  ir::Graph& lg = r.graph;
  const double scale = (o.alpha > 0 ? o.alpha : static_cast<double>(o.rank)) / static_cast<double>(o.rank);
  std::mt19937_64 rng(o.seed * 0x9E3779B97F4A7C15ull + 7);
  const size_t count = lg.nodes.size();
  const auto producers = lg.producers();
  for (size_t idx = 0; idx < count; ++idx) {
    ir::Node* n = lg.nodes[idx].get();
    if (!n->domain.empty() || std::find(o.types.begin(), o.types.end(), n->op_type) == o.types.end()) continue;
    if (!std::regex_search(n->name, re)) continue;
    LoraAdapter a{n->name, n->inputs.size() > 1 ? n->inputs[1] : "", "", "", n->op_type, false, scale};
    const std::string x = n->inputs[0], y = n->outputs[0];
    Shape as, bs;
    std::map<std::string, ir::Attribute> a_attrs;
    double fan_in = 0, post = scale;
    if (n->op_type == "MatMul" || n->op_type == "Gemm") {
      const Tensor* w = float_weight(lg, *n, 1, 2);
      a.trans_b = n->op_type == "Gemm" && n->attr_int("transB", 0) != 0;
      if (!w && n->op_type == "MatMul") {  // x W^T as PyTorch exports Linear: MatMul(x, Transpose(W))
        auto p = producers.find(n->inputs[1]);
        const ir::Node* t = p == producers.end() ? nullptr : lg.nodes[p->second].get();
        if (t && t->domain.empty() && t->op_type == "Transpose" && t->attr_ints("perm", {1, 0}) == Ints{1, 0}) {
          w = float_weight(lg, *t, 0, 2);
          a.weight = t->inputs[0];
          a.trans_b = true;
        }
      }
      if (!w || (n->op_type == "Gemm" && n->attr_int("transA", 0) != 0)) continue;  // not a weight matrix
      const int64_t k = a.trans_b ? w->dim(1) : w->dim(0), m = a.trans_b ? w->dim(0) : w->dim(1);
      as = {k, o.rank};
      bs = {o.rank, m};
      fan_in = static_cast<double>(k);
      if (n->op_type == "Gemm") post *= n->attr_float("alpha", 1.f);
    } else if (n->op_type == "Conv") {
      const Tensor* w = float_weight(lg, *n, 1, 4);
      if (!w || n->attr_int("group", 1) != 1) continue;
      as = {o.rank, w->dim(1), w->dim(2), w->dim(3)};
      bs = {w->dim(0), o.rank, 1, 1};
      fan_in = static_cast<double>(w->dim(1) * w->dim(2) * w->dim(3));
      for (const char* k : {"strides", "pads", "dilations", "auto_pad"})
        if (auto it = n->attrs.find(k); it != n->attrs.end()) a_attrs[k] = it->second;
    } else {
      continue;
    }
    a.a = lg.unique_name(n->name + "/lora_A");
    lg.initializers[a.a] = uniform(as, 1.0 / std::sqrt(fan_in), rng);
    a.b = lg.unique_name(n->name + "/lora_B");
    lg.initializers[a.b] = Tensor(DType::Float32, bs);
    for (const std::string& v : {a.a, a.b}) lg.types[v] = ir::TensorType::of(DType::Float32, lg.initializers[v].shape());
    const std::string base = lg.unique_name(y + "/lora_base");
    n->outputs[0] = base;
    const std::string op = a.kind == "Conv" ? "Conv" : "MatMul";
    auto add = [&](const std::string& type, std::vector<std::string> in, std::map<std::string, ir::Attribute> attrs,
                   const std::string& out) {
      ir::Node m;
      m.name = lg.unique_name(a.node + "/lora_" + type);
      m.op_type = type;
      m.inputs = std::move(in);
      m.outputs = {out};
      m.attrs = std::move(attrs);
      lg.add_node(std::move(m));
      return out;
    };
    const std::string t = add(op, {x, a.a}, a_attrs, lg.unique_name(a.node + "/lora_down"));
    const std::string u = add(op, {t, a.b}, {}, lg.unique_name(a.node + "/lora_up"));
    const std::string s = lg.unique_name(a.node + "/lora_scale");
    lg.initializers[s] = Tensor::scalar<float>(static_cast<float>(post));
    lg.types[s] = ir::TensorType::of(DType::Float32, {});
    const std::string v = add("Mul", {u, s}, {}, lg.unique_name(a.node + "/lora_scaled"));
    add("Add", {base, v}, {}, y);
    lg.types.erase(y);
    r.adapters.push_back(a);
  }
  if (r.adapters.empty())
    fail("LoRA: no node to adapt (types " + std::to_string(o.types.size()) + ", target '" + o.target +
         "'): MatMul and Gemm need a constant 2-D weight, Conv a constant weight and group 1");
  lg.sort_topologically();
  passes::infer_shapes(lg);
  return r;
}

ir::Graph merge_lora(const ir::Graph& g, const LoraGraph& trained) {
  ir::Graph out = g;
  for (const LoraAdapter& a : trained.adapters) {
    auto wi = out.initializers.find(a.weight);
    if (wi == out.initializers.end()) fail_internal("merge_lora: weight '" + a.weight + "' is gone");
    const Tensor& A = trained.graph.initializers.at(a.a);
    const Tensor& B = trained.graph.initializers.at(a.b);
    Tensor w = wi->second.clone();
    float* wp = w.data<float>();
    const float *ap = A.data<float>(), *bp = B.data<float>();
    const int64_t r = a.kind == "Conv" ? A.dim(0) : A.dim(1);
    if (a.kind == "Conv") {  // W[m, c, i, j] += scale * sum_r B[m, r] A[r, c, i, j]
      const int64_t m = w.dim(0), inner = w.numel() / m;
      for (int64_t mo = 0; mo < m; ++mo)
        for (int64_t k = 0; k < r; ++k) {
          const float bv = static_cast<float>(a.scale) * bp[mo * r + k];
          for (int64_t i = 0; i < inner; ++i) wp[mo * inner + i] += bv * ap[k * inner + i];
        }
    } else {  // W[k, n] (or W[n, k] with transB) += scale * (A B)[k, n]
      const int64_t kk = A.dim(0), nn = B.dim(1);
      for (int64_t i = 0; i < kk; ++i)
        for (int64_t j = 0; j < nn; ++j) {
          double s = 0;
          for (int64_t k = 0; k < r; ++k) s += static_cast<double>(ap[i * r + k]) * bp[k * nn + j];
          wp[a.trans_b ? j * kk + i : i * nn + j] += static_cast<float>(a.scale * s);
        }
    }
    wi->second = w;
  }
  return out;
}

}  // namespace joule::train
