// EyeLike: 2-D tensor shaped like the input with ones on diagonal k (dtype attribute or input's).
#include <cstring>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

DType out_dtype(const ir::Node& node, DType in) {
  return node.has_attr("dtype") ? dtype_from_onnx(node.attr_int("dtype", 1), node) : in;
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (x.has_shape && x.dims.size() != 2) fail(c.node.where() + ": input must be 2-D");
  c.out(0) = x;
  if (!x.has_shape) c.out(0) = make_type(x.dtype, unknown_dims(2));
  c.out(0).dtype = out_dtype(c.node, x.dtype);
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  if (x.rank() != 2) fail(c.node.where() + ": input must be 2-D");
  const DType dt = out_dtype(c.node, x.dtype());
  const int64_t rows = x.shape()[0], cols = x.shape()[1], k = c.node.attr_int("k", 0);
  Tensor out(dt, x.shape());
  const Tensor one = Tensor::scalar<float>(1.f).cast(dt);
  const size_t es = dtype_size(dt);
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t j = i + k;
    if (j >= 0 && j < cols) std::memcpy(dst + static_cast<size_t>(i * cols + j) * es, one.raw(), es);
  }
  c.outputs[0] = out;
}

}  // namespace

extern const OpDef kOpEyeLike;
const OpDef kOpEyeLike{"EyeLike", "", 1, 1, infer, run, data_movement_cost};

}  // namespace joule::ops
