// MelWeightMatrix (opset 17): the [dft_length / 2 + 1, num_mel_bins] matrix of triangular mel
// filters, mel(f) = 2595 log10(1 + f / 700), each with peak 1. As in the ONNX reference: the
// num_mel_bins + 2 band edges are lower_mel + i (upper_mel - lower_mel) / (num_mel_bins + 2),
// converted back to hertz and to spectrogram bins floor((dft_length + 1) f / sample_rate); filter
// i rises from edge i to edge i + 1 and falls to edge i + 2 (a zero-width rise is a single 1).
// Computed in double, output in `output_datatype` (default float).
#include <cmath>

#include "joule/ops/movement_util.h"
#include "joule/ops/signal_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  const auto mel = movement::known_ints(c, 0), len = movement::known_ints(c, 1);
  const ir::Dim bins = len && len->size() == 1 ? ir::Dim{(*len)[0] / 2 + 1, ""} : ir::Dim{};
  const ir::Dim mels = mel && mel->size() == 1 ? ir::Dim{(*mel)[0], ""} : ir::Dim{};
  c.out(0) = movement::make_type(signal::output_datatype(c.node), {bins, mels});
}

double scalar_float(const KernelContext& c, size_t i, const char* what) {
  const Tensor& t = c.in(i);
  if (t.numel() != 1) fail(c.node.where() + ": " + what + " must be a scalar, got " + t.describe());
  return t.value_as_double(0);
}

void run(KernelContext& c) {
  const int64_t num_mel = signal::scalar_int_input(c, 0, "num_mel_bins");
  const int64_t dft_length = signal::scalar_int_input(c, 1, "dft_length");
  const int64_t sample_rate = signal::scalar_int_input(c, 2, "sample_rate");
  const double lower = scalar_float(c, 3, "lower_edge_hertz"), upper = scalar_float(c, 4, "upper_edge_hertz");
  if (num_mel <= 0 || dft_length <= 0 || sample_rate <= 0)
    fail(c.node.where() + ": num_mel_bins, dft_length and sample_rate must be positive");
  if (!(lower >= 0 && lower <= upper))
    fail(c.node.where() + ": need 0 <= lower_edge_hertz <= upper_edge_hertz");
  const int64_t spec_bins = dft_length / 2 + 1;
  auto to_mel = [](double f) { return 2595.0 * std::log10(1.0 + f / 700.0); };
  const double low_mel = to_mel(lower), step = (to_mel(upper) - low_mel) / static_cast<double>(num_mel + 2);
  std::vector<int64_t> edge(static_cast<size_t>(num_mel + 2));
  for (int64_t i = 0; i < num_mel + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + low_mel) / 2595.0) - 1.0);
    edge[static_cast<size_t>(i)] = static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
    if (edge[static_cast<size_t>(i)] >= spec_bins)
      fail(c.node.where() + ": upper_edge_hertz " + std::to_string(upper) + " lies beyond the last spectrogram bin");
  }
  Tensor out(DType::Float64, {spec_bins, num_mel});
  double* w = out.data<double>();
  for (int64_t i = 0; i < num_mel; ++i) {
    const int64_t lo = edge[static_cast<size_t>(i)], mid = edge[static_cast<size_t>(i + 1)], hi = edge[static_cast<size_t>(i + 2)];
    if (mid == lo) w[mid * num_mel + i] = 1;
    for (int64_t j = lo; j <= mid && mid > lo; ++j) w[j * num_mel + i] = static_cast<double>(j - lo) / static_cast<double>(mid - lo);
    for (int64_t j = mid; j < hi; ++j) w[j * num_mel + i] = static_cast<double>(hi - j) / static_cast<double>(hi - mid);
  }
  c.outputs[0] = out.cast(signal::output_datatype(c.node));
}

}  // namespace

extern const OpDef kOpMelWeightMatrix;
const OpDef kOpMelWeightMatrix{"MelWeightMatrix", "", 5, 5, infer, run, nullptr, signal::check_output_datatype};

}  // namespace joule::ops
