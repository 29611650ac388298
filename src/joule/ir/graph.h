#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "joule/core/tensor.h"
#include "joule/ir/attribute.h"

namespace joule::ir {

// Per-node metadata in namespaces, as in MASE: meta["common"] (shapes, op class),
// meta["software"] (calibration, precision, algorithm), meta["hardware"] (latency, energy).
using Metadata = nlohmann::json;

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;                  // "" = ai.onnx
  std::vector<std::string> inputs;     // value names; "" marks an absent optional input
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attrs;
  // Outer-scope values a graph attribute (If/Loop/Scan body, at any depth) reads, as the body
  // names them: the last captured.size() entries of `inputs` are the values bound to them here
  // (implicit inputs, kept in `inputs` so ordering, liveness and renames see them; the ONNX
  // writer leaves them out).
  std::vector<std::string> captured;
  Metadata meta = {{"common", Metadata::object()}, {"software", Metadata::object()}, {"hardware", Metadata::object()}};

  bool has_attr(const std::string& k) const { return attrs.count(k) != 0; }
  int64_t attr_int(const std::string& k, int64_t def) const;
  float attr_float(const std::string& k, float def) const;
  std::string attr_string(const std::string& k, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& k, const std::vector<int64_t>& def = {}) const;
  std::vector<float> attr_floats(const std::string& k, const std::vector<float>& def = {}) const;
  std::vector<std::string> attr_strings(const std::string& k) const;  // empty when absent
  const Tensor* attr_tensor(const std::string& k) const;  // nullptr when absent
  const Graph& attr_graph(const std::string& k) const;    // throws BadInput when absent
  size_t explicit_inputs() const { return inputs.size() - captured.size(); }
  // Number of inputs actually given (trailing absent optional inputs not counted).
  size_t input_count() const;
  bool has_input(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
  std::string where() const;  // "node 'conv1' (Conv)" for error messages
};

// A dataflow graph in the ONNX style: values are identified by name.
class Graph {
 public:
  std::string name;
  std::vector<std::string> inputs;    // graph inputs that are not initializers
  std::vector<std::string> outputs;
  std::vector<std::unique_ptr<Node>> nodes;
  std::map<std::string, Tensor> initializers;           // weights, by value name
  std::unordered_map<std::string, TensorType> types;    // known types of values
  std::map<std::string, int64_t> opsets;                // domain -> version ("" = ai.onnx)
  std::map<std::string, std::string> model_props;       // producer, doc, ...

  Graph() = default;
  Graph(const Graph& other);
  Graph& operator=(const Graph& other);
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  Node& add_node(Node n);
  int64_t opset(const std::string& domain = "") const;
  const TensorType* type_of(const std::string& value) const;
  bool is_initializer(const std::string& v) const { return initializers.count(v) != 0; }

  // value name -> index of producing node (graph inputs/initializers absent)
  std::unordered_map<std::string, size_t> producers() const;
  // value name -> indices of consuming nodes (graph outputs not counted)
  std::unordered_map<std::string, std::vector<size_t>> consumers() const;
  // Node indices in a topological order; throws BadInput naming a node on a cycle.
  std::vector<size_t> topo_order() const;
  // Reorders `nodes` topologically.
  void sort_topologically();
  // Removes nodes whose outputs nothing uses (transitively); returns how many.
  size_t remove_dead_nodes();
  // A fresh value or node name with the given prefix.
  std::string unique_name(const std::string& prefix) const;

  int64_t parameter_count() const;  // elements in initializers
};

}  // namespace joule::ir
