#pragma once
// The product of the algorithms that pack a constant B once (onednn_packed, onednn_bf16,
// small_m): A (any rank, its leading dims merged into M) times the 2-D constant B, read from a
// MatMul / joule FusedMatMul (with its epilogue) or a Gemm (transA = 0; alpha, transB, beta * C
// as a row bias).
#include <string>
#include <vector>

#include "joule/kernels/algorithm.h"
#include "joule/kernels/gemm/matmul_epilogue.h"

namespace joule::kernels {

struct PackedProblem {
  Shape a, y;
  int64_t M = 0, K = 0, N = 0;
  const Tensor* w = nullptr;  // [K, N], or [N, K] when tb
  bool tb = false;
  float alpha = 1.f;
  std::vector<float> bias;    // N values, or empty
  MatMulEpilogue ep;          // FusedMatMul's post-ops (ep.bias is in `bias`)
};

// "" or the reason the node is not such a product.
std::string read_matmul(const NodeView& v, PackedProblem* p);
std::string read_gemm(const NodeView& v, PackedProblem* p);

}  // namespace joule::kernels
