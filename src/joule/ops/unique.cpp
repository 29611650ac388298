// Unique: the distinct elements of X (flattened), or with `axis` the distinct slices along it,
// compared lexicographically. Outputs Y, and optionally indices (first occurrence of each in X),
// inverse_indices (for each element or slice of X, its position in Y) and counts, all int64.
// `sorted` (default 1): ascending order (NaN after every number, NaNs equal to each other);
// 0: order of first occurrence. The number of distinct values is only known when the kernel
// runs, so inference leaves that dimension unknown (as NonZero does).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  const bool has_axis = c.node.has_attr("axis");
  ir::Dim slices;  // elements (no axis) or slices along the axis
  if (!has_axis) {
    c.out(0) = make_type(x.dtype, {ir::Dim{}});
    if (x.has_shape) slices = dims_product(x.dims, 0, x.dims.size());
  } else if (x.has_shape) {
    const int64_t a = normalize_axis(c.node.attr_int("axis", 0), rank_of(x), c.node);
    std::vector<ir::Dim> dims = x.dims;
    slices = dims[static_cast<size_t>(a)];
    dims[static_cast<size_t>(a)] = ir::Dim{};
    c.out(0) = make_type(x.dtype, dims);
  } else {
    c.out(0) = unknown_rank(x.dtype);
  }
  if (c.output_types.size() > 1) c.out(1) = make_type(DType::Int64, {ir::Dim{}});
  if (c.output_types.size() > 2) c.out(2) = make_type(DType::Int64, {slices});
  if (c.output_types.size() > 3) c.out(3) = make_type(DType::Int64, {ir::Dim{}});
}

// Three-way comparison of slices a and b of X viewed as [outer, S, inner].
template <class T>
int compare_slices(const T* x, int64_t a, int64_t b, int64_t outer, int64_t S, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const auto va = x[(o * S + a) * inner + i], vb = x[(o * S + b) * inner + i];
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> || std::is_floating_point_v<T>) {
        const double da = static_cast<float>(va), db = static_cast<float>(vb);
        const bool na = std::isnan(da), nb = std::isnan(db);
        if (na || nb) {
          if (na != nb) return na ? 1 : -1;
          continue;
        }
        if (da != db) return da < db ? -1 : 1;
      } else {
        if (va != vb) return va < vb ? -1 : 1;
      }
    }
  return 0;
}

void run(KernelContext& c) {
  const Tensor& X = c.in(0);
  const bool has_axis = c.node.has_attr("axis");
  const int64_t a = has_axis ? normalize_axis(c.node.attr_int("axis", 0), X.rank(), c.node) : 0;
  int64_t outer = 1, S = X.numel(), inner = 1;
  if (has_axis) {
    S = X.dim(static_cast<int>(a));
    for (int d = 0; d < X.rank(); ++d) {
      if (d < a) outer *= X.dim(d);
      if (d > a) inner *= X.dim(d);
    }
  }
  // Slices in ascending order (stable: equal slices keep their order, so a group's first
  // member is its first occurrence), then grouped.
  std::vector<int64_t> order(static_cast<size_t>(S));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::vector<int64_t> first, counts, inverse(static_cast<size_t>(S));
  visit_dtype(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    auto cmp = [&](int64_t p, int64_t q) { return compare_slices(x, p, q, outer, S, inner); };
    std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) { return cmp(p, q) < 0; });
    for (size_t k = 0; k < order.size(); ++k) {
      if (k == 0 || cmp(order[k - 1], order[k]) != 0) {
        first.push_back(order[k]);
        counts.push_back(0);
      }
      ++counts.back();
      inverse[static_cast<size_t>(order[k])] = static_cast<int64_t>(first.size()) - 1;
    }
  });
  const int64_t U = static_cast<int64_t>(first.size());
  std::vector<int64_t> pos(static_cast<size_t>(U));  // output position of each sorted group
  std::iota(pos.begin(), pos.end(), int64_t{0});
  if (c.node.attr_int("sorted", 1) == 0) {
    std::vector<int64_t> by_first(static_cast<size_t>(U));
    std::iota(by_first.begin(), by_first.end(), int64_t{0});
    std::sort(by_first.begin(), by_first.end(), [&](int64_t p, int64_t q) { return first[static_cast<size_t>(p)] < first[static_cast<size_t>(q)]; });
    for (int64_t k = 0; k < U; ++k) pos[static_cast<size_t>(by_first[static_cast<size_t>(k)])] = k;
  }
  std::vector<int64_t> out_first(static_cast<size_t>(U)), out_counts(static_cast<size_t>(U));
  for (int64_t g = 0; g < U; ++g) {
    out_first[static_cast<size_t>(pos[static_cast<size_t>(g)])] = first[static_cast<size_t>(g)];
    out_counts[static_cast<size_t>(pos[static_cast<size_t>(g)])] = counts[static_cast<size_t>(g)];
  }
  for (int64_t& v : inverse) v = pos[static_cast<size_t>(v)];
  Shape ys = has_axis ? X.shape() : Shape{U};
  if (has_axis) ys[static_cast<size_t>(a)] = U;
  Tensor Y(X.dtype(), ys);
  visit_elem_bytes(X.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* x = static_cast<const E*>(X.raw());
    E* y = static_cast<E*>(Y.raw());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t u = 0; u < U; ++u)
        std::copy_n(x + (o * S + out_first[static_cast<size_t>(u)]) * inner, inner, y + (o * U + u) * inner);
  });
  c.outputs[0] = Y;
  if (c.outputs.size() > 1) c.outputs[1] = Tensor::from_vector(out_first, {U});
  if (c.outputs.size() > 2) c.outputs[2] = Tensor::from_vector(inverse, {S});
  if (c.outputs.size() > 3) c.outputs[3] = Tensor::from_vector(out_counts, {U});
}

}  // namespace

extern const OpDef kOpUnique;
const OpDef kOpUnique{"Unique", "", 1, 1, infer, run, data_movement_cost};

}  // namespace joule::ops
