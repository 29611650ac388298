#include "joule/ops/sequence_util.h"

#include <cstring>

namespace joule::ops::seq {

namespace {
[[noreturn]] void wrong_kind(const ir::Node& n, size_t i, const char* want, const std::string& got) {
  fail(n.where() + ": input " + std::to_string(i) + " must be a " + want + ", got " + got);
}
}  // namespace

const ir::TensorType& sequence_input(const InferContext& c, size_t i) {
  const ir::TensorType& t = c.in(i);
  if (t.kind != ValueKind::Sequence) wrong_kind(c.node, i, "sequence", t.str());
  return t;
}

const ir::TensorType& tensor_input(const InferContext& c, size_t i) {
  const ir::TensorType& t = c.in(i);
  if (!t.is_tensor()) wrong_kind(c.node, i, "tensor", t.str());
  return t;
}

const Tensor& sequence_value(const KernelContext& c, size_t i) {
  const Tensor& t = c.in(i);
  if (t.kind() != ValueKind::Sequence) wrong_kind(c.node, i, "sequence", t.describe());
  return t;
}

ir::TensorType merge_items(const std::vector<const ir::TensorType*>& items) {
  ir::TensorType r;
  if (items.empty()) return r;
  r = *items[0];
  r.kind = ValueKind::Tensor;
  r.held = ValueKind::Tensor;
  for (const ir::TensorType* t : items) {
    if (!r.has_shape) break;
    if (!t->has_shape || t->dims.size() != r.dims.size()) {
      r.has_shape = false;
      r.dims.clear();
      break;
    }
    for (size_t d = 0; d < r.dims.size(); ++d)
      if (!(t->dims[d] == r.dims[d])) r.dims[d] = ir::Dim{};
  }
  return r;
}

int64_t position(const KernelContext& c, size_t i, int64_t n, bool end_ok) {
  const Tensor& p = c.in(i);
  if (!p.is_tensor() || p.numel() != 1 || (p.dtype() != DType::Int32 && p.dtype() != DType::Int64))
    fail(c.node.where() + ": the position must be an int32 or int64 scalar, got " + p.describe());
  const int64_t v = p.value_as_int(0);
  const int64_t hi = end_ok ? n : n - 1;
  if (v < -n || v > hi)
    fail(c.node.where() + ": position " + std::to_string(v) + " is outside [" + std::to_string(-n) + ", " +
         std::to_string(hi) + "] for a sequence of " + std::to_string(n));
  return v < 0 ? v + n : v;
}


void require_numeric(const ir::Node& n, DType t) {
  if (t == DType::String) fail_unsupported(n.where() + ": string tensors are not supported by this op");
}

namespace {
// Elements before `axis` and bytes of one step along it.
std::pair<int64_t, size_t> outer_and_inner(const Shape& s, int64_t axis, size_t elem) {
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[static_cast<size_t>(d)];
  size_t inner = elem;
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) inner *= static_cast<size_t>(s[d]);
  return {outer, inner};
}
}  // namespace

Tensor slice_axis(const Tensor& x, int64_t axis, int64_t start, int64_t len) {
  Shape out = x.shape();
  const int64_t n = out[static_cast<size_t>(axis)];
  out[static_cast<size_t>(axis)] = len;
  Tensor r(x.dtype(), out);
  const auto [outer, inner] = outer_and_inner(x.shape(), axis, dtype_size(x.dtype()));
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(r.raw());
  const size_t block = inner * static_cast<size_t>(len);
  for (int64_t o = 0; o < outer && block; ++o)
    std::memcpy(dst + static_cast<size_t>(o) * block, src + (static_cast<size_t>(o * n + start)) * inner, block);
  return r;
}

Tensor join(const std::vector<Tensor>& parts, int64_t axis, bool new_axis, const std::string& where) {
  if (parts.empty()) fail(where + ": cannot concatenate an empty sequence");
  const Shape& first = parts[0].shape();
  const int64_t rank = static_cast<int64_t>(first.size()) + (new_axis ? 1 : 0);
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank || (!new_axis && first.empty()))
    fail(where + ": axis " + std::to_string(axis) + " is out of range for " + parts[0].describe());
  std::vector<Tensor> views;  // each part with the join axis present
  int64_t total = 0;
  for (const Tensor& p : parts) {
    Shape s = p.shape();
    if (new_axis) s.insert(s.begin() + a, 1);
    Shape want = views.empty() ? s : views[0].shape();
    bool same = s.size() == want.size();
    for (size_t d = 0; same && d < s.size(); ++d)
      if (static_cast<int64_t>(d) != a && s[d] != want[d]) same = false;
    if (!same || p.dtype() != parts[0].dtype())
      fail(where + ": cannot join " + p.describe() + " with " + parts[0].describe() + " along axis " + std::to_string(axis));
    total += s[static_cast<size_t>(a)];
    views.push_back(p.reshaped(s));
  }
  Shape out = views[0].shape();
  out[static_cast<size_t>(a)] = total;
  Tensor r(parts[0].dtype(), out);
  const auto [outer, inner] = outer_and_inner(out, a, dtype_size(r.dtype()));
  auto* dst = static_cast<std::byte*>(r.raw());
  const size_t row = inner * static_cast<size_t>(total);
  size_t offset = 0;
  for (const Tensor& v : views) {
    const size_t block = inner * static_cast<size_t>(v.shape()[static_cast<size_t>(a)]);
    const auto* src = static_cast<const std::byte*>(v.raw());
    for (int64_t o = 0; o < outer && block; ++o)
      std::memcpy(dst + static_cast<size_t>(o) * row + offset, src + static_cast<size_t>(o) * block, block);
    offset += block;
  }
  return r;
}

}  // namespace joule::ops::seq
