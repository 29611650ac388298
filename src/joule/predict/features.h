#pragma once
// The numeric description of an operator instance the latency regressor learns from. Made
// from the store's key (op type, attribute texts, input and output type strings), so a row of
// the store and a node of a model to predict are described by the same function.
#include <string>
#include <vector>

#include "joule/opdb/store.h"

namespace joule::predict {

// Dims of a type string ("const float32[1,64,56,56]" -> {1,64,56,56}); empty when unknown.
std::vector<int64_t> dims_of(const std::string& type);

// Features: log2 FLOPs, log2 bytes, arithmetic intensity, threads, algorithm index (NaN when
// the algorithm is unknown to the regressor), the dims of input 0, output 0 and input 1 (up
// to 5 each, NaN past the rank), log2 elements in and out, kernel area, first stride, group,
// number of inputs, channels_last, activation kind, log2 of base_ms in ns (the analytic time the
// regressor corrects), log2 bytes of the constant inputs, the first constant input's rows and
// elements per row, log2 output elements per such row, the op type's index (NaN: unknown), its
// family (convolution, matrix product, pooling, normalisation, movement, element-wise), and for
// convolutions and matrix products the GEMM they compute: M, N, K and the batch (groups).
std::vector<float> features(const opdb::OpKey& k, double flops, double bytes, int threads, float algorithm_index,
                            float op_index, double base_ms);
const std::vector<std::string>& feature_names();
// Op types that share kernels and costs: 1 convolutions, 2 matrix products, 3 pooling,
// 4 normalisation, 5 data movement, 6 the rest (element-wise).
float family(std::string op_type);

}  // namespace joule::predict
