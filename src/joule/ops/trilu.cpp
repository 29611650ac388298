// Trilu: keeps the upper (upper=1, j - i >= k) or lower (j - i <= k) triangle of the last two
// dims; k from the optional input.
#include <algorithm>
#include <cstring>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (x.has_shape && x.dims.size() < 2) fail(c.node.where() + ": input must have rank >= 2");
  infer_same_as_input(c);
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  if (x.rank() < 2) fail(c.node.where() + ": input must have rank >= 2");
  const bool upper = c.node.attr_int("upper", 1) != 0;
  const int64_t rows = x.dim(-2), cols = x.dim(-1);
  int64_t k = c.has(1) ? c.in(1).value_as_int(0) : 0;
  k = std::clamp<int64_t>(k, -(rows + cols), rows + cols);  // beyond that all or nothing is kept
  const int64_t mats = rows * cols != 0 ? x.numel() / (rows * cols) : 0;
  Tensor out(x.dtype(), x.shape());  // zero-initialised: zero bytes are 0 for every dtype
  const size_t es = dtype_size(x.dtype());
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i) {
      // kept columns: upper j >= i + k, lower j <= i + k
      int64_t lo = upper ? std::max<int64_t>(0, i + k) : 0;
      int64_t hi = upper ? cols : std::min<int64_t>(cols, i + k + 1);
      if (hi <= lo) continue;
      const size_t off = static_cast<size_t>((m * rows + i) * cols + lo) * es;
      std::memcpy(dst + off, src + off, static_cast<size_t>(hi - lo) * es);
    }
  c.outputs[0] = out;
}

}  // namespace

extern const OpDef kOpTrilu;
const OpDef kOpTrilu{"Trilu", "", 1, 2, infer, run, data_movement_cost};

}  // namespace joule::ops
