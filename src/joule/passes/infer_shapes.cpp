#include "joule/passes/infer_shapes.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_set>

#include "joule/ops/op.h"
#include "joule/ops/random_util.h"

namespace joule::passes {

namespace {
constexpr int64_t kFoldLimit = 1 << 16;  // elements: evaluate constant nodes up to this size

// For an op that takes only numeric tensors (OpDef::any_value false): the first input (or
// output) that is a sequence, an optional or a string tensor, as the reason to refuse the node.
std::string odd_value(const ir::Node& n, const ops::OpDef& def, const std::vector<const ir::TensorType*>& inputs,
                      const char* what, const std::vector<ir::TensorType>* outputs = nullptr) {
  if (def.any_value) return "";
  auto reason = [&](const ir::TensorType& t, size_t i) -> std::string {
    if (!t.is_tensor()) return n.where() + ": " + what + " " + std::to_string(i) + " is a " + value_kind_name(t.kind) + "; this op takes tensors only";
    if (t.dtype == DType::String) return n.where() + ": string tensors are not supported by this op (" + what + " " + std::to_string(i) + ")";
    return "";
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i])
      if (std::string r = reason(*inputs[i], i); !r.empty()) return r;
  if (outputs)
    for (size_t i = 0; i < outputs->size(); ++i)
      if (std::string r = reason((*outputs)[i], i); !r.empty()) return r;
  return "";
}

bool small_constants(const std::vector<const Tensor*>& values) {
  int64_t total = 0;
  for (auto* v : values) {
    if (!v) continue;
    total += v->numel();
  }
  return total <= kFoldLimit;
}
}  // namespace

InferResult infer_shapes(ir::Graph& g, const std::map<std::string, Shape>& input_shapes) {
  InferResult r;
  // Keep only what is given: graph inputs (possibly overridden) and initializers.
  std::unordered_map<std::string, ir::TensorType> types;
  for (auto& in : g.inputs) {
    auto it = input_shapes.find(in);
    const ir::TensorType* declared = g.type_of(in);
    if (!declared) fail("graph input '" + in + "' has no type");
    if (it != input_shapes.end() && !declared->is_tensor())
      fail("input shape given for '" + in + "', which is a " + value_kind_name(declared->kind) + ", not a tensor");
    types[in] = it == input_shapes.end() ? *declared : ir::TensorType::of(declared->dtype, it->second);
  }
  for (auto& [name, t] : input_shapes)
    if (!types.count(name)) fail("input shape given for '" + name + "', which is not a graph input");
  for (auto& [name, t] : g.initializers) {
    types[name] = ir::TensorType::of(t.dtype(), t.shape());
    r.constants[name] = t;
  }
  // Declared output types from the file are kept as a fallback for values we cannot infer.
  std::unordered_map<std::string, ir::TensorType> declared_outputs;
  for (auto& o : g.outputs)
    if (auto* t = g.type_of(o)) declared_outputs[o] = *t;

  ThreadPool pool(1);
  // Outputs of nodes that could not be inferred (unsupported ops) and of everything after them:
  // left without a type, and never reported as values nothing produces.
  std::unordered_set<std::string> unknown;
  auto skip = [&](const ir::Node& n) {
    ++r.nodes_unknown;
    for (const std::string& o : n.outputs) unknown.insert(o);
  };
  for (size_t idx : g.topo_order()) {
    ir::Node& n = *g.nodes[idx];
    const ops::OpDef* def = ops::find_op(n.domain, n.op_type);
    // An op whose check refuses the node (input or output counts, attributes) is left to
    // check_support to report: its infer may rely on what the check ensures.
    if (!def || std::any_of(n.inputs.begin(), n.inputs.end(), [&](const std::string& in) { return unknown.count(in) != 0; }) ||
        (def->check && !def->check(n, g.opset(n.domain)).empty())) {
      skip(n);
      continue;
    }
    ops::InferContext c{n, g.opset(n.domain), {}, {}, {}, {}};
    bool all_const = true;
    for (auto& in : n.inputs) {
      if (in.empty()) {
        c.input_types.push_back(nullptr);
        c.input_values.push_back(nullptr);
        continue;
      }
      auto t = types.find(in);
      if (t == types.end())
        fail(n.where() + ": input '" + in + "' is not produced by any node, input or initializer");
      c.input_types.push_back(&t->second);
      auto v = r.constants.find(in);
      c.input_values.push_back(v == r.constants.end() ? nullptr : &v->second);
      if (v == r.constants.end()) all_const = false;
    }
    if (n.outputs.empty()) fail(n.where() + ": has no outputs");  // (every op writes output 0)
    c.output_types.resize(n.outputs.size());
    c.output_values.resize(n.outputs.size());
    const std::string odd = odd_value(n, *def, c.input_types, "input");
    if (!odd.empty()) fail_unsupported(odd);
    try {
      def->infer(c);
    } catch (const Error& e) {
      if (e.kind() != Error::Kind::Unsupported) throw;
      skip(n);
      continue;
    } catch (const std::out_of_range&) {
      // Ops check for the optional outputs a node may leave out; one writing past the node's
      // outputs met a node without a required one (InferContext::out).
      fail(n.where() + ": lists " + std::to_string(n.outputs.size()) + " output" + (n.outputs.size() == 1 ? "" : "s") +
           ", fewer than " + n.op_type + " requires");
    }
    if (std::string odd_out = odd_value(n, *def, {}, "output", &c.output_types); !odd_out.empty()) fail_unsupported(odd_out);
    // An output the op's inference left untouched is one the op does not produce (a node listing
    // more outputs than its op has): refused here rather than met as a missing output at run time.
    for (size_t i = 1; i < n.outputs.size() && !def->any_value; ++i) {
      const ir::TensorType& t = c.output_types[i];
      if (!n.outputs[i].empty() && t.is_tensor() && t.dtype == DType::Undefined && !t.has_shape)
        fail(n.where() + ": lists output " + std::to_string(i) + ", which " + n.op_type + " does not produce");
    }
    // Evaluate small constant nodes (shape arithmetic) with the reference kernel.
    if (all_const && small_constants(c.input_values) && !ops::is_random_op(n)) {
      ops::KernelContext k{n, c.opset, c.input_values, {}, &pool};
      k.outputs.resize(n.outputs.size());
      try {
        def->run(k);
        for (size_t i = 0; i < k.outputs.size(); ++i)
          if (k.outputs[i].defined() && k.outputs[i].is_tensor() && k.outputs[i].dtype() != DType::String &&
              k.outputs[i].numel() <= kFoldLimit)
            c.output_values[i] = k.outputs[i];
      } catch (const Error& e) {
        if (e.kind() == Error::Kind::Internal) throw;
        // Leave it to run time: a constant that fails here fails there with the same message.
      }
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const std::string& o = n.outputs[i];
      if (o.empty()) continue;
      if (c.output_values[i].defined()) {
        types[o] = ir::TensorType::of(c.output_values[i].dtype(), c.output_values[i].shape());
        r.constants[o] = c.output_values[i];
      } else {
        types[o] = c.output_types[i];
        auto d = declared_outputs.find(o);
        if (!types[o].has_shape && d != declared_outputs.end() && d->second.has_shape)
          types[o].dims = d->second.dims, types[o].has_shape = true;
      }
    }
  }
  for (auto& [k, t] : declared_outputs)
    if (!types.count(k)) types[k] = t;
  g.types = std::move(types);
  return r;
}

bool try_infer_shapes(ir::Graph& g) {
  try {
    infer_shapes(g);
    return true;
  } catch (const Error& e) {
    if (e.kind() == Error::Kind::Internal) throw;
    return false;
  }
}

}  // namespace joule::passes
