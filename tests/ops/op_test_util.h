#pragma once
// Runs one op on concrete tensors through its OpDef, checking that static inference
// agrees with what the kernel produced. For op unit tests.
#include <gtest/gtest.h>

#include <random>

#include "joule/ops/op.h"
#include "test_tensors.h"

namespace joule::testing {

// A node named after its first output, with these inputs, outputs and attributes (graph tests).
inline ir::Node node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                     std::map<std::string, ir::Attribute> attrs = {}) {
  ir::Node n;
  n.name = out[0];
  n.op_type = op;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attrs = std::move(attrs);
  return n;
}

inline ir::Node make_node(const std::string& op, size_t n_in, size_t n_out,
                          std::map<std::string, ir::Attribute> attrs = {}) {
  ir::Node n;
  n.name = "n0";
  n.op_type = op;
  for (size_t i = 0; i < n_in; ++i) n.inputs.push_back("x" + std::to_string(i));
  for (size_t i = 0; i < n_out; ++i) n.outputs.push_back("y" + std::to_string(i));
  n.attrs = std::move(attrs);
  return n;
}

// inputs[i] undefined (default Tensor) = absent optional input.
// `constant_inputs` false: inference sees types only (as for activations), true: values too.
inline std::vector<Tensor> run_op(const ir::Node& node, const std::vector<Tensor>& inputs,
                                  int64_t opset = 17, bool constant_inputs = false) {
  const ops::OpDef* def = ops::find_op(node.domain, node.op_type);
  if (!def) throw std::runtime_error("no op " + node.op_type);
  std::vector<ir::TensorType> types;
  types.reserve(inputs.size());
  for (auto& t : inputs) types.push_back(ir::TensorType::of_value(t));
  ops::InferContext ic{node, opset, {}, {}, {}, {}};
  for (size_t i = 0; i < inputs.size(); ++i) {
    ic.input_types.push_back(inputs[i].defined() ? &types[i] : nullptr);
    ic.input_values.push_back(inputs[i].defined() && constant_inputs ? &inputs[i] : nullptr);
  }
  ic.output_types.resize(node.outputs.size());
  ic.output_values.resize(node.outputs.size());
  def->infer(ic);

  ThreadPool pool(2);
  ops::KernelContext kc{node, opset, {}, {}, &pool};
  for (auto& t : inputs) kc.inputs.push_back(t.defined() ? &t : nullptr);
  kc.outputs.resize(node.outputs.size());
  def->run(kc);
  for (size_t i = 0; i < kc.outputs.size(); ++i) {
    const auto& got = kc.outputs[i];
    const auto& want = ic.output_types[i];
    EXPECT_EQ(want.dtype, got.dtype()) << node.op_type << " output " << i;
    EXPECT_EQ(want.kind, got.kind()) << node.op_type << " output " << i;
    if (want.has_shape && got.is_tensor()) {
      EXPECT_EQ(want.dims.size(), got.shape().size()) << node.op_type << " output " << i;
      for (size_t d = 0; d < want.dims.size() && d < got.shape().size(); ++d)
        if (want.dims[d].is_static()) {
          EXPECT_EQ(want.dims[d].value, got.shape()[d]) << node.op_type << " output " << i << " dim " << d;
        }
    }
  }
  return kc.outputs;
}


}  // namespace joule::testing
