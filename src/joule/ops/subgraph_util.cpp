#include "joule/ops/subgraph_util.h"

#include <cstring>
#include <unordered_map>

#include "joule/ops/util.h"

namespace joule::ops::subgraph {

std::vector<Tensor> run(const KernelContext& c, const ir::Graph& body, const std::vector<Tensor>& inputs) {
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

namespace {
// Elements before the axis, the axis, and the bytes after it.
struct Split {
  int64_t outer = 1, n = 1, inner_bytes = 1;
};
Split split(const Shape& s, int64_t axis, size_t elem) {
  Split r;
  for (int64_t d = 0; d < axis; ++d) r.outer *= s[static_cast<size_t>(d)];
  r.n = s[static_cast<size_t>(axis)];
  r.inner_bytes = static_cast<int64_t>(elem);
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) r.inner_bytes *= s[d];
  return r;
}
}  // namespace

Tensor take(const Tensor& x, int64_t axis, int64_t i) {
  const Split p = split(x.shape(), axis, dtype_size(x.dtype()));
  Shape out = x.shape();
  out.erase(out.begin() + axis);
  Tensor r(x.dtype(), out);
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(r.raw());
  for (int64_t o = 0; o < p.outer; ++o)
    std::memcpy(dst + o * p.inner_bytes, src + (o * p.n + i) * p.inner_bytes, static_cast<size_t>(p.inner_bytes));
  return r;
}

Tensor stack(const std::vector<Tensor>& parts, int64_t axis, const Shape& empty_shape, DType empty_dtype) {
  if (parts.empty()) return Tensor(empty_dtype, empty_shape);
  Shape out = parts[0].shape();
  out.insert(out.begin() + axis, static_cast<int64_t>(parts.size()));
  Tensor r(parts[0].dtype(), out);
  const Split p = split(out, axis, dtype_size(r.dtype()));
  auto* dst = static_cast<std::byte*>(r.raw());
  for (size_t j = 0; j < parts.size(); ++j) {
    if (parts[j].shape() != parts[0].shape() || parts[j].dtype() != parts[0].dtype())
      fail("stacking " + parts[j].describe() + " with " + parts[0].describe() + ": every iteration must give one shape");
    const auto* src = static_cast<const std::byte*>(parts[j].raw());
    for (int64_t o = 0; o < p.outer; ++o)
      std::memcpy(dst + (o * p.n + static_cast<int64_t>(j)) * p.inner_bytes, src + o * p.inner_bytes, static_cast<size_t>(p.inner_bytes));
  }
  return r;
}

}  // namespace joule::ops::subgraph
