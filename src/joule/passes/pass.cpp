#include "joule/passes/pass.h"

#include <algorithm>
#include <chrono>

#include "joule/passes/annotate_costs.h"
#include "joule/passes/infer_shapes.h"
#include "joule/passes/verify.h"

namespace joule::passes {

namespace {

// Analysis passes, wrapped to the pass signature.
PassResult infer_shapes_pass(ir::Graph& g, const PassOptions&) {
  InferResult r = infer_shapes(g);
  PassResult p;
  p.info = {{"nodes_unknown", r.nodes_unknown}, {"constants", r.constants.size()}};
  return p;
}

PassResult annotate_costs_pass(ir::Graph& g, const PassOptions&) {
  infer_shapes(g);
  CostTotals t = annotate_costs(g);
  PassResult p;
  p.info = {{"macs", t.macs}, {"flops", t.flops}, {"bytes", t.bytes}, {"nodes_without_shapes", t.nodes_without_shapes}};
  return p;
}

// The passes on every body of g's control-flow nodes, depth first, after g's own. A body is
// optimised as a graph of its own, with the outer-scope values it reads added as inputs typed
// as in g (so shape inference, folding and fusion see them) and removed again after; a body the
// passes cannot analyse (an input without a type) is left as it was, and the report says why.
void run_on_bodies(ir::Graph& g, const std::vector<const PassDef*>& defs, const PassOptions& options, nlohmann::json& report) {
  for (auto& n : g.nodes) {
    const size_t first = n->explicit_inputs();
    for (auto& [attr, a] : n->attrs) {
      auto* ref = std::get_if<ir::GraphRef>(&a);
      if (!ref || !*ref) continue;
      ir::Graph body = **ref;
      const size_t own_inputs = body.inputs.size();
      std::vector<std::string> added;
      for (size_t i = 0; i < n->captured.size(); ++i) {
        const std::string& name = n->captured[i];
        if (body.is_initializer(name) || std::find(body.inputs.begin(), body.inputs.end(), name) != body.inputs.end()) continue;
        body.inputs.push_back(name);
        added.push_back(name);
        const std::string& bound = n->inputs[first + i];
        if (const ir::TensorType* t = bound.empty() ? nullptr : g.type_of(bound)) body.types[name] = *t;
      }
      const size_t before = body.nodes.size();
      nlohmann::json entry = {{"owner", n->name}, {"attribute", attr}, {"nodes_before", before}};
      try {
        for (const PassDef* d : defs) {
          d->fn(body, options);
          if (options.verify) require_valid(body, n->where() + " " + attr + ": after pass '" + d->name + "'");
        }
        run_on_bodies(body, defs, options, report);
      } catch (const Error& e) {
        if (e.kind() == Error::Kind::Internal) throw;
        entry["skipped"] = e.what();
        report["bodies"].push_back(entry);
        continue;
      }
      body.inputs.resize(own_inputs);
      for (const std::string& name : added) body.types.erase(name);
      entry["nodes_after"] = body.nodes.size();
      report["bodies"].push_back(entry);
      *ref = std::make_shared<const ir::Graph>(std::move(body));
    }
  }
}

}  // namespace

const std::vector<PassDef>& all_passes() {
  static const std::vector<PassDef> table = {
      {"eliminate_identity", eliminate_identity, "remove Identity, inference-mode Dropout and Cast to the same dtype"},
      {"fold_constants", fold_constants,
       "evaluate nodes whose inputs are constants (incl. shapes of static tensors) into initializers"},
      {"fold_batch_norm", fold_batch_norm, "fold BatchNormalization into the preceding Conv, Gemm or MatMul"},
      {"fuse_conv", fuse_conv, "fuse a Conv's residual Add and Relu/LeakyRelu/Clip/Sigmoid/SiLU/HardSwish into a joule FusedConv"},
      {"fuse_layer_norm", fuse_layer_norm, "replace decomposed LayerNorm (ReduceMean/Sub/Pow/Sqrt/Div/Mul/Add) by LayerNormalization"},
      {"fuse_gelu", fuse_gelu, "replace the Erf-GELU subgraph by one Gelu node"},
      {"fuse_matmul", fuse_matmul,
       "fuse a MatMul's bias Add, residual Add and Relu/LeakyRelu/Clip/Gelu into a joule FusedMatMul"},
      {"fuse_pad", fuse_pad,
       "remove Pads of zero and fold constant-zero spatial Pads into the Conv or AveragePool (count_include_pad) they feed"},
      {"fuse_swish", fuse_swish, "replace x * Sigmoid(x) by one SiLU node and x * HardSigmoid(x, 1/6, 0.5) by one HardSwish node"},
      {"lower_int8", lower_int8,
       "run QDQ Conv/MatMul/Gemm as integer QConv/QMatMul (oneDNN int8), requantizing between them (not in default)"},
      {"channels_last", channels_last,
       "keep the activations between convs in N,H,W,C (no reorders; float convs then run on onednn); transposes only at the edges"},
      {"fuse_bn_relu", fuse_bn_relu,
       "give an N,H,W,C BatchNormalization the Relu that alone reads it (DenseNet's pre-activation BN + ReLU: one pass)"},
      {"fuse_quantize", fuse_quantize,
       "fold a float Add/Mul that only a per-tensor QuantizeLinear reads into it (one pass writes the codes)"},
      {"eliminate_dead_code", eliminate_dead_code, "remove nodes whose outputs are unused, and unused initializers"},
      {"infer_shapes", infer_shapes_pass, "analysis: infer every value's type and shape"},
      {"annotate_costs", annotate_costs_pass, "analysis: write shapes and MACs/FLOPs/bytes into node metadata"},
  };
  return table;
}

const PassDef* find_pass(const std::string& name) {
  for (auto& p : all_passes())
    if (name == p.name) return &p;
  return nullptr;
}

std::string pass_names() {
  std::string r;
  for (auto& p : all_passes()) r += (r.empty() ? "" : ", ") + std::string(p.name);
  return r;
}

std::vector<std::string> default_pipeline() {
  return {"eliminate_identity", "fold_constants", "fold_batch_norm", "fuse_pad", "fuse_swish", "fuse_conv", "fuse_layer_norm",
          "fuse_gelu", "fuse_matmul", "channels_last", "fuse_bn_relu", "fuse_quantize", "eliminate_dead_code"};
}

std::vector<std::string> int8_pipeline(std::vector<std::string> pipeline) {
  pipeline.insert(pipeline.begin(), "lower_int8");
  return pipeline;
}

std::vector<std::string> parse_pipeline(const std::string& spec) {
  if (spec == "none" || spec.empty()) return {};
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    std::string item = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item == "default") {
      for (auto& d : default_pipeline()) names.push_back(d);
    } else if (!item.empty() && item != "none") {
      if (!find_pass(item))
        fail("unknown pass '" + item + "'; valid passes: " + pass_names() + " (or 'default', 'none')");
      names.push_back(item);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

nlohmann::json run_pipeline(ir::Graph& g, const std::vector<std::string>& names, const PassOptions& options) {
  std::vector<const PassDef*> defs;
  for (auto& n : names) {
    const PassDef* d = find_pass(n);
    if (!d) fail("unknown pass '" + n + "'; valid passes: " + pass_names());
    defs.push_back(d);
  }
  nlohmann::json report = {{"passes", nlohmann::json::array()},
                           {"nodes_before", g.nodes.size()},
                           {"initializers_before", g.initializers.size()}};
  double total_ms = 0;
  for (const PassDef* d : defs) {
    const size_t before = g.nodes.size();
    auto t0 = std::chrono::steady_clock::now();
    PassResult r = d->fn(g, options);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    total_ms += ms;
    if (options.verify) require_valid(g, std::string("after pass '") + d->name + "'");
    report["passes"].push_back({{"pass", d->name},
                                {"changed", r.changed},
                                {"ms", ms},
                                {"nodes_before", before},
                                {"nodes_after", g.nodes.size()},
                                {"info", r.info}});
    if (options.after_pass) options.after_pass(d->name, g);
  }
  PassOptions body_options = options;
  body_options.after_pass = nullptr;
  report["bodies"] = nlohmann::json::array();
  run_on_bodies(g, defs, body_options, report);
  report["nodes_after"] = g.nodes.size();
  report["initializers_after"] = g.initializers.size();
  report["ms"] = total_ms;
  return report;
}

size_t replace_uses(ir::Graph& g, const std::string& from, const std::string& to) {
  size_t n = 0;
  for (auto& node : g.nodes)
    for (auto& in : node->inputs)
      if (in == from) in = to, ++n;
  return n;
}

}  // namespace joule::passes
