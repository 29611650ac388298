// Op classes "qconv" and "qmatmul", algorithm `emulated`: the integer plan's arithmetic on the
// float engine — what `--int8 simulated` runs, so that the simulation is of the plan that will
// run. The codes are centred (x - x_zero_point) into float32, the int8 weight codes are float32
// weights, and oneDNN's float32 convolution / matmul accumulates their products: integers up to
// 255 * 127 whose sums are exact in float32 while every partial sum stays below 2^24 in
// magnitude (a 3x3x512 convolution would need an average product of 3600 to get there; real
// activations are far below). The epilogue is the integer kernels' own function
// (kernels/int8/requant.h), so the codes agree with joule's int8 kernels element for element
// (and with oneDNN's but for the rounding of its swish and hardswish post-ops). Chosen on
// request (--int8 simulated, --algo), and by guess or auto only where no integer kernel
// supports the node (instead of the scalar reference kernel).
#include <dnnl.hpp>

#include "joule/core/cpu_features.h"
#include "joule/kernels/conv/onednn.h"
#include "joule/kernels/gemm/onednn_matmul.h"
#include "joule/kernels/int8/int8_node.h"
#include "joule/kernels/int8/requant.h"

namespace joule::kernels {
namespace {

using dnnl::memory;

// out[i] = p[i] - z over [b, e): 8 wide with AVX2, 4 in the baseline build.
template <class Q>
JOULE_ALWAYS_INLINE void center_span(const Q* __restrict p, float z, float* __restrict out, int64_t b, int64_t e) {
  for (int64_t i = b; i < e; ++i) out[i] = static_cast<float>(p[i]) - z;
}
template <class Q>
JOULE_AVX2 void center_span_avx2(const Q* p, float z, float* out, int64_t b, int64_t e) {
  center_span(p, z, out, b, e);
}
template <class Q>
void center_span_base(const Q* p, float z, float* out, int64_t b, int64_t e) {
  center_span(p, z, out, b, e);
}

// x - zero_point as float32.
void center(const Tensor& x, int32_t zp, float* out, ThreadPool& pool) {
  const float z = static_cast<float>(zp);
  const bool avx2 = cpu_features().avx2_fma;
  pool.parallel_for(x.numel(), [&](int64_t b, int64_t e) {
    auto run = [&](const auto* p) { avx2 ? center_span_avx2(p, z, out, b, e) : center_span_base(p, z, out, b, e); };
    if (x.dtype() == DType::UInt8) run(x.data<uint8_t>());
    else run(x.data<int8_t>());
  });
}

// Y = Requant(acc): channel-last rows ([rows, channels], inner 1) or channel-first planes
// ([rows, channels, inner]); the int8 kernels' own epilogue (kernels/int8/requant.h).
void epilogue(const ops::qint::Requant& r, const std::vector<float>& bias, const float* acc, Tensor& Y, int64_t rows,
              int64_t channels, int64_t inner, ThreadPool& pool) {
  auto go = [&](auto* y) {
    if (inner == 1) {
      pool.parallel_for(rows, [&](int64_t b, int64_t e) {
        requant_rows(r, bias.data(), acc + b * channels, channels, y + b * channels, channels, e - b, 0, channels);
      });
      return;
    }
    pool.parallel_for(rows * channels, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) requant_plane(r, bias.data(), acc + p * inner, y + p * inner, inner, p % channels);
    });
  };
  if (Y.dtype() == DType::UInt8) go(Y.data<uint8_t>());
  else if (Y.dtype() == DType::Int8) go(Y.data<int8_t>());
  else go(Y.data<float>());
}

std::vector<float> float_codes(const Tensor& w) {
  std::vector<float> f(static_cast<size_t>(w.numel()));
  for (int64_t i = 0; i < w.numel(); ++i) f[static_cast<size_t>(i)] = w.data<int8_t>()[i];
  return f;
}

class EmulatedQConv : public Kernel {
 public:
  EmulatedQConv(const QConvProblem& p, int threads)
      : p_(p), bias_(bias_or_zeros(p.q.rq)), w_(float_codes(*p.q.w)), x_(static_cast<size_t>(shape_numel(p.x_shape))),
        acc_(static_cast<size_t>(shape_numel(p.y_shape))),
        conv_(make_onednn_conv(p.s, w_.data(), nullptr, false, Epilogue{}, p.channels_last, threads)) {}

  void run(ops::KernelContext& k) const override {
    check_int8_input(k, p_.q, p_.x_shape);
    center(k.in(0), p_.q.x_zero_point, x_.data(), *k.pool);
    conv_->run(x_.data(), nullptr, acc_.data(), *k.pool);
    Tensor& Y = k.output(0, p_.q.y_type, p_.y_shape);
    const ConvShape& s = p_.s;
    if (p_.channels_last) epilogue(p_.q.rq, bias_, acc_.data(), Y, s.n * s.oh * s.ow, s.m, 1, *k.pool);
    else epilogue(p_.q.rq, bias_, acc_.data(), Y, s.n, s.m, s.oh * s.ow, *k.pool);
  }
  std::string detail() const override { return "float32 " + conv_->detail(); }
  bool reads_input(size_t i) const override { return i != 3; }

 private:
  QConvProblem p_;
  std::vector<float> bias_, w_;
  mutable std::vector<float> x_, acc_;
  std::unique_ptr<ConvKernel> conv_;
};

class EmulatedQMatMul : public Kernel {
 public:
  EmulatedQMatMul(const QMatMulProblem& p, int threads)
      : p_(p), bias_(bias_or_zeros(p.q.rq)), w_(float_codes(*p.q.w)), x_(static_cast<size_t>(p.M * p.K)),
        acc_(static_cast<size_t>(p.M * p.N)),
        mm_(memory::desc({p.M, p.K}, memory::data_type::f32, memory::format_tag::ab),
            memory({{p.K, p.N}, memory::data_type::f32, memory::format_tag::ab}, onednn_engine(), w_.data()),
            memory::desc(), memory::desc({p.M, p.N}, memory::data_type::f32, memory::format_tag::ab), dnnl::primitive_attr(),
            threads) {}

  void run(ops::KernelContext& k) const override {
    check_int8_input(k, p_.q, p_.a_shape);
    center(k.in(0), p_.q.x_zero_point, x_.data(), *k.pool);
    mm_.execute(x_.data(), acc_.data(), k.pool->threads());
    Tensor& Y = k.output(0, p_.q.y_type, p_.y_shape);
    epilogue(p_.q.rq, bias_, acc_.data(), Y, p_.M, p_.N, 1, *k.pool);
  }
  std::string detail() const override { return "float32 " + mm_.detail(); }
  bool reads_input(size_t i) const override { return i != 3; }

 private:
  QMatMulProblem p_;
  std::vector<float> bias_, w_;
  mutable std::vector<float> x_, acc_;
  OnednnMatMulPrimitive mm_;
};

std::string conv_supports(const NodeView& v) {
  QConvProblem p;
  return read_qconv_problem(v, &p);
}
std::string matmul_supports(const NodeView& v) {
  QMatMulProblem p;
  return read_qmatmul_problem(v, &p);
}

// Ranked only where no integer kernel supports the node; the float conv's time plus the
// conversions, roughly.
double conv_estimate_ms(const NodeView& v) {
  QConvProblem p;
  read_qconv_problem(v, &p);
  return 2.0 * p.s.macs() / (100e9 * v.threads) * 1e3 + 0.01;
}
double matmul_estimate_ms(const NodeView& v) {
  QMatMulProblem p;
  read_qmatmul_problem(v, &p);
  return 2.0 * static_cast<double>(p.M) * p.N * p.K / (100e9 * v.threads) * 1e3 + 0.01;
}

std::unique_ptr<Kernel> conv_prepare(const NodeView& v) {
  QConvProblem p;
  if (std::string r = read_qconv_problem(v, &p); !r.empty()) fail_internal(v.node.where() + ": " + r);
  return std::make_unique<EmulatedQConv>(p, v.threads);
}
std::unique_ptr<Kernel> matmul_prepare(const NodeView& v) {
  QMatMulProblem p;
  if (std::string r = read_qmatmul_problem(v, &p); !r.empty()) fail_internal(v.node.where() + ": " + r);
  return make_onednn_kernel<EmulatedQMatMul>(v.node.where() + ": ", "float32 matmul", p, v.threads);
}

}  // namespace

extern const Algorithm kQConvEmulated, kQMatMulEmulated;
const Algorithm kQConvEmulated{"qconv", "emulated",
                               "the integer plan's arithmetic on float32 oneDNN (exact sums, the int8 epilogue): what "
                               "--int8 simulated runs",
                               conv_supports, conv_estimate_ms, conv_prepare, /*on_request_only=*/true};
const Algorithm kQMatMulEmulated{"qmatmul", "emulated",
                                 "the integer plan's arithmetic on float32 oneDNN (exact sums, the int8 epilogue): what "
                                 "--int8 simulated runs",
                                 matmul_supports, matmul_estimate_ms, matmul_prepare, /*on_request_only=*/true};

}  // namespace joule::kernels
