#pragma once
// Helpers shared by the signal ops (DFT, STFT, the window functions, MelWeightMatrix).
#include <complex>
#include <cstdint>
#include <functional>
#include <vector>

#include "joule/ops/util.h"

namespace joule::ops::signal {

using cd = std::complex<double>;

// A DFT of fixed length n, forward (exponent -2 pi i jk/n) or inverse (+2 pi i jk/n, without the
// 1/n factor). Power-of-two lengths use an iterative radix-2 Cooley-Tukey FFT; other lengths
// Bluestein's chirp-z algorithm, which turns the DFT into a circular convolution evaluated with
// power-of-two FFTs of length >= 2n - 1: both O(n log n). All arithmetic is in double.
class FftPlan {
 public:
  FftPlan(int64_t n, bool inverse);
  int64_t size() const { return n_; }
  // Scratch elements one call to run() needs.
  int64_t scratch_size() const { return bluestein_ ? m_ : 0; }
  // Transforms data[0, n) in place; scratch holds scratch_size() elements.
  void run(cd* data, cd* scratch) const;

 private:
  int64_t n_, m_;          // m_: the power-of-two length of the radix-2 transforms
  bool inverse_, bluestein_;
  std::vector<cd> twiddle_;  // exp(-2 pi i k / m_), k < m_ / 2
  std::vector<cd> chirp_;    // Bluestein: exp(s pi i k^2 / n), s = -1 forward, +1 inverse
  std::vector<cd> kernel_;   // Bluestein: the forward FFT of the conjugate chirp, length m_
  void radix2(cd* a, bool inverse) const;
};

// Runs `plan` over `rows` independent signals on the pool: load(row, buf) fills buf[0, n)
// (zero-padded as needed), store(row, buf) reads the transform.
void transform_rows(const FftPlan& plan, int64_t rows, ThreadPool* pool,
                    const std::function<void(int64_t, cd*)>& load,
                    const std::function<void(int64_t, const cd*)>& store);

// The `output_datatype` attribute (default 1 = float) of the window ops and MelWeightMatrix;
// check_output_datatype gives "" or the reason it is refused.
DType output_datatype(const ir::Node& node);
std::string check_output_datatype(const ir::Node& node, int64_t opset);

// A scalar integer input (window size, frame_step, ...) of the kernel.
int64_t scalar_int_input(const KernelContext& c, size_t i, const char* what);

}  // namespace joule::ops::signal
