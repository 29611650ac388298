#include "joule/ops/signal_util.h"

#include <cmath>
#include <numbers>

namespace joule::ops::signal {

namespace {
bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }
}  // namespace

FftPlan::FftPlan(int64_t n, bool inverse) : n_(n), m_(1), inverse_(inverse), bluestein_(!is_pow2(n) && n > 0) {
  if (n <= 0) return;
  while (m_ < (bluestein_ ? 2 * n - 1 : n)) m_ *= 2;
  twiddle_.resize(static_cast<size_t>(m_ / 2));
  for (int64_t k = 0; k < m_ / 2; ++k)
    twiddle_[static_cast<size_t>(k)] = std::polar(1.0, -2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(m_));
  if (!bluestein_) return;
  // jk = (j^2 + k^2 - (k - j)^2) / 2, so X[k] = chirp[k] sum_j (x[j] chirp[j]) conj(chirp[k - j]).
  // k^2 is reduced modulo 2n first so that the angle keeps its precision for large k.
  const double s = inverse ? 1.0 : -1.0;
  chirp_.resize(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    const int64_t k2 = (k * k) % (2 * n);
    chirp_[static_cast<size_t>(k)] = std::polar(1.0, s * std::numbers::pi * static_cast<double>(k2) / static_cast<double>(n));
  }
  kernel_.assign(static_cast<size_t>(m_), cd(0, 0));
  kernel_[0] = std::conj(chirp_[0]);
  for (int64_t k = 1; k < n; ++k)
    kernel_[static_cast<size_t>(k)] = kernel_[static_cast<size_t>(m_ - k)] = std::conj(chirp_[static_cast<size_t>(k)]);
  radix2(kernel_.data(), false);
}

void FftPlan::radix2(cd* a, bool inverse) const {
  const int64_t m = m_;
  for (int64_t i = 1, j = 0; i < m; ++i) {  // bit-reversal permutation
    int64_t bit = m >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (int64_t len = 2; len <= m; len *= 2) {
    const int64_t half = len / 2, step = m / len;
    for (int64_t i = 0; i < m; i += len)
      for (int64_t k = 0; k < half; ++k) {
        const cd w = inverse ? std::conj(twiddle_[static_cast<size_t>(k * step)]) : twiddle_[static_cast<size_t>(k * step)];
        const cd u = a[i + k], v = a[i + k + half] * w;
        a[i + k] = u + v;
        a[i + k + half] = u - v;
      }
  }
}

void FftPlan::run(cd* data, cd* scratch) const {
  if (n_ <= 1) return;
  if (!bluestein_) {
    radix2(data, inverse_);
    return;
  }
  for (int64_t k = 0; k < m_; ++k) scratch[k] = k < n_ ? data[k] * chirp_[static_cast<size_t>(k)] : cd(0, 0);
  radix2(scratch, false);
  for (int64_t k = 0; k < m_; ++k) scratch[k] *= kernel_[static_cast<size_t>(k)];
  radix2(scratch, true);
  const double inv_m = 1.0 / static_cast<double>(m_);
  for (int64_t k = 0; k < n_; ++k) data[k] = scratch[k] * inv_m * chirp_[static_cast<size_t>(k)];
}

void transform_rows(const FftPlan& plan, int64_t rows, ThreadPool* pool,
                    const std::function<void(int64_t, cd*)>& load,
                    const std::function<void(int64_t, const cd*)>& store) {
  parallel_or_serial(pool, rows, [&](int64_t begin, int64_t end) {
    std::vector<cd> buf(static_cast<size_t>(plan.size())), scratch(static_cast<size_t>(plan.scratch_size()));
    for (int64_t r = begin; r < end; ++r) {
      load(r, buf.data());
      plan.run(buf.data(), scratch.data());
      store(r, buf.data());
    }
  });
}

DType output_datatype(const ir::Node& node) {
  return dtype_from_onnx(static_cast<int>(node.attr_int("output_datatype", 1)));
}

std::string check_output_datatype(const ir::Node& node, int64_t) {
  const DType t = output_datatype(node);
  if (t == DType::Undefined || t == DType::Bool || t == DType::String)
    return "output_datatype " + std::to_string(node.attr_int("output_datatype", 1)) + " is not a numeric type joule has";
  return "";
}

int64_t scalar_int_input(const KernelContext& c, size_t i, const char* what) {
  const Tensor& t = c.in(i);
  if (t.numel() != 1 || is_floating(t.dtype()))
    fail(c.node.where() + ": " + what + " must be a single integer, got " + t.describe());
  return t.value_as_int(0);
}

}  // namespace joule::ops::signal
