#include "joule/train/expand_gradient.h"

#include <algorithm>

#include "joule/core/error.h"
#include "joule/passes/infer_shapes.h"
#include "joule/train/grad.h"

namespace joule::train {

namespace {
constexpr const char* kDomain = "ai.onnx.preview.training";

bool is_gradient(const ir::Node& n) { return n.op_type == "Gradient" && n.domain == kDomain; }
}  // namespace

size_t expand_gradient_nodes(ir::Graph& g) {
  if (std::none_of(g.nodes.begin(), g.nodes.end(), [](const auto& n) { return is_gradient(*n); })) return 0;
  passes::infer_shapes(g);
  size_t expanded = 0;
  for (size_t i = 0; i < g.nodes.size();) {
    if (!is_gradient(*g.nodes[i])) {
      ++i;
      continue;
    }
    const ir::Node request = *g.nodes[i];
    g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(i));
    const std::vector<std::string> xs = request.attr_strings("xs");
    const std::string y = request.attr_string("y", "");
    if (!g.type_of(y)) fail(request.where() + ": y '" + y + "' is not a value of the graph");
    for (const std::string& x : xs)
      if (!g.type_of(x) || !is_floating(g.type_of(x)->dtype))
        fail(request.where() + ": '" + x + "' in xs is not a floating-point value of the graph");
    GradBuilder b(g);
    // The gradient of a tensor y is that of the sum of its elements.
    const std::string loss = b.shape(y).empty() ? y : b.add1("ReduceSum", {y}, {{"keepdims", ir::Attribute{int64_t{0}}}}, "", y + "_sum");
    const std::map<std::string, std::string> grads = build_backward(g, loss, xs);
    for (size_t k = 0; k < xs.size() && k < request.outputs.size(); ++k) {
      if (request.outputs[k].empty()) continue;
      const std::string& dx = grads.at(xs[k]);
      const std::string src = dx.empty() ? b.zeros(b.shape(xs[k]), b.dtype(xs[k])) : dx;
      ir::Node id;
      id.name = g.unique_name(request.name.empty() ? "gradient" : request.name);
      id.op_type = "Identity";
      id.inputs = {src};
      id.outputs = {request.outputs[k]};
      g.add_node(std::move(id));
    }
    ++expanded;
  }
  g.sort_topologically();
  g.remove_dead_nodes();  // the sums only seeded the backward graphs
  passes::infer_shapes(g);
  return expanded;
}

}  // namespace joule::train
