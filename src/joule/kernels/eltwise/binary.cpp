// The "simd" algorithm of the binary op class: float32 Add, Sub, Mul, Div, and two-input Max and
// Min, with numpy broadcasting walked in rows (ops::BroadcastLoop: [N,C,H,W] with [1,C,1,1] is
// rows of H*W against one value, [N,H,W,C] with [N,1,1,C] rows of C against a vector), each row
// one vectorised loop (AVX-512 or baseline), rows or one long row split over the thread pool,
// written into the planned output buffer. Max and Min return NaN when either operand is NaN.
#include <array>

#include "joule/core/cpu_features.h"
#include "joule/core/error.h"
#include "joule/kernels/eltwise/eltwise.h"
#include "joule/ops/elementwise_util.h"
#include "joule/ops/vec_math.h"

namespace joule::kernels {
namespace {

enum Op : int { kAdd, kSub, kMul, kDiv, kMax, kMin, kOps };
// Which operands advance along a row: both, only a (b is one value), only b.
enum Pattern : int { kBoth, kOnlyA, kOnlyB, kPatterns };

template <int O>
JOULE_ALWAYS_INLINE float apply(float a, float b) {
  if constexpr (O == kAdd) return a + b;
  if constexpr (O == kSub) return a - b;
  if constexpr (O == kMul) return a * b;
  if constexpr (O == kDiv) return a / b;
  if constexpr (O == kMax) return a != a || a > b ? a : b;
  if constexpr (O == kMin) return a != a || a < b ? a : b;
  return a;
}

using Row = void (*)(const float*, const float*, float*, int64_t);

template <int O, int P>
JOULE_ALWAYS_INLINE void row_body(const float* a, const float* b, float* y, int64_t n) {
  if constexpr (P == kBoth) {
    for (int64_t i = 0; i < n; ++i) y[i] = apply<O>(a[i], b[i]);
  } else if constexpr (P == kOnlyA) {
    const float v = *b;
    for (int64_t i = 0; i < n; ++i) y[i] = apply<O>(a[i], v);
  } else {
    const float v = *a;
    for (int64_t i = 0; i < n; ++i) y[i] = apply<O>(v, b[i]);
  }
}
template <int O, int P>
void row_base(const float* a, const float* b, float* y, int64_t n) {
  row_body<O, P>(a, b, y, n);
}
template <int O, int P>
JOULE_AVX512 void row_avx512(const float* a, const float* b, float* y, int64_t n) {
  row_body<O, P>(a, b, y, n);
}
template <int O, int P>
JOULE_AVX2 void row_avx2(const float* a, const float* b, float* y, int64_t n) {
  row_body<O, P>(a, b, y, n);
}

template <int O, int P>
Row row_pick(bool avx512, bool avx2) {
  return avx512 ? &row_avx512<O, P> : avx2 ? &row_avx2<O, P> : &row_base<O, P>;
}
template <int O>
std::array<Row, kPatterns> rows_of(bool avx512) {
  const bool avx2 = cpu_features().avx2_fma;
  return {row_pick<O, kBoth>(avx512, avx2), row_pick<O, kOnlyA>(avx512, avx2), row_pick<O, kOnlyB>(avx512, avx2)};
}

Row row_of(Op o, Pattern p) {
  static const std::array<std::array<Row, kPatterns>, kOps> table = [] {
    const bool avx = cpu_features().avx512;
    return std::array<std::array<Row, kPatterns>, kOps>{rows_of<kAdd>(avx), rows_of<kSub>(avx), rows_of<kMul>(avx),
                                                          rows_of<kDiv>(avx), rows_of<kMax>(avx), rows_of<kMin>(avx)};
  }();
  return table[o][p];
}

Op op_of(const ir::Node& n) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return kOps;
  if (n.has_attr("broadcast") || n.has_attr("axis")) return kOps;  // legacy broadcasting (opset < 7)
  if (n.inputs.size() != 2) return kOps;
  static const std::pair<const char*, Op> table[] = {{"Add", kAdd}, {"Sub", kSub}, {"Mul", kMul},
                                                     {"Div", kDiv}, {"Max", kMax}, {"Min", kMin}};
  for (auto& [name, op] : table)
    if (n.op_type == name) return op;
  return kOps;
}

class BinaryKernel final : public Kernel {
 public:
  explicit BinaryKernel(Op op) : op_(op) {}
  void run(ops::KernelContext& k) const override {
    const Tensor &A = k.in(0), &B = k.in(1);
    if (A.dtype() != DType::Float32 || B.dtype() != DType::Float32)
      fail(k.node.where() + ": the simd kernel was prepared for float32, got " + A.describe() + " and " + B.describe());
    const Shape out = ops::broadcast_shapes({A.shape(), B.shape()}, k.node);
    Tensor& Y = k.output(0, DType::Float32, out);
    const ops::BroadcastLoop loop(out, {A.shape(), B.shape()});
    const bool sa = loop.inner_stride(0) != 0, sb = loop.inner_stride(1) != 0;
    const float *pa = A.data<float>(), *pb = B.data<float>();
    float* py = Y.data<float>();
    if (!sa && !sb) {  // every row is one value repeated (rows of 1 when shapes are all ones)
      loop.for_each_row([&](int64_t o, const int64_t* in, int64_t n) {
        row_of(op_, kOnlyA)(pa + in[0], pb + in[1], py + o, 1);
        for (int64_t i = 1; i < n; ++i) py[o + i] = py[o];
      });
      return;
    }
    const Row row = row_of(op_, sa && sb ? kBoth : sa ? kOnlyA : kOnlyB);
    const int64_t rows = loop.rows(), len = loop.row_length();
    if (rows == 1) {
      split_items(k.pool, len, 1, [&](int64_t b, int64_t e) { row(pa + (sa ? b : 0), pb + (sb ? b : 0), py + b, e - b); });
      return;
    }
    auto some_rows = [&](int64_t first, int64_t last) {
      loop.for_rows(first, last, [&](int64_t o, const int64_t* in, int64_t n) { row(pa + in[0], pb + in[1], py + o, n); });
    };
    split_items(k.pool, rows, len, some_rows);
  }

 private:
  Op op_;
};

std::string supports(const NodeView& v) {
  if (op_of(v.node) == kOps) return "not a two-input Add/Sub/Mul/Div/Max/Min with numpy broadcasting";
  for (size_t i = 0; i < 2; ++i)
    if (!v.has(i) || v.in_types[i]->dtype != DType::Float32) return "inputs are not float32";
  return "";
}

double estimate_ms(const NodeView& v) {
  return static_cast<double>(std::max(planned_numel(v, 0), planned_numel(v, 1))) * 1e-6;
}

std::unique_ptr<Kernel> prepare(const NodeView& v) { return std::make_unique<BinaryKernel>(op_of(v.node)); }

}  // namespace

bool is_binary_eltwise(const ir::Node& n) { return op_of(n) != kOps; }

extern const Algorithm kBinarySimd;
const Algorithm kBinarySimd{"binary", "simd",
                            "float32 Add/Sub/Mul/Div/Max/Min, numpy broadcasting in vectorised rows, threaded",
                            supports, estimate_ms, prepare};

}  // namespace joule::kernels
