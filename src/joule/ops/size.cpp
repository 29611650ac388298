// Size: number of elements as an int64 scalar.
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  c.out(0) = make_type(DType::Int64, {});
  if (x.is_static()) c.output_values[0] = Tensor::scalar<int64_t>(shape_numel(x.static_shape()));
}

void run(KernelContext& c) { c.outputs[0] = Tensor::scalar<int64_t>(c.in(0).numel()); }

}  // namespace

extern const OpDef kOpSize;
const OpDef kOpSize{"Size", "", 1, 1, infer, run, data_movement_cost};

}  // namespace joule::ops
