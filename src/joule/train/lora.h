#pragma once
// LoRA (low-rank adaptation): next to each chosen MatMul / Gemm / Conv with a constant weight
// W, a trainable low-rank path y += scale * (x A) B (convolutions: a Conv of r output channels
// with W's geometry, then a 1x1 Conv back to W's outputs); A starts random, B at zero, so the
// adapted model computes exactly what the model did. Only A and B train; merging folds
// scale * A B into W and removes the paths, giving the model's own graph with new weights.
#include <cstdint>
#include <string>
#include <vector>

#include "joule/ir/graph.h"

namespace joule::train {

struct LoraOptions {
  int64_t rank = 4;
  double alpha = 0;                                        // scale = alpha / rank (0: alpha = rank, scale 1)
  std::vector<std::string> types{"MatMul", "Gemm", "Conv"};  // op types adapted
  std::string target;                                      // regex searched in node names ("": every node of those types)
  uint64_t seed = 0;                                       // A's initial values
};

struct LoraAdapter {
  std::string node;      // the adapted node
  std::string weight;    // its weight initializer
  std::string a, b;      // the adapter initializers
  std::string kind;      // MatMul, Gemm (transB as `trans_b`), Conv
  bool trans_b = false;
  double scale = 1;
};

struct LoraGraph {
  ir::Graph graph;                    // the model with the low-rank paths
  std::vector<LoraAdapter> adapters;
  std::vector<std::string> trainable() const;  // every A and B
};

// BadInput when no node matches, or a rank that is not positive.
LoraGraph add_lora(const ir::Graph& g, const LoraOptions& o);

// The original model `g` with every adapter of `trained` (whose A and B initializers carry the
// trained values) merged into its weight.
ir::Graph merge_lora(const ir::Graph& g, const LoraGraph& trained);

}  // namespace joule::train
