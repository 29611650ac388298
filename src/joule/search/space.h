#pragma once
// A search space (YAML) and what it means on one model: a decision variable per quantizable
// layer (its precision) and per prunable channel group (its structured pruning ratio), and the
// configs one choice of every variable (a genome) stands for.
//
//   quant: examples/quant/w8a8.yaml   # the formats `int8` means (default: built-in W8A8)
//   precision: [fp32, bf16, int8, w4] # per layer: fp32, bf16 (oneDNN's bf16 kernels), int8 (the
//                                     # quant config's formats for the node) or a name in formats
//   formats:                          # extra choices: the roles of a quantization rule
//     w4: {weight: {format: int, bits: 4, symmetric: true, granularity: per_channel}}
//   layers: {type: Conv}              # optional: only these layers get a precision variable
//                                     # (the others keep the quant config's choice)
//   prune: [0, 0.25, 0.5]             # structured ratios per channel group (absent: no pruning)
//   prune_layers: {regex: "conv1/"}   # optional: only the groups whose first layer it matches
//                                     # (a group is named by its first layer, as in trials.csv)
//   criterion: l1                     # l1 | l2 | bn | random
//   finetune: {steps: 20, batch: 32, lr: 0.01, optimizer: sgd}  # pruned trials trained first
//                                     # (on the search's training data) before they are quantized
//   qat: {steps: 50, batch: 32, lr: 1e-4, optimizer: adam, method: lsq}  # a choice per trial:
//                                     # quantized trials calibrated only, or trained with QAT
//   constraints: {accuracy_drop: 0.5, latency_ms: 10, energy_mj: 5, size_mb: 4, min_accuracy: 80}
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "joule/ir/graph.h"
#include "joule/prune/prune.h"
#include "joule/quant/config.h"

namespace joule::search {

// The built-in base config: int8 per-channel symmetric weights, uint8 per-tensor activations
// (99.99th percentile), the classifier's input by entropy (examples/quant/w8a8.yaml).
extern const char* const kW8A8;

struct Constraints {
  std::optional<double> accuracy_drop;  // at most this below FP32 (top-1 points; labelled data only)
  std::optional<double> min_accuracy;   // at least this (top-1 %, or output SQNR dB without labels)
  std::optional<double> latency_ms, energy_mj, size_mb;  // at most
  bool empty() const { return !accuracy_drop && !min_accuracy && !latency_ms && !energy_mj && !size_mb; }
  nlohmann::json to_json() const;
};

struct SearchSpace {
  std::string source;                          // file name or "inline space"
  std::string text;                            // the YAML itself
  std::string quant;                           // the base quantization config's YAML (a file named is read)
  std::vector<std::string> precision{"fp32", "int8"};
  std::map<std::string, std::string> formats;  // name -> its roles as YAML (a rule's body)
  quant::NodeMatch layers;                     // empty: every layer the base config quantizes
  std::vector<double> prune;                   // empty: no pruning variables
  quant::NodeMatch prune_layers;               // empty: every channel group
  std::string criterion = "l1";
  struct Training {
    int64_t steps = 0, batch = 32;
    double lr = 0.01;
    std::string optimizer = "sgd";  // sgd (momentum 0.9) | adam | adamw
  };
  // Fine-tuning of each pruned trial before it is quantized and scored (steps 0: none).
  Training finetune;
  // Quantization-aware training as a choice (steps > 0: a variable "qat", off | on): a quantized
  // trial with qat on is trained by api::qat (its fake quantizers' gradients by `qat_method`)
  // instead of calibrated only.
  Training qat{0, 32, 1e-4, "adam"};
  std::string qat_method = "lsq";  // ste | lsq | pact | tqt
  Constraints constraints;

  // BadInput naming the line for unknown keys, unknown choices and bad values.
  static SearchSpace parse(const std::string& yaml, const std::string& source);
  static SearchSpace load(const std::string& path);  // a file, or YAML text (starts with '{' or has a newline)
};

struct Variable {
  enum Kind { Precision, Prune, Qat } kind = Precision;
  std::string name;                 // the layer, the group's first layer, or "qat"
  std::string op;                   // precision: the layer's op type
  std::vector<std::string> nodes;   // precision: the layer; prune: the group's layers (Conv, Gemm, MatMul)
  int64_t channels = 0;             // prune: output channels of the group
  size_t choices = 0;
};

// What one genome stands for.
struct Candidate {
  std::string quant_yaml;                     // "" when no layer is quantized
  prune::PruneOptions prune;                  // structured, node_ratio per conv (empty: none)
  std::vector<std::string> bf16_nodes;        // run on the bf16 kernels (algorithm rules)
  std::map<std::string, std::string> precision;  // layer -> choice (every precision variable)
  bool qat = false;                           // trained with QAT (only when quantized)
  bool pruned() const;
  bool quantized() const { return !quant_yaml.empty(); }
  // `--algo` rules: NODE=onednn_bf16 for each bf16 layer.
  std::vector<std::string> algo_rules() const;
  std::string prune_yaml() const;             // a config `joule prune --config` reproduces
  std::string algo_yaml() const;              // a file for `--algo-file` ("" without bf16 layers)
};

// The space resolved over a model. `prepared` is the model prepared for quantization
// (api::plan_model: BatchNorm folded), `choices` the base config's plan on it; `original` the
// model as loaded (pruning works there).
class Decisions {
 public:
  Decisions(const SearchSpace& space, const ir::Graph& original, const ir::Graph& prepared,
            const std::vector<quant::NodeChoice>& choices);
  const std::vector<Variable>& variables() const { return vars_; }
  const SearchSpace& space() const { return space_; }
  // Label of choice c of variable v ("int8", "0.25").
  std::string label(size_t v, size_t c) const;
  // BadInput for a genome of the wrong length or out of range.
  Candidate candidate(const std::vector<int>& x) const;
  // The genome with every layer at `precision` and nothing pruned (nullopt when `precision`
  // or ratio 0 is not a choice).
  std::optional<std::vector<int>> uniform(const std::string& precision) const;
  // Compact, stable: one character per variable ("0120|1002"; "|1" for qat on). Genomes that
  // stand for the same model have the same key (qat on without a quantized layer is qat off).
  std::string key(const std::vector<int>& x) const;
  // Weight bits of `node` at precision choice `label` (32 for fp32, 16 for bf16).
  int weight_bits(const std::string& node, const std::string& label) const;
  nlohmann::json to_json() const;  // variables with their choices

 private:
  SearchSpace space_;
  std::string base_yaml_;
  std::vector<Variable> vars_;
  size_t fixed_quantized_ = 0;  // layers the base config quantizes that have no precision variable
  std::map<std::string, std::map<std::string, int>> bits_;  // node -> label -> weight bits
};

// Bits per weight element of a format (None: 32).
int format_bits(const quant::Format& f);

}  // namespace joule::search
