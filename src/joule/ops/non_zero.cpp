// NonZero: int64 [rank, count] of the indices of non-zero elements, in row-major order.
#include <type_traits>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  c.out(0) = make_type(DType::Int64, {x.has_shape ? ir::Dim{rank_of(x), ""} : ir::Dim{}, ir::Dim{}});
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> flat;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = x.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      bool nz;
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) nz = static_cast<float>(p[i]) != 0.f;
      else nz = p[i] != T(0);
      if (nz) flat.push_back(i);
    }
  });
  const int64_t r = x.rank(), n = static_cast<int64_t>(flat.size());
  Tensor out(DType::Int64, {r, n});
  int64_t* o = out.data<int64_t>();
  const auto strides = shape_strides(x.shape());
  for (int64_t j = 0; j < n; ++j) {
    int64_t rem = flat[static_cast<size_t>(j)];
    for (int64_t d = 0; d < r; ++d) {
      const int64_t q = rem / strides[static_cast<size_t>(d)];
      rem -= q * strides[static_cast<size_t>(d)];
      o[d * n + j] = q;
    }
  }
  c.outputs[0] = out;
}

}  // namespace

extern const OpDef kOpNonZero;
const OpDef kOpNonZero{"NonZero", "", 1, 1, infer, run, data_movement_cost};

}  // namespace joule::ops
