#include "joule/ops/subgraph_util.h"

#include <unordered_map>

#include "joule/ops/sequence_util.h"
#include "joule/ops/util.h"

namespace joule::ops::subgraph {

std::vector<Tensor> run(const KernelContext& c, const ir::Graph& body, const std::vector<Tensor>& inputs) {
  if (c.bodies) return c.bodies->run(c, body, inputs);
  return interpret(c, body, inputs);
}

std::vector<Tensor> interpret(const KernelContext& c, const ir::Graph& body, const std::vector<Tensor>& inputs) {
  const ir::Node& owner = c.node;
  if (inputs.size() != body.inputs.size())
    fail(owner.where() + ": body '" + body.name + "' takes " + std::to_string(body.inputs.size()) + " inputs, given " +
         std::to_string(inputs.size()));
  std::unordered_map<std::string, Tensor> values;  // node-based: pointers into it stay valid
  const size_t first = owner.explicit_inputs();
  for (size_t i = 0; i < owner.captured.size(); ++i)
    if (c.has(first + i)) values[owner.captured[i]] = *c.inputs[first + i];
  for (auto& [name, t] : body.initializers) values[name] = t;
  for (size_t i = 0; i < inputs.size(); ++i) values[body.inputs[i]] = inputs[i];
  for (size_t idx : body.topo_order()) {
    const ir::Node& n = *body.nodes[idx];
    const OpDef* def = find_op(n.domain, n.op_type);
    if (!def) fail_unsupported(owner.where() + ": body node " + n.where() + ": no such op in joule");
    KernelContext k{n, body.opset(n.domain), {}, {}, c.pool};
    for (const std::string& in : n.inputs) {
      if (in.empty()) {
        k.inputs.push_back(nullptr);
        continue;
      }
      auto it = values.find(in);
      if (it == values.end()) fail(owner.where() + ": body node " + n.where() + " reads '" + in + "', which nothing defines");
      k.inputs.push_back(&it->second);
    }
    k.outputs.resize(n.outputs.size());
    def->run(k);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (!n.outputs[i].empty()) values[n.outputs[i]] = std::move(k.outputs[i]);
  }
  std::vector<Tensor> out;
  for (const std::string& o : body.outputs) {
    auto it = values.find(o);
    if (it == values.end()) fail(owner.where() + ": body output '" + o + "' is not produced");
    out.push_back(it->second);
  }
  return out;
}

ir::TensorType output_type(const ir::Graph& body, size_t i) {
  const ir::TensorType* t = i < body.outputs.size() ? body.type_of(body.outputs[i]) : nullptr;
  return t ? *t : ir::TensorType{};
}

Tensor take(const Tensor& x, int64_t axis, int64_t i) {
  Shape out = x.shape();
  out.erase(out.begin() + axis);
  return seq::slice_axis(x, axis, i, 1).reshaped(out);
}

Tensor stack(const std::vector<Tensor>& parts, int64_t axis, const Shape& empty_shape, DType empty_dtype) {
  if (parts.empty()) return Tensor(empty_dtype, empty_shape);
  for (const Tensor& p : parts)
    if (p.shape() != parts[0].shape() || p.dtype() != parts[0].dtype())
      fail("stacking " + p.describe() + " with " + parts[0].describe() + ": every iteration must give one shape");
  return seq::join(parts, axis, true, "stacking iterations");
}

}  // namespace joule::ops::subgraph
