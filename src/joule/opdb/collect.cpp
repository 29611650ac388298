#include "joule/opdb/collect.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>

#include "joule/core/error.h"
#include "joule/core/yaml_error.h"
#include "joule/runtime/algorithm.h"
#include "joule/runtime/inputs.h"

namespace joule::opdb {

void CollectStats::add(const CollectStats& o) {
  steps += o.steps;
  distinct += o.distinct;
  measured += o.measured;
  known += o.known;
  skipped.insert(skipped.end(), o.skipped.begin(), o.skipped.end());
}

namespace {
// Keeps copies of the non-constant inputs each wanted step received in one run, in order.
class Capture : public runtime::Observer {
 public:
  Capture(const ir::Graph& g, std::map<size_t, std::vector<Tensor>>& want) : g_(g), want_(want) {}
  void before_node(size_t step, const ir::Node& n, const std::vector<const Tensor*>& inputs) override {
    auto it = want_.find(step);
    if (it == want_.end()) return;
    for (size_t j = 0; j < inputs.size() && j < n.inputs.size(); ++j)
      if (!n.inputs[j].empty() && !g_.is_initializer(n.inputs[j]))
        it->second.push_back(inputs[j] ? inputs[j]->clone() : Tensor());
  }

 private:
  const ir::Graph& g_;
  std::map<size_t, std::vector<Tensor>>& want_;
};

using runtime::algorithm_of;
}  // namespace

CollectStats collect_session(runtime::Session& s, Store& db, const CollectOptions& o,
                             const runtime::TensorMap* inputs,
                             const std::function<void(size_t, size_t, const std::string&)>& progress) {
  CollectStats st;
  st.steps = s.num_steps();
  const ir::Graph& g = s.graph();
  // Distinct keys (with the algorithm the plan chose); the first step of each is measured.
  std::map<std::string, size_t> first;
  std::map<size_t, std::vector<std::string>> todo;  // step -> regimes to measure
  MeasureOptions mo = o.measure;
  mo.threads = s.threads();
  for (size_t i = 0; i < s.num_steps(); ++i) {
    const ir::Node& n = s.step_node(i);
    const OpKey k = op_key(g, n);
    const std::string id = k.text() + "|" + algorithm_of(n);
    if (!first.emplace(id, i).second) continue;
    ++st.distinct;
    std::vector<std::string> missing;
    for (const std::string& regime : mo.regimes) {
      if (!regime_applies(regime, g, n)) continue;
      auto row = db.find(k, algorithm_of(n), s.threads(), precision_of(k, algorithm_of(n)), regime, this_cpu(), this_isa(),
                         JOULE_VERSION);
      if (!row || o.force) {
        missing.push_back(regime);
      } else if (!o.origin.empty()) {
        db.add_origin(*row, o.origin);
      }
    }
    if (missing.empty())
      ++st.known;
    else
      todo[i] = std::move(missing);
  }
  if (todo.empty()) return st;
  // One run of the whole plan hands every node to measure its real inputs.
  std::map<size_t, std::vector<Tensor>> captured;
  for (auto& [i, regimes] : todo) captured[i];
  {
    runtime::TensorMap random;
    if (!inputs) random = runtime::random_inputs(s, 0);
    Capture cap(g, captured);
    s.add_observer(&cap);
    s.run(inputs ? *inputs : random);
    s.clear_observers();
  }
  size_t done = 0;
  for (auto& [i, regimes] : todo) {
    const ir::Node& n = s.step_node(i);
    if (progress) progress(done, todo.size(), n.name + " (" + n.op_type + ")");
    try {
      mo.regimes = regimes;
      std::vector<Row> rows = measure_node(g, n, "", mo, captured[i]);
      Store::Transaction t(db);
      for (Row& r : rows) {
        if (!o.origin.empty()) r.origins.push_back(o.origin);
        db.put(r);
      }
      t.commit();
      ++st.measured;
    } catch (const Error& e) {
      if (e.kind() == Error::Kind::Cancelled) throw;
      st.skipped.push_back(n.where() + ": " + e.what());
    }
    captured.erase(i);
    ++done;
  }
  if (progress) progress(done, todo.size(), "");
  return st;
}

// ---- sweep configs ----

std::string default_sweep_config_path() {
  namespace fs = std::filesystem;
  // The repository's examples/opdb/default.yaml (JOULE_MODELS_DIR is <repo>/models).
  return (fs::path(JOULE_MODELS_DIR).parent_path() / "examples" / "opdb" / "default.yaml").string();
}

SweepConfig load_sweep_config(const std::string& path) {
  return read_yaml(path, [&] {
    SweepConfig c;
    c.path = path;
    YAML::Node root;
    try {
      root = YAML::LoadFile(path);
    } catch (const YAML::BadFile&) {
      fail(path + ": cannot read the sweep config");
    } catch (const YAML::Exception& e) {
      fail(path + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
    }
    if (!root.IsMap()) fail(path + ": a sweep config is a mapping of stages (quick, full) to op entries");
    for (auto kv : root) {
      const std::string key = kv.first.as<std::string>();
      const int line = kv.first.Mark().line + 1;
      if (key == "max_gflop") {
        c.max_gflop = kv.second.as<double>();
        continue;
      }
      if (key != "quick" && key != "full")
        fail(path + ":" + std::to_string(line) + ": unknown key '" + key + "' (quick, full, max_gflop)");
      if (!kv.second.IsSequence())
        fail(path + ":" + std::to_string(line) + ": '" + key + "' must be a list of op entries");
      for (auto e : kv.second) {
        SweepEntry se;
        se.line = e.Mark().line + 1;
        if (!e.IsMap() || !e["op"]) fail(path + ":" + std::to_string(se.line) + ": each entry needs 'op: TYPE'");
        for (auto p : e) {
          const std::string name = p.first.as<std::string>();
          if (name == "op") {
            se.op = p.second.as<std::string>();
            continue;
          }
          std::vector<std::string> values;
          if (p.second.IsSequence()) {
            for (auto v : p.second) values.push_back(v.as<std::string>());
          } else {
            values.push_back(p.second.as<std::string>());
          }
          if (values.empty()) fail(path + ":" + std::to_string(se.line) + ": '" + name + "' has no values");
          se.grid[name] = values;
        }
        c.stages[key].push_back(se);
      }
    }
    return c;
  });
}

namespace {
// A point's parameters with defaults; reading one marks it used so unknown keys are reported.
class Params {
 public:
  Params(const std::map<std::string, std::string>& v, const std::string& where) : v_(v), where_(where) {}
  int64_t num(const std::string& k, int64_t def) {
    used_.insert(k);
    auto it = v_.find(k);
    if (it == v_.end()) return def;
    try {
      size_t pos = 0;
      int64_t x = std::stoll(it->second, &pos);
      if (pos == it->second.size() && x > 0) return x;
    } catch (...) {
    }
    fail(where_ + ": '" + k + "' must be a positive integer, not '" + it->second + "'");
  }
  std::string str(const std::string& k, const std::string& def) {
    used_.insert(k);
    auto it = v_.find(k);
    return it == v_.end() ? def : it->second;
  }
  void check_all_used(const std::string& op) const {
    for (auto& [k, v] : v_)
      if (!used_.count(k)) fail(where_ + ": '" + k + "' is not a parameter of a " + op + " sweep");
  }

 private:
  const std::map<std::string, std::string>& v_;
  std::string where_;
  std::set<std::string> used_;
};

// Small graphs in code.
struct Builder {
  ir::Graph g;
  uint32_t seed = 1;
  Builder() {
    g.opsets[""] = 13;
    g.name = "sweep";
  }
  std::string input(const Shape& s) {
    g.inputs.push_back("x");
    g.types["x"] = ir::TensorType::of(DType::Float32, s);
    return "x";
  }
  // Seeded values in [offset - scale, offset + scale).
  std::string weight(const std::string& name, const Shape& s, float scale, float offset = 0.f) {
    Tensor t(DType::Float32, s);
    uint32_t x = seed++ * 2654435761u;
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      x = x * 1664525u + 1013904223u;
      p[i] = (static_cast<float>(x >> 8) / 8388608.0f - 1.0f) * scale + offset;
    }
    g.initializers[name] = t;
    g.types[name] = ir::TensorType::of(DType::Float32, s);
    return name;
  }
  std::string scalar(const std::string& name, float v) {
    g.initializers[name] = Tensor::scalar<float>(v);
    g.types[name] = ir::TensorType::of(DType::Float32, {});
    return name;
  }
  std::string node(const std::string& op, std::vector<std::string> ins, std::map<std::string, ir::Attribute> attrs = {}) {
    ir::Node n;
    n.op_type = op;
    n.name = op + "_" + std::to_string(g.nodes.size());
    n.inputs = std::move(ins);
    n.outputs = {n.name + "_out"};
    n.attrs = std::move(attrs);
    g.add_node(n);
    return n.outputs[0];
  }
  // A depthwise 1x1 conv of `x` ([N,c,H,W]): a neighbouring conv, as every conv, pool and
  // batch norm inside a CNN has one, so that the channels_last pass treats the node measured
  // as it treats it in a model (N,H,W,C where the conv estimates favour it, with the algorithm
  // a model's layer gets). Cheap, and measured as a row of its own.
  std::string neighbour(const std::string& x, int64_t c) {
    return node("Conv", {x, weight("nb_w" + std::to_string(g.nodes.size()), {c, 1, 1, 1}, 1.f)},
                {{"kernel_shape", std::vector<int64_t>{1, 1}}, {"group", c}});
  }
  // An activation after `x`: none, Relu, Clip (ReLU6), HardSwish, Sigmoid, Tanh, SiLU (x*sigmoid(x)), Gelu.
  std::string act(const std::string& kind, const std::string& x, const std::string& where) {
    if (kind == "none") return x;
    if (kind == "Relu" || kind == "Sigmoid" || kind == "Tanh") return node(kind, {x});
    // As opset-13 exports write it (fuse_swish makes one node of it).
    if (kind == "HardSwish") return node("Mul", {x, node("HardSigmoid", {x}, {{"alpha", 1.f / 6}, {"beta", 0.5f}})});
    if (kind == "Clip") return node("Clip", {x, scalar("lo", 0.f), scalar("hi", 6.f)});
    if (kind == "SiLU") return node("Mul", {x, node("Sigmoid", {x})});
    if (kind == "Gelu") {  // the Erf form PyTorch exports; fuse_gelu makes one node of it
      std::string h = node("Div", {x, scalar("sqrt2", 1.41421356f)});
      std::string e = node("Add", {node("Erf", {h}), scalar("one", 1.f)});
      return node("Mul", {node("Mul", {x, e}), scalar("half", 0.5f)});
    }
    fail(where + ": unknown activation '" + kind + "' (none, Relu, Clip, HardSwish, Sigmoid, Tanh, SiLU, Gelu)");
  }
};

// `chained` [yes]: the node between neighbouring convs, as in a CNN (Builder::neighbour), or
// (no) alone, its input and output the graph's in N,C,H,W.
bool chained(Params& p, const std::string& where) {
  const std::string v = p.str("chained", "yes");
  JOULE_CHECK(v == "yes" || v == "no", where + ": chained must be yes or no, not '" + v + "'");
  return v == "yes";
}

// The graph of one point; empty graph when the point is not meaningful (skipped).
ir::Graph build_case(const std::string& op, Params& p, const std::string& where, double* gflop) {
  Builder b;
  const int64_t n = p.num("batch", 1);
  *gflop = 0;
  if (op == "Conv") {
    const int64_t c = p.num("channels", 64), size = p.num("size", 28), k = p.num("kernel", 3), s = p.num("stride", 1);
    const int64_t kw = p.num("kernel_w", k);  // a factorised kernel (Inception's 1x7, 7x1): k rows, kw columns
    const int64_t out = p.str("out", "same") == "same" ? c : p.num("out", c);
    const std::string gs = p.str("groups", "1");
    const int64_t groups = gs == "depthwise" ? c : p.num("groups", 1);
    const std::string a = p.str("act", "Relu");
    if (c % groups || out % groups) return {};
    std::string x = b.input({n, c, size, size});
    if (chained(p, where)) x = b.neighbour(x, c);
    std::string y = b.node("Conv", {x, b.weight("w", {out, c / groups, k, kw}, 0.1f), b.weight("b", {out}, 0.1f)},
                           {{"kernel_shape", std::vector<int64_t>{k, kw}}, {"strides", std::vector<int64_t>{s, s}},
                            {"pads", std::vector<int64_t>{k / 2, kw / 2, k / 2, kw / 2}}, {"group", groups}});
    const int64_t oh = (size + 2 * (k / 2) - k) / s + 1, ow = (size + 2 * (kw / 2) - kw) / s + 1;
    *gflop = 2.0 * n * out * oh * ow * (c / groups) * k * kw / 1e9;
    if (p.str("residual", "no") == "yes") {  // relu(conv(x) + x), as ResNet's blocks end
      if (out != c || s != 1) return {};
      y = b.node("Add", {y, x});
    }
    b.g.outputs.push_back(b.act(a, y, where));
  } else if (op == "Gemm" || op == "MatMul") {
    const int64_t m = p.num("m", 64), k = p.num("k", 256);
    const bool weights = op == "Gemm" || p.str("rhs", "const") == "const";
    const int64_t nn = p.num("n", weights ? 256 : m);  // activations on both sides: x times its own transpose
    const std::string a = p.str("act", "none");
    if (op == "Gemm") {
      std::string x = b.input({m, k});
      b.g.outputs.push_back(b.act(a, b.node("Gemm", {x, b.weight("w", {nn, k}, 0.05f), b.weight("b", {nn}, 0.1f)},
                                            {{"transB", int64_t{1}}}), where));
      *gflop = 2.0 * m * nn * k / 1e9;
    } else {
      const int64_t heads = p.num("heads", 1);
      std::string x = b.input(heads > 1 ? Shape{n, heads, m, k} : Shape{n, m, k});
      std::string w;
      if (weights) {
        w = b.weight("w", {k, nn}, 0.05f);
      } else {  // activations on both sides (attention): x times a reshaped slice of itself
        JOULE_CHECK(nn == m, where + ": rhs: act multiplies x by its own transpose: n is m");
        w = b.node("Transpose", {x}, {{"perm", heads > 1 ? std::vector<int64_t>{0, 1, 3, 2} : std::vector<int64_t>{0, 2, 1}}});
      }
      std::string y = b.node("MatMul", {x, w});
      if (weights && p.str("bias", "yes") == "yes") y = b.node("Add", {y, b.weight("b", {nn}, 0.1f)});
      b.g.outputs.push_back(b.act(a, y, where));
      *gflop = 2.0 * n * heads * m * nn * k / 1e9;
    }
  } else if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool") {
    const int64_t c = p.num("channels", 64), size = p.num("size", 56);
    std::string x = b.input({n, c, size, size});
    if (op == "GlobalAveragePool") {
      b.g.outputs.push_back(b.node(op, {x}));
    } else {
      const int64_t k = p.num("kernel", 3), s = p.num("stride", 2);
      const int64_t pad = p.str("pad", "same") == "same" ? k / 2 : 0;
      const bool between = chained(p, where);
      if (between) x = b.neighbour(x, c);
      std::string y = b.node(op, {x}, {{"kernel_shape", std::vector<int64_t>{k, k}},
                                       {"strides", std::vector<int64_t>{s, s}},
                                       {"pads", std::vector<int64_t>{pad, pad, pad, pad}}});
      b.g.outputs.push_back(between ? b.neighbour(y, c) : y);
    }
  } else if (op == "Softmax" || op == "LayerNormalization") {
    const int64_t rows = p.num("rows", 197), cols = p.num("cols", 768);
    std::string x = b.input({n, rows, cols});
    if (op == "Softmax") {
      b.g.outputs.push_back(b.node(op, {x}, {{"axis", int64_t{-1}}}));
    } else {
      // As opset-13 exports write it (fuse_layer_norm makes it one node).
      const ir::Attribute last = std::vector<int64_t>{-1};
      std::string d = b.node("Sub", {x, b.node("ReduceMean", {x}, {{"axes", last}})});
      std::string v = b.node("ReduceMean", {b.node("Pow", {d, b.scalar("two", 2.f)})}, {{"axes", last}});
      std::string y = b.node("Div", {d, b.node("Sqrt", {b.node("Add", {v, b.scalar("eps", 1e-5f)})})});
      y = b.node("Mul", {y, b.weight("gamma", {cols}, 1.f)});
      b.g.outputs.push_back(b.node("Add", {y, b.weight("beta", {cols}, 0.1f)}));
    }
  } else if (op == "BatchNormalization") {  // one that follows no conv (DenseNet's pre-activation), so stays
    const int64_t c = p.num("channels", 64), size = p.num("size", 28);
    std::string x = b.input({n, c, size, size});
    const bool between = chained(p, where);
    if (between) x = b.node("Relu", {b.neighbour(x, c)});  // a conv directly before would absorb it
    std::string y = b.node(op, {x, b.weight("scale", {c}, 1.f), b.weight("bias", {c}, 0.1f),
                                b.weight("mean", {c}, 0.1f), b.weight("var", {c}, 0.4f, 1.f)});
    y = b.act(p.str("act", "Relu"), y, where);
    b.g.outputs.push_back(between ? b.neighbour(y, c) : y);
  } else if (op == "Transpose") {
    const int64_t c = p.num("channels", 64), size = p.num("size", 56);
    std::string x = b.input({n, c, size, size});
    const bool to_nhwc = p.str("to", "nhwc") == "nhwc";
    b.g.outputs.push_back(b.node(op, {x}, {{"perm", to_nhwc ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 3, 1, 2}}}));
  } else if (op == "Concat") {
    const int64_t c = p.num("channels", 64), size = p.num("size", 28), parts = p.num("inputs", 2);
    std::string x = b.input({n, c, size, size});
    const bool between = chained(p, where);  // the branches' convs, and one after (Inception, DenseNet)
    std::vector<std::string> ins;
    for (int64_t i = 0; i < parts; ++i) ins.push_back(between ? b.neighbour(x, c) : b.node("Relu", {x}));
    std::string y = b.node(op, ins, {{"axis", int64_t{1}}});
    b.g.outputs.push_back(between ? b.neighbour(y, c * parts) : y);
  } else if (op == "Add" || op == "Mul" || op == "Sub" || op == "Div") {
    const int64_t c = p.num("channels", 64), size = p.num("size", 28);
    const std::string bc = p.str("broadcast", "same");
    std::string x = b.input({n, c, size, size});
    std::string rhs;
    if (bc == "same")
      rhs = b.node("Relu", {x});
    else if (bc == "channel")
      rhs = b.node("Sigmoid", {b.node("GlobalAveragePool", {x})});  // an SE gate's shape [N,C,1,1]
    else if (bc == "scalar")
      rhs = b.scalar("s", 1.5f);
    else
      fail(where + ": broadcast must be same, channel or scalar, not '" + bc + "'");
    b.g.outputs.push_back(b.node(op, {x, rhs}));
  } else if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "HardSwish" || op == "HardSigmoid" ||
             op == "Erf" || op == "Exp" || op == "Clip" || op == "SiLU" || op == "Gelu") {
    const int64_t c = p.num("channels", 64), size = p.num("size", 28);
    std::string x = b.input({n, c, size, size});
    if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "HardSwish" || op == "Clip" || op == "SiLU" ||
        op == "Gelu") {
      b.g.outputs.push_back(b.act(op, x, where));
    } else {
      b.g.outputs.push_back(b.node(op, {x}));
    }
  } else {
    fail(where + ": no sweep for op '" + op +
         "' (Conv, Gemm, MatMul, MaxPool, AveragePool, GlobalAveragePool, BatchNormalization, Softmax, LayerNormalization, "
         "Transpose, "
         "Concat, Add, Mul, Sub, Div, Relu, Sigmoid, Tanh, HardSwish, HardSigmoid, Erf, Exp, Clip, SiLU, Gelu)");
  }
  p.check_all_used(op);
  return std::move(b.g);
}

void expand(const SweepEntry& e, const std::string& where, bool first_only, double max_gflop,
            std::vector<SweepCase>& out) {
  std::vector<std::pair<std::string, std::vector<std::string>>> axes(e.grid.begin(), e.grid.end());
  std::vector<size_t> idx(axes.size(), 0);
  while (true) {
    std::map<std::string, std::string> point;
    std::string label = e.op;
    for (size_t i = 0; i < axes.size(); ++i) {
      point[axes[i].first] = axes[i].second[idx[i]];
      label += " " + axes[i].first + "=" + axes[i].second[idx[i]];
    }
    Params p(point, where);
    double gflop = 0;
    ir::Graph g = build_case(e.op, p, where, &gflop);
    if (!g.nodes.empty() && gflop <= max_gflop) out.push_back({label, std::move(g)});
    if (first_only) return;
    size_t i = 0;
    for (; i < axes.size(); ++i) {
      if (++idx[i] < axes[i].second.size()) break;
      idx[i] = 0;
    }
    if (i == axes.size()) return;
  }
}
}  // namespace

std::vector<SweepCase> sweep_cases(const SweepConfig& c, const std::string& stage) {
  JOULE_CHECK(stage == "sanity" || stage == "quick" || stage == "full",
              "unknown stage '" + stage + "' (sanity, quick, full)");
  std::vector<SweepCase> out;
  auto run = [&](const std::string& st, bool first_only) {
    auto it = c.stages.find(st);
    if (it == c.stages.end()) return;
    for (const SweepEntry& e : it->second)
      expand(e, c.path + ":" + std::to_string(e.line), first_only, c.max_gflop, out);
  };
  run("quick", stage == "sanity");
  if (stage == "full") run("full", false);
  if (out.empty()) fail(c.path + ": stage '" + stage + "' has no points");
  return out;
}

}  // namespace joule::opdb
