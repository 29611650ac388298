// HannWindow, HammingWindow, BlackmanWindow (opset 17): a 1-D window of `size` (input 0, an
// integer scalar) points, w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), with N = size when
// `periodic` (default 1) and size - 1 otherwise (a symmetric window; for size 1 the single
// angle is taken as 0). Hann: a = (0.5, 0.5, 0); Hamming: (25/46, 21/46, 0); Blackman:
// (0.42, 0.5, 0.08). Computed in double, output in `output_datatype` (default float).
#include <cmath>
#include <numbers>

#include "joule/ops/movement_util.h"
#include "joule/ops/signal_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  const auto size = movement::known_ints(c, 0);
  c.out(0) = movement::make_type(signal::output_datatype(c.node),
                                 {size && size->size() == 1 ? ir::Dim{(*size)[0], ""} : ir::Dim{}});
}

template <int A0N, int A0D, int A1N, int A1D, int A2N, int A2D>
void run(KernelContext& c) {
  const int64_t size = signal::scalar_int_input(c, 0, "size");
  if (size < 0) fail(c.node.where() + ": size " + std::to_string(size) + " is negative");
  const bool periodic = c.node.attr_int("periodic", 1) != 0;
  const double a0 = double(A0N) / A0D, a1 = double(A1N) / A1D, a2 = double(A2N) / A2D;
  const double n_total = static_cast<double>(periodic ? size : size - 1);
  Tensor w(DType::Float64, {size});
  double* p = w.data<double>();
  for (int64_t n = 0; n < size; ++n) {
    const double angle = n == 0 ? 0.0 : 2.0 * std::numbers::pi * static_cast<double>(n) / n_total;
    p[n] = a0 - a1 * std::cos(angle) + a2 * std::cos(2.0 * angle);
  }
  c.outputs[0] = w.cast(signal::output_datatype(c.node));
}

}  // namespace

extern const OpDef kOpHannWindow, kOpHammingWindow, kOpBlackmanWindow;
const OpDef kOpHannWindow{"HannWindow", "", 1, 1, infer, run<1, 2, 1, 2, 0, 1>, nullptr, signal::check_output_datatype};
const OpDef kOpHammingWindow{"HammingWindow", "", 1, 1, infer, run<25, 46, 21, 46, 0, 1>, nullptr, signal::check_output_datatype};
const OpDef kOpBlackmanWindow{"BlackmanWindow", "", 1, 1, infer, run<42, 100, 1, 2, 8, 100>, nullptr, signal::check_output_datatype};

}  // namespace joule::ops
