#include "joule/ops/elementwise_util.h"

namespace joule::ops {

namespace {

template <class Ctx>
void check_same_dtype_impl(const Ctx& c, DType (*dtype_of_input)(const Ctx&, size_t), size_t first,
                           size_t last) {
  DType want = DType::Undefined;
  for (size_t i = first; i < last; ++i) {
    if (!c.has(i)) continue;
    DType t = dtype_of_input(c, i);
    if (t == DType::Undefined) continue;
    if (want == DType::Undefined)
      want = t;
    else if (t != want)
      fail(c.node.where() + ": inputs must have the same dtype, got " + dtype_name(want) + " and " +
           dtype_name(t));
  }
}
}  // namespace

Cost transcendental_cost(const CostContext& c) {
  Cost r;
  for (size_t i = 0; i < c.out.size(); ++i) {
    double n = static_cast<double>(shape_numel(c.out[i]));
    r.flops += n * kTranscendentalFlops;
    r.bytes += n * static_cast<double>(dtype_size(c.out_types[i]));
  }
  for (size_t i = 0; i < c.in.size(); ++i)
    r.bytes +=
        static_cast<double>(shape_numel(c.in[i])) * static_cast<double>(dtype_size(c.in_types[i]));
  return r;
}

void check_same_dtype(const InferContext& c, size_t first, size_t last) {
  check_same_dtype_impl<InferContext>(
      c, [](const InferContext& x, size_t i) { return x.input_types[i]->dtype; }, first, last);
}

void check_same_dtype(const KernelContext& c, size_t first, size_t last) {
  check_same_dtype_impl<KernelContext>(
      c, [](const KernelContext& x, size_t i) { return x.inputs[i]->dtype(); }, first, last);
}

namespace {
// Number of trailing 1s to append to B (rank_b) so it aligns with A (rank_a) at `axis`;
// -1 when legacy broadcasting does not apply.
int64_t legacy_padding(const ir::Node& n, int64_t opset, size_t rank_a, size_t rank_b) {
  if (opset >= 7 || n.attr_int("broadcast", 0) == 0 || !n.has_attr("axis")) return -1;
  const int64_t ra = static_cast<int64_t>(rank_a), rb = static_cast<int64_t>(rank_b);
  int64_t axis = n.attr_int("axis", 0);
  if (axis < 0) axis += ra;
  if (axis < 0 || axis + rb > ra)
    fail(n.where() + ": legacy broadcast axis " + std::to_string(n.attr_int("axis", 0)) +
         " does not fit B of rank " + std::to_string(rb) + " into A of rank " + std::to_string(ra));
  return ra - axis - rb;
}
}  // namespace

Shape legacy_broadcast_shape(const ir::Node& n, int64_t opset, size_t rank_a, const Shape& b) {
  int64_t pad = legacy_padding(n, opset, rank_a, b.size());
  if (pad <= 0) return b;
  Shape r = b;
  r.insert(r.end(), static_cast<size_t>(pad), 1);
  return r;
}

ir::TensorType legacy_broadcast_type(const ir::Node& n, int64_t opset, const ir::TensorType& a,
                                     const ir::TensorType& b) {
  if (!a.has_shape || !b.has_shape) return b;
  int64_t pad = legacy_padding(n, opset, a.dims.size(), b.dims.size());
  if (pad <= 0) return b;
  ir::TensorType r = b;
  r.dims.insert(r.dims.end(), static_cast<size_t>(pad), ir::Dim{1, ""});
  return r;
}

BroadcastLoop::BroadcastLoop(const Shape& out, const std::vector<Shape>& ins) {
  const size_t k = ins.size(), rank = out.size();
  numel_ = shape_numel(out);
  inner_stride_.assign(k, 0);
  // per output dimension (size > 1 only): size and each input's element stride
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides;
  std::vector<std::vector<int64_t>> in_strides(k);
  for (size_t j = 0; j < k; ++j) in_strides[j] = shape_strides(ins[j]);
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    std::vector<int64_t> st(k, 0);
    for (size_t j = 0; j < k; ++j) {
      const size_t off = rank - ins[j].size();
      if (d >= off && ins[j][d - off] != 1) st[j] = in_strides[j][d - off];
    }
    // merge into the previous (outer) dimension when every input continues linearly
    bool merge = !sizes.empty();
    for (size_t j = 0; j < k && merge; ++j) merge = strides.back()[j] == st[j] * out[d];
    if (merge) {
      sizes.back() *= out[d];
      strides.back() = st;
    } else {
      sizes.push_back(out[d]);
      strides.push_back(st);
    }
  }
  if (sizes.empty()) return;  // a single element: one row of length 1
  row_ = sizes.back();
  inner_stride_ = strides.back();
  sizes.pop_back();
  strides.pop_back();
  sizes_ = std::move(sizes);
  strides_ = std::move(strides);
}

}  // namespace joule::ops
