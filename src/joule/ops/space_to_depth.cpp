// SpaceToDepth: [N,C,H,W] -> [N,C*b^2,H/b,W/b].
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

int64_t block(const ir::Node& node) {
  const int64_t b = node.attr_int("blocksize", 0);
  if (b < 1) fail(node.where() + ": attribute 'blocksize' must be positive");
  return b;
}

ir::Dim divide(const ir::Dim& d, int64_t b, const ir::Node& node) {
  if (!d.is_static()) return ir::Dim{};
  if (d.value % b != 0)
    fail(node.where() + ": spatial dim " + std::to_string(d.value) + " not divisible by blocksize");
  return ir::Dim{d.value / b, ""};
}

std::vector<ir::Dim> out_dims(const std::vector<ir::Dim>& in, const ir::Node& node) {
  if (in.size() != 4) fail(node.where() + ": input must be 4-D, got " + ir::dims_str(in));
  const int64_t b = block(node);
  return {in[0], dim_mul(in[1], b * b), divide(in[2], b, node), divide(in[3], b, node)};
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  c.out(0) = x.has_shape ? make_type(x.dtype, out_dims(x.dims, c.node)) : make_type(x.dtype, unknown_dims(4));
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  const Shape out = shape_of(out_dims(dims_of(x.shape()), c.node));
  const int64_t b = block(c.node);
  const Shape& s = x.shape();
  Tensor t = transpose_tensor(x.reshaped({s[0], s[1], s[2] / b, b, s[3] / b, b}), {0, 3, 5, 1, 2, 4});
  c.outputs[0] = t.reshaped(out);
}

}  // namespace

extern const OpDef kOpSpaceToDepth;
const OpDef kOpSpaceToDepth{"SpaceToDepth", "", 1, 1, infer, run, data_movement_cost};

}  // namespace joule::ops
