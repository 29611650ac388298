#pragma once
// Pruning. Unstructured: the smallest weights (by magnitude, or at random) of Conv, Gemm and
// MatMul set to zero, per layer (local) or under one threshold across layers (global); the model
// keeps its shapes, so dense kernels run no faster. Structured: whole output channels of Conv
// layers and output features (weight rows) of Gemm and MatMul layers with constant weights
// removed, with the removal carried through the layers that read them (BatchNorm parameters,
// biases, activations and pooling, depthwise convolutions and their groups, the next layer's
// input channels or features, a classifier behind global pooling and Flatten), so the model is
// smaller and faster on dense kernels: a CNN's filters, an MLP's hidden units, a transformer
// block's MLP width. Layers whose outputs meet in residual Adds (and other elementwise ops) lose
// the same channels. Channels that reach anything else (a Concat, a reshape, attention heads,
// LayerNorm, a graph input or output) stay, and the report says why.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "joule/ir/graph.h"
#include "joule/quant/config.h"

namespace joule::prune {

struct PruneOptions {
  double ratio = 0.5;            // the share removed: of each layer's weights or output channels
  bool structured = false;
  std::string criterion = "l1";  // l1 | l2 | bn (|BatchNorm scale|; structured) | random
  std::string scope = "local";   // local | global (unstructured: one threshold for all layers)
  uint32_t seed = 0;             // criterion random
  std::vector<std::string> only; // prune only these nodes (by name); empty: every layer
  // Per-node ratios overriding `ratio` (a pruning config's rules; 0: left whole). Structured: a
  // residual group takes the smallest ratio of its convs.
  std::map<std::string, double> node_ratio;
  double ratio_of(const std::string& node) const;
  // Activation pruning (MASE's form): the share of each sample's input values of a Conv, Gemm or
  // MatMul zeroed at run time by a joule PruneActivation node (ops/prune_activation.cpp) put in
  // front of its data input; 0: none. Per node by a config's rules, as `ratio`.
  double activations = 0;
  std::map<std::string, double> node_activations;
  double activations_of(const std::string& node) const;
};

// A pruning config (YAML), in the quantization config's rule syntax:
//   default: {ratio: 0.3, structured: true, criterion: l1}   # scope, seed too
//   rules:
//     - match: {type: Conv}             # type, name, regex (see docs/quantization.md)
//       ratio: 0.5
//     - match: {regex: "layer4\\."}
//       skip: true                       # left whole
//     - match: {type: Gemm}
//       activations: 0.5                 # half of each sample's inputs zeroed at run time
// Later rules override earlier ones. BadInput naming the line for unknown keys and bad values.
struct PruneConfig {
  PruneOptions defaults;
  struct Rule {
    quant::NodeMatch match;
    std::optional<double> ratio, activations;
    bool skip = false;
    int line = 0;
  };
  std::vector<Rule> rules;
  std::string source;
  static PruneConfig parse(const std::string& yaml, const std::string& source);
  static PruneConfig load(const std::string& path);  // a file, or YAML text (starts with '{' or has a newline)
  // The options for `g`: the defaults with node_ratio filled by the rules (BadInput naming a rule
  // that matches no node).
  PruneOptions resolve(const ir::Graph& g) const;
};

struct LayerPruning {
  std::string node, op;
  int64_t before = 0, after = 0;  // structured: output channels (features); unstructured: nonzero weights
  std::string kept_because;       // structured: why the layer was left whole ("" pruned)
  int group = 1;                  // structured: layers whose channels are tied (residual adds) and pruned alike
};

struct PruneReport {
  PruneOptions options;
  std::vector<LayerPruning> layers;
  std::vector<std::pair<std::string, double>> activation_pruning;  // node, ratio (PruneActivation in front)
  int64_t params_before = 0, params_after = 0, nonzero_before = 0, nonzero_after = 0;
  double flops_before = 0, flops_after = 0;
  nlohmann::json to_json() const;
  std::string table() const;
};

// Prunes `g` in place (shapes are inferred again). BadInput for a bad ratio or criterion.
PruneReport prune_graph(ir::Graph& g, const PruneOptions& o);

// The channel spaces structured pruning can cut, one per set of layers (Conv, Gemm, MatMul)
// whose output channels are tied (a residual group is one), in graph order of their first
// layer. A space that must stay whole is left out. Searches choose one ratio per group.
struct ChannelGroup {
  std::vector<std::string> producers;  // graph order
  int64_t channels = 0;
};
std::vector<ChannelGroup> channel_groups(const ir::Graph& g);

}  // namespace joule::prune
