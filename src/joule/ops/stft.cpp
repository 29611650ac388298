// STFT (opset 17): the short-time Fourier transform of signal [batch, length, 1 (real) or 2
// (complex)]. Frames of n samples start every frame_step samples (frames =
// (length - n) / frame_step + 1); each is multiplied by `window` (input 2, [n], optional) and
// transformed; n is frame_length (input 3) or the window's length (both given: they must
// agree). Output [batch, frames, bins, 2] with bins = n / 2 + 1 when `onesided` (default 1, real
// signals only), else n. Frames are transformed on the pool (signal_util.h's FFT).
#include "joule/ops/movement_util.h"
#include "joule/ops/signal_util.h"

namespace joule::ops {
namespace {
using signal::cd;

bool onesided(const ir::Node& node) { return node.attr_int("onesided", 1) != 0; }

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  const auto step = movement::known_ints(c, 1), flen = movement::known_ints(c, 3);
  int64_t n = flen && flen->size() == 1 ? (*flen)[0] : -1;
  if (n < 0 && !c.has(3)) n = movement::static_length(c, 2);
  ir::Dim batch, frames, bins;
  if (x.has_shape && x.dims.size() == 3) {
    batch = x.dims[0];
    if (x.dims[1].is_static() && n > 0 && step && step->size() == 1 && (*step)[0] > 0 && x.dims[1].value >= n)
      frames = ir::Dim{(x.dims[1].value - n) / (*step)[0] + 1, ""};
  }
  if (n > 0) bins = ir::Dim{onesided(c.node) ? n / 2 + 1 : n, ""};
  c.out(0) = movement::make_type(x.dtype, {batch, frames, bins, ir::Dim{2, ""}});
}

void run(KernelContext& c) {
  const Tensor& X = c.in(0);
  if (!is_floating(X.dtype())) fail(c.node.where() + ": signal must be floating point, got " + X.describe());
  if (X.rank() != 3 || (X.dim(2) != 1 && X.dim(2) != 2))
    fail(c.node.where() + ": signal must be [batch, length, 1 or 2], got " + X.describe());
  const int64_t step = signal::scalar_int_input(c, 1, "frame_step");
  if (step < 1) fail(c.node.where() + ": frame_step " + std::to_string(step) + " must be positive");
  if (c.has(2) && c.in(2).rank() != 1) fail(c.node.where() + ": window must have rank 1, got " + c.in(2).describe());
  int64_t n = c.has(3) ? signal::scalar_int_input(c, 3, "frame_length") : c.has(2) ? c.in(2).dim(0) : -1;
  if (n < 0) fail(c.node.where() + ": needs a window or a frame_length");
  if (c.has(2) && c.in(2).dim(0) != n)
    fail(c.node.where() + ": window length " + std::to_string(c.in(2).dim(0)) + " != frame_length " + std::to_string(n));
  const int64_t B = X.dim(0), L = X.dim(1), C = X.dim(2);
  if (n < 1 || n > L) fail(c.node.where() + ": frame length " + std::to_string(n) + " must be in [1, signal length " + std::to_string(L) + "]");
  if (onesided(c.node) && C == 2) fail(c.node.where() + ": onesided output needs a real signal (last dim 1)");
  const int64_t frames = (L - n) / step + 1, bins = onesided(c.node) ? n / 2 + 1 : n;
  const Tensor xd = X.cast(DType::Float64);
  const Tensor wd = c.has(2) ? c.in(2).cast(DType::Float64) : Tensor();
  const double* px = xd.data<double>();
  const double* pw = c.has(2) ? wd.data<double>() : nullptr;
  Tensor y(DType::Float64, {B, frames, bins, 2});
  double* py = y.data<double>();
  signal::transform_rows(
      signal::FftPlan(n, false), B * frames, c.pool,
      [&](int64_t r, cd* buf) {
        const double* p = px + ((r / frames) * L + (r % frames) * step) * C;
        for (int64_t j = 0; j < n; ++j) buf[j] = cd(p[j * C], C == 2 ? p[j * C + 1] : 0.0) * (pw ? pw[j] : 1.0);
      },
      [&](int64_t r, const cd* buf) {
        for (int64_t k = 0; k < bins; ++k) {
          py[(r * bins + k) * 2] = buf[k].real();
          py[(r * bins + k) * 2 + 1] = buf[k].imag();
        }
      });
  c.outputs[0] = y.cast(X.dtype());
}

}  // namespace

extern const OpDef kOpSTFT;
const OpDef kOpSTFT{"STFT", "", 2, 4, infer, run};

}  // namespace joule::ops
