// The Reduce* family: ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
// ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare.
// Axes: attribute before opset 18 (ReduceSum: before 13), optional int64 input after; empty
// axes reduce everything unless noop_with_empty_axes=1 (then the op is the identity).
// Reductions over an empty set give the identity of the operation (0, 1, -inf, +inf, ...).
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

// NaN, for the element types that have one (Max/Min propagate it, as NumPy and PyTorch do).
template <class T>
bool is_nan(T v) {
  if constexpr (std::is_integral_v<T>) {
    return false;
  } else {
    const double d = static_cast<double>(v);
    return d != d;
  }
}

enum class R { Mean, Sum, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

bool axes_from_input(R kind, int64_t opset) {
  return opset >= 18 || (kind == R::Sum && opset >= 13);
}

// The requested axes as given (not normalised); nullopt when they are an unknown input value.
std::optional<std::vector<int64_t>> read_axes(const ir::Node& n, R kind, int64_t opset,
                                              const Tensor* axes_value, bool axes_given) {
  if (!axes_from_input(kind, opset)) return n.attr_ints("axes");
  if (!axes_given) return std::vector<int64_t>{};
  if (!axes_value) return std::nullopt;
  return axes_value->to_int_vector();
}

// Per input dim: reduced or not. Empty `axes` = all unless noop (then none).
std::vector<bool> reduced_flags(const ir::Node& n, const std::vector<int64_t>& axes, int64_t rank) {
  const bool noop = n.attr_int("noop_with_empty_axes", 0) != 0;
  std::vector<bool> f(static_cast<size_t>(rank), axes.empty() && !noop);
  for (int64_t a : axes) f[static_cast<size_t>(normalize_axis(a, rank, n))] = true;
  return f;
}

template <R K>
void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  ir::TensorType& o = c.out(0);
  o = ir::TensorType{};
  o.dtype = x.dtype;
  if (!x.has_shape) return;
  const bool keep = c.node.attr_int("keepdims", 1) != 0;
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  bool axes_given = c.has(1);
  const Tensor* av = c.input_values.size() > 1 ? c.input_values[1] : nullptr;
  // an axes input of static length 0 is known to be empty
  if (axes_given && !av && c.in(1).has_shape && c.in(1).dims.size() == 1 &&
      c.in(1).dims[0].is_static() && c.in(1).dims[0].value == 0)
    axes_given = false;
  const auto axes = read_axes(c.node, K, c.opset, av, axes_given);
  if (!axes) {
    if (keep) {
      o.has_shape = true;
      o.dims.assign(x.dims.size(), ir::Dim{});
    }
    return;
  }
  const std::vector<bool> f = reduced_flags(c.node, *axes, rank);
  o.has_shape = true;
  for (int64_t d = 0; d < rank; ++d) {
    if (!f[static_cast<size_t>(d)])
      o.dims.push_back(x.dims[static_cast<size_t>(d)]);
    else if (keep)
      o.dims.push_back(ir::Dim{1, ""});
  }
}

// The reduction loops over merged groups of adjacent dims; the innermost group (kept or
// reduced) is contiguous and walked by the inner loop.
struct Plan {
  std::vector<int64_t> kept_sizes, kept_strides, red_sizes, red_strides;
  int64_t inner = 1;      // last group kept: its size (out[row*inner + j])
  int64_t red_inner = 1;  // last group reduced: its size
  int64_t rows = 1, red_outer = 1, count = 1;
};

Plan make_plan(const Shape& s, const std::vector<bool>& f) {
  Plan p;
  std::vector<int64_t> sizes;
  std::vector<bool> flags;
  for (size_t d = 0; d < s.size(); ++d) {
    if (f[d]) p.count *= s[d];
    if (s[d] == 1) continue;
    if (!flags.empty() && flags.back() == f[d]) {
      sizes.back() *= s[d];
    } else {
      sizes.push_back(s[d]);
      flags.push_back(f[d]);
    }
  }
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t i = sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * sizes[i];
  size_t n = sizes.size();
  if (n > 0) {
    (flags[n - 1] ? p.red_inner : p.inner) = sizes[n - 1];
    --n;
  }
  for (size_t i = 0; i < n; ++i) {
    if (flags[i]) {
      p.red_sizes.push_back(sizes[i]);
      p.red_strides.push_back(strides[i]);
      p.red_outer *= sizes[i];
    } else {
      p.kept_sizes.push_back(sizes[i]);
      p.kept_strides.push_back(strides[i]);
      p.rows *= sizes[i];
    }
  }
  return p;
}

inline int64_t decode(int64_t i, const std::vector<int64_t>& sizes,
                      const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (size_t d = sizes.size(); d-- > 0;) {
    off += (i % sizes[d]) * strides[d];
    i /= sizes[d];
  }
  return off;
}

// out[o] = fin(acc, o) with acc = comb(...comb(init, x0, o)..., xn, o) over the reduced elements.
template <class T, class A, class O, class Comb, class Fin>
void reduce_loop(const T* x, O* out, const Plan& p, A init, Comb comb, Fin fin, ThreadPool* pool) {
  auto body = [&](int64_t begin, int64_t end) {
    std::vector<A> acc(static_cast<size_t>(p.inner));
    for (int64_t row = begin; row < end; ++row) {
      const int64_t base = decode(row, p.kept_sizes, p.kept_strides);
      const int64_t o0 = row * p.inner;
      for (auto& a : acc) a = init;
      for (int64_t r = 0; r < p.red_outer; ++r) {
        const T* xp = x + base + decode(r, p.red_sizes, p.red_strides);
        if (p.red_inner == 1) {
          for (int64_t j = 0; j < p.inner; ++j)
            acc[static_cast<size_t>(j)] = comb(acc[static_cast<size_t>(j)], xp[j], o0 + j);
        } else {
          A a = acc[0];
          for (int64_t l = 0; l < p.red_inner; ++l) a = comb(a, xp[l], o0);
          acc[0] = a;
        }
      }
      for (int64_t j = 0; j < p.inner; ++j) out[o0 + j] = fin(acc[static_cast<size_t>(j)], o0 + j);
    }
  };
  parallel_or_serial(pool, p.rows, body);
}

template <class T>
using AccType = std::conditional_t<std::is_floating_point_v<T>, double,
                                   std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

template <class A>
A wrap_add(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}
template <class A>
A wrap_mul(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else
    return a * b;
}

template <class T>
void reduce_typed(R kind, const Tensor& X, Tensor& Y, const Plan& p, ThreadPool* pool) {
  using A = AccType<T>;
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  const double cnt = static_cast<double>(p.count);
  // A double result (L2, LogSum, LogSumExp, Mean) into an integer type saturates; NaN gives 0
  // (-inf from the log of an empty or zero sum converted to int8 is undefined behaviour).
  auto to_t = [](auto v) {
    if constexpr (std::is_integral_v<T> && std::is_floating_point_v<decltype(v)>) {
      if (v != v) return T(0);
      if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
      if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    }
    return static_cast<T>(v);
  };
  auto ident = [&](A a, int64_t) { return to_t(a); };
  auto add = [](A a, T v, int64_t) { return wrap_add<A>(a, static_cast<A>(v)); };
  switch (kind) {
    case R::Sum:
      reduce_loop<T, A>(x, y, p, A(0), add, ident, pool);
      break;
    case R::Mean:
      reduce_loop<T, A>(
          x, y, p, A(0), add,
          [&](A a, int64_t) {
            if constexpr (std::is_integral_v<A>)
              return to_t(p.count == 0 ? A(0) : a / static_cast<A>(p.count));
            else
              return to_t(a / cnt);
          },
          pool);
      break;
    case R::SumSquare:
      reduce_loop<T, A>(
          x, y, p, A(0),
          [](A a, T v, int64_t) {
            return wrap_add<A>(a, wrap_mul<A>(static_cast<A>(v), static_cast<A>(v)));
          },
          ident, pool);
      break;
    case R::L1:
      reduce_loop<T, A>(
          x, y, p, A(0),
          [](A a, T v, int64_t) {
            A w = static_cast<A>(v);
            if constexpr (std::is_signed_v<A>) w = w < 0 ? wrap_mul<A>(w, A(-1)) : w;
            return wrap_add<A>(a, w);
          },
          ident, pool);
      break;
    case R::Prod:
      reduce_loop<T, A>(
          x, y, p, A(1), [](A a, T v, int64_t) { return wrap_mul<A>(a, static_cast<A>(v)); }, ident,
          pool);
      break;
    case R::Max: {
      const A lo = std::numeric_limits<T>::has_infinity
                       ? static_cast<A>(-std::numeric_limits<T>::infinity())
                       : static_cast<A>(std::numeric_limits<T>::lowest());
      reduce_loop<T, A>(
          x, y, p, lo,
          [](A a, T v, int64_t) { return static_cast<A>(v) > a || is_nan(v) ? static_cast<A>(v) : a; }, ident,  // NaN wins
          pool);
      break;
    }
    case R::Min: {
      const A hi = std::numeric_limits<T>::has_infinity
                       ? static_cast<A>(std::numeric_limits<T>::infinity())
                       : static_cast<A>(std::numeric_limits<T>::max());
      reduce_loop<T, A>(
          x, y, p, hi,
          [](A a, T v, int64_t) { return static_cast<A>(v) < a || is_nan(v) ? static_cast<A>(v) : a; }, ident,  // NaN wins
          pool);
      break;
    }
    case R::L2:
      reduce_loop<T, double>(
          x, y, p, 0.0,
          [](double a, T v, int64_t) {
            return a + static_cast<double>(v) * static_cast<double>(v);
          },
          [&](double a, int64_t) { return to_t(std::sqrt(a)); }, pool);
      break;
    case R::LogSum:
      reduce_loop<T, double>(
          x, y, p, 0.0, [](double a, T v, int64_t) { return a + static_cast<double>(v); },
          [&](double a, int64_t) { return to_t(std::log(a)); }, pool);
      break;
    case R::LogSumExp: {
      // max first (per output element), then log(sum(exp(x - max))) + max
      std::vector<double> m(static_cast<size_t>(Y.numel()));
      reduce_loop<T, double>(
          x, m.data(), p, -std::numeric_limits<double>::infinity(),
          [](double a, T v, int64_t) {
            return static_cast<double>(v) > a ? static_cast<double>(v) : a;
          },
          [](double a, int64_t) { return a; }, pool);
      for (double& v : m)
        if (!std::isfinite(v)) v = v > 0 ? v : 0.0;
      reduce_loop<T, double>(
          x, y, p, 0.0,
          [&](double a, T v, int64_t o) {
            return a + std::exp(static_cast<double>(v) - m[static_cast<size_t>(o)]);
          },
          [&](double a, int64_t o) { return to_t(std::log(a) + m[static_cast<size_t>(o)]); }, pool);
      break;
    }
  }
}

template <R K>
void run(KernelContext& c) {
  if (run_half_as_float(c, run<K>)) return;
  const Tensor& X = c.in(0);
  const bool axes_given = c.has(1) && c.inputs[1]->numel() > 0;
  const auto axes = read_axes(c.node, K, c.opset, axes_given ? c.inputs[1] : nullptr, axes_given);
  const bool keep = c.node.attr_int("keepdims", 1) != 0;
  const std::vector<bool> f = reduced_flags(c.node, *axes, X.rank());
  Shape ys;
  for (int d = 0; d < X.rank(); ++d) {
    if (!f[static_cast<size_t>(d)])
      ys.push_back(X.dim(d));
    else if (keep)
      ys.push_back(1);
  }
  Tensor Y(X.dtype(), ys);
  const Plan p = make_plan(X.shape(), f);
  if (Y.numel() > 0) {
    visit_numeric(X.dtype(), c.node.where().c_str(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      // with an empty input only the finalisation of the empty accumulators runs
      Plan q = p;
      if (X.numel() == 0) q.red_outer = 0;
      reduce_typed<T>(K, X, Y, q, c.pool);
    });
  }
  c.outputs[0] = Y;
}

Cost cost(const CostContext& c) { return nn::per_element_cost(c, 1); }

}  // namespace

#define JOULE_REDUCE_OP(name, kind) \
  extern const OpDef kOp##name;     \
  const OpDef kOp##name{#name, "", 1, 2, infer<R::kind>, run<R::kind>, cost};
JOULE_REDUCE_OP(ReduceMean, Mean)
JOULE_REDUCE_OP(ReduceSum, Sum)
JOULE_REDUCE_OP(ReduceMax, Max)
JOULE_REDUCE_OP(ReduceMin, Min)
JOULE_REDUCE_OP(ReduceProd, Prod)
JOULE_REDUCE_OP(ReduceL1, L1)
JOULE_REDUCE_OP(ReduceL2, L2)
JOULE_REDUCE_OP(ReduceLogSum, LogSum)
JOULE_REDUCE_OP(ReduceLogSumExp, LogSumExp)
JOULE_REDUCE_OP(ReduceSumSquare, SumSquare)
#undef JOULE_REDUCE_OP

}  // namespace joule::ops
