#pragma once
// Algorithms: fast implementations of one op class ("conv", "gemm", "matmul"), in two
// phases (ncnn create_pipeline/forward): prepare() packs or transforms the constant weights
// once per session and returns a Kernel whose const run() computes the node. Each algorithm
// says whether it supports a node (a one-line reason when not) and estimates its time, which
// the `guess` policy ranks by. The op's reference kernel (ops/) is always the fallback and
// the oracle the tests compare against.
#include <memory>
#include <string>
#include <vector>

#include "joule/ir/graph.h"
#include "joule/ops/op.h"

namespace joule::kernels {

// A node with its static shapes and constant inputs, as the session sees it at plan time.
struct NodeView {
  const ir::Node& node;
  std::vector<const ir::TensorType*> in_types;  // nullptr: absent optional input
  std::vector<const ir::TensorType*> out_types;
  std::vector<const Tensor*> constants;         // nullptr where the input is not a constant
  int threads = 1;
  int64_t opset = 0;  // of the node's domain
  int device = -1;    // -1: the CPU; N: the node is placed on GPU N (CUDA algorithms only)

  bool has(size_t i) const { return i < in_types.size() && in_types[i] != nullptr; }
  // Static shape of input i; false when absent or not fully static.
  bool static_shape(size_t i, Shape* out) const;
  const Tensor* constant(size_t i) const { return i < constants.size() ? constants[i] : nullptr; }
};

// The view of node `n` of `g`: types from g.types, constants from its initializers.
NodeView view_of(const ir::Graph& g, const ir::Node& n, int threads);

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Computes the node: reads k.inputs, assigns k.outputs. Throws BadInput when the inputs do
  // not have the shapes the kernel was prepared for.
  virtual void run(ops::KernelContext& k) const = 0;
  // Optional: what actually runs (e.g. oneDNN's implementation name), for plans and profiles.
  virtual std::string detail() const { return ""; }
  // False when run() never reads input i: the kernel packed its own copy of that constant at
  // prepare time and keeps no pointer into it, so the session may release the original.
  virtual bool reads_input(size_t /*i*/) const { return true; }
  // The input whose buffer output 0 may take over (computed in place) when this node is its
  // last reader, or -1: the kernel reads each element of it before it writes the output element
  // at the same place, and nothing else of it afterwards.
  virtual int may_overwrite_input() const { return -1; }
};

struct Algorithm {
  const char* op_class;  // "conv", "gemm", "matmul"
  const char* name;      // "im2col_gemm", "onednn", ...
  const char* summary;   // one line for `joule info --algorithms`
  std::string (*supports)(const NodeView&);             // "" when supported, else the reason
  double (*estimate_ms)(const NodeView&);               // rough time, for `guess`
  std::unique_ptr<Kernel> (*prepare)(const NodeView&);  // only called when supported
  // Chosen when a rule names it, or by guess/auto only where no other algorithm supports the
  // node (rather than the reference kernel): e.g. the emulated int8 kernels.
  bool on_request_only = false;
  const char* device = "cpu";  // "cpu" or "cuda": the nodes it runs are placed there
  bool on_gpu() const { return device[0] == 'c' && device[1] == 'u'; }
};

// The op class of a node ("conv" for Conv and joule's FusedConv, ...), "" when no fast
// algorithm exists for its op.
std::string op_class_of(const ir::Node& n);
// The CPU's (or, gpu true, the CUDA backend's) algorithms for an op class, in registry order.
std::vector<const Algorithm*> algorithms_for(const std::string& op_class, bool gpu = false);
// Every algorithm of both devices.
const std::vector<const Algorithm*>& all_algorithms();
const Algorithm* find_algorithm(const std::string& op_class, const std::string& name);  // either device
const Algorithm* find_algorithm(const std::string& op_class, const std::string& name, bool gpu);

}  // namespace joule::kernels
