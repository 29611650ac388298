// Transpose: perm attribute (default: reverse the axes).
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

std::vector<int64_t> get_perm(const ir::Node& node, size_t rank) {
  std::vector<int64_t> perm = node.attr_ints("perm");
  if (!node.has_attr("perm")) {
    perm.resize(rank);
    for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
    return perm;
  }
  if (perm.size() != rank)
    fail(node.where() + ": perm has " + std::to_string(perm.size()) + " entries for rank " +
         std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (auto& p : perm) {
    p = normalize_axis(p, static_cast<int64_t>(rank), node);
    if (seen[static_cast<size_t>(p)]) fail(node.where() + ": perm is not a permutation");
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (!x.has_shape) {
    const auto perm = c.node.attr_ints("perm");
    c.out(0) = c.node.has_attr("perm") ? make_type(x.dtype, unknown_dims(perm.size()))
                                       : unknown_rank(x.dtype);
    return;
  }
  const auto perm = get_perm(c.node, x.dims.size());
  std::vector<ir::Dim> dims;
  for (int64_t p : perm) dims.push_back(x.dims[static_cast<size_t>(p)]);
  c.out(0) = make_type(x.dtype, dims);
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  c.outputs[0] = transpose_reference(x, get_perm(c.node, x.shape().size()));  // fast: kernels/eltwise/movement.cpp
}

}  // namespace

extern const OpDef kOpTranspose;
const OpDef kOpTranspose{"Transpose", "", 1, 1, infer, run, data_movement_cost};

}  // namespace joule::ops
