// GRU (ONNX, all attributes: directions, activations with alpha/beta, clip,
// linear_before_reset, layout, sequence_lens, initial_h). The reference kernel: one scalar cell
// per batch entry and step, gates in ONNX order z, r, h; float16/float64 computed in float32.
// The fast kernel is kernels/recurrent/.
#include <vector>

#include "joule/ops/recurrent_util.h"
#include "joule/ops/util.h"

namespace joule::ops {
namespace {
using namespace recurrent;

void run(KernelContext& c) {
  if (run_as_float32(c, run)) return;
  const Spec s = parse(c.node, Kind::kGru);
  const int64_t H = s.hidden, I = c.in(0).dim(2);
  const float* W = c.in(1).data<float>();
  const float* R = c.in(2).data<float>();
  const float* B = c.has(3) ? c.in(3).data<float>() : nullptr;
  std::vector<float> z(static_cast<size_t>(H)), rh(static_cast<size_t>(H)), hn(static_cast<size_t>(H));
  run_reference(c, Kind::kGru, [&](int dir, const float* x, float* h, float*) {
    const float* w = W + dir * 3 * H * I;
    const float* r = R + dir * 3 * H * H;
    const float* wb = B ? B + dir * 6 * H : nullptr;
    const float* rb = B ? wb + 3 * H : nullptr;
    const Activation &f = s.act(dir, 0), &g = s.act(dir, 1);
    auto wx = [&](int64_t row) {
      float a = wb ? wb[row] : 0.f;
      for (int64_t k = 0; k < I; ++k) a += w[row * I + k] * x[k];
      return a;
    };
    auto rv = [&](int64_t row, const float* v) {
      float a = 0;
      for (int64_t k = 0; k < H; ++k) a += r[row * H + k] * v[k];
      return a;
    };
    std::vector<float> rg(static_cast<size_t>(H));
    for (int64_t j = 0; j < H; ++j) {
      z[static_cast<size_t>(j)] = activate(f, clip_value(wx(j) + rv(j, h) + (rb ? rb[j] : 0.f), s.clip));
      rg[static_cast<size_t>(j)] = activate(f, clip_value(wx(H + j) + rv(H + j, h) + (rb ? rb[H + j] : 0.f), s.clip));
      rh[static_cast<size_t>(j)] = rg[static_cast<size_t>(j)] * h[j];
    }
    for (int64_t j = 0; j < H; ++j) {
      const int64_t row = 2 * H + j;
      const float rbh = rb ? rb[row] : 0.f;
      const float pre = s.linear_before_reset ? wx(row) + rg[static_cast<size_t>(j)] * (rv(row, h) + rbh)
                                              : wx(row) + rv(row, rh.data()) + rbh;
      const float cand = activate(g, clip_value(pre, s.clip));
      hn[static_cast<size_t>(j)] = (1.f - z[static_cast<size_t>(j)]) * cand + z[static_cast<size_t>(j)] * h[j];
    }
    std::copy(hn.begin(), hn.end(), h);
  });
}

void infer(InferContext& c) { recurrent::infer(c, Kind::kGru); }
Cost cost(const CostContext& c) { return recurrent::cost(c, Kind::kGru); }
std::string check(const ir::Node& n, int64_t) { return recurrent::check(n, Kind::kGru); }

}  // namespace

extern const OpDef kOpGRU;
const OpDef kOpGRU{"GRU", "", 3, 6, infer, run, cost, check};

}  // namespace joule::ops
