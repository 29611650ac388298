#pragma once
// The pass manager. A pass is a function over the IR, `PassResult fn(Graph&, const PassOptions&)`
// (MASE's `pass(graph, args) -> (graph, info)`): one pass per file, named by its effect.
// A pipeline is data, a list of pass names; timing, verification after each pass and
// before/after hooks are done here, around every pass, not inside them.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "joule/ir/graph.h"

namespace joule::passes {

struct PassOptions {
#ifdef NDEBUG
  bool verify = false;  // run verify() after each pass (throws naming the pass); on in tests/debug
#else
  bool verify = true;
#endif
  // fold_constants: a new constant is created when it has at most `fold_small_elements`
  // elements, or at most `fold_max_growth` times the elements of its constant inputs (so that
  // a big Expand/Tile/ConstantOfShape of a small constant is left to run time).
  int64_t fold_small_elements = 4096;
  double fold_max_growth = 4.0;
  // channels_last: the float32 convs of the graph to move to N,H,W,C (only the onednn algorithm
  // computes that layout; the CLI asks kernels::AlgoSpec::wants_channels_last); empty: every
  // one. QConv nodes are always moved.
  std::function<bool(const ir::Graph&, const ir::Node&)> channels_last_conv;
  // Called after each pass (before/after dumps); may be empty.
  std::function<void(const std::string& pass, const ir::Graph&)> after_pass;
};

struct PassResult {
  bool changed = false;
  nlohmann::json info = nlohmann::json::object();  // counts and details, per pass
};

using PassFn = PassResult (*)(ir::Graph&, const PassOptions&);

struct PassDef {
  const char* name;
  PassFn fn;
  const char* description;
};

// Every pass, in a fixed table (no static registration).
const std::vector<PassDef>& all_passes();
const PassDef* find_pass(const std::string& name);  // nullptr when unknown
std::string pass_names();                           // "a, b, c" for messages

// The pipeline `joule run` applies by default.
std::vector<std::string> default_pipeline();
// What `--int8 real` runs: lower_int8 first (before fold_constants would fold the weights'
// DequantizeLinear into float), then the pipeline (the default one ends with channels_last,
// which keeps the integer convs' activations N,H,W,C).
std::vector<std::string> int8_pipeline(std::vector<std::string> pipeline);
// "none" -> {}, "default" -> default_pipeline(), otherwise comma-separated names (which may
// include "default"). Throws BadInput naming the valid passes when a name is unknown.
std::vector<std::string> parse_pipeline(const std::string& spec);

// Runs the passes in order. Returns {"passes": [{"pass", "changed", "ms", "nodes_before",
// "nodes_after", "info"}...], "nodes_before", "nodes_after", "initializers_before",
// "initializers_after", "ms", "bodies": [{"owner", "attribute", "nodes_before", "nodes_after" |
// "skipped"}...]}. The passes then run on every control-flow body too (If/Loop/Scan, at any
// depth), each body with the outer-scope values it reads typed as in the graph. Throws BadInput
// for an unknown name (before running any).
nlohmann::json run_pipeline(ir::Graph& g, const std::vector<std::string>& names, const PassOptions& options = {});

// Transform passes (one file each).
PassResult eliminate_identity(ir::Graph& g, const PassOptions& o);   // Identity, inference Dropout
PassResult fold_constants(ir::Graph& g, const PassOptions& o);       // constant nodes -> initializers
PassResult eliminate_dead_code(ir::Graph& g, const PassOptions& o);  // unused nodes and initializers
PassResult lower_int8(ir::Graph& g, const PassOptions& o);           // QDQ -> integer ops
PassResult channels_last(ir::Graph& g, const PassOptions& o);        // NHWC between convs
PassResult fold_batch_norm(ir::Graph& g, const PassOptions& o);      // BN into Conv / Gemm / MatMul
PassResult fuse_conv(ir::Graph& g, const PassOptions& o);            // Conv [+Add] [+act] -> FusedConv
PassResult fuse_matmul(ir::Graph& g, const PassOptions& o);          // MatMul [+bias] [+Add] [+act] -> FusedMatMul
PassResult fuse_layer_norm(ir::Graph& g, const PassOptions& o);      // decomposed LayerNorm -> one node
PassResult fuse_gelu(ir::Graph& g, const PassOptions& o);            // Erf-GELU subgraph -> Gelu
PassResult fuse_pad(ir::Graph& g, const PassOptions& o);             // zero Pads removed or folded into Conv/AveragePool
PassResult fuse_quantize(ir::Graph& g, const PassOptions& o);  // Q(x + B), Q(x * B) -> joule QuantizeLinear with B
PassResult fuse_bn_relu(ir::Graph& g, const PassOptions& o);   // N,H,W,C BatchNormalization + Relu -> one node
PassResult fuse_swish(ir::Graph& g, const PassOptions& o);  // x * Sigmoid(x) -> SiLU, x * HardSigmoid(x) -> HardSwish

// Replaces every use of value `from` as a node input by `to` (graph outputs untouched).
size_t replace_uses(ir::Graph& g, const std::string& from, const std::string& to);

}  // namespace joule::passes
