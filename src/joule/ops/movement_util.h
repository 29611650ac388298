#pragma once
// Helpers shared by the data-movement ops (Reshape, Transpose, Slice, Pad, Gather, ...).
// These ops work for every dtype: elements are copied as opaque words of dtype_size bytes.
#include <optional>
#include <string>
#include <vector>

#include "joule/ops/util.h"

namespace joule::ops::movement {

// Calls fn(TypeTag<U>{}) with an unsigned integer type as wide as one element of `t`.
template <class Fn>
decltype(auto) visit_elem_bytes(DType t, Fn&& fn) {
  switch (dtype_size(t)) {
    case 1: return fn(TypeTag<uint8_t>{});
    case 2: return fn(TypeTag<uint16_t>{});
    case 4: return fn(TypeTag<uint32_t>{});
    case 8: return fn(TypeTag<uint64_t>{});
    default: break;
  }
  fail_internal(std::string("visit_elem_bytes: dtype ") + dtype_name(t));
}

// ---- inference helpers ----
std::vector<ir::Dim> dims_of(const Shape& s);
// All dims must be static (internal error otherwise).
Shape shape_of(const std::vector<ir::Dim>& dims);
ir::TensorType make_type(DType t, std::vector<ir::Dim> dims);
ir::TensorType unknown_rank(DType t);
// Dims [n unknown].
std::vector<ir::Dim> unknown_dims(size_t n);
// Value of input i as int64 list when it is a known constant; nullopt when absent or unknown.
std::optional<std::vector<int64_t>> known_ints(const InferContext& c, size_t i);
// Number of elements of a 1-D input whose length is static (e.g. a shape input); -1 otherwise.
int64_t static_length(const InferContext& c, size_t i);
// Product of dims[begin, end): static, a lone symbol (with static 1s), or unknown.
ir::Dim dims_product(const std::vector<ir::Dim>& dims, size_t begin, size_t end);
// Dim arithmetic that keeps static values and otherwise gives unknown.
ir::Dim dim_mul(const ir::Dim& d, int64_t k);
// The axis orders of channels_last ops (QConv, FusedConv with `channels_last`): N,H,W,C.
inline const std::vector<int64_t> kNchwToNhwc{0, 2, 3, 1}, kNhwcToNchw{0, 3, 1, 2};
// The type with its dims permuted: out.dims[d] = t.dims[perm[d]] (unchanged when t has no
// shape of that rank).
ir::TensorType permute_type(const ir::TensorType& t, const std::vector<int64_t>& perm);
// Rank of a type that must have a shape at run time (for kernels, always known).
inline int64_t rank_of(const ir::TensorType& t) { return static_cast<int64_t>(t.dims.size()); }

// Slice along one axis of size dim (ONNX semantics: negative indices, clamping, negative
// steps): the first index taken and how many.
struct AxisSlice {
  int64_t start = 0, count = 0;
};
AxisSlice slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step);

// Slice's parameters. normalize_slice_params fills the defaults (axes 0.., steps 1) and
// normalises the axes against rank r; BadInput for lengths that differ, a repeated axis or a
// zero step.
struct SliceParams {
  std::vector<int64_t> starts, ends, axes, steps;
};
void normalize_slice_params(SliceParams& p, int64_t r, const ir::Node& node);
// A slice (normalised parameters) as a view of an input of shape `in`: output element o is
// input element offset + sum_d o_d * strides[d] (the Slice kernels, Slice's gradient).
struct SliceView {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};
SliceView slice_view(const Shape& in, const SliceParams& p);

// ---- kernel helpers ----
// out[o] = in[offset + sum_d o_d * strides[d]] (strides in elements, may be 0 or negative).
Tensor strided_copy(const Tensor& in, const Shape& out_shape, const std::vector<int64_t>& strides,
                    int64_t offset);
// The same into `out` (of out_shape's size and in's dtype).
void strided_copy_into(const Tensor& in, const Shape& out_shape, const std::vector<int64_t>& strides, int64_t offset,
                       Tensor& out);
// Permutes the axes of x: out.shape[d] = x.shape[perm[d]]. Batches of 2-D transposes in 16 x 16
// tiles (4 x 4 blocks of 4-byte elements through SSE2 registers); transpose_into writes into
// `out` (its shape already the permuted one) and splits large tensors over `pool` (may be null).
Tensor transpose_tensor(const Tensor& x, const std::vector<int64_t>& perm);
void transpose_into(const Tensor& x, const std::vector<int64_t>& perm, Tensor& out, ThreadPool* pool);
Shape permuted_shape(const Shape& s, const std::vector<int64_t>& perm);
// The Transpose op's reference kernel: one strided element copy per output element.
Tensor transpose_reference(const Tensor& x, const std::vector<int64_t>& perm);
// Same rank: out[o_0..o_r-1] = in[maps[0][o_0], ..., maps[r-1][o_r-1]]; when any map entry
// is -1 the element is `fill` (a one-element tensor of in's dtype; zero when null).
Tensor mapped_copy(const Tensor& in, const Shape& out_shape,
                   const std::vector<std::vector<int64_t>>& maps, const Tensor* fill = nullptr);
// Index tensor (int32/int64) as int64 values; throws BadInput for other dtypes.
std::vector<int64_t> index_values(const Tensor& t, const ir::Node& node, const char* what);
// Normalises a possibly negative index into [0, dim); throws BadInput naming the node otherwise.
int64_t normalize_index(int64_t i, int64_t dim, const ir::Node& node);
// ONNX TensorProto.DataType code -> DType; fail_unsupported for types joule lacks.
DType dtype_from_onnx(int64_t code, const ir::Node& node);
// A tensor of `shape` with every element equal to value's element 0.
Tensor filled(const Tensor& value, const Shape& shape);
// Reads a scalar attribute tensor's element 0 into a one-element tensor (for fills).
Tensor one_element(const Tensor& t);

// ---- scatter helpers (ScatterND, ScatterElements) ----
enum class Reduction { None, Add, Mul, Max, Min };
// The `reduction` attribute (opset 16+: none/add/mul, 18+: max/min); BadInput when unknown.
Reduction parse_reduction(const ir::Node& node, int64_t opset);
// For each k: out[dst_offsets[k] + j] (op)= updates[k * slice + j], j < slice, in order.
void scatter_slices(Tensor& out, const Tensor& updates, const std::vector<int64_t>& dst_offsets,
                    int64_t slice, Reduction r, const ir::Node& node);

}  // namespace joule::ops::movement
