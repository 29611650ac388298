// ReverseSequence: for each batch b, reverses the first sequence_lens[b] steps along time_axis.
#include <cstring>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

std::pair<size_t, size_t> axes(const ir::Node& node) {
  const int64_t t = node.attr_int("time_axis", 0), b = node.attr_int("batch_axis", 1);
  if (!((t == 0 && b == 1) || (t == 1 && b == 0)))
    fail(node.where() + ": time_axis and batch_axis must be 0 and 1 in some order");
  return {static_cast<size_t>(t), static_cast<size_t>(b)};
}

void infer(InferContext& c) {
  axes(c.node);
  if (c.in(0).has_shape && c.in(0).dims.size() < 2) fail(c.node.where() + ": input must have rank >= 2");
  infer_same_as_input(c);
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  if (x.rank() < 2) fail(c.node.where() + ": input must have rank >= 2");
  auto [ta, ba] = axes(c.node);
  const auto lens = index_values(c.in(1), c.node, "sequence_lens");
  const int64_t steps = x.shape()[ta], batch = x.shape()[ba];
  if (static_cast<int64_t>(lens.size()) != batch)
    fail(c.node.where() + ": sequence_lens must have one entry per batch");
  const auto strides = shape_strides(x.shape());
  const int64_t inner = strides[1];  // elements per (axis0, axis1) cell
  const size_t row = static_cast<size_t>(inner) * dtype_size(x.dtype());
  Tensor out(x.dtype(), x.shape());
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = lens[static_cast<size_t>(b)];
    if (len < 0 || len > steps) fail(c.node.where() + ": sequence length out of range");
    for (int64_t t = 0; t < steps; ++t) {
      const int64_t st = t < len ? len - 1 - t : t;
      auto cell = [&, ta = ta](int64_t time) {  // (clang 14 cannot capture a structured binding)
        return static_cast<size_t>(ta == 0 ? time * strides[0] + b * strides[1]
                                           : b * strides[0] + time * strides[1]);
      };
      std::memcpy(dst + cell(t) * dtype_size(x.dtype()), src + cell(st) * dtype_size(x.dtype()), row);
    }
  }
  c.outputs[0] = out;
}

}  // namespace

extern const OpDef kOpReverseSequence;
const OpDef kOpReverseSequence{"ReverseSequence", "", 2, 2, infer, run, data_movement_cost};

}  // namespace joule::ops
