// The GPU algorithms besides convolution: GEMM and MatMul through cuBLAS with joule's epilogue
// kernel, and joule's own CUDA kernels (kernels.cu) for elementwise math, pooling, reductions,
// normalisations and data movement; the copies placement inserts; the placement rule
// (cuda::support). Every kernel is prepared for its node's static shapes.
#include <algorithm>
#include <cstring>
#include <map>

#include "joule/cuda/gpu_kernel.h"
#include "joule/kernels/eltwise/eltwise.h"
#include "joule/ops/conv_util.h"
#include "joule/ops/movement_util.h"
#include "joule/ops/nn_util.h"

namespace joule::cuda {

using kernels::NodeView;

GpuKernel::GpuKernel(const NodeView& v) : device_(v.device), ctx_(&context(v.device)) {
  for (const ir::TensorType* t : v.out_types) {
    out_shapes_.push_back(t && t->is_static() ? t->static_shape() : Shape{});
    out_dtypes_.push_back(t ? t->dtype : DType::Undefined);
  }
  for (const ir::TensorType* t : v.in_types) in_shapes_.push_back(t && t->is_static() ? t->static_shape() : Shape{});
  tf32_ = gpu_math_of(v.node) == "tf32";
  for (DType t : out_dtypes_)
    if (gpu_float(t)) {
      elt_ = elt_of(t);
      break;
    }
}

k::Elt elt_of(DType t) { return t == DType::Float16 ? k::Elt::F16 : t == DType::BFloat16 ? k::Elt::BF16 : k::Elt::F32; }

std::string gpu_math_of(const ir::Node& n) {
  auto it = n.meta.find("gpu_math");
  return it != n.meta.end() && it->is_string() ? it->get<std::string>() : "fp32";
}

std::string same_float(const NodeView& v, std::initializer_list<size_t> inputs) {
  DType first = DType::Undefined;
  auto one = [&](const ir::TensorType* t) {
    if (!gpu_float(t->dtype)) return false;
    if (first == DType::Undefined) first = t->dtype;
    return t->dtype == first;
  };
  for (size_t i : inputs)
    if (v.has(i) && !one(v.in_types[i])) return "float32, float16 or bfloat16 only, all one type";
  for (const ir::TensorType* t : v.out_types)
    if (t && !one(t)) return "float32, float16 or bfloat16 only, all one type";
  return "";
}

Tensor& GpuKernel::out(ops::KernelContext& k, size_t j) const {
  Tensor& o = k.outputs[j];
  if (o.defined() && o.device() == device_ && o.dtype() == out_dtypes_[j] && o.shape() == out_shapes_[j]) return o;
  o = empty(out_dtypes_[j], out_shapes_[j], device_);
  return o;
}

const Tensor& GpuKernel::in(const ops::KernelContext& k, size_t i) const {
  const Tensor& t = k.in(i);
  if (t.device() != device_) fail_internal(k.node.where() + ": input " + std::to_string(i) + " " + t.describe() + " is not on cuda:" + std::to_string(device_));
  if (i < in_shapes_.size() && t.shape() != in_shapes_[i])
    fail(k.node.where() + ": input " + std::to_string(i) + " is " + t.describe() + ", the GPU kernel was prepared for " + shape_str(in_shapes_[i]));
  return t;
}

bool fused_activation(const ir::Node& n, k::Act* act, float* a, float* b) {
  *act = k::Act::None;
  if (n.domain != "joule" || (n.op_type != "FusedConv" && n.op_type != "FusedMatMul")) return true;
  const ops::nn::FusedActivation f(n);
  static const std::map<std::string, k::Act> m = {{"", k::Act::None},           {"Relu", k::Act::Relu},
                                                   {"LeakyRelu", k::Act::LeakyRelu}, {"Clip", k::Act::Clip},
                                                   {"Sigmoid", k::Act::Sigmoid}, {"SiLU", k::Act::SiLU},
                                                   {"HardSwish", k::Act::HardSwish}, {"Gelu", k::Act::Gelu}};
  auto it = m.find(f.kind);
  if (it == m.end()) return false;
  *act = it->second;
  if (!f.p.empty()) *a = f.p[0];
  if (f.p.size() > 1) *b = f.p[1];
  return true;
}

std::string static_shapes(const NodeView& v, const std::vector<bool>& host_input) {
  for (size_t i = 0; i < v.in_types.size(); ++i) {
    if (!v.in_types[i] || (i < host_input.size() && host_input[i])) continue;
    if (!v.in_types[i]->is_tensor()) return "input " + std::to_string(i) + " is a " + value_kind_name(v.in_types[i]->kind);
    if (!v.in_types[i]->is_static()) return "input shapes known only at run time";
    if (v.in_types[i]->dtype == DType::String) return "string tensors";
  }
  for (const ir::TensorType* t : v.out_types)
    if (t && (!t->is_tensor() || !t->is_static())) return "output shapes known only at run time";
  return "";
}

namespace {

bool onnx(const ir::Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }
Shape in_shape(const NodeView& v, size_t i) { return v.in_types[i]->static_shape(); }
Shape out_shape(const NodeView& v, size_t i = 0) { return v.out_types[i]->static_shape(); }
int64_t axis_of(int64_t a, size_t rank) { return a < 0 ? a + static_cast<int64_t>(rank) : a; }
int64_t prod(const Shape& s, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e && i < s.size(); ++i) p *= s[i];
  return p;
}
}  // namespace


namespace {

// ---------------------------------------------------------------- GEMM / MatMul (cuBLAS)

// Row-major C[M,N] = op(A)[M,K] op(B)[K,N], `batch` times with the given element strides,
// through cuBLAS's column-major GEMM on the transposed problem (C^T = B^T A^T). float16 and
// bfloat16 operands on tensor cores with float32 accumulation (cublasGemmEx).
void gemm(Context& c, bool tf32, k::Elt e, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const void* A,
          int64_t sa, const void* B, int64_t sb, void* C, int64_t batch) {
  check(cublasSetMathMode(c.blas, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  const float beta = 0.f;
  const int lda = static_cast<int>(ta ? M : K), ldb = static_cast<int>(tb ? K : N);
  const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (e != k::Elt::F32) {
    const cudaDataType_t t = e == k::Elt::F16 ? CUDA_R_16F : CUDA_R_16BF;
    if (batch == 1)
      check(cublasGemmEx(c.blas, opb, opa, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &alpha, B, t, ldb, A, t,
                         lda, &beta, C, t, static_cast<int>(N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
    else
      check(cublasGemmStridedBatchedEx(c.blas, opb, opa, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &alpha, B, t,
                                       ldb, sb, A, t, lda, sa, &beta, C, t, static_cast<int>(N), M * N, static_cast<int>(batch),
                                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmStridedBatchedEx");
    return;
  }
  const float* Af = static_cast<const float*>(A);
  const float* Bf = static_cast<const float*>(B);
  float* Cf = static_cast<float*>(C);
  if (batch == 1)
    check(cublasSgemm(c.blas, opb, opa, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &alpha, Bf, ldb, Af, lda,
                      &beta, Cf, static_cast<int>(N)),
          "cublasSgemm");
  else
    check(cublasSgemmStridedBatched(c.blas, opb, opa, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &alpha, Bf,
                                    ldb, sb, Af, lda, sa, &beta, Cf, static_cast<int>(N), M * N, static_cast<int>(batch)),
          "cublasSgemmStridedBatched");
}

struct GemmPlan {
  bool ta = false, tb = false;
  int64_t M = 0, N = 0, K = 0, batch = 1, sa = 0, sb = 0;
  float alpha = 1.f;
  int bias = -1, z = -1;  // inputs added by the epilogue: [N] bias, Y-shaped residual
  k::Act act = k::Act::None;
  float pa = 0, pb = 0;
};

std::string plan_gemm(const NodeView& v, GemmPlan* p) {
  const ir::Node& n = v.node;
  if (std::string r = static_shapes(v, {}); !r.empty()) return r;
  if (std::string r = same_float(v, {0, 1, 2, 3}); !r.empty()) return r;
  const Shape a = in_shape(v, 0), b = in_shape(v, 1), y = out_shape(v);
  if (onnx(n, "Gemm")) {
    if (a.size() != 2 || b.size() != 2) return "Gemm needs 2-D A and B";
    p->ta = n.attr_int("transA", 0) != 0;
    p->tb = n.attr_int("transB", 0) != 0;
    p->M = p->ta ? a[1] : a[0];
    p->K = p->ta ? a[0] : a[1];
    p->N = p->tb ? b[0] : b[1];
    p->alpha = n.attr_float("alpha", 1.f);
    if (v.has(2)) {
      if (n.attr_float("beta", 1.f) != 1.f) return "beta other than 1";
      const Shape c = in_shape(v, 2);
      if (shape_numel(c) == p->N && !c.empty() && c.back() == p->N)
        p->bias = 2;
      else if (c == y)
        p->z = 2;
      else
        return "C of shape " + shape_str(c) + " (only [N] or [M, N])";
    }
    return "";
  }
  // MatMul / FusedMatMul: [..., M, K] x [..., K, N]
  if (a.size() < 2 || b.size() < 2) return "1-D MatMul operand";
  p->M = a[a.size() - 2];
  p->K = a.back();
  p->N = b.back();
  const int64_t ba = prod(a, 0, a.size() - 2), bb = prod(b, 0, b.size() - 2);
  if (bb == 1) {  // B one matrix: fold A's batch into M
    p->M *= ba;
  } else if (ba == 1) {
    p->batch = bb;
    p->sb = p->K * p->N;
  } else {
    Shape ab(a.begin(), a.end() - 2), bbs(b.begin(), b.end() - 2);
    while (ab.size() < bbs.size()) ab.insert(ab.begin(), 1);
    while (bbs.size() < ab.size()) bbs.insert(bbs.begin(), 1);
    if (ab != bbs) return "broadcast batch dims " + shape_str(a) + " x " + shape_str(b);
    p->batch = ba;
    p->sa = p->M * p->K;
    p->sb = p->K * p->N;
  }
  if (n.domain == "joule" && n.op_type == "FusedMatMul") {
    if (!fused_activation(n, &p->act, &p->pa, &p->pb)) return "activation " + n.attr_string("activation", "");
    if (v.has(2)) p->bias = 2;
    if (v.has(3)) p->z = 3;
  }
  return "";
}

class GemmKernel : public GpuKernel {
 public:
  GemmKernel(const NodeView& v, GemmPlan p) : GpuKernel(v), p_(p) {}
  void run(ops::KernelContext& k) const override {
    Tensor& y = out(k, 0);
    gemm(*ctx_, tf32_, elt_, p_.ta, p_.tb, p_.M, p_.N, p_.K, p_.alpha, in(k, 0).raw(), p_.sa, in(k, 1).raw(), p_.sb, y.raw(),
         p_.batch);
    if (p_.bias >= 0 || p_.z >= 0 || p_.act != k::Act::None)
      k::epilogue(y.raw(), p_.bias >= 0 ? in(k, static_cast<size_t>(p_.bias)).raw() : nullptr,
                  p_.z >= 0 ? in(k, static_cast<size_t>(p_.z)).raw() : nullptr, y.numel(), p_.N, 1, p_.act, p_.pa, p_.pb, elt_,
                  stream());
  }
  std::string detail() const override {
    const char* math = elt_ == k::Elt::F16 ? " fp16" : elt_ == k::Elt::BF16 ? " bf16" : tf32_ ? " tf32" : " fp32";
    return std::string(elt_ == k::Elt::F32 ? "cuBLAS sgemm" : "cuBLAS gemmEx") + (p_.batch > 1 ? " strided batched" : "") + math;
  }

 private:
  GemmPlan p_;
};

std::string gemm_supports(const NodeView& v) {
  GemmPlan p;
  return plan_gemm(v, &p);
}
double gemm_estimate(const NodeView&) { return 1.0; }
std::unique_ptr<kernels::Kernel> gemm_prepare(const NodeView& v) {
  GemmPlan p;
  if (std::string r = plan_gemm(v, &p); !r.empty()) fail_internal(v.node.where() + ": " + r);
  return std::make_unique<GemmKernel>(v, p);
}

// ---------------------------------------------------------------- unary

struct UnaryOp {
  k::Act act;
  float a = 0, b = 0;
};
// The activation of a unary node, or false.
bool unary_of(const NodeView& v, UnaryOp* u, std::string* why) {
  const ir::Node& n = v.node;
  static const std::map<std::string, k::Act> plain = {
      {"Relu", k::Act::Relu},       {"Sigmoid", k::Act::Sigmoid},   {"Tanh", k::Act::Tanh},       {"Exp", k::Act::Exp},
      {"Log", k::Act::Log},         {"Sqrt", k::Act::Sqrt},         {"Neg", k::Act::Neg},         {"Abs", k::Act::Abs},
      {"Erf", k::Act::Erf},         {"HardSwish", k::Act::HardSwish}, {"Softplus", k::Act::Softplus}, {"Reciprocal", k::Act::Reciprocal},
      {"Floor", k::Act::Floor},     {"Ceil", k::Act::Ceil},         {"Sin", k::Act::Sin},         {"Cos", k::Act::Cos},
      {"Softsign", k::Act::Softsign}, {"Round", k::Act::Round},     {"Sign", k::Act::Sign},       {"Mish", k::Act::Mish},
      {"Identity", k::Act::None}};
  if (!(n.domain.empty() || (n.domain == "joule" && n.op_type == "Gelu"))) return false;
  if (auto it = plain.find(n.op_type); it != plain.end() && n.domain.empty()) {
    u->act = it->second;
    return true;
  }
  const std::string& t = n.op_type;
  if (t == "Gelu") {
    u->act = n.attr_string("approximate", "none") == "tanh" ? k::Act::GeluTanh : k::Act::Gelu;
    return true;
  }
  if (t == "LeakyRelu") {
    *u = {k::Act::LeakyRelu, n.attr_float("alpha", 0.01f), 0};
    return true;
  }
  if (t == "Elu" || t == "Celu") {
    *u = {t == "Elu" ? k::Act::Elu : k::Act::Celu, n.attr_float("alpha", 1.f), 0};
    return true;
  }
  if (t == "HardSigmoid") {
    *u = {k::Act::HardSigmoid, n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)};
    return true;
  }
  if (t == "Dropout") {
    if (n.outputs.size() > 1 && !n.outputs[1].empty()) {
      *why = "Dropout's mask output";
      return false;
    }
    const Tensor* training = v.constant(2);
    if (v.has(2) && (!training || training->value_as_int(0) != 0)) {
      *why = "Dropout in training mode";
      return false;
    }
    u->act = k::Act::None;
    return true;
  }
  if (t == "Clip") {
    float lo = 0, hi = 0;
    if (!kernels::clip_bounds(v, &lo, &hi)) {
      *why = "Clip bounds that are not float32 constants";
      return false;
    }
    *u = {k::Act::Clip, lo, hi};
    return true;
  }
  return false;
}

class UnaryKernel : public GpuKernel {
 public:
  UnaryKernel(const NodeView& v, UnaryOp u) : GpuKernel(v), u_(u) {}
  void run(ops::KernelContext& k) const override {
    const Tensor& x = in(k, 0);
    Tensor& y = out(k, 0);
    k::unary(x.raw(), y.raw(), x.numel(), u_.act, u_.a, u_.b, elt_, stream());
  }

 private:
  UnaryOp u_;
};

std::string unary_supports(const NodeView& v) {
  UnaryOp u{};
  std::string why;
  if (!unary_of(v, &u, &why)) return why.empty() ? "no CUDA kernel for " + v.node.op_type : why;
  if (std::string r = static_shapes(v, host_inputs(v.node)); !r.empty()) return r;
  return same_float(v, {0});
}
std::unique_ptr<kernels::Kernel> unary_prepare(const NodeView& v) {
  UnaryOp u{};
  std::string why;
  unary_of(v, &u, &why);
  return std::make_unique<UnaryKernel>(v, u);
}
double one_ms(const NodeView&) { return 1.0; }

// ---------------------------------------------------------------- binary

const std::map<std::string, k::Bin>& binary_ops() {
  static const std::map<std::string, k::Bin> m = {{"Add", k::Bin::Add}, {"Sub", k::Bin::Sub}, {"Mul", k::Bin::Mul},
                                                   {"Div", k::Bin::Div}, {"Pow", k::Bin::Pow}, {"Max", k::Bin::Max},
                                                   {"Min", k::Bin::Min}, {"PRelu", k::Bin::PRelu}};
  return m;
}

// Strides of an input of shape `in` read at every index of `out` (numpy broadcasting, right-aligned).
void broadcast_strides(const Shape& in, const Shape& out, int64_t* st) {
  const size_t r = out.size(), off = r - in.size();
  int64_t s = 1;
  for (size_t d = r; d-- > 0;) {
    if (d < off) {
      st[d] = 0;
      continue;
    }
    const int64_t dim = in[d - off];
    st[d] = dim == 1 && out[d] != 1 ? 0 : s;
    s *= dim;
  }
}

class BinaryKernel : public GpuKernel {
 public:
  BinaryKernel(const NodeView& v, k::Bin op) : GpuKernel(v), op_(op) {
    const Shape a = in_shape(v, 0), y = out_shape(v);
    const Shape b = op == k::Bin::PRelu ? ops::nn::prelu_slope_shape(v.opset, a, in_shape(v, 1)) : in_shape(v, 1);
    flat_ = a == y && b == y;
    bc_.rank = static_cast<int>(y.size());
    for (size_t d = 0; d < y.size(); ++d) bc_.out[d] = y[d];
    broadcast_strides(a, y, bc_.sa);
    broadcast_strides(b, y, bc_.sb);
  }
  void run(ops::KernelContext& k) const override {
    Tensor& y = out(k, 0);
    k::binary(in(k, 0).raw(), in(k, 1).raw(), y.raw(), y.numel(), op_, bc_, flat_, elt_, stream());
  }

 private:
  k::Bin op_;
  k::Broadcast bc_;
  bool flat_ = false;
};

std::string binary_supports(const NodeView& v) {
  const ir::Node& n = v.node;
  if (!n.domain.empty() || !binary_ops().count(n.op_type)) return "no CUDA kernel for " + n.op_type;
  if (n.input_count() != 2) return "two inputs only";
  if (std::string r = static_shapes(v, {}); !r.empty()) return r;
  if (std::string r = same_float(v, {0, 1}); !r.empty()) return r;
  if (out_shape(v).size() > static_cast<size_t>(k::kMaxRank)) return "rank over 8";
  if (n.op_type == "PRelu" && in_shape(v, 0) != out_shape(v)) return "PRelu slope larger than X";
  if (v.opset < 7 && n.has_attr("broadcast")) return "broadcast with an axis (before opset 7)";
  return "";
}
std::unique_ptr<kernels::Kernel> binary_prepare(const NodeView& v) {
  return std::make_unique<BinaryKernel>(v, binary_ops().at(v.node.op_type));
}

// ---------------------------------------------------------------- pooling

std::string pool_plan(const NodeView& v, k::Pool2d* p) {
  const ir::Node& n = v.node;
  if (!n.domain.empty()) return "no CUDA kernel for " + n.domain + "." + n.op_type;
  if (std::string r = static_shapes(v, {}); !r.empty()) return r;
  if (n.outputs.size() > 1 && !n.outputs[1].empty()) return "MaxPool's Indices output";
  if (std::string r = same_float(v, {0}); !r.empty()) return r;
  const Shape x = in_shape(v, 0), y = out_shape(v);
  if (x.size() != 4) return "2-D pooling only";
  p->n = x[0];
  p->c = x[1];
  p->h = x[2];
  p->w = x[3];
  p->oh = y[2];
  p->ow = y[3];
  const std::string& t = n.op_type;
  p->max = t == "MaxPool" || t == "GlobalMaxPool";
  if (t == "GlobalAveragePool" || t == "GlobalMaxPool") {
    p->kh = static_cast<int>(x[2]);
    p->kw = static_cast<int>(x[3]);
    return "";
  }
  const ops::ConvGeometry g = ops::read_conv_geometry(n, 2, {});
  p->kh = static_cast<int>(g.kernel[0]);
  p->kw = static_cast<int>(g.kernel[1]);
  p->sh = static_cast<int>(g.strides[0]);
  p->sw = static_cast<int>(g.strides[1]);
  p->dh = static_cast<int>(g.dilations[0]);
  p->dw = static_cast<int>(g.dilations[1]);
  int64_t pb = 0, pe = 0;
  ops::conv_out_dim(g, n, 0, x[2], &pb, &pe);
  p->ph = static_cast<int>(pb);
  p->ph_end = static_cast<int>(pe);
  ops::conv_out_dim(g, n, 1, x[3], &pb, &pe);
  p->pw = static_cast<int>(pb);
  p->pw_end = static_cast<int>(pe);
  p->count_pad = n.attr_int("count_include_pad", 0) != 0;
  return "";
}

class PoolKernel : public GpuKernel {
 public:
  PoolKernel(const NodeView& v, k::Pool2d p) : GpuKernel(v), p_(p) {}
  void run(ops::KernelContext& k) const override {
    Tensor& y = out(k, 0);
    const bool global = p_.oh == 1 && p_.ow == 1 && p_.kh == p_.h && p_.kw == p_.w && p_.ph == 0 && p_.pw == 0;
    if (global)  // a row reduction per channel
      k::reduce(in(k, 0).raw(), y.raw(), p_.n * p_.c, p_.h * p_.w, 1, p_.max ? k::Red::Max : k::Red::Mean, false, elt_, stream());
    else
      k::pool2d(in(k, 0).raw(), y.raw(), p_, elt_, stream());
  }

 private:
  k::Pool2d p_;
};

std::string pool_supports(const NodeView& v) {
  k::Pool2d p;
  return pool_plan(v, &p);
}
std::unique_ptr<kernels::Kernel> pool_prepare(const NodeView& v) {
  k::Pool2d p;
  pool_plan(v, &p);
  return std::make_unique<PoolKernel>(v, p);
}

// ---------------------------------------------------------------- reductions

struct ReducePlan {
  int64_t outer = 1, red = 1, inner = 1;
  k::Red op = k::Red::Sum;
  bool root = false;
};
std::string reduce_plan(const NodeView& v, ReducePlan* p) {
  const ir::Node& n = v.node;
  static const std::map<std::string, std::pair<k::Red, bool>> ops = {
      {"ReduceMean", {k::Red::Mean, false}}, {"ReduceSum", {k::Red::Sum, false}},       {"ReduceMax", {k::Red::Max, false}},
      {"ReduceMin", {k::Red::Min, false}},   {"ReduceL2", {k::Red::SumSquare, true}},   {"ReduceSumSquare", {k::Red::SumSquare, false}},
      {"ReduceL1", {k::Red::L1, false}}};
  auto it = ops.find(n.op_type);
  if (!n.domain.empty() || it == ops.end()) return "no CUDA kernel for " + n.op_type;
  if (std::string r = static_shapes(v, host_inputs(n)); !r.empty()) return r;
  if (std::string r = same_float(v, {0}); !r.empty()) return r;
  p->op = it->second.first;
  p->root = it->second.second;
  const Shape x = in_shape(v, 0);
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (v.has(1)) {
    const Tensor* c = v.constant(1);
    if (!c) return "axes not constant";
    axes = c->to_int_vector();
  }
  if (axes.empty()) {
    if (n.attr_int("noop_with_empty_axes", 0) != 0) return "noop_with_empty_axes";
    for (size_t i = 0; i < x.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  for (int64_t& a : axes) a = axis_of(a, x.size());
  std::sort(axes.begin(), axes.end());
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1) return "reduced axes not adjacent";
  p->outer = prod(x, 0, static_cast<size_t>(axes.front()));
  p->red = prod(x, static_cast<size_t>(axes.front()), static_cast<size_t>(axes.back() + 1));
  p->inner = prod(x, static_cast<size_t>(axes.back() + 1), x.size());
  return "";
}
class ReduceKernel : public GpuKernel {
 public:
  ReduceKernel(const NodeView& v, ReducePlan p) : GpuKernel(v), p_(p) {}
  void run(ops::KernelContext& k) const override {
    Tensor& y = out(k, 0);
    k::reduce(in(k, 0).raw(), y.raw(), p_.outer, p_.red, p_.inner, p_.op, p_.root, elt_, stream());
  }

 private:
  ReducePlan p_;
};
std::string reduce_supports(const NodeView& v) {
  ReducePlan p;
  return reduce_plan(v, &p);
}
std::unique_ptr<kernels::Kernel> reduce_prepare(const NodeView& v) {
  ReducePlan p;
  reduce_plan(v, &p);
  return std::make_unique<ReduceKernel>(v, p);
}

// ---------------------------------------------------------------- softmax, layer norm, batch norm

class SoftmaxKernel : public GpuKernel {
 public:
  explicit SoftmaxKernel(const NodeView& v) : GpuKernel(v) {
    const Shape x = in_shape(v, 0);
    const int64_t def = v.opset >= 13 ? -1 : 1;
    const size_t a = static_cast<size_t>(axis_of(v.node.attr_int("axis", def), x.size()));
    log_ = v.node.op_type == "LogSoftmax";
    outer_ = prod(x, 0, a);
    if (v.opset >= 13) {
      red_ = x[a];
      inner_ = prod(x, a + 1, x.size());
    } else {
      red_ = prod(x, a, x.size());
    }
  }
  void run(ops::KernelContext& k) const override {
    Tensor& y = out(k, 0);
    k::softmax(in(k, 0).raw(), y.raw(), outer_, red_, inner_, log_, elt_, stream());
  }

 private:
  int64_t outer_ = 1, red_ = 1, inner_ = 1;
  bool log_ = false;
};
std::string softmax_supports(const NodeView& v) {
  if (!(onnx(v.node, "Softmax") || onnx(v.node, "LogSoftmax"))) return "no CUDA kernel for " + v.node.op_type;
  if (std::string r = static_shapes(v, {}); !r.empty()) return r;
  if (std::string r = same_float(v, {0}); !r.empty()) return r;
  if (in_shape(v, 0).empty()) return "a scalar";
  return "";
}
std::unique_ptr<kernels::Kernel> softmax_prepare(const NodeView& v) { return std::make_unique<SoftmaxKernel>(v); }

class LayerNormKernel : public GpuKernel {
 public:
  explicit LayerNormKernel(const NodeView& v) : GpuKernel(v) {
    const Shape x = in_shape(v, 0);
    const size_t a = static_cast<size_t>(axis_of(v.node.attr_int("axis", -1), x.size()));
    rows_ = prod(x, 0, a);
    cols_ = prod(x, a, x.size());
    eps_ = v.node.attr_float("epsilon", 1e-5f);
  }
  void run(ops::KernelContext& k) const override {
    Tensor& y = out(k, 0);
    k::layer_norm(in(k, 0).raw(), y.raw(), in(k, 1).raw(), k.has(2) ? in(k, 2).raw() : nullptr, rows_, cols_, eps_, elt_, stream());
  }

 private:
  int64_t rows_ = 1, cols_ = 1;
  float eps_ = 1e-5f;
};
std::string layer_norm_supports(const NodeView& v) {
  const ir::Node& n = v.node;
  if (n.op_type != "LayerNormalization" || !(n.domain.empty() || n.domain == "joule")) return "no CUDA kernel for " + n.op_type;
  if (std::string r = static_shapes(v, {}); !r.empty()) return r;
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty()) return "Mean / InvStdDev outputs";
  if (std::string r = same_float(v, {0, 1, 2}); !r.empty()) return r;
  const Shape x = in_shape(v, 0);
  const size_t a = static_cast<size_t>(axis_of(n.attr_int("axis", -1), x.size()));
  const int64_t cols = prod(x, a, x.size());
  for (size_t i = 1; i <= 2; ++i)
    if (v.has(i) && shape_numel(in_shape(v, i)) != cols) return "Scale/B broadcast over the normalised axes";
  return "";
}
std::unique_ptr<kernels::Kernel> layer_norm_prepare(const NodeView& v) { return std::make_unique<LayerNormKernel>(v); }

class BatchNormKernel : public GpuKernel {
 public:
  explicit BatchNormKernel(const NodeView& v) : GpuKernel(v) {
    const Tensor& s = *v.constant(1);
    const Tensor& b = *v.constant(2);
    const Tensor& m = *v.constant(3);
    const Tensor& var = *v.constant(4);
    const float eps = v.node.attr_float("epsilon", 1e-5f);
    const int64_t c = s.numel();
    Tensor scale(DType::Float32, {c}), shift(DType::Float32, {c});
    for (int64_t i = 0; i < c; ++i) {
      const float k = s.data<float>()[i] / std::sqrt(var.data<float>()[i] + eps);
      scale.data<float>()[i] = k;
      shift.data<float>()[i] = b.data<float>()[i] - m.data<float>()[i] * k;
    }
    scale_ = upload(scale, device_);
    shift_ = upload(shift, device_);
    const Shape x = in_shape(v, 0);
    channels_ = c;
    inner_ = prod(x, 2, x.size());
  }
  void run(ops::KernelContext& k) const override {
    const Tensor& x = in(k, 0);
    Tensor& y = out(k, 0);
    k::channel_affine(x.raw(), y.raw(), ptr<float>(scale_), ptr<float>(shift_), x.numel(), channels_, inner_, elt_, stream());
  }
  bool reads_input(size_t i) const override { return i == 0; }

 private:
  Tensor scale_, shift_;
  int64_t channels_ = 1, inner_ = 1;
};
std::string batch_norm_supports(const NodeView& v) {
  const ir::Node& n = v.node;
  if (!onnx(n, "BatchNormalization")) return "no CUDA kernel for " + n.op_type;
  if (std::string r = static_shapes(v, {}); !r.empty()) return r;
  if (n.outputs.size() > 1 || n.attr_int("training_mode", 0) != 0) return "training mode";
  // X and Y in the activations' type; the statistics float32 constants (read at prepare).
  if (std::string r = same_float(v, {0}); !r.empty()) return r;
  for (size_t i = 1; i <= 4; ++i)
    if (v.in_types[i]->dtype != DType::Float32) return "statistics other than float32";
  for (size_t i = 1; i <= 4; ++i)
    if (!v.constant(i)) return "statistics that are not constants";
  if (in_shape(v, 0).size() < 2) return "rank under 2";
  return "";
}
std::unique_ptr<kernels::Kernel> batch_norm_prepare(const NodeView& v) { return std::make_unique<BatchNormKernel>(v); }

// ---------------------------------------------------------------- data movement

k::Strided contiguous_view(const Shape& out, const std::vector<int64_t>& strides, int64_t offset) {
  k::Strided s;
  s.rank = static_cast<int>(out.size());
  for (size_t d = 0; d < out.size(); ++d) {
    s.out[d] = out[d];
    s.stride[d] = strides[d];
  }
  s.offset = offset;
  return s;
}

// One strided gather per output: Transpose, Slice, Expand, Split.
class GatherCopyKernel : public GpuKernel {
 public:
  GatherCopyKernel(const NodeView& v, std::vector<k::Strided> per_output) : GpuKernel(v), st_(std::move(per_output)) {}
  void run(ops::KernelContext& k) const override {
    const Tensor& x = in(k, 0);
    const int elem = static_cast<int>(dtype_size(x.dtype()));
    for (size_t j = 0; j < st_.size(); ++j) {
      if (j >= k.node.outputs.size() || k.node.outputs[j].empty()) continue;
      Tensor& y = out(k, j);
      k::strided_copy(x.raw(), y.raw(), elem, y.numel(), st_[j], true, stream());
    }
  }

 private:
  std::vector<k::Strided> st_;
};

std::string movement_plan(const NodeView& v, std::vector<k::Strided>* plan) {
  const ir::Node& n = v.node;
  if (!n.domain.empty()) return "no CUDA kernel for " + n.domain + "." + n.op_type;
  const std::vector<bool> host = host_inputs(n);
  if (std::string r = static_shapes(v, host); !r.empty()) return r;
  const Shape x = in_shape(v, 0);
  if (x.size() > static_cast<size_t>(k::kMaxRank)) return "rank over 8";
  const std::vector<int64_t> xs = shape_strides(x);
  const std::string& t = n.op_type;
  if (t == "Transpose") {
    std::vector<int64_t> perm = n.attr_ints("perm");
    if (perm.empty())
      for (size_t i = x.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    std::vector<int64_t> st;
    for (int64_t p : perm) st.push_back(xs[static_cast<size_t>(p)]);
    plan->push_back(contiguous_view(out_shape(v), st, 0));
    return "";
  }
  if (t == "Expand") {
    const Shape y = out_shape(v);
    k::Strided s;
    s.rank = static_cast<int>(y.size());
    for (size_t d = 0; d < y.size(); ++d) s.out[d] = y[d];
    broadcast_strides(x, y, s.stride);
    plan->push_back(s);
    return "";
  }
  if (t == "Slice") {
    ops::movement::SliceParams p;
    auto ints = [&](size_t i) -> std::optional<std::vector<int64_t>> {
      if (!v.has(i)) return std::vector<int64_t>{};
      const Tensor* c = v.constant(i);
      if (!c) return std::nullopt;
      return c->to_int_vector();
    };
    if (v.opset < 10) {
      p.starts = n.attr_ints("starts");
      p.ends = n.attr_ints("ends");
      p.axes = n.attr_ints("axes");
    } else {
      auto s = ints(1), e = ints(2), a = ints(3), st = ints(4);
      if (!s || !e || !a || !st) return "starts/ends/axes/steps not constant";
      p.starts = *s;
      p.ends = *e;
      p.axes = *a;
      p.steps = *st;
    }
    ops::movement::normalize_slice_params(p, static_cast<int64_t>(x.size()), n);
    const ops::movement::SliceView sv = ops::movement::slice_view(x, p);
    if (sv.shape != out_shape(v)) return "slice shape differs from the planned one";
    plan->push_back(contiguous_view(sv.shape, sv.strides, sv.offset));
    return "";
  }
  if (t == "Split") {
    const int64_t axis = axis_of(n.attr_int("axis", 0), x.size());
    int64_t start = 0;
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      const Shape y = v.out_types[j] ? v.out_types[j]->static_shape() : Shape{};
      if (y.size() != x.size()) return "split output rank";
      plan->push_back(contiguous_view(y, xs, start * xs[static_cast<size_t>(axis)]));
      start += y[static_cast<size_t>(axis)];
    }
    return "";
  }
  return "no CUDA kernel for " + t;
}

std::string movement_supports(const NodeView& v) {
  std::vector<k::Strided> p;
  return movement_plan(v, &p);
}
std::unique_ptr<kernels::Kernel> movement_prepare(const NodeView& v) {
  std::vector<k::Strided> p;
  movement_plan(v, &p);
  return std::make_unique<GatherCopyKernel>(v, std::move(p));
}

// Concat: each input scattered into its place in the output.
class ConcatKernel : public GpuKernel {
 public:
  explicit ConcatKernel(const NodeView& v) : GpuKernel(v) {
    const Shape y = out_shape(v);
    const int64_t axis = axis_of(v.node.attr_int("axis", 0), y.size());
    const std::vector<int64_t> ys = shape_strides(y);
    int64_t start = 0;
    for (size_t i = 0; i < v.in_types.size(); ++i) {
      const Shape x = in_shape(v, i);
      parts_.push_back(contiguous_view(x, ys, start * ys[static_cast<size_t>(axis)]));
      start += x[static_cast<size_t>(axis)];
    }
  }
  void run(ops::KernelContext& k) const override {
    Tensor& y = out(k, 0);
    const int elem = static_cast<int>(dtype_size(y.dtype()));
    for (size_t i = 0; i < parts_.size(); ++i) {
      const Tensor& x = in(k, i);
      k::strided_copy(x.raw(), y.raw(), elem, x.numel(), parts_[i], false, stream());
    }
  }

 private:
  std::vector<k::Strided> parts_;
};
std::string concat_supports(const NodeView& v) {
  if (!onnx(v.node, "Concat")) return "no CUDA kernel for " + v.node.op_type;
  if (std::string r = static_shapes(v, {}); !r.empty()) return r;
  if (out_shape(v).size() > static_cast<size_t>(k::kMaxRank) || out_shape(v).empty()) return "rank 0 or over 8";
  for (size_t i = 0; i < v.in_types.size(); ++i)
    if (!v.has(i)) return "absent input";
  return "";
}
std::unique_ptr<kernels::Kernel> concat_prepare(const NodeView& v) { return std::make_unique<ConcatKernel>(v); }

class GatherKernel : public GpuKernel {
 public:
  explicit GatherKernel(const NodeView& v) : GpuKernel(v) {
    const Shape x = in_shape(v, 0);
    const size_t axis = static_cast<size_t>(axis_of(v.node.attr_int("axis", 0), x.size()));
    outer_ = prod(x, 0, axis);
    dim_ = x[axis];
    inner_ = prod(x, axis + 1, x.size());
    n_idx_ = shape_numel(in_shape(v, 1));
    idx64_ = v.in_types[1]->dtype == DType::Int64;
  }
  void run(ops::KernelContext& k) const override {
    const Tensor& x = in(k, 0);
    Tensor& y = out(k, 0);
    k::gather(x.raw(), in(k, 1).raw(), idx64_, y.raw(), static_cast<int>(dtype_size(x.dtype())), outer_, dim_, inner_, n_idx_, stream());
  }

 private:
  int64_t outer_ = 1, dim_ = 1, inner_ = 1, n_idx_ = 0;
  bool idx64_ = true;
};
std::string gather_supports(const NodeView& v) {
  if (!onnx(v.node, "Gather")) return "no CUDA kernel for " + v.node.op_type;
  if (std::string r = static_shapes(v, {}); !r.empty()) return r;
  const DType it = v.in_types[1]->dtype;
  if (it != DType::Int64 && it != DType::Int32) return "indices of " + std::string(dtype_name(it));
  if (in_shape(v, 0).empty()) return "a scalar";
  return "";
}
std::unique_ptr<kernels::Kernel> gather_prepare(const NodeView& v) { return std::make_unique<GatherKernel>(v); }

// Reshape, Flatten, Squeeze, Unsqueeze: the same GPU buffer under the planned shape.
class ViewKernel : public GpuKernel {
 public:
  explicit ViewKernel(const NodeView& v) : GpuKernel(v) {}
  void run(ops::KernelContext& k) const override { k.outputs[0] = in(k, 0).reshaped(out_shapes_[0]); }
};
std::string view_supports(const NodeView& v) {
  const ir::Node& n = v.node;
  const std::string& t = n.op_type;
  if (!n.domain.empty() || !(t == "Reshape" || t == "Flatten" || t == "Squeeze" || t == "Unsqueeze"))
    return "no CUDA kernel for " + t;
  return static_shapes(v, host_inputs(n));
}
std::unique_ptr<kernels::Kernel> view_prepare(const NodeView& v) { return std::make_unique<ViewKernel>(v); }

// The copies placement inserts. To the device: the host values are copied (or converted, where
// the GPU keeps float activations in half precision: lower_gpu_floats) by the session's threads
// into page-locked memory of the copy's own, from which the GPU reads them at full speed (a copy
// from pageable memory moves ~7 GB/s: 2.9 ms for a batch of 32 224x224 images). To the host:
// into host memory, and the stream is waited for (the CPU node after it reads the values); half
// values are converted on the GPU first, into a float32 buffer of the copy's own.
class MemcpyKernel : public GpuKernel {
 public:
  MemcpyKernel(const NodeView& v, bool to_device) : GpuKernel(v), to_device_(to_device) {
    const DType host = to_device ? v.in_types[0]->dtype : out_dtypes_[0];
    const DType gpu = to_device ? out_dtypes_[0] : v.in_types[0]->dtype;
    if (host != gpu) {
      from_ = elt_of(gpu);
      to_ = elt_of(host);
      convert_ = true;
    }
    const int64_t n = shape_numel(v.in_types[0]->static_shape());
    if (to_device) {
      pinned_bytes_ = static_cast<size_t>(n) * dtype_size(gpu);
      if (pinned_bytes_) {
        check(cudaHostAlloc(&pinned_, pinned_bytes_, cudaHostAllocDefault), "cudaHostAlloc");
        check(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "cudaEventCreate");
      }
    } else if (convert_) {
      stage_ = empty(host, v.in_types[0]->static_shape(), device_);
    }
  }
  ~MemcpyKernel() override {
    if (pinned_) cudaFreeHost(pinned_);
    if (done_) cudaEventDestroy(done_);
  }
  MemcpyKernel(const MemcpyKernel&) = delete;
  MemcpyKernel& operator=(const MemcpyKernel&) = delete;
  void run(ops::KernelContext& k) const override {
    const Tensor& x = k.in(0);
    if (to_device_) {
      if (!x.on_host()) fail_internal(k.node.where() + ": input already on a GPU");
      Tensor& y = out(k, 0);
      if (x.shape() != y.shape()) fail(k.node.where() + ": input " + x.describe() + " differs from the planned " + y.describe());
      if (!x.nbytes()) return;
      if (y.nbytes() != pinned_bytes_) fail_internal(k.node.where() + ": staging size");
      check(cudaEventSynchronize(done_), "MemcpyToDevice");  // the last run's copy out of the staging memory is done
      auto part = [&](int64_t b, int64_t e) {
        if (convert_)
          to_half_bits(x.data<float>() + b, static_cast<uint16_t*>(pinned_) + b, e - b, y.dtype());
        else
          std::memcpy(static_cast<std::byte*>(pinned_) + b * dtype_size(x.dtype()), static_cast<const std::byte*>(x.raw()) + b * dtype_size(x.dtype()),
                      static_cast<size_t>(e - b) * dtype_size(x.dtype()));
      };
      const int64_t n = x.numel(), chunk = int64_t{1} << 18;
      if (k.pool && n > chunk)
        k.pool->parallel_for((n + chunk - 1) / chunk, [&](int64_t b, int64_t e) { part(b * chunk, std::min(n, e * chunk)); });
      else
        part(0, n);
      check(cudaMemcpyAsync(y.raw(), pinned_, pinned_bytes_, cudaMemcpyHostToDevice, stream()), "MemcpyToDevice");
      check(cudaEventRecord(done_, stream()), "MemcpyToDevice");
      return;
    }
    Tensor& y = k.outputs[0];
    const DType host = convert_ ? stage_.dtype() : x.dtype();
    if (!(y.defined() && y.on_host() && y.shape() == x.shape() && y.dtype() == host)) y = Tensor(host, x.shape());
    if (x.nbytes()) {
      const void* src = x.raw();
      if (convert_) {
        k::cast(x.raw(), from_, const_cast<void*>(stage_.raw()), to_, x.numel(), stream());
        src = stage_.raw();
      }
      check(cudaMemcpyAsync(y.raw(), src, y.nbytes(), cudaMemcpyDeviceToHost, stream()), "MemcpyToHost");
    }
    check(cudaStreamSynchronize(stream()), "MemcpyToHost");
  }
  std::string detail() const override {
    if (to_device_) return convert_ ? "host to GPU through page-locked memory, converted on the host" : "host to GPU through page-locked memory";
    return convert_ ? "GPU to host, converted on the GPU first" : "GPU to host";
  }

 private:
  bool to_device_, convert_ = false;
  void* pinned_ = nullptr;  // to the device: page-locked host memory of the GPU side's bytes
  size_t pinned_bytes_ = 0;
  cudaEvent_t done_ = nullptr;  // recorded after the copy out of pinned_
  Tensor stage_;                // to the host, converting: float32 on the GPU
  k::Elt from_ = k::Elt::F32, to_ = k::Elt::F32;  // GPU side, host side
};
std::string memcpy_supports(const NodeView& v) {
  if (v.node.domain != "joule" || (v.node.op_type != "MemcpyToDevice" && v.node.op_type != "MemcpyToHost")) return "not a copy";
  if (std::string r = static_shapes(v, {true}); !r.empty()) return r;
  const DType a = v.in_types[0]->dtype, b = v.out_types[0]->dtype;
  auto half = [](DType t) { return t == DType::Float16 || t == DType::BFloat16; };
  if (a != b && !((a == DType::Float32 && half(b)) || (half(a) && b == DType::Float32)))
    return std::string("a copy from ") + dtype_name(a) + " to " + dtype_name(b);
  return "";
}
std::unique_ptr<kernels::Kernel> memcpy_prepare(const NodeView& v) {
  return std::make_unique<MemcpyKernel>(v, v.node.op_type == "MemcpyToDevice");
}

// Cast between float32, float16 and bfloat16 (those --gpu-fp32 inserts, and a model's own).
class CastKernel : public GpuKernel {
 public:
  explicit CastKernel(const NodeView& v) : GpuKernel(v), from_(elt_of(v.in_types[0]->dtype)) {}
  void run(ops::KernelContext& k) const override {
    const Tensor& x = in(k, 0);
    Tensor& y = out(k, 0);
    k::cast(x.raw(), from_, y.raw(), elt_, x.numel(), stream());
  }

 private:
  k::Elt from_;
};
std::string cast_supports(const NodeView& v) {
  if (!onnx(v.node, "Cast")) return "no CUDA kernel for " + v.node.op_type;
  if (std::string r = static_shapes(v, {}); !r.empty()) return r;
  if (!gpu_float(v.in_types[0]->dtype) || !gpu_float(v.out_types[0]->dtype)) return "Cast between float32, float16 and bfloat16 only";
  return "";
}
std::unique_ptr<kernels::Kernel> cast_prepare(const NodeView& v) { return std::make_unique<CastKernel>(v); }

using kernels::Algorithm;
const Algorithm kCastCuda{"cast", "cuda", "joule CUDA kernel: Cast between float32, float16 and bfloat16", cast_supports, one_ms,
                          cast_prepare, false, "cuda"};
const Algorithm kGemmCublas{"gemm", "cublas", "cuBLAS SGEMM (TF32 with --gpu-math tf32), bias/residual/activation in one epilogue kernel",
                            gemm_supports, gemm_estimate, gemm_prepare, false, "cuda"};
const Algorithm kMatMulCublas{"matmul", "cublas", "cuBLAS SGEMM, strided batched over batch dims, FusedMatMul's epilogue in one kernel",
                              gemm_supports, gemm_estimate, gemm_prepare, false, "cuda"};
const Algorithm kUnaryCuda{"unary", "cuda", "joule CUDA kernel: activations and unary math, one pass", unary_supports, one_ms, unary_prepare,
                           false, "cuda"};
const Algorithm kBinaryCuda{"binary", "cuda", "joule CUDA kernel: Add/Sub/Mul/Div/Pow/Max/Min/PRelu with broadcasting", binary_supports,
                            one_ms, binary_prepare, false, "cuda"};
const Algorithm kPoolCuda{"pool", "cuda", "joule CUDA kernel: 2-D Max/AveragePool, global pools as row reductions", pool_supports, one_ms,
                          pool_prepare, false, "cuda"};
const Algorithm kReduceCuda{"reduce", "cuda", "joule CUDA kernel: Reduce* over adjacent axes", reduce_supports, one_ms, reduce_prepare,
                            false, "cuda"};
const Algorithm kSoftmaxCuda{"softmax", "cuda", "joule CUDA kernel: (Log)Softmax, a block per row", softmax_supports, one_ms, softmax_prepare,
                             false, "cuda"};
const Algorithm kLayerNormCuda{"layer_norm", "cuda", "joule CUDA kernel: LayerNormalization, a block per row, two-pass statistics",
                               layer_norm_supports, one_ms, layer_norm_prepare, false, "cuda"};
const Algorithm kBatchNormCuda{"batch_norm", "cuda", "joule CUDA kernel: inference BatchNormalization as a per-channel affine",
                               batch_norm_supports, one_ms, batch_norm_prepare, false, "cuda"};
const Algorithm kMovementCuda{"movement", "cuda", "joule CUDA kernel: Transpose/Slice/Expand/Split as strided copies", movement_supports,
                              one_ms, movement_prepare, false, "cuda"};
const Algorithm kConcatCuda{"concat", "cuda", "joule CUDA kernel: one strided copy per input", concat_supports, one_ms, concat_prepare,
                            false, "cuda"};
const Algorithm kGatherCuda{"gather", "cuda", "joule CUDA kernel: Gather along an axis", gather_supports, one_ms, gather_prepare, false,
                            "cuda"};
const Algorithm kViewCuda{"view", "cuda", "Reshape/Flatten/Squeeze/Unsqueeze: the same GPU buffer, new shape", view_supports, one_ms,
                          view_prepare, false, "cuda"};
const Algorithm kMemcpyCuda{"memcpy", "cuda", "copies between host and GPU memory on the GPU's stream", memcpy_supports, one_ms,
                            memcpy_prepare, false, "cuda"};

}  // namespace

std::string op_class(const ir::Node& n) {
  if (n.domain == "joule" && (n.op_type == "MemcpyToDevice" || n.op_type == "MemcpyToHost")) return "memcpy";
  const std::string cpu = kernels::op_class_of(n);
  if (cpu == "conv" || cpu == "gemm" || cpu == "matmul" || cpu == "concat" || cpu == "softmax" || cpu == "layer_norm" ||
      cpu == "batch_norm")
    return cpu;
  if (n.op_type == "LogSoftmax" && n.domain.empty()) return "softmax";
  if (n.domain.empty() && binary_ops().count(n.op_type)) return "binary";
  if (n.domain.empty() && n.op_type.rfind("Reduce", 0) == 0) return "reduce";
  if (n.domain.empty() && (n.op_type == "MaxPool" || n.op_type == "AveragePool" || n.op_type == "GlobalAveragePool" || n.op_type == "GlobalMaxPool"))
    return "pool";
  if (n.domain.empty() && (n.op_type == "Transpose" || n.op_type == "Slice" || n.op_type == "Expand" || n.op_type == "Split"))
    return "movement";
  if (n.domain.empty() && n.op_type == "Gather") return "gather";
  if (n.domain.empty() && n.op_type == "Cast") return "cast";
  if (n.domain.empty() && (n.op_type == "Reshape" || n.op_type == "Flatten" || n.op_type == "Squeeze" || n.op_type == "Unsqueeze"))
    return "view";
  return "unary";  // unary_supports names the op when there is no kernel for it
}

const std::vector<const kernels::Algorithm*>& algorithms() {
  static const std::vector<const kernels::Algorithm*> all = [] {
    std::vector<const kernels::Algorithm*> r = conv_algorithms();
    for (const Algorithm* a : {&kGemmCublas, &kMatMulCublas, &kUnaryCuda, &kBinaryCuda, &kPoolCuda, &kReduceCuda, &kSoftmaxCuda,
                               &kLayerNormCuda, &kBatchNormCuda, &kMovementCuda, &kConcatCuda, &kGatherCuda, &kViewCuda, &kMemcpyCuda,
                               &kCastCuda})
      r.push_back(a);
    return r;
  }();
  return all;
}

Support support(const NodeView& v) {
  Support s;
  s.host_input = host_inputs(v.node);
  const std::string cls = op_class(v.node);
  std::string first;
  for (const kernels::Algorithm* a : algorithms()) {
    if (cls != a->op_class) continue;
    std::string r;
    try {
      r = a->supports(v);
    } catch (const Error& e) {  // a malformed node: the CPU kernel's check will say what
      r = e.what();
    }
    if (r.empty()) return s;
    if (first.empty()) first = r;
  }
  s.reason = first.empty() ? "no CUDA kernel for " + v.node.op_type : first;
  return s;
}

}  // namespace joule::cuda
