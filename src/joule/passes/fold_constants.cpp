// Constant folding: a node whose outputs are known without running the model becomes
// initializers. Known means: every input is an initializer (or was folded before), so the
// reference kernel computes the outputs here; or shape inference computed them (Shape and
// Size of a tensor with a static shape). This removes the Shape -> Gather -> Concat chains
// that exporters write for static shapes, leaving Reshape with a constant shape initializer.
// New constants are limited in size (PassOptions::fold_small_elements / fold_max_growth), and
// random ops are never folded.
#include <algorithm>
#include <unordered_set>

#include "joule/ops/op.h"
#include "joule/ops/random_util.h"
#include "joule/passes/infer_shapes.h"
#include "joule/passes/pass.h"

namespace joule::passes {

namespace {

bool never_fold(const ir::Node& n) {
  // joule's own ops are deterministic (a FakeQuant of a weight folds into the weight); other
  // domains are not joule's to evaluate.
  return (!n.domain.empty() && n.domain != "joule") || ops::is_random_op(n);
}

}  // namespace

PassResult fold_constants(ir::Graph& g, const PassOptions& o) {
  PassResult r;
  // Types and the constants inference knows (shapes of static tensors, small constant nodes).
  // A graph that inference rejects is left alone: the Session reports it with its own message.
  InferResult inferred;
  try {
    inferred = infer_shapes(g);
  } catch (const Error& e) {
    if (e.kind() == Error::Kind::Internal) throw;
    r.info = {{"skipped", std::string("shape inference failed: ") + e.what()}};
    return r;
  }
  std::unordered_set<std::string> graph_outputs(g.outputs.begin(), g.outputs.end());
  std::unordered_set<const ir::Node*> folded;
  std::map<std::string, int> folded_ops;
  int skipped_size = 0, skipped_error = 0;
  int64_t new_elements = 0;
  ThreadPool pool(1);
  for (size_t idx : g.topo_order()) {
    ir::Node& n = *g.nodes[idx];
    if (never_fold(n)) continue;
    const ops::OpDef* def = ops::find_op(n.domain, n.op_type);
    if (!def) continue;
    bool has_output = false, output_is_graph_output = false;
    for (auto& out : n.outputs) {
      if (out.empty()) continue;
      has_output = true;
      if (graph_outputs.count(out)) output_is_graph_output = true;
    }
    // A graph output stays produced by a node (the Session reads outputs from nodes).
    if (!has_output || output_is_graph_output) continue;

    int64_t in_elements = 0;
    bool inputs_const = true;
    std::vector<const Tensor*> in_values;
    for (auto& in : n.inputs) {
      if (in.empty()) {
        in_values.push_back(nullptr);
        continue;
      }
      auto it = g.initializers.find(in);
      if (it == g.initializers.end()) {
        inputs_const = false;
        in_values.push_back(nullptr);
        continue;
      }
      in_values.push_back(&it->second);
      in_elements += it->second.numel();
    }
    std::vector<Tensor> values(n.outputs.size());
    bool known = true;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i].empty()) continue;
      auto c = inferred.constants.find(n.outputs[i]);
      if (c == inferred.constants.end()) {
        known = false;
        break;
      }
      values[i] = c->second;
    }
    if (!known) {
      if (!inputs_const) continue;
      ops::KernelContext k{n, g.opset(n.domain), in_values, {}, &pool};
      k.outputs.resize(n.outputs.size());
      try {
        def->run(k);
      } catch (const Error& e) {
        if (e.kind() == Error::Kind::Internal) throw;
        ++skipped_error;  // fails at run time with the same message
        continue;
      }
      values = std::move(k.outputs);
    }
    // Size limit: Constant nodes only move into initializers; anything else may not grow the model much.
    int64_t out_elements = 0;
    bool complete = true;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i].empty()) continue;
      // Sequences, optionals and strings stay computed at run time (initializers are tensors of numbers).
      if (!values[i].defined() || !values[i].is_tensor() || values[i].dtype() == DType::String) complete = false;
      else out_elements += values[i].numel();
    }
    if (!complete) continue;
    if (n.op_type != "Constant" && out_elements > o.fold_small_elements &&
        static_cast<double>(out_elements) > o.fold_max_growth * static_cast<double>(in_elements)) {
      ++skipped_size;
      continue;
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i].empty()) continue;
      // Own the data: kernels may return views of their inputs.
      g.initializers[n.outputs[i]] = values[i].clone();
      g.types[n.outputs[i]] = ir::TensorType::of(values[i].dtype(), values[i].shape());
    }
    new_elements += out_elements;
    folded.insert(&n);
    ++folded_ops[n.op_type];
  }
  if (!folded.empty()) {
    std::erase_if(g.nodes, [&](const std::unique_ptr<ir::Node>& n) { return folded.count(n.get()) != 0; });
    r.changed = true;
  }
  r.info = {{"folded", folded.size()},
            {"folded_ops", folded_ops},
            {"new_constant_elements", new_elements},
            {"skipped_size_limit", skipped_size},
            {"skipped_kernel_error", skipped_error}};
  return r;
}

}  // namespace joule::passes
