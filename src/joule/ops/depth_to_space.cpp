// DepthToSpace: [N,C,H,W] -> [N,C/b^2,H*b,W*b], modes DCR (default) and CRD.
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

int64_t block(const ir::Node& node) {
  const int64_t b = node.attr_int("blocksize", 0);
  if (b < 1) fail(node.where() + ": attribute 'blocksize' must be positive");
  return b;
}

bool crd_mode(const ir::Node& node) {
  const std::string m = node.attr_string("mode", "DCR");
  if (m != "DCR" && m != "CRD") fail(node.where() + ": unknown mode '" + m + "'");
  return m == "CRD";
}

std::vector<ir::Dim> out_dims(const std::vector<ir::Dim>& in, const ir::Node& node) {
  if (in.size() != 4) fail(node.where() + ": input must be 4-D, got " + ir::dims_str(in));
  const int64_t b = block(node);
  ir::Dim ch{};
  if (in[1].is_static()) {
    if (in[1].value % (b * b) != 0)
      fail(node.where() + ": channels " + std::to_string(in[1].value) + " not divisible by blocksize^2");
    ch = ir::Dim{in[1].value / (b * b), ""};
  }
  return {in[0], ch, dim_mul(in[2], b), dim_mul(in[3], b)};
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  crd_mode(c.node);
  c.out(0) = x.has_shape ? make_type(x.dtype, out_dims(x.dims, c.node)) : make_type(x.dtype, unknown_dims(4));
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  const Shape out = shape_of(out_dims(dims_of(x.shape()), c.node));
  const int64_t b = block(c.node), n = x.shape()[0], h = x.shape()[2], w = x.shape()[3];
  const int64_t ch = out[1];
  Tensor t;
  if (crd_mode(c.node)) {
    t = transpose_tensor(x.reshaped({n, ch, b, b, h, w}), {0, 1, 4, 2, 5, 3});
  } else {
    t = transpose_tensor(x.reshaped({n, b, b, ch, h, w}), {0, 3, 4, 1, 5, 2});
  }
  c.outputs[0] = t.reshaped(out);
}

}  // namespace

extern const OpDef kOpDepthToSpace;
const OpDef kOpDepthToSpace{"DepthToSpace", "", 1, 1, infer, run, data_movement_cost};

}  // namespace joule::ops
