// RNN (ONNX's simple recurrent layer, all attributes: directions, activation with alpha/beta,
// clip, layout, sequence_lens, initial_h). The reference kernel: one scalar cell per batch
// entry and step; float16/float64 computed in float32. The fast kernel is kernels/recurrent/.
#include <vector>

#include "joule/ops/recurrent_util.h"
#include "joule/ops/util.h"

namespace joule::ops {
namespace {
using namespace recurrent;

void run(KernelContext& c) {
  if (run_as_float32(c, run)) return;
  const Spec s = parse(c.node, Kind::kRnn);
  const int64_t H = s.hidden, I = c.in(0).dim(2);
  const float* W = c.in(1).data<float>();
  const float* R = c.in(2).data<float>();
  const float* B = c.has(3) ? c.in(3).data<float>() : nullptr;
  std::vector<float> hn(static_cast<size_t>(H));
  run_reference(c, Kind::kRnn, [&](int dir, const float* x, float* h, float*) {
    const float* w = W + dir * H * I;
    const float* r = R + dir * H * H;
    for (int64_t j = 0; j < H; ++j) {
      float a = B ? B[dir * 2 * H + j] + B[dir * 2 * H + H + j] : 0.f;
      for (int64_t k = 0; k < I; ++k) a += w[j * I + k] * x[k];
      for (int64_t k = 0; k < H; ++k) a += r[j * H + k] * h[k];
      hn[static_cast<size_t>(j)] = activate(s.act(dir, 0), clip_value(a, s.clip));
    }
    std::copy(hn.begin(), hn.end(), h);
  });
}

void infer(InferContext& c) { recurrent::infer(c, Kind::kRnn); }
Cost cost(const CostContext& c) { return recurrent::cost(c, Kind::kRnn); }
std::string check(const ir::Node& n, int64_t) { return recurrent::check(n, Kind::kRnn); }

}  // namespace

extern const OpDef kOpRNN;
const OpDef kOpRNN{"RNN", "", 3, 6, infer, run, cost, check};

}  // namespace joule::ops
