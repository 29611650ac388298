#pragma once
// Fresh, seeded initialisation of a model's weights by layer type (`--init random`): Kaiming
// normal for convolution weights (fan-in, gain sqrt 2), Glorot uniform for Gemm/MatMul weights,
// zero biases, and identity normalisations (BatchNorm scale 1, bias 0, running mean 0, var 1;
// LayerNorm scale 1, bias 0). Other initializers keep their values.
#include <cstdint>

#include "joule/ir/graph.h"

namespace joule::train {

// Returns how many initializers were reinitialised.
size_t initialize_weights(ir::Graph& g, uint64_t seed);

}  // namespace joule::train
