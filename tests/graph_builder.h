#pragma once
// Builds small graphs in tests without ONNX files.
#include "joule/ir/graph.h"

namespace joule::testing {

class GraphBuilder {
 public:
  GraphBuilder() { g.opsets[""] = 17; }
  GraphBuilder& input(const std::string& name, DType t, const Shape& s) {
    g.inputs.push_back(name);
    g.types[name] = ir::TensorType::of(t, s);
    return *this;
  }
  GraphBuilder& input_sym(const std::string& name, DType t, std::vector<ir::Dim> dims) {
    g.inputs.push_back(name);
    ir::TensorType tt;
    tt.dtype = t;
    tt.has_shape = true;
    tt.dims = std::move(dims);
    g.types[name] = tt;
    return *this;
  }
  GraphBuilder& init(const std::string& name, Tensor t) {
    g.types[name] = ir::TensorType::of(t.dtype(), t.shape());
    g.initializers[name] = std::move(t);
    return *this;
  }
  GraphBuilder& node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
                     std::map<std::string, ir::Attribute> attrs = {}, const std::string& name = "") {
    ir::Node n;
    n.op_type = op;
    n.name = name.empty() ? op + "_" + std::to_string(g.nodes.size()) : name;
    n.inputs = std::move(ins);
    n.outputs = std::move(outs);
    n.attrs = std::move(attrs);
    g.add_node(std::move(n));
    return *this;
  }
  GraphBuilder& output(const std::string& name) {
    g.outputs.push_back(name);
    return *this;
  }
  ir::Graph build() { return g; }

  ir::Graph g;
};

// Shape -> Gather -> Unsqueeze -> Concat -> Reshape of a [2,3,4,5] input "x" into value
// "flat" ([2,60]), as PyTorch exports flatten(x, 1). No outputs set.
inline GraphBuilder torch_flatten_graph() {
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 3, 4, 5})
      .init("idx0", Tensor::scalar<int64_t>(0))
      .init("axes", Tensor::from_vector<int64_t>({0}, {1}))
      .init("minus1", Tensor::from_vector<int64_t>({-1}, {1}))
      .node("Shape", {"x"}, {"s"})
      .node("Gather", {"s", "idx0"}, {"n"}, {{"axis", int64_t{0}}})
      .node("Unsqueeze", {"n", "axes"}, {"n1"})
      .node("Concat", {"n1", "minus1"}, {"shape"}, {{"axis", int64_t{0}}})
      .node("Reshape", {"x", "shape"}, {"flat"});
  return b;
}

inline Tensor iota_tensor(Shape s, float start = 0.f, float step = 1.f) {
  Tensor t(DType::Float32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + step * static_cast<float>(i);
  return t;
}

}  // namespace joule::testing
