#pragma once
// The epilogue of joule's FusedMatMul for the fast MatMul algorithms: y = act(A B + bias + z)
// with the bias over the last dim and z (the residual) of y's shape. The oneDNN matmul kernel
// runs it as post-ops; the SGEMM kernels put bias + z into y first (beta = 1) and apply the
// activation in one pass afterwards.
#include <cstdint>
#include <string>

#include "joule/kernels/algorithm.h"

namespace joule::kernels {

// kSigmoid and kSilu: only as the oneDNN convolution's pass after its primitive (kernels/conv/onednn.cpp).
enum class MatMulAct { kNone, kRelu, kLeakyRelu, kClip, kGelu, kSigmoid, kSilu };

struct MatMulEpilogue {
  MatMulAct act = MatMulAct::kNone;
  float alpha = 0.f, beta = 0.f;  // LeakyRelu: alpha = slope; Clip: [alpha, beta]
  bool bias = false;              // input 2: N float32 values
  bool residual = false;          // input 3: y's shape
  bool any() const { return bias || residual || act != MatMulAct::kNone; }
};

// Reads a FusedMatMul's epilogue (a plain MatMul has none); "" or the reason it cannot run.
// `n` is the output's last dim.
std::string read_matmul_epilogue(const NodeView& v, int64_t n, MatMulEpilogue* e);

// y[r, :] = bias + z[r, :] for `rows` rows of `n` (either may be null: 0 then).
void matmul_prefill(float* y, const float* bias, const float* z, int64_t rows, int64_t n);
// y = act(y) over `count` values, vectorised (ops/vec_math.h's erf GELU, ops/vec_sigmoid.h).
void matmul_activate(const MatMulEpilogue& e, float* y, int64_t count, ThreadPool& pool);
// Time of the SGEMM kernels' extra passes over `count` outputs, for `guess`.
double matmul_epilogue_ms(const MatMulEpilogue& e, double count, int threads);

}  // namespace joule::kernels
