// Dropout at inference: output = input (shared buffer); optional mask all true (bool from
// opset 10, input dtype before). Training mode (opset 12 input training_mode true): element i
// is kept (mask true) when draw i of the node's random stream (random_util.h: the `seed`
// attribute, or the deterministic default seed) is >= ratio (input 1, default 0.5, in [0, 1)),
// and then scaled by 1 / (1 - ratio); dropped elements are 0. Ratio 0 keeps every element.
#include "joule/ops/movement_util.h"
#include "joule/ops/random_util.h"

namespace joule::ops {
namespace {
using namespace movement;

DType mask_dtype(DType x, int64_t opset) { return opset >= 10 ? DType::Bool : x; }

void infer(InferContext& c) {
  infer_same_as_input(c);
  if (c.output_types.size() > 1) {
    c.out(1) = c.in(0);
    c.out(1).dtype = mask_dtype(c.in(0).dtype, c.opset);
  }
}

void run_training(KernelContext& c, double ratio) {
  const Tensor& x = c.in(0);
  if (!is_floating(x.dtype())) fail(c.node.where() + ": input must be floating point, got " + x.describe());
  if (!(ratio >= 0 && ratio < 1)) fail(c.node.where() + ": ratio " + std::to_string(ratio) + " must be in [0, 1)");
  const uint64_t seed = rng::node_seed(c.node);
  const Tensor xd = x.cast(DType::Float64);
  Tensor yd(DType::Float64, x.shape());
  bool* m = c.outputs.size() > 1 ? c.output(1, DType::Bool, x.shape()).data<bool>() : nullptr;
  const double* px = xd.data<double>();
  double* py = yd.data<double>();
  const double scale = 1.0 / (1.0 - ratio);
  parallel_or_serial(c.pool, x.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const bool keep = rng::uniform01(seed, static_cast<uint64_t>(i)) >= ratio;
      py[i] = keep ? px[i] * scale : 0.0;
      if (m) m[i] = keep;
    }
  });
  c.outputs[0] = yd.cast(x.dtype());
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  if (c.opset >= 12 && c.has(2)) {
    const Tensor& tm = c.in(2);
    const bool training = tm.numel() >= 1 && tm.value_as_int(0) != 0;
    if (training) {
      if (c.has(1) && c.in(1).numel() != 1) fail(c.node.where() + ": ratio must be a scalar, got " + c.in(1).describe());
      return run_training(c, c.has(1) ? c.in(1).value_as_double(0) : 0.5);
    }
  }
  c.outputs[0] = x;
  if (c.outputs.size() > 1) {
    c.outputs[1] = filled(Tensor::scalar<float>(1.f).cast(mask_dtype(x.dtype(), c.opset)), x.shape());
  }
}


}  // namespace

extern const OpDef kOpDropout;
const OpDef kOpDropout{"Dropout", "", 1, 3, infer, run, data_movement_cost, nullptr, true};

}  // namespace joule::ops
