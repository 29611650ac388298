// The "channels" algorithm of the roi_align op class: float32 RoiAlign (both modes, both
// coordinate transformations) on X with its channels made contiguous once per run (N,C,H,W ->
// N,H,W,C), so that every bilinear sample is four weighted vector loads of C channels instead
// of four scattered scalar loads per channel. Rois split over threads; each roi's bins are
// gathered into a [bins, C] buffer, then written out as [C, bins]. The taps, weights and the
// order of the sums are the reference kernel's (ops/roi_align_util.h). When the rois sample
// fewer points than X holds (the transposition would cost more than it saves), the reference
// loop runs instead, inside this algorithm.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <algorithm>
#include <vector>

#include "joule/core/cpu_features.h"
#include "joule/core/error.h"
#include "joule/kernels/eltwise/eltwise.h"
#include "joule/ops/roi_align_util.h"
#include "joule/ops/vec_math.h"

namespace joule::kernels {
namespace {

// acc[c] += w1 p1[c] + w2 p2[c] + w3 p3[c] + w4 p4[c] (avg), or the maximum of the four weighted
// values folded into acc (max; `first` starts the bin) -- the reference kernel's expressions.
struct Corners {
  const float *p1, *p2, *p3, *p4;
  float w1, w2, w3, w4;
};
JOULE_ALWAYS_INLINE void avg_body(float* acc, const Corners& k, int64_t n) {
  for (int64_t c = 0; c < n; ++c) acc[c] += k.w1 * k.p1[c] + k.w2 * k.p2[c] + k.w3 * k.p3[c] + k.w4 * k.p4[c];
}
JOULE_ALWAYS_INLINE void max_body(float* acc, const Corners& k, bool first, int64_t n) {
  for (int64_t c = 0; c < n; ++c) {
    const float v1 = k.w1 * k.p1[c], v2 = k.w2 * k.p2[c], v3 = k.w3 * k.p3[c], v4 = k.w4 * k.p4[c];
    const float m = std::max(std::max(v1, v2), std::max(v3, v4));
    acc[c] = first ? m : std::max(acc[c], m);
  }
}
void avg_base(float* acc, const Corners& k, int64_t n) { avg_body(acc, k, n); }
JOULE_AVX512 void avg_avx512(float* acc, const Corners& k, int64_t n) { avg_body(acc, k, n); }
void max_base(float* acc, const Corners& k, bool first, int64_t n) { max_body(acc, k, first, n); }
JOULE_AVX512 void max_avx512(float* acc, const Corners& k, bool first, int64_t n) { max_body(acc, k, first, n); }
// 8 wide on CPUs with AVX2 but not AVX-512 (no FMA: the baseline's values).
JOULE_AVX2 void avg_avx2(float* acc, const Corners& k, int64_t n) { avg_body(acc, k, n); }
JOULE_AVX2 void max_avx2(float* acc, const Corners& k, bool first, int64_t n) { max_body(acc, k, first, n); }

class RoiAlignKernel final : public Kernel {
 public:
  explicit RoiAlignKernel(const NodeView& v) : p_(ops::roi::params(v.node, v.opset)) {}

  void run(ops::KernelContext& k) const override {
    const std::vector<int64_t> bidx = ops::roi::checked_batch_indices(k);
    const Tensor& X = k.in(0);
    const Tensor& R = k.in(1);
    if (X.dtype() != DType::Float32) fail(k.node.where() + ": the channels kernel takes float32, got " + X.describe());
    const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3), nr = R.dim(0);
    const int64_t bins = p_.oh * p_.ow;
    // Points sampled (the reference's 2 x 2 per bin when sampling_ratio is 0) against X's size.
    const int64_t grid = p_.sampling > 0 ? p_.sampling * p_.sampling : 4;
    if (nr * bins * grid * 4 < N * H * W) {
      ops::find_op("", "RoiAlign")->run(k);
      return;
    }
    Tensor& Y = k.output(0, DType::Float32, {nr, C, p_.oh, p_.ow});
    // X as N,H,W,C.
    std::vector<float> xt(static_cast<size_t>(N * H * W * C));
    const float* x = X.data<float>();
    split_items(k.pool, N * H, W * C, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / H, h = r % H;
        float* dst = xt.data() + r * W * C;
        for (int64_t c = 0; c < C; ++c) {
          const float* src = x + ((n * C + c) * H + h) * W;
          for (int64_t w = 0; w < W; ++w) dst[w * C + c] = src[w];
        }
      }
    });
    const float* rois = R.data<float>();
    float* y = Y.data<float>();
    const bool avx512 = cpu_features().avx512, avx2 = cpu_features().avx2_fma;
    const auto avg = avx512 ? avg_avx512 : avx2 ? avg_avx2 : avg_base;
    const auto mx = avx512 ? max_avx512 : avx2 ? max_avx2 : max_base;
    split_items(k.pool, nr, bins * grid * C * 4, [&](int64_t r0, int64_t r1) {
      ops::roi::Grid<float> g;
      std::vector<float> acc(static_cast<size_t>(bins * C));
      for (int64_t r = r0; r < r1; ++r) {
        ops::roi::roi_grid(rois + 4 * r, p_, H, W, g);
        const float* img = xt.data() + bidx[static_cast<size_t>(r)] * H * W * C;
        std::fill(acc.begin(), acc.end(), 0.f);
        for (int64_t ph = 0; ph < p_.oh; ++ph)
          for (int64_t pw = 0; pw < p_.ow; ++pw) {
            float* a = acc.data() + (ph * p_.ow + pw) * C;
            bool first = true;
            for (int64_t iy = 0; iy < g.gh; ++iy) {
              const ops::roi::Tap<float>& ty = g.ty[static_cast<size_t>(ph * g.gh + iy)];
              const float* rlo = img + ty.lo * W * C;
              const float* rhi = img + ty.hi * W * C;
              for (int64_t ix = 0; ix < g.gw; ++ix) {
                const ops::roi::Tap<float>& tx = g.tx[static_cast<size_t>(pw * g.gw + ix)];
                const Corners q{rlo + tx.lo * C,        rlo + tx.hi * C,        rhi + tx.lo * C,        rhi + tx.hi * C,
                                ty.wlo * tx.wlo, ty.wlo * tx.whi, ty.whi * tx.wlo, ty.whi * tx.whi};
                if (p_.max_mode) mx(a, q, first, C);
                else avg(a, q, C);
                first = false;
              }
            }
          }
        float* out = y + r * C * bins;
        const float scale = p_.max_mode ? 1.f : g.inv_count;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t b = 0; b < bins; ++b) out[c * bins + b] = acc[static_cast<size_t>(b * C + c)] * scale;
      }
    });
  }

 private:
  ops::roi::Params p_;
};

std::string supports(const NodeView& v) {
  if (!v.node.domain.empty() || v.node.op_type != "RoiAlign") return "not RoiAlign";
  if (std::string why = ops::roi::problem(v.node, v.opset); !why.empty()) return why;
  if (!v.has(0) || v.in_types[0]->dtype != DType::Float32) return "X is not float32";
  return "";
}

// One pass over X to transpose it, then four vector multiply-adds of C channels per sample
// (the rois are known only at run time: a few hundred assumed).
double estimate_ms(const NodeView& v) {
  const double x = static_cast<double>(planned_numel(v, 0));
  return x * 3 * 4 / (8e9 * std::max(1, v.threads)) * 1e3 + 0.002;
}

std::unique_ptr<Kernel> prepare(const NodeView& v) { return std::make_unique<RoiAlignKernel>(v); }

}  // namespace

extern const Algorithm kRoiAlignChannels;
const Algorithm kRoiAlignChannels{"roi_align", "channels",
                                  "float32 RoiAlign on X made N,H,W,C per run: each sample four weighted vector loads of "
                                  "the channels, rois over threads",
                                  supports, estimate_ms, prepare};

}  // namespace joule::kernels
