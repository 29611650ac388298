// Dropout at inference: output = input (shared buffer); optional mask all true (bool from
// opset 10, input dtype before). Training mode (opset 12 input) with ratio > 0 is random:
// unsupported; with ratio 0 it is the identity.
#include "joule/ops/movement_util.h"

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

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  if (c.opset >= 12 && c.has(2)) {
    const Tensor& tm = c.in(2);
    const bool training = tm.numel() >= 1 && tm.value_as_int(0) != 0;
    const double ratio = c.has(1) ? c.in(1).value_as_double(0) : 0.5;
    if (training && ratio > 0)
      fail_unsupported(c.node.where() + ": training-mode dropout (random) is not supported");
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
