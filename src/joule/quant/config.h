#pragma once
// The quantization config (YAML): which nodes are quantized, and for each tensor role (input,
// weight, bias, output) the number format and the calibrator. A `default` entry, then rules
// matched by op `type`, node `name` or `regex` (searched in the name); later rules override
// earlier ones field by field. See docs/quantization.md for the schema and examples.
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "joule/ir/graph.h"
#include "joule/quant/calibrator.h"
#include "joule/quant/format.h"

namespace YAML {
class Node;
}

namespace joule::quant {

enum class Role { Input, Weight, Bias, Output };
const char* role_name(Role r);
constexpr Role kRoles[] = {Role::Input, Role::Weight, Role::Bias, Role::Output};

// What one role of one node gets.
struct TensorSpec {
  Format format;       // kind None: left in float32
  CalibOptions calib;  // how the clipping range is chosen (formats that need one)
  bool axis_set = false;      // the config named a channel axis (otherwise the op's own)
  bool derived_bias = false;  // bias as int32 with scale = input scale x weight scale (ONNX QDQ)
  std::string describe() const;  // "int8 asymmetric per-tensor, percentile(99.99)"
  nlohmann::json to_json() const;
};

// A role as written in YAML: only the fields the text sets (merged over what came before).
struct RoleText {
  std::vector<std::pair<std::string, std::string>> fields;  // key, scalar value, in order
  int line = 0;
};

// A rule's `match`: op `type` (Conv also matches joule's FusedConv), exact node `name`, `regex`
// searched in the node name, `feeds`: op types (comma-separated) of which one reads the node's
// output (given a graph); every field given must match. Shared by the quantization and the
// pruning configs.
struct NodeMatch {
  std::string type, name, regex, feeds;  // empty: not part of the match
  std::regex re;
  bool empty() const { return type.empty() && name.empty() && regex.empty() && feeds.empty(); }
  // `g`: the node's graph, for `feeds` (which matches nothing without one).
  bool matches(const ir::Node& n, const ir::Graph* g = nullptr) const;
  std::string describe() const;  // "type=Gemm,regex=layer4"
  // Sets a field from `key: value` of a match map; BadInput (prefixed `where`) for an unknown
  // key or an invalid regex.
  void set(const std::string& key, const std::string& value, const std::string& where);
  // Every field of a YAML `match` map (BadInput prefixed `where` when it is not a map).
  void read(const YAML::Node& match, const std::string& where);
};

struct Rule : NodeMatch {
  bool skip = false;               // leave matched nodes in float32
  std::optional<RoleText> roles[4];  // by Role
  int line = 0;
  std::string describe() const;     // "rule 2 (line 9: type=Gemm)"
};

struct QuantConfig {
  std::string source;  // file name, for messages
  // Quantized by default. LSTM/GRU/RNN: weights only (W and R; the state stays float).
  std::vector<std::string> ops{"Conv", "ConvTranspose", "Gemm", "MatMul", "LSTM", "GRU", "RNN"};
  std::optional<RoleText> defaults[4];
  std::vector<Rule> rules;

  static QuantConfig load(const std::string& path);
  static QuantConfig parse(const std::string& yaml, const std::string& source);
};

// One node's resolved choice.
struct NodeChoice {
  size_t node = 0;                      // index in graph.nodes
  std::optional<TensorSpec> roles[4];   // absent: role not quantized
  std::vector<int> rules;               // indices of the rules that matched, in order
  nlohmann::json to_json() const;
};

// Recurrent layers (LSTM, GRU, RNN) are quantized weights-only: W and R, never their input,
// state or bias.
bool weights_only(const ir::Node& n);

// Resolves the config over a graph: every node whose type is in `ops` or that a (non-skip)
// rule matches. Throws BadInput naming the rule for a rule that matches no node, and naming the
// field for an invalid value (unknown format, bad bit width, ...).
std::vector<NodeChoice> resolve(const ir::Graph& g, const QuantConfig& c);

}  // namespace joule::quant
