#include "joule/train/grad.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "joule/core/error.h"
#include "joule/ops/op.h"

namespace joule::train {

std::vector<std::string> GradBuilder::add(const std::string& op, const std::vector<std::string>& inputs,
                                          std::map<std::string, ir::Attribute> attrs, size_t outputs,
                                          const std::string& domain, const std::string& hint) {
  ir::Node n;
  n.op_type = op;
  n.domain = domain;
  n.name = g_.unique_name("grad/" + (hint.empty() ? op : hint));
  n.inputs = inputs;
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < outputs; ++i) {
    std::string v = g_.unique_name(n.name + (outputs > 1 ? ":" + std::to_string(i) : ""));
    g_.types[v] = ir::TensorType{};  // reserves the name
    n.outputs.push_back(v);
  }
  if (!domain.empty() && !g_.opsets.count(domain)) g_.opsets[domain] = 1;
  ir::Node& added = g_.add_node(std::move(n));
  infer(added);
  return added.outputs;
}

std::string GradBuilder::add1(const std::string& op, const std::vector<std::string>& inputs,
                              std::map<std::string, ir::Attribute> attrs, const std::string& domain,
                              const std::string& hint) {
  return add(op, inputs, std::move(attrs), 1, domain, hint)[0];
}

void GradBuilder::infer(ir::Node& n) {
  const ops::OpDef* def = ops::find_op(n.domain, n.op_type);
  if (!def) fail_internal("gradient graph: no op " + n.domain + "." + n.op_type);
  ops::InferContext c{n, g_.opset(n.domain), {}, {}, {}, {}};
  for (const std::string& v : n.inputs) {
    c.input_types.push_back(v.empty() ? nullptr : &type(v));
    c.input_values.push_back(v.empty() ? nullptr : constant_value(v));
  }
  c.output_types.resize(n.outputs.size());
  def->infer(c);
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty()) g_.types[n.outputs[i]] = c.output_types[i];
}

std::string GradBuilder::constant(const Tensor& t, const std::string& hint) {
  const std::string name = g_.unique_name("grad/" + hint);
  g_.initializers[name] = t;
  g_.types[name] = ir::TensorType::of(t.dtype(), t.shape());
  return name;
}

std::string GradBuilder::scalar(double v, DType dtype) { return constant(Tensor::scalar<double>(v).cast(dtype), "scalar"); }

std::string GradBuilder::ints(const std::vector<int64_t>& v) {
  return constant(Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}), "ints");
}

const ir::TensorType& GradBuilder::type(const std::string& value) const {
  const ir::TensorType* t = g_.type_of(value);
  if (!t || t->dtype == DType::Undefined) fail("gradient graph: the type of '" + value + "' is unknown");
  return *t;
}

Shape GradBuilder::shape(const std::string& value) const {
  const ir::TensorType& t = type(value);
  if (!t.is_static()) fail("gradient graph: '" + value + "' is " + t.str() + "; training needs static shapes");
  return t.static_shape();
}

const Tensor* GradBuilder::constant_value(const std::string& value) const {
  auto it = g_.initializers.find(value);
  return it == g_.initializers.end() ? nullptr : &it->second;
}

std::string GradBuilder::sum_to(const std::string& grad, const Shape& target) {
  const Shape gs = shape(grad);
  if (gs == target) return grad;
  if (gs.size() < target.size()) fail_internal("sum_to: " + shape_str(gs) + " is smaller than " + shape_str(target));
  const size_t lead = gs.size() - target.size();
  std::vector<int64_t> axes;
  for (size_t i = 0; i < gs.size(); ++i)
    if (i < lead || (target[i - lead] == 1 && gs[i] != 1)) axes.push_back(static_cast<int64_t>(i));
  std::string r = grad;
  if (!axes.empty()) {
    if (g_.opset("") >= 13)
      r = add1("ReduceSum", {grad, ints(axes)}, {{"keepdims", int64_t{0}}});
    else
      r = add1("ReduceSum", {grad}, {{"keepdims", int64_t{0}}, {"axes", axes}});
  }
  return shape(r) == target ? r : reshape(r, target);
}

std::string GradBuilder::reshape(const std::string& v, const Shape& to) {
  if (shape(v) == to) return v;
  return add1("Reshape", {v, ints(to)});
}

std::string GradBuilder::transpose(const std::string& v, const std::vector<int64_t>& perm) {
  return add1("Transpose", {v}, {{"perm", perm}});
}

std::string GradBuilder::sum(const std::vector<std::string>& parts) {
  if (parts.empty()) fail_internal("gradient graph: sum of nothing");
  return parts.size() == 1 ? parts[0] : add1("Sum", parts, {}, "", "accumulate");
}

std::string GradBuilder::zeros(const Shape& s, DType dtype) { return constant(Tensor(dtype, s), "zeros"); }

std::string GradContext::dy_or_zeros(size_t i) {
  if (!dy[i].empty()) return dy[i];
  return b.zeros(b.shape(out(i)), b.dtype(out(i)));
}

const GradDef* find_grad(const std::string& domain, const std::string& op_type) {
  for (const auto* table : {&nn_grads(), &elementwise_grads(), &tensor_grads(), &quant_grads()})
    for (const GradDef& d : *table)
      if (domain == d.domain && op_type == d.op_type) return &d;
  return nullptr;
}

std::map<std::string, std::string> build_backward(ir::Graph& g, const std::string& loss,
                                                  const std::vector<std::string>& wrt) {
  GradBuilder b(g);
  const std::vector<size_t> order = g.topo_order();
  // Values gradients flow through: floating values computed from `wrt`.
  std::set<std::string> req(wrt.begin(), wrt.end());
  for (size_t idx : order) {
    const ir::Node& n = *g.nodes[idx];
    if (std::none_of(n.inputs.begin(), n.inputs.end(), [&](const std::string& v) { return req.count(v) > 0; }))
      continue;
    for (const std::string& o : n.outputs)
      if (const ir::TensorType* t = g.type_of(o); !o.empty() && t && is_floating(t->dtype)) req.insert(o);
  }
  std::map<std::string, std::vector<std::string>> partial;
  partial[loss] = {b.constant(Tensor::scalar<double>(1.0).cast(b.dtype(loss)).reshaped(b.shape(loss)), "dloss")};
  std::map<std::string, std::vector<std::string>> missing;  // op -> nodes
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    ir::Node& n = *g.nodes[*it];
    GradContext c{b, n, std::vector<std::string>(n.outputs.size()), std::vector<bool>(n.inputs.size(), false),
                  std::vector<std::string>(n.inputs.size())};
    bool flows = false, wanted = false;
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (auto p = partial.find(n.outputs[i]); p != partial.end()) {
        c.dy[i] = b.sum(p->second);
        flows = true;
      }
    for (size_t i = 0; i < n.inputs.size(); ++i) wanted |= (c.need[i] = !n.inputs[i].empty() && req.count(n.inputs[i]) > 0);
    if (!flows || !wanted) continue;
    const GradDef* def = find_grad(n.domain, n.op_type);
    if (def) {
      def->rule(c);
    } else {  // noted; zeros flow on so that the ops further up are checked too
      missing[(n.domain.empty() ? "" : n.domain + ".") + n.op_type].push_back(n.name);
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (c.need[i]) c.dx[i] = b.zeros(b.shape(n.inputs[i]), b.dtype(n.inputs[i]));
    }
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (c.need[i] && !c.dx[i].empty()) partial[n.inputs[i]].push_back(c.dx[i]);
  }
  if (!missing.empty()) {
    std::string list;
    for (auto& [op, nodes] : missing)
      list += fmt::format("{}{} ({} node{}: {}{})", list.empty() ? "" : ", ", op, nodes.size(), nodes.size() == 1 ? "" : "s",
                          nodes.front(), nodes.size() > 1 ? ", ..." : "");
    fail_unsupported("training: no gradient rule for " + list);
  }
  std::map<std::string, std::string> r;
  for (const std::string& w : wrt) {
    auto p = partial.find(w);
    r[w] = p == partial.end() ? "" : b.sum(p->second);
  }
  return r;
}

}  // namespace joule::train
