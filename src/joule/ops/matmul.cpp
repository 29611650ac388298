// MatMul: numpy matmul semantics (batch broadcasting; a 1-D operand gets a dim prepended (A)
// or appended (B) that is removed from the result).
#include "joule/ops/matmul_util.h"
#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  const ir::TensorType& a = c.in(0);
  const ir::TensorType& b = c.in(1);
  ir::TensorType& o = c.out(0);
  o = ir::TensorType{};
  o.dtype = a.dtype;
  if (!a.has_shape || !b.has_shape) return;
  if (a.dims.empty() || b.dims.empty())
    fail(c.node.where() + ": MatMul operands must not be scalars");
  std::vector<ir::Dim> ad = a.dims, bd = b.dims;
  const bool a1 = ad.size() == 1, b1 = bd.size() == 1;
  if (a1) ad.insert(ad.begin(), ir::Dim{1, ""});
  if (b1) bd.push_back(ir::Dim{1, ""});
  const ir::Dim& ka = ad.back();
  const ir::Dim& kb = bd[bd.size() - 2];
  if (ka.is_static() && kb.is_static() && ka.value != kb.value)
    fail(c.node.where() + ": inner dimensions differ: " + a.str() + " x " + b.str());
  ir::TensorType ab, bb;
  ab.has_shape = bb.has_shape = true;
  ab.dims.assign(ad.begin(), ad.end() - 2);
  bb.dims.assign(bd.begin(), bd.end() - 2);
  o = broadcast_types({&ab, &bb}, a.dtype, c.node);
  if (!a1) o.dims.push_back(ad[ad.size() - 2]);
  if (!b1) o.dims.push_back(bd.back());
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  const Tensor& A = c.in(0);
  const Tensor& B = c.in(1);
  nn::check_same_dtypes(c, 0, 2);
  if (A.rank() == 0 || B.rank() == 0)
    fail(c.node.where() + ": MatMul operands must not be scalars");
  Shape as = A.shape(), bs = B.shape();
  const bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  if (bs[bs.size() - 2] != K)
    fail(c.node.where() + ": inner dimensions differ: " + A.describe() + " x " + B.describe());
  const Shape abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
  const Shape batch = broadcast_shapes({abatch, bbatch}, c.node);
  Shape ys = batch;
  if (!a1) ys.push_back(M);
  if (!b1) ys.push_back(N);
  Tensor Y(A.dtype(), ys);
  const int64_t nb = shape_numel(batch);
  std::vector<int64_t> a_off(static_cast<size_t>(nb)), b_off(static_cast<size_t>(nb));
  BroadcastIndexer ia(batch, abatch), ib(batch, bbatch);
  for (int64_t t = 0; t < nb; ++t) {
    a_off[static_cast<size_t>(t)] = ia.offset(t) * M * K;
    b_off[static_cast<size_t>(t)] = ib.offset(t) * K * N;
  }
  visit_numeric(A.dtype(), (c.node.where() + " (MatMul)").c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    nn::batched_matmul<T>(A.data<T>(), B.data<T>(), Y.data<T>(), a_off, b_off, M, K, N, c.pool);
  });
  c.outputs[0] = Y;
}

Cost cost(const CostContext& c) {
  Cost r;
  if (c.in.size() >= 2 && !c.in[0].empty() && !c.out.empty()) {
    const double k = static_cast<double>(c.in[0].back());
    r.macs = nn::numel_d(c.out[0]) * k;
    r.flops = 2 * r.macs;
  }
  r.bytes = io_bytes(c);
  return r;
}

}  // namespace

extern const OpDef kOpMatMul;
const OpDef kOpMatMul{"MatMul", "", 2, 2, infer, run, cost};

}  // namespace joule::ops
