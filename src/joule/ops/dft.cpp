// DFT (opset 17): the discrete Fourier transform along `axis` (default 1) of X
// [batch, signal dims..., 1 (real) or 2 (complex)]; output [..., 2] (real, imaginary). The
// optional input dft_length zero-pads or truncates the signal axis to that length n; `inverse`
// uses exp(+2 pi i jk / n) and scales by 1 / n; `onesided` (real input only) keeps bins
// 0 .. n/2. Negative axes count from the back as for the input rank, and must land on a signal
// axis (not the last). Rows along the axis are transformed independently on the pool with an
// O(n log n) FFT for every n (radix-2, or Bluestein for other lengths: signal_util.h).
#include "joule/ops/movement_util.h"
#include "joule/ops/signal_util.h"

namespace joule::ops {
namespace {
using signal::cd;

int64_t dft_axis(const ir::Node& node, int64_t rank) {
  const int64_t axis = node.attr_int("axis", 1), a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a > rank - 2)
    fail(node.where() + ": axis " + std::to_string(axis) + " is not a signal axis of a rank-" + std::to_string(rank) + " input");
  return a;
}

int64_t out_length(const ir::Node& node, int64_t n) { return node.attr_int("onesided", 0) ? n / 2 + 1 : n; }

std::string check(const ir::Node& node, int64_t opset) {
  if (opset >= 20) return "opset 20 DFT (axis as an input, default -2) is not supported";
  if (node.attr_int("onesided", 0) && node.attr_int("inverse", 0))
    return "onesided=1 with inverse=1 (opset 17 defines no one-sided inverse)";
  return "";
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (!x.has_shape) {
    c.out(0) = movement::unknown_rank(x.dtype);
    return;
  }
  std::vector<ir::Dim> dims = x.dims;
  const int64_t a = dft_axis(c.node, movement::rank_of(x));
  ir::Dim& d = dims[static_cast<size_t>(a)];
  const auto len = movement::known_ints(c, 1);
  if (len && len->size() == 1) d = ir::Dim{(*len)[0], ""};
  else if (c.has(1)) d = ir::Dim{};
  if (d.is_static()) d = ir::Dim{out_length(c.node, d.value), ""};
  else d = ir::Dim{};
  dims.back() = ir::Dim{2, ""};
  c.out(0) = movement::make_type(x.dtype, dims);
}

void run(KernelContext& c) {
  const Tensor& X = c.in(0);
  if (!is_floating(X.dtype())) fail(c.node.where() + ": input must be floating point, got " + X.describe());
  if (X.rank() < 2 || (X.dim(-1) != 1 && X.dim(-1) != 2))
    fail(c.node.where() + ": input must be [batch, signal dims..., 1 or 2], got " + X.describe());
  const int64_t a = dft_axis(c.node, X.rank()), C = X.dim(-1), len = X.dim(static_cast<int>(a));
  const int64_t n = c.has(1) ? signal::scalar_int_input(c, 1, "dft_length") : len;
  if (n < 1) fail(c.node.where() + ": dft_length " + std::to_string(n) + " must be positive");
  const bool inverse = c.node.attr_int("inverse", 0) != 0;
  if (c.node.attr_int("onesided", 0) && C == 2) fail(c.node.where() + ": onesided output needs a real input (last dim 1)");
  const int64_t nout = out_length(c.node, n);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < X.rank() - 1; ++d) {
    if (d < a) outer *= X.dim(d);
    if (d > a) inner *= X.dim(d);
  }
  Shape ys = X.shape();
  ys[static_cast<size_t>(a)] = nout;
  ys.back() = 2;
  const Tensor xd = X.cast(DType::Float64);
  Tensor y(DType::Float64, ys);
  const double* px = xd.data<double>();
  double* py = y.data<double>();
  const double scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
  signal::transform_rows(
      signal::FftPlan(n, inverse), outer * inner, c.pool,
      [&](int64_t r, cd* buf) {
        const int64_t o = r / inner, i = r % inner;
        for (int64_t j = 0; j < n; ++j) {
          if (j >= len) {
            buf[j] = cd(0, 0);
            continue;
          }
          const double* p = px + ((o * len + j) * inner + i) * C;
          buf[j] = cd(p[0], C == 2 ? p[1] : 0.0);
        }
      },
      [&](int64_t r, const cd* buf) {
        const int64_t o = r / inner, i = r % inner;
        for (int64_t k = 0; k < nout; ++k) {
          double* q = py + ((o * nout + k) * inner + i) * 2;
          q[0] = buf[k].real() * scale;
          q[1] = buf[k].imag() * scale;
        }
      });
  c.outputs[0] = y.cast(X.dtype());
}

}  // namespace

extern const OpDef kOpDFT;
const OpDef kOpDFT{"DFT", "", 1, 2, infer, run, nullptr, check};

}  // namespace joule::ops
