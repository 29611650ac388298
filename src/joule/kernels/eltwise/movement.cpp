// Data movement as algorithms: the "tiled" Transpose (batches of 2-D transposes in 16 x 16
// tiles, 4 x 4 blocks of 4-byte elements through SSE2 registers: ops::transpose_into), the
// "copy" Concat (one memcpy per input row) and the "copy" Slice (constant starts/ends/axes/
// steps resolved at plan time; the output's trailing dims that are contiguous in the input
// copied as one run per outer index), the "copy" Gather (one memcpy per index and outer row,
// the indices read and checked at every run) and the "alias" view (Reshape, Flatten, Squeeze,
// Unsqueeze: the input's buffer under the shape planned once). All but the view write into the
// planned output buffer and split large tensors over the thread pool. The ops' reference kernels
// copy element by element (Transpose, Slice), are the same memcpy into a fresh tensor (Concat,
// Gather), or alias after parsing the shape at every run (the views).
#include <cstring>

#include "joule/core/error.h"
#include "joule/kernels/eltwise/eltwise.h"
#include "joule/ops/movement_util.h"

namespace joule::kernels {
namespace {

bool onnx_op(const ir::Node& n, const char* type) {
  return (n.domain.empty() || n.domain == "ai.onnx") && n.op_type == type;
}

// ---- Transpose

class TransposeKernel final : public Kernel {
 public:
  explicit TransposeKernel(std::vector<int64_t> perm) : perm_(std::move(perm)) {}
  void run(ops::KernelContext& k) const override {
    const Tensor& x = k.in(0);
    if (static_cast<size_t>(x.rank()) != perm_.size())
      fail(k.node.where() + ": the tiled kernel was prepared for rank " + std::to_string(perm_.size()) + ", got " + x.describe());
    Tensor& y = k.output(0, x.dtype(), ops::movement::permuted_shape(x.shape(), perm_));
    ops::movement::transpose_into(x, perm_, y, k.pool);
  }

 private:
  std::vector<int64_t> perm_;
};

// The permutation at plan time (default: reversed axes); empty when the rank is unknown.
std::vector<int64_t> perm_of(const NodeView& v) {
  if (!v.has(0) || !v.in_types[0]->has_shape) return {};
  const size_t r = v.in_types[0]->dims.size();
  std::vector<int64_t> p = v.node.attr_ints("perm");
  if (!v.node.has_attr("perm"))
    for (size_t d = 0; d < r; ++d) p.push_back(static_cast<int64_t>(r - 1 - d));
  if (p.size() != r) return {};
  std::vector<bool> seen(r, false);
  for (int64_t& a : p) {
    if (a < 0) a += static_cast<int64_t>(r);
    if (a < 0 || a >= static_cast<int64_t>(r) || seen[static_cast<size_t>(a)]) return {};
    seen[static_cast<size_t>(a)] = true;
  }
  return p;
}

std::string transpose_supports(const NodeView& v) {
  if (perm_of(v).empty()) return "rank unknown at plan time, or perm invalid";
  const size_t e = dtype_size(v.in_types[0]->dtype);
  return e == 1 || e == 2 || e == 4 || e == 8 ? "" : "elements of " + std::to_string(e) + " bytes";
}
double elements_estimate(const NodeView& v) { return static_cast<double>(planned_numel(v, 0)) * 1e-6; }
std::unique_ptr<Kernel> transpose_prepare(const NodeView& v) { return std::make_unique<TransposeKernel>(perm_of(v)); }

// ---- Concat

class ConcatKernel final : public Kernel {
 public:
  void run(ops::KernelContext& k) const override {
    std::vector<const Tensor*> xs;
    for (size_t i = 0; i < k.inputs.size(); ++i)
      if (k.has(i)) xs.push_back(k.inputs[i]);
    const Tensor& first = *xs[0];
    const int64_t rank = first.rank();
    const int64_t axis = ops::normalize_axis(k.node.attr_int("axis", 0), rank, k.node);
    Shape out = first.shape();
    out[static_cast<size_t>(axis)] = 0;
    for (const Tensor* x : xs) {
      if (x->dtype() != first.dtype() || x->rank() != rank) fail(k.node.where() + ": inputs differ in dtype or rank");
      for (int64_t d = 0; d < rank; ++d)
        if (d != axis && x->shape()[static_cast<size_t>(d)] != first.shape()[static_cast<size_t>(d)])
          fail(k.node.where() + ": input " + x->describe() + " does not match " + first.describe() + " off axis " + std::to_string(axis));
      out[static_cast<size_t>(axis)] += x->shape()[static_cast<size_t>(axis)];
    }
    Tensor& y = k.output(0, first.dtype(), out);
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out[static_cast<size_t>(d)];
    const size_t esize = dtype_size(first.dtype());
    std::vector<size_t> row(xs.size()), at(xs.size());  // bytes per outer row; offset in an output row
    size_t out_row = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      row[i] = static_cast<size_t>(outer ? xs[i]->numel() / outer : 0) * esize;
      at[i] = out_row;
      out_row += row[i];
    }
    auto* dst = static_cast<std::byte*>(y.raw());
    // (outer row, input) pieces split over threads when there are at least 4 MB to move (below,
    // one core copies as fast as two here)
    const int64_t pieces = outer * static_cast<int64_t>(xs.size());
    const int64_t parts = k.pool ? std::min<int64_t>({k.pool->threads(), pieces, static_cast<int64_t>(y.nbytes() >> 22)}) : 1;
    auto copy = [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const size_t o = static_cast<size_t>(p) / xs.size(), i = static_cast<size_t>(p) % xs.size();
        if (row[i]) std::memcpy(dst + o * out_row + at[i], static_cast<const std::byte*>(xs[i]->raw()) + o * row[i], row[i]);
      }
    };
    if (parts <= 1)
      copy(0, pieces);
    else
      k.pool->parallel_for(parts, [&](int64_t b, int64_t e) { copy(pieces * b / parts, pieces * e / parts); });
  }
};

std::string concat_supports(const NodeView& v) {
  for (size_t i = 0; i < v.in_types.size(); ++i)
    if (v.in_types[i] && !v.in_types[i]->has_shape) return "input ranks unknown at plan time";
  return "";
}
std::unique_ptr<Kernel> concat_prepare(const NodeView&) { return std::make_unique<ConcatKernel>(); }

// ---- Slice

struct SlicePlan {
  Shape in, out;
  std::vector<int64_t> stride;  // input elements per step of each output dim (may be negative)
  int64_t offset = 0;           // input element of output element 0
  int64_t run = 1;              // output elements copied as one contiguous run (1: strided last dim)
  size_t outer_rank = 0;        // dims iterated outside the run
  size_t esize = 0;
};

std::string read_slice(const NodeView& v, SlicePlan* p) {
  if (!v.static_shape(0, &p->in)) return "the input shape is not static";
  const ir::Node& n = v.node;
  p->esize = dtype_size(v.in_types[0]->dtype);
  if (p->esize == 0) return "elements without a fixed size";
  ops::movement::SliceParams sp;
  if (v.opset < 10) {
    sp = {n.attr_ints("starts"), n.attr_ints("ends"), n.attr_ints("axes"), {}};
  } else {
    for (size_t i = 1; i < 5; ++i) {
      if (!v.has(i)) continue;
      const Tensor* t = v.constant(i);
      if (!t) return "starts, ends, axes or steps is not a constant";
      (i == 1 ? sp.starts : i == 2 ? sp.ends : i == 3 ? sp.axes : sp.steps) = t->to_int_vector();
    }
  }
  try {  // the reference kernel reports bad parameters when the node runs
    ops::movement::normalize_slice_params(sp, static_cast<int64_t>(p->in.size()), n);
  } catch (const Error& e) {
    return e.what();
  }
  const ops::movement::SliceView view = ops::movement::slice_view(p->in, sp);
  p->out = view.shape;
  p->stride = view.strides;
  p->offset = view.offset;
  // The contiguous run: trailing output dims whose input stride continues the run's extent.
  size_t k = p->in.size();
  p->run = 1;
  while (k > 0 && (p->stride[k - 1] == p->run || p->out[k - 1] == 1)) p->run *= p->out[--k];
  p->outer_rank = k;
  return "";
}

class SliceKernel final : public Kernel {
 public:
  explicit SliceKernel(SlicePlan p) : p_(std::move(p)) {}
  void run(ops::KernelContext& k) const override {
    const Tensor& x = k.in(0);
    if (x.shape() != p_.in) fail(k.node.where() + ": the copy kernel was prepared for " + shape_str(p_.in) + ", got " + x.describe());
    Tensor& y = k.output(0, x.dtype(), p_.out);
    if (y.numel() == 0) return;
    const auto* src = static_cast<const std::byte*>(x.raw());
    auto* dst = static_cast<std::byte*>(y.raw());
    const size_t es = p_.esize, rk = p_.outer_rank;
    // Outer index: the dims [0, rk) before the run; the last of them walks with its stride
    // element by element when the run is a single element.
    const int64_t outer = y.numel() / p_.run;
    split_items(k.pool, outer, p_.run, [&](int64_t o0, int64_t o1) {
      std::vector<int64_t> idx(rk, 0);
      int64_t rem = o0, off = p_.offset;
      for (size_t d = rk; d-- > 0;) {
        idx[d] = rem % p_.out[d];
        rem /= p_.out[d];
        off += idx[d] * p_.stride[d];
      }
      const size_t bytes = static_cast<size_t>(p_.run) * es;
      for (int64_t o = o0; o < o1; ++o) {
        std::memcpy(dst + static_cast<size_t>(o) * bytes, src + off * static_cast<int64_t>(es), bytes);
        for (size_t d = rk; d-- > 0;) {  // next outer index
          off += p_.stride[d];
          if (++idx[d] < p_.out[d]) break;
          off -= idx[d] * p_.stride[d];
          idx[d] = 0;
        }
      }
    });
  }

 private:
  SlicePlan p_;
};

std::string slice_supports(const NodeView& v) {
  SlicePlan p;
  return read_slice(v, &p);
}
std::unique_ptr<Kernel> slice_prepare(const NodeView& v) {
  SlicePlan p;
  if (std::string why = read_slice(v, &p); !why.empty()) fail_internal(v.node.where() + ": " + why);
  return std::make_unique<SliceKernel>(std::move(p));
}

// ---- Gather

class GatherKernel final : public Kernel {
 public:
  GatherKernel(Shape data, Shape indices, Shape out, int64_t axis)
      : data_(std::move(data)), indices_(std::move(indices)), out_(std::move(out)), axis_(axis) {}

  void run(ops::KernelContext& k) const override {
    const Tensor &X = k.in(0), &I = k.in(1);
    if (X.shape() != data_ || I.shape() != indices_)
      fail(k.node.where() + ": the copy kernel was planned for data" + shape_str(data_) + " and indices" + shape_str(indices_) +
           ", got " + X.describe() + " and " + I.describe());
    const std::vector<int64_t> raw = ops::movement::index_values(I, k.node, "indices");
    const int64_t dim = data_[static_cast<size_t>(axis_)];
    std::vector<int64_t> idx(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) idx[i] = ops::movement::normalize_index(raw[i], dim, k.node);
    Tensor& Y = k.output(0, X.dtype(), out_);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis_; ++d) outer *= data_[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(axis_) + 1; d < data_.size(); ++d) inner *= data_[d];
    const size_t row = static_cast<size_t>(inner) * dtype_size(X.dtype());
    if (row == 0 || idx.empty() || outer == 0) return;
    const auto* src = static_cast<const std::byte*>(X.raw());
    auto* dst = static_cast<std::byte*>(Y.raw());
    const int64_t n = static_cast<int64_t>(idx.size()), rows = outer * n;
    split_items(k.pool, rows, inner, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r)
        std::memcpy(dst + static_cast<size_t>(r) * row, src + static_cast<size_t>((r / n) * dim + idx[static_cast<size_t>(r % n)]) * row, row);
    });
  }

 private:
  Shape data_, indices_, out_;
  int64_t axis_;
};

std::string gather_supports(const NodeView& v) {
  Shape data, indices;
  if (!v.static_shape(0, &data) || !v.static_shape(1, &indices)) return "data or indices without a static shape";
  if (v.in_types[0]->dtype == DType::String) return "string data";
  if (v.in_types[1]->dtype != DType::Int64 && v.in_types[1]->dtype != DType::Int32) return "indices are not int32/int64";
  const int64_t r = static_cast<int64_t>(data.size()), axis = v.node.attr_int("axis", 0);
  if (r == 0 || axis < -r || axis >= r) return "axis out of range";
  if (v.out_types.empty() || !v.out_types[0] || !v.out_types[0]->is_static()) return "output shape not static";
  return "";
}
std::unique_ptr<Kernel> gather_prepare(const NodeView& v) {
  Shape data, indices;
  v.static_shape(0, &data);
  v.static_shape(1, &indices);
  int64_t axis = v.node.attr_int("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(data.size());
  return std::make_unique<GatherKernel>(data, indices, v.out_types[0]->static_shape(), axis);
}

// ---- views

class ViewKernel final : public Kernel {
 public:
  ViewKernel(Shape in, Shape out) : in_(std::move(in)), out_(std::move(out)) {}
  void run(ops::KernelContext& k) const override {
    const Tensor& X = k.in(0);
    if (X.shape() != in_)
      fail(k.node.where() + ": the alias kernel was planned for" + shape_str(in_) + ", got " + X.describe());
    k.outputs[0] = X.reshaped(out_);
  }
  bool reads_input(size_t i) const override { return i == 0; }  // (the shape input was read at plan time)

 private:
  Shape in_, out_;
};

bool is_view(const ir::Node& n) {
  return onnx_op(n, "Reshape") || onnx_op(n, "Flatten") || onnx_op(n, "Squeeze") || onnx_op(n, "Unsqueeze");
}

std::string view_supports(const NodeView& v) {
  Shape in;
  if (!v.static_shape(0, &in)) return "the input shape is not static";
  if (v.out_types.empty() || !v.out_types[0] || !v.out_types[0]->is_static()) return "output shape not static";
  if (shape_numel(v.out_types[0]->static_shape()) != shape_numel(in)) return "the planned shapes differ in size";
  for (size_t i = 1; i < v.node.inputs.size(); ++i)  // Reshape's shape, Squeeze/Unsqueeze's axes (opset 13)
    if (!v.node.inputs[i].empty() && !v.constant(i)) return "input " + std::to_string(i) + " is not a constant";
  return "";
}
std::unique_ptr<Kernel> view_prepare(const NodeView& v) {
  Shape in;
  v.static_shape(0, &in);
  return std::make_unique<ViewKernel>(in, v.out_types[0]->static_shape());
}
double zero_estimate(const NodeView&) { return 0.0005; }

}  // namespace

std::string movement_class(const ir::Node& n) {
  if (onnx_op(n, "Gather")) return "gather";
  if (is_view(n)) return "view";
  if (onnx_op(n, "Slice")) return "slice";
  if (onnx_op(n, "Transpose")) return "transpose";
  if (onnx_op(n, "Concat")) return "concat";
  return "";
}

extern const Algorithm kTransposeTiled;
const Algorithm kTransposeTiled{"transpose", "tiled",
                                "16 x 16 tiles, 4 x 4 blocks through SSE2 registers, into the planned buffer, threaded",
                                transpose_supports, elements_estimate, transpose_prepare};
extern const Algorithm kConcatCopy;
const Algorithm kConcatCopy{"concat", "copy", "one memcpy per input row into the planned buffer, threaded from 4 MB",
                            concat_supports, elements_estimate, concat_prepare};
extern const Algorithm kSliceCopy;
const Algorithm kSliceCopy{"slice", "copy",
                           "constant starts/ends/axes/steps resolved at plan time; one memcpy per contiguous run, threaded",
                           slice_supports, elements_estimate, slice_prepare};

extern const Algorithm kGatherCopy;
const Algorithm kGatherCopy{"gather", "copy",
                            "one memcpy per index and outer row into the planned buffer (indices checked at every run), threaded",
                            gather_supports, elements_estimate, gather_prepare};
extern const Algorithm kViewAlias;
const Algorithm kViewAlias{"view", "alias",
                           "Reshape/Flatten/Squeeze/Unsqueeze: the input's buffer under the output shape planned once",
                           view_supports, zero_estimate, view_prepare};

}  // namespace joule::kernels
