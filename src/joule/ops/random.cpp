// The random generators (seeding and generator: random_util.h):
//   RandomUniform / RandomNormal: a tensor of attribute `shape`, dtype attribute `dtype`
//     (default float); RandomUniformLike / RandomNormalLike: input 0's shape, `dtype` default
//     input 0's dtype. Uniform draws lie in [low, high) (defaults 0, 1); normal ones have `mean`
//     (0) and standard deviation `scale` (1). Output types float16, bfloat16, float, double.
//   Bernoulli (opset 15): y = 1 with probability x (each x in [0, 1]), else 0; `dtype` default
//     input 0's dtype, any numeric type or bool.
// Draws are made in double and converted to the output type.
#include <bit>
#include <set>
#include <string_view>

#include "joule/ops/movement_util.h"
#include "joule/ops/random_util.h"

namespace joule::ops {

bool is_random_op(const ir::Node& node) {
  static const std::set<std::string> kRandom = {"Dropout", "RandomNormal", "RandomUniform", "RandomNormalLike",
                                                "RandomUniformLike", "Multinomial", "Bernoulli"};
  return node.domain.empty() && kRandom.count(node.op_type) != 0;
}

namespace rng {
uint64_t node_seed(const ir::Node& node) {
  auto it = node.attrs.find("seed");
  if (it != node.attrs.end()) {
    if (const auto* f = std::get_if<float>(&it->second)) return splitmix64(std::bit_cast<uint32_t>(*f));
    return splitmix64(static_cast<uint64_t>(node.attr_int("seed", 0)));
  }
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a of name '\0' first output
  auto mix = [&h](std::string_view s) {
    for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
    h = (h ^ 0) * 0x100000001b3ull;
  };
  mix(node.name);
  mix(node.outputs.empty() ? std::string_view() : std::string_view(node.outputs[0]));
  const uint64_t default_seed = 0;
  return splitmix64(default_seed ^ h);
}
}  // namespace rng

namespace {
using namespace movement;

bool is_like(const ir::Node& n) { return n.op_type == "RandomUniformLike" || n.op_type == "RandomNormalLike"; }

// Output dtype: the `dtype` attribute, else input 0's (the *Like ops, Bernoulli), else float.
DType out_dtype(const ir::Node& n, DType input) {
  if (n.has_attr("dtype")) return dtype_from_onnx(n.attr_int("dtype", 1), n);
  return input == DType::Undefined ? DType::Float32 : input;
}

std::string check(const ir::Node& n, int64_t) {
  if (!is_like(n) && n.op_type != "Bernoulli" && !n.has_attr("shape")) return "the shape attribute is required";
  if (n.has_attr("dtype")) {
    const DType t = joule::dtype_from_onnx(static_cast<int>(n.attr_int("dtype", 1)));
    if (t == DType::Undefined || t == DType::String) return "dtype " + std::to_string(n.attr_int("dtype", 1)) + " is not a type joule has";
    if (n.op_type != "Bernoulli" && !is_floating(t)) return std::string("dtype ") + dtype_name(t) + " is not floating point";
  }
  return "";
}

void infer(InferContext& c) {
  if (c.num_inputs() > 0) {
    const ir::TensorType& x = c.in(0);
    c.out(0) = x;
    c.out(0).dtype = out_dtype(c.node, x.dtype);
  } else {
    c.out(0) = make_type(out_dtype(c.node, DType::Undefined), dims_of(c.node.attr_ints("shape")));
  }
}

// A float64 tensor of `shape` filled with f(i) on the pool.
template <class F>
Tensor generate(const KernelContext& c, const Shape& shape, const F& f) {
  Tensor t(DType::Float64, shape);
  double* p = t.data<double>();
  parallel_or_serial(c.pool, t.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) p[i] = f(i);
  });
  return t;
}

void run_random(KernelContext& c) {
  const bool like = is_like(c.node);
  const Shape shape = like ? c.in(0).shape() : Shape(c.node.attr_ints("shape"));
  const DType dtype = out_dtype(c.node, like ? c.in(0).dtype() : DType::Undefined);
  if (!is_floating(dtype)) fail(c.node.where() + ": output dtype " + dtype_name(dtype) + " is not floating point (set dtype)");
  const uint64_t seed = rng::node_seed(c.node);
  const auto u = [seed](int64_t i) { return rng::uniform01(seed, static_cast<uint64_t>(i)); };
  if (c.node.op_type.rfind("RandomUniform", 0) == 0) {
    const double low = c.node.attr_float("low", 0.f), high = c.node.attr_float("high", 1.f);
    if (!(low < high)) fail(c.node.where() + ": low " + std::to_string(low) + " must be below high " + std::to_string(high));
    Tensor d = generate(c, shape, [&](int64_t i) { return low + (high - low) * u(i); });
    Tensor out = d.cast(dtype);
    // Rounding to a narrower output type can reach `high`: such draws become `low`.
    const Tensor back = out.cast(DType::Float64);
    bool fix = false;
    for (int64_t i = 0; i < d.numel(); ++i)
      if (back.data<double>()[i] >= high) {
        d.data<double>()[i] = low;
        fix = true;
      }
    c.outputs[0] = fix ? d.cast(dtype) : out;
  } else {
    const double mean = c.node.attr_float("mean", 0.f), scale = c.node.attr_float("scale", 1.f);
    c.outputs[0] = generate(c, shape, [&](int64_t i) { return mean + scale * rng::standard_normal(seed, static_cast<uint64_t>(i)); })
                       .cast(dtype);
  }
}

void run_bernoulli(KernelContext& c) {
  const Tensor& X = c.in(0);
  if (!is_floating(X.dtype())) fail(c.node.where() + ": input must be floating point probabilities, got " + X.describe());
  const Tensor p = X.cast(DType::Float64);
  const double* pp = p.data<double>();
  for (int64_t i = 0; i < p.numel(); ++i)
    if (!(pp[i] >= 0 && pp[i] <= 1)) fail(c.node.where() + ": probability " + std::to_string(pp[i]) + " is outside [0, 1]");
  const uint64_t seed = rng::node_seed(c.node);
  c.outputs[0] = generate(c, X.shape(), [&](int64_t i) { return rng::uniform01(seed, static_cast<uint64_t>(i)) < pp[i] ? 1.0 : 0.0; })
                     .cast(out_dtype(c.node, X.dtype()));
}

}  // namespace

extern const OpDef kOpRandomUniform, kOpRandomNormal, kOpRandomUniformLike, kOpRandomNormalLike, kOpBernoulli;
const OpDef kOpRandomUniform{"RandomUniform", "", 0, 0, infer, run_random, nullptr, check};
const OpDef kOpRandomNormal{"RandomNormal", "", 0, 0, infer, run_random, nullptr, check};
const OpDef kOpRandomUniformLike{"RandomUniformLike", "", 1, 1, infer, run_random, nullptr, check};
const OpDef kOpRandomNormalLike{"RandomNormalLike", "", 1, 1, infer, run_random, nullptr, check};
const OpDef kOpBernoulli{"Bernoulli", "", 1, 1, infer, run_bernoulli, nullptr, check};

}  // namespace joule::ops
