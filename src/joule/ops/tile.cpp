// Tile: out dim d = in dim d * repeats[d]; out[o] = in[o mod in.shape].
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

std::vector<ir::Dim> tile_dims(const std::vector<ir::Dim>& in, const std::vector<int64_t>& reps,
                               const ir::Node& node) {
  if (reps.size() != in.size())
    fail(node.where() + ": repeats has " + std::to_string(reps.size()) + " values for rank " +
         std::to_string(in.size()));
  std::vector<ir::Dim> out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reps[d] < 0) fail(node.where() + ": negative repeat");
    out.push_back(dim_mul(in[d], reps[d]));
  }
  return out;
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (!x.has_shape) {
    c.out(0) = unknown_rank(x.dtype);
    return;
  }
  auto reps = known_ints(c, 1);
  c.out(0) = make_type(x.dtype, reps ? tile_dims(x.dims, *reps, c.node) : unknown_dims(x.dims.size()));
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  const Shape out = shape_of(tile_dims(dims_of(x.shape()), c.in(1).to_int_vector(), c.node));
  checked_nbytes(x.dtype(), out, c.node.where());  // before the index maps, which are as long as the output's dims
  std::vector<std::vector<int64_t>> maps(out.size());
  for (size_t d = 0; d < out.size(); ++d) {
    maps[d].resize(static_cast<size_t>(out[d]));
    for (int64_t o = 0; o < out[d]; ++o) maps[d][static_cast<size_t>(o)] = o % x.shape()[d];
  }
  c.outputs[0] = mapped_copy(x, out, maps);
}

}  // namespace

extern const OpDef kOpTile;
const OpDef kOpTile{"Tile", "", 2, 2, infer, run, data_movement_cost};

}  // namespace joule::ops
