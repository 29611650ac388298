#pragma once
// The definition of an operator: attributes are read from the Node; this file's types are
// what each op file provides. One op = one file under ops/, registered in registry.cpp.
#include <string>
#include <vector>

#include "joule/core/tensor.h"
#include "joule/core/thread_pool.h"
#include "joule/ir/graph.h"

namespace joule::ops {

// Static shape/type inference for one node.
struct InferContext {
  const ir::Node& node;
  int64_t opset;
  std::vector<const ir::TensorType*> input_types;  // nullptr: absent optional input
  std::vector<const Tensor*> input_values;         // known constant value, or nullptr
  std::vector<ir::TensorType> output_types;        // to fill (sized to node.outputs)
  std::vector<Tensor> output_values;               // optional: constants the op can compute
                                                   // without running (e.g. Shape)

  size_t num_inputs() const { return input_types.size(); }
  bool has(size_t i) const { return i < input_types.size() && input_types[i] != nullptr; }
  const ir::TensorType& in(size_t i) const;   // throws BadInput when absent
  ir::TensorType& out(size_t i) { return output_types.at(i); }
};

struct KernelContext;

// Runs the graph-valued attributes of a control-flow node (If, Loop, Scan, SequenceMap): the
// session gives nodes with bodies one that runs each body on planned, fast kernels
// (runtime/bodies.h); without one the reference interpreter runs them (subgraph_util.h).
class BodyRunner {
 public:
  virtual ~BodyRunner() = default;
  // body's outputs with its graph inputs bound to `inputs` in order and the outer-scope values
  // it reads to the node's captured inputs (c.inputs past node.explicit_inputs()).
  virtual std::vector<Tensor> run(const KernelContext& c, const ir::Graph& body, const std::vector<Tensor>& inputs) const = 0;
};

// Execution of one node on concrete tensors (the reference kernel).
struct KernelContext {
  const ir::Node& node;
  int64_t opset;
  std::vector<const Tensor*> inputs;  // nullptr: absent optional input
  std::vector<Tensor> outputs;        // the kernel assigns every output it produces
  ThreadPool* pool = nullptr;         // never null when called by the runtime
  const BodyRunner* bodies = nullptr;  // control-flow nodes: how their bodies run (see BodyRunner)

  bool has(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  const Tensor& in(size_t i) const;   // throws BadInput when absent
  // Output i for the kernel to fill: the buffer the session's memory plan placed there when it
  // has this dtype and shape, otherwise a new tensor.
  Tensor& output(size_t i, DType dtype, const Shape& shape);
};

struct Cost {
  double macs = 0;   // multiply-accumulates (conv, gemm)
  double flops = 0;  // floating point operations (2*macs for conv/gemm, plus elementwise)
  double bytes = 0;  // bytes read + written (inputs + outputs), before any caching
};

// Shapes of a node's inputs/outputs for cost evaluation (empty Shape + !known for absent).
struct CostContext {
  const ir::Node& node;
  std::vector<Shape> in;
  std::vector<Shape> out;
  std::vector<DType> in_types;
  std::vector<DType> out_types;
};

struct OpDef {
  const char* type;       // ONNX op_type
  const char* domain;     // "" for ai.onnx
  int min_inputs;
  int max_inputs;         // -1: variadic
  void (*infer)(InferContext&);
  void (*run)(KernelContext&);
  // Optional: arithmetic cost. When null, flops = output elements, bytes = in + out.
  Cost (*cost)(const CostContext&) = nullptr;
  // Optional: "" when the node is supported, otherwise the reason (attribute value, ...).
  std::string (*check)(const ir::Node&, int64_t opset) = nullptr;
  // Output 0 may be a view of input 0's buffer (Reshape, Flatten, ...): the memory planner
  // then keeps that buffer alive as long as either value.
  bool view = false;
  // The op takes or gives values other than numeric tensors (sequences, optionals, string
  // tensors) and checks them itself; for every other op, shape inference refuses such values.
  bool any_value = false;
};

// Looks up an op; nullptr when joule has none.
const OpDef* find_op(const std::string& domain, const std::string& type);
// All registered ops (for `joule info --ops` and docs).
const std::vector<const OpDef*>& all_ops();

// The default cost (see OpDef::cost) and the cost through the op's own function.
Cost node_cost(const OpDef& def, const CostContext& c);

}  // namespace joule::ops
