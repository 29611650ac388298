// Concat: joins inputs along `axis` (negative allowed); all inputs share rank and other dims.
#include <cstring>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

// Output type of concatenating `ins` (unknown-rank inputs give unknown dims where needed).
ir::TensorType concat_type(const std::vector<const ir::TensorType*>& ins, const ir::Node& node) {
  if (ins.empty()) fail(node.where() + ": needs at least one input");
  const DType dtype = ins[0]->dtype;
  const ir::TensorType* ranked = nullptr;
  for (auto* t : ins) {
    if (t->dtype != dtype)
      fail(node.where() + ": inputs have different dtypes " + dtype_name(dtype) + " and " +
           dtype_name(t->dtype));
    if (t->has_shape && !ranked) ranked = t;
  }
  if (!ranked) return unknown_rank(dtype);
  const int64_t r = rank_of(*ranked);
  if (!node.has_attr("axis")) fail(node.where() + ": attribute 'axis' is required");
  const size_t axis = static_cast<size_t>(normalize_axis(node.attr_int("axis", 0), r, node));
  std::vector<ir::Dim> dims = ranked->dims;
  int64_t sum = 0;
  bool sum_known = true;
  for (auto* t : ins) {
    if (!t->has_shape) {
      sum_known = false;
      continue;
    }
    if (rank_of(*t) != r)
      fail(node.where() + ": inputs have different ranks " + ir::dims_str(ranked->dims) + " and " +
           ir::dims_str(t->dims));
    for (size_t d = 0; d < dims.size(); ++d) {
      const ir::Dim& td = t->dims[d];
      if (d == axis) {
        if (td.is_static()) sum += td.value;
        else sum_known = false;
        continue;
      }
      if (td.is_static() && dims[d].is_static() && td.value != dims[d].value)
        fail(node.where() + ": input dims differ outside axis: " + ir::dims_str(ranked->dims) +
             " vs " + ir::dims_str(t->dims));
      // dims outside the axis must agree: a static or named dim from any input describes all
      if (td.is_static() || (!dims[d].is_static() && dims[d].param.empty())) dims[d] = td;
    }
  }
  dims[axis] = sum_known ? ir::Dim{sum, ""} : ir::Dim{};
  if (!sum_known && ins.size() == 1) dims[axis] = ranked->dims[axis];
  return make_type(dtype, dims);
}

void infer(InferContext& c) {
  std::vector<const ir::TensorType*> ins;
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.has(i)) ins.push_back(c.input_types[i]);
  c.out(0) = concat_type(ins, c.node);
}

void run(KernelContext& c) {
  std::vector<const Tensor*> xs;
  std::vector<ir::TensorType> types;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.has(i)) {
      xs.push_back(c.inputs[i]);
      types.push_back(ir::TensorType::of(c.inputs[i]->dtype(), c.inputs[i]->shape()));
    }
  std::vector<const ir::TensorType*> tp;
  for (auto& t : types) tp.push_back(&t);
  const Shape out_shape = shape_of(concat_type(tp, c.node).dims);
  Tensor out(xs[0]->dtype(), out_shape);
  const size_t axis = static_cast<size_t>(
      normalize_axis(c.node.attr_int("axis", 0), static_cast<int64_t>(out_shape.size()), c.node));
  const size_t esize = dtype_size(out.dtype());
  int64_t outer = 1;
  for (size_t d = 0; d < axis; ++d) outer *= out_shape[d];
  // bytes of one outer row of each input, and of the output
  std::vector<size_t> row(xs.size());
  size_t out_row = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    int64_t n = 1;
    for (size_t d = axis; d < out_shape.size(); ++d) n *= xs[i]->shape()[d];
    row[i] = static_cast<size_t>(n) * esize;
    out_row += row[i];
  }
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!row[i]) continue;
      std::memcpy(dst, static_cast<const std::byte*>(xs[i]->raw()) + static_cast<size_t>(o) * row[i],
                  row[i]);
      dst += row[i];
    }
  }
  c.outputs[0] = out;
}

}  // namespace

extern const OpDef kOpConcat;
const OpDef kOpConcat{"Concat", "", 1, -1, infer, run, data_movement_cost};

}  // namespace joule::ops
