// LSTM (ONNX, all attributes: directions, activations with alpha/beta, clip, input_forget,
// layout, sequence_lens, initial states, peepholes). The reference kernel: one scalar cell per
// batch entry and step, gates in ONNX order i, o, f, c; float16/float64 computed in float32.
// The fast kernel is kernels/recurrent/ (GEMMs with fused gate math).
#include <vector>

#include "joule/ops/recurrent_util.h"
#include "joule/ops/util.h"

namespace joule::ops {
namespace {
using namespace recurrent;

float dot(const float* a, const float* b, int64_t n) {
  float s = 0;
  for (int64_t k = 0; k < n; ++k) s += a[k] * b[k];
  return s;
}

void run(KernelContext& c) {
  if (run_as_float32(c, run)) return;
  const Spec s = parse(c.node, Kind::kLstm);
  const int64_t H = s.hidden, I = c.in(0).dim(2);
  const float* W = c.in(1).data<float>();
  const float* R = c.in(2).data<float>();
  const float* B = c.has(3) ? c.in(3).data<float>() : nullptr;
  const float* P = c.has(7) ? c.in(7).data<float>() : nullptr;
  std::vector<float> hn(static_cast<size_t>(H)), cn(static_cast<size_t>(H));
  run_reference(c, Kind::kLstm, [&](int dir, const float* x, float* h, float* cs) {
    const float* w = W + dir * 4 * H * I;
    const float* r = R + dir * 4 * H * H;
    const float* p = P ? P + dir * 3 * H : nullptr;
    const Activation &f = s.act(dir, 0), &g = s.act(dir, 1), &hf = s.act(dir, 2);
    for (int64_t j = 0; j < H; ++j) {
      float pre[4];  // i, o, f, c
      for (int64_t k = 0; k < 4; ++k) {
        const int64_t row = k * H + j;
        pre[k] = dot(w + row * I, x, I) + dot(r + row * H, h, H);
        if (B) pre[k] += B[dir * 8 * H + row] + B[dir * 8 * H + 4 * H + row];
      }
      const float i = activate(f, clip_value(pre[0] + (p ? p[j] * cs[j] : 0.f), s.clip));
      const float fg = s.input_forget ? 1.f - i : activate(f, clip_value(pre[2] + (p ? p[2 * H + j] * cs[j] : 0.f), s.clip));
      const float cand = activate(g, clip_value(pre[3], s.clip));
      cn[static_cast<size_t>(j)] = fg * cs[j] + i * cand;
      const float o = activate(f, clip_value(pre[1] + (p ? p[H + j] * cn[static_cast<size_t>(j)] : 0.f), s.clip));
      hn[static_cast<size_t>(j)] = o * activate(hf, cn[static_cast<size_t>(j)]);
    }
    std::copy(hn.begin(), hn.end(), h);
    std::copy(cn.begin(), cn.end(), cs);
  });
}

void infer(InferContext& c) { recurrent::infer(c, Kind::kLstm); }
Cost cost(const CostContext& c) { return recurrent::cost(c, Kind::kLstm); }
std::string check(const ir::Node& n, int64_t) { return recurrent::check(n, Kind::kLstm); }

}  // namespace

extern const OpDef kOpLSTM;
const OpDef kOpLSTM{"LSTM", "", 3, 8, infer, run, cost, check};

}  // namespace joule::ops
