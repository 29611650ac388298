#pragma once
// Helpers shared by op files: axis handling, broadcasting, elementwise loops, inference.
#include <functional>
#include <string>
#include <vector>

#include "joule/ops/op.h"

namespace joule::ops {

// Maps a possibly negative axis into [0, rank); throws BadInput naming the node otherwise.
int64_t normalize_axis(int64_t axis, int64_t rank, const ir::Node& node);

// Numpy-style broadcast of concrete shapes; throws BadInput naming the node on mismatch.
Shape broadcast_shapes(const std::vector<Shape>& shapes, const ir::Node& node);
// Same for inference types (symbolic dims kept where they can be).
ir::TensorType broadcast_types(const std::vector<const ir::TensorType*>& types, DType out,
                               const ir::Node& node);

// B broadcast to `x` (without growing it) as a repetition over one contiguous run of x's dims:
// x viewed as [P, Q, R] and B as [P, 1, R] (Q = 1: B has x's shape; P = R = 1: a scalar; an
// N,H,W,C gate [N,1,1,C]: P = N, Q = H*W, R = C). False when B is not of this form (its
// repeated dims are not contiguous, or it does not broadcast to x).
bool broadcast_as_pqr(const Shape& x, const Shape& b, int64_t* p, int64_t* q, int64_t* r);

// Output type = input i's type (shape and dtype).
void infer_same_as_input(InferContext& c, size_t i = 0);
// Output 0 = broadcast of all given inputs, with dtype `out` (Undefined: input 0's dtype).
void infer_broadcast(InferContext& c, DType out = DType::Undefined);

// Index mapping from an output position to the offset of a broadcast input.
// Used by elementwise kernels: for each output element, the input offsets.
class BroadcastIndexer {
 public:
  BroadcastIndexer(const Shape& out, const Shape& in);
  // Offset into the input for output linear index i.
  int64_t offset(int64_t i) const;
  bool identity() const { return identity_; }
  bool scalar() const { return scalar_; }

 private:
  Shape out_;
  std::vector<int64_t> in_strides_;  // 0 where broadcast
  std::vector<int64_t> out_strides_;
  bool identity_ = false, scalar_ = false;
};

// Elementwise binary kernel with broadcasting: out[i] = f(a[...], b[...]).
template <class A, class B, class O, class F>
Tensor broadcast_binary(const Tensor& a, const Tensor& b, const Shape& out_shape, F f) {
  Tensor out(dtype_of<O>, out_shape);
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  O* po = out.data<O>();
  const int64_t n = out.numel();
  BroadcastIndexer ia(out_shape, a.shape()), ib(out_shape, b.shape());
  if (ia.identity() && ib.identity()) {
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
  } else if (ia.identity() && ib.scalar()) {
    const B s = pb[0];
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], s);
  } else if (ia.scalar() && ib.identity()) {
    const A s = pa[0];
    for (int64_t i = 0; i < n; ++i) po[i] = f(s, pb[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[ia.offset(i)], pb[ib.offset(i)]);
  }
  return out;
}

// Elementwise unary kernel: out[i] = f(in[i]).
template <class I, class O, class F>
Tensor map_unary(const Tensor& in, F f) {
  Tensor out(dtype_of<O>, in.shape());
  const I* pi = in.data<I>();
  O* po = out.data<O>();
  const int64_t n = in.numel();
  for (int64_t i = 0; i < n; ++i) po[i] = f(pi[i]);
  return out;
}

// Runs body(begin, end) over [0, n) on the pool, or in one call when there is none (kernels
// called outside a Session, e.g. by constant folding).
template <class F>
void parallel_or_serial(ThreadPool* pool, int64_t n, const F& body) {
  if (pool)
    pool->parallel_for(n, body);
  else
    body(0, n);
}

inline bool is_half(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

// For kernels without a native float16/bfloat16 path: when any input is a half type, runs
// `run` on float32 copies of the half inputs and converts float32 outputs back to input 0's
// half type (when input 0 is one). Returns false, doing nothing, when no input is half.
bool run_half_as_float(KernelContext& c, void (*run)(KernelContext&));
// The same for float16, bfloat16 and float64 inputs (kernels that compute in float32 only).
bool run_as_float32(KernelContext& c, void (*run)(KernelContext&));

// Bytes of all inputs and outputs of a node (absent or untyped ones count 0).
double io_bytes(const CostContext& c);

// Reads an optional int64 list input (e.g. Slice starts, Reshape shape) as a vector.
std::vector<int64_t> int_list_input(const KernelContext& c, size_t i);


// Cost of ops that only move data (Reshape, Transpose, Gather, Pad, ...): no arithmetic,
// bytes = all inputs + outputs.
inline Cost data_movement_cost(const CostContext& c) {
  Cost r;
  r.bytes = io_bytes(c);
  return r;
}

}  // namespace joule::ops
