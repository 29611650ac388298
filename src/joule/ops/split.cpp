// Split: sizes from the `split` attribute (opset < 13) or input (13+); otherwise equal parts
// by number of outputs (opset 18: `num_outputs`, uneven last chunk allowed).
#include <algorithm>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

size_t output_count(const ir::Node& node, int64_t opset) {
  if (opset >= 18 && node.has_attr("num_outputs")) {
    int64_t n = node.attr_int("num_outputs", 0);
    if (n < 1) fail(node.where() + ": num_outputs must be positive");
    if (static_cast<size_t>(n) != node.outputs.size())
      fail(node.where() + ": num_outputs " + std::to_string(n) + " but node has " +
           std::to_string(node.outputs.size()) + " outputs");
    return static_cast<size_t>(n);
  }
  return node.outputs.size();
}

// Equal split of `dim` into n parts.
std::vector<int64_t> equal_split(int64_t dim, size_t n, int64_t opset, const ir::Node& node) {
  const int64_t k = static_cast<int64_t>(n);
  std::vector<int64_t> sizes(n);
  if (dim % k == 0) {
    std::fill(sizes.begin(), sizes.end(), dim / k);
  } else if (opset >= 18) {
    const int64_t chunk = (dim + k - 1) / k;
    int64_t left = dim;
    for (auto& s : sizes) {
      s = std::min(chunk, left);
      left -= s;
    }
  } else {
    fail(node.where() + ": dimension " + std::to_string(dim) + " cannot be split evenly into " +
         std::to_string(n) + " outputs");
  }
  return sizes;
}

// Output axis sizes (empty when unknown). `dim` < 0: unknown.
std::vector<int64_t> split_sizes(const std::optional<std::vector<int64_t>>& split, int64_t dim,
                                 int64_t opset, const ir::Node& node) {
  const size_t n = output_count(node, opset);
  if (split) {
    if (split->size() != n)
      fail(node.where() + ": split has " + std::to_string(split->size()) + " entries for " +
           std::to_string(n) + " outputs");
    int64_t sum = 0;
    for (int64_t s : *split) {
      if (s < 0) fail(node.where() + ": negative split size");
      sum += s;
    }
    if (dim >= 0 && sum != dim)
      fail(node.where() + ": split sizes sum to " + std::to_string(sum) + ", dimension is " +
           std::to_string(dim));
    return *split;
  }
  if (dim < 0) return {};
  return equal_split(dim, n, opset, node);
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  std::optional<std::vector<int64_t>> split;
  bool split_unknown = false;
  if (c.opset < 13) {
    if (c.node.has_attr("split")) split = c.node.attr_ints("split");
  } else if (c.has(1)) {
    split = known_ints(c, 1);
    split_unknown = !split;
  }
  for (size_t i = 0; i < c.output_types.size(); ++i) {
    if (!x.has_shape) c.out(i) = unknown_rank(x.dtype);
  }
  if (!x.has_shape) return;
  const size_t axis =
      static_cast<size_t>(normalize_axis(c.node.attr_int("axis", 0), rank_of(x), c.node));
  const ir::Dim& d = x.dims[axis];
  std::vector<int64_t> sizes;
  if (!split_unknown) sizes = split_sizes(split, d.is_static() ? d.value : -1, c.opset, c.node);
  for (size_t i = 0; i < c.output_types.size(); ++i) {
    auto dims = x.dims;
    dims[axis] = i < sizes.size() ? ir::Dim{sizes[i], ""} : ir::Dim{};
    c.out(i) = make_type(x.dtype, dims);
  }
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  const size_t axis = static_cast<size_t>(normalize_axis(c.node.attr_int("axis", 0), x.rank(), c.node));
  std::optional<std::vector<int64_t>> split;
  if (c.opset < 13) {
    if (c.node.has_attr("split")) split = c.node.attr_ints("split");
  } else if (c.has(1)) {
    split = c.in(1).to_int_vector();
  }
  const auto sizes = split_sizes(split, x.shape()[axis], c.opset, c.node);
  const auto strides = shape_strides(x.shape());
  int64_t start = 0;
  for (size_t i = 0; i < sizes.size() && i < c.outputs.size(); ++i) {
    Shape s = x.shape();
    s[axis] = sizes[i];
    c.outputs[i] = strided_copy(x, s, strides, start * strides[axis]);
    start += sizes[i];
  }
}

}  // namespace

extern const OpDef kOpSplit;
const OpDef kOpSplit{"Split", "", 1, 2, infer, run, data_movement_cost};

}  // namespace joule::ops
