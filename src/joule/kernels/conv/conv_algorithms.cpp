// The convolution algorithms as registered Algorithms: each pairs its support test with the
// common node checks (read_conv_problem), a rough time estimate for `guess`, and its factory.
// Estimates are effective 1-thread GFLOP/s measured on the bench shapes (BENCHMARKS.md),
// scaled by threads; they only need to rank algorithms sensibly.
#include "joule/core/cpu_features.h"
#include "joule/kernels/conv/conv_node.h"
#include "joule/kernels/conv/onednn.h"

namespace joule::kernels {
namespace {

std::string common(const NodeView& v, ConvProblem* p) { return read_conv_problem(v, p); }

double time_ms(const NodeView& v, double gflops, double overhead_ms) {
  ConvProblem p;
  common(v, &p);
  return 2.0 * p.shape.macs() / (gflops * 1e9 * v.threads) * 1e3 + overhead_ms;
}

// ---- onednn
std::string onednn_supports(const NodeView& v) {
  ConvProblem p;
  if (std::string r = common(v, &p); !r.empty()) return r;
  return onednn_conv_supports(p.shape, p.epilogue);
}
double onednn_estimate(const NodeView& v) {
  ConvProblem p;
  common(v, &p);
  // Activation reorders to and from blocked layouts cost about a pass over both tensors.
  const double bytes = 4.0 * (p.shape.n * p.shape.c * p.shape.h * p.shape.w + p.shape.n * p.shape.m * p.shape.oh * p.shape.ow);
  const double gf = p.shape.depthwise() ? 20 : 150;
  return time_ms(v, gf, 0.005) + 2 * bytes / 10e9 * 1e3;
}
std::unique_ptr<Kernel> onednn_prepare(const NodeView& v) {
  return prepare_conv(v, [](const ConvProblem& p, int threads) {
    return make_onednn_conv(p.shape, p.weight, p.bias, p.epilogue, threads);
  });
}

}  // namespace

extern const Algorithm kConvOnednn;
const Algorithm kConvOnednn{"conv", "onednn", "oneDNN convolution primitive (blocked layouts, fused post-ops)",
                            onednn_supports, onednn_estimate, onednn_prepare};

}  // namespace joule::kernels
