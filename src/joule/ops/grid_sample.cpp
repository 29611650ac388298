// GridSample (opset 16, 20) on 4-D input: Y[n, c, h, w] samples X[n, c] at the normalised
// position grid[n, h, w] = (x, y) in [-1, 1] (align_corners 1: -1 and 1 are the centres of the
// corner pixels, 0: their outer edges). Modes bilinear, nearest (ties to even) and bicubic
// (Keys, a = -0.75); opset 20 names them linear, nearest, cubic. padding_mode zeros (0 outside),
// border (clamped) or reflection (mirrored at the borders). Coordinates are computed in X's
// float type as PyTorch and onnxruntime do; float16/bfloat16 run in float32. Opset 20's
// N-D (other than 4-D) inputs are refused. Rows of N x output height run in parallel; each row's
// taps are computed once and applied to every channel.
#include <algorithm>
#include <cmath>
#include <vector>

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

enum class Mode { Linear, Nearest, Cubic };
enum class Pad { Zeros, Border, Reflection };

struct Params {
  Mode mode = Mode::Linear;
  Pad pad = Pad::Zeros;
  bool align = false;
};

// "" when the node's attributes are supported, else the reason.
std::string problem(const ir::Node& n, int64_t opset) {
  const bool v20 = opset >= 20;
  const std::string mode = n.attr_string("mode", v20 ? "linear" : "bilinear");
  const bool known = mode == "nearest" || mode == (v20 ? "linear" : "bilinear") || mode == (v20 ? "cubic" : "bicubic");
  if (!known) return "mode '" + mode + "' at opset " + std::to_string(opset) + (v20 ? " (linear, nearest, cubic)" : " (bilinear, nearest, bicubic)");
  const std::string pad = n.attr_string("padding_mode", "zeros");
  if (pad != "zeros" && pad != "border" && pad != "reflection") return "padding_mode '" + pad + "' (zeros, border, reflection)";
  return "";
}

Params params(const ir::Node& n, int64_t opset) {
  if (const std::string why = problem(n, opset); !why.empty()) fail(n.where() + ": " + why);
  Params p;
  const std::string mode = n.attr_string("mode", "linear");
  p.mode = mode == "nearest" ? Mode::Nearest : (mode == "bicubic" || mode == "cubic") ? Mode::Cubic : Mode::Linear;
  const std::string pad = n.attr_string("padding_mode", "zeros");
  p.pad = pad == "border" ? Pad::Border : pad == "reflection" ? Pad::Reflection : Pad::Zeros;
  p.align = n.attr_int("align_corners", 0) != 0;
  return p;
}

void require_4d(const ir::Node& n, size_t rank, const char* what) {
  if (rank != 4)
    fail_unsupported(n.where() + ": " + what + " of rank " + std::to_string(rank) + " (only 4-D input is supported)");
}

void infer(InferContext& c) {
  params(c.node, c.opset);
  const ir::TensorType& x = c.in(0);
  const ir::TensorType& g = c.in(1);
  if (x.has_shape) require_4d(c.node, x.dims.size(), "X");
  if (g.has_shape) require_4d(c.node, g.dims.size(), "grid");
  ir::TensorType out;
  out.dtype = x.dtype;
  out.has_shape = true;
  out.dims = {x.has_shape ? x.dims[0] : ir::Dim{}, x.has_shape ? x.dims[1] : ir::Dim{},
              g.has_shape ? g.dims[1] : ir::Dim{}, g.has_shape ? g.dims[2] : ir::Dim{}};
  c.out(0) = out;
}

// Mirrors v into [lo, hi] by reflecting at the nearer border until it lies inside.
template <class T>
T reflect(T v, T lo, T hi) {
  const T range = hi - lo;
  if (!(range > 0)) return lo;
  const bool below = v < lo;
  if (!below && !(v > hi)) return v;
  const T d = below ? lo - v : v - hi;
  const T k = std::floor(d / range);
  const T r = d - k * range;
  const bool even = std::fmod(k, T(2)) == 0;
  return below == even ? lo + r : hi - r;
}

// One axis of the input: its size, the valid coordinate range and the padding rule.
template <class T>
struct Axis {
  int64_t size;
  T lo, hi;  // [-0.5, size - 0.5], or [0, size - 1] with align_corners
  Pad pad;

  Axis(int64_t n, bool align, Pad p)
      : size(n), lo(align ? T(0) : T(-0.5)), hi(align ? static_cast<T>(n - 1) : static_cast<T>(n) - T(0.5)), pad(p) {}

  // The unnormalised coordinate of g in [-1, 1], moved inside for border/reflection padding.
  T coord(T g, bool align, bool round) const {
    T v = align ? (g + 1) / 2 * static_cast<T>(size - 1) : ((g + 1) * static_cast<T>(size) - 1) / 2;
    if (round) v = std::nearbyint(v);
    if (v < lo || v > hi) {
      if (pad == Pad::Border) v = std::clamp(v, T(0), static_cast<T>(size - 1));
      else if (pad == Pad::Reflection) v = reflect(v, lo, hi);
    }
    // Far outside (zeros padding) or NaN: any point whose taps all miss keeps indices in range.
    if (!(v >= lo - 8)) v = lo - 8;
    else if (v > hi + 8) v = hi + 8;
    return v;
  }
  // The pixel index read for tap i; -1 for zeros padding outside.
  int64_t index(int64_t i) const {
    if (i >= 0 && i < size) return i;
    if (pad == Pad::Zeros) return -1;
    if (pad == Pad::Reflection) i = static_cast<int64_t>(reflect(static_cast<T>(i), lo, hi));
    return std::clamp<int64_t>(i, 0, size - 1);
  }
};

template <class T>
void cubic_weights(T t, T w[4]) {
  const T a = -0.75;
  auto near = [&](T d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };       // |d| <= 1
  auto far = [&](T d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 < |d| < 2
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

// The taps of one sample along one axis: up to 4 indices (-1: zero) and weights.
template <class T>
int axis_taps(const Axis<T>& ax, T v, Mode mode, int64_t idx[4], T w[4]) {
  if (mode == Mode::Nearest) {
    idx[0] = ax.index(static_cast<int64_t>(v));
    w[0] = 1;
    return 1;
  }
  const T f = std::floor(v);
  const int64_t base = static_cast<int64_t>(f);
  if (mode == Mode::Linear) {
    idx[0] = ax.index(base);
    idx[1] = ax.index(base + 1);
    w[1] = v - f;
    w[0] = (f + 1) - v;
    return 2;
  }
  cubic_weights(v - f, w);
  for (int k = 0; k < 4; ++k) idx[k] = ax.index(base - 1 + k);
  return 4;
}

template <class T>
void grid_sample(const Tensor& X, const Tensor& G, const Params& p, Tensor& Y, ThreadPool* pool) {
  const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3);
  const int64_t Ho = G.dim(1), Wo = G.dim(2);
  const Axis<T> ay(H, p.align, p.pad), ax(W, p.align, p.pad);
  const T* x = X.data<T>();
  const T* g = G.data<T>();
  T* y = Y.data<T>();
  auto body = [&](int64_t begin, int64_t end) {
    std::vector<int64_t> offs;  // per output column: taps' plane offsets (-1: zero)
    std::vector<T> wts;
    for (int64_t row = begin; row < end; ++row) {
      const int64_t n = row / Ho, h = row % Ho;
      int taps = 0;
      offs.clear();
      wts.clear();
      for (int64_t w = 0; w < Wo; ++w) {
        const T* q = g + (row * Wo + w) * 2;
        const bool round = p.mode == Mode::Nearest;
        int64_t iy[4], ix[4];
        T wy[4], wx[4];
        const int ny = axis_taps(ay, ay.coord(q[1], p.align, round), p.mode, iy, wy);
        const int nx = axis_taps(ax, ax.coord(q[0], p.align, round), p.mode, ix, wx);
        taps = ny * nx;
        for (int a = 0; a < ny; ++a)
          for (int b = 0; b < nx; ++b) {
            offs.push_back(iy[a] < 0 || ix[b] < 0 ? -1 : iy[a] * W + ix[b]);
            wts.push_back(wy[a] * wx[b]);
          }
      }
      for (int64_t ch = 0; ch < C; ++ch) {
        const T* plane = x + (n * C + ch) * H * W;
        T* out = y + ((n * C + ch) * Ho + h) * Wo;
        for (int64_t w = 0; w < Wo; ++w) {
          const int64_t* o = offs.data() + w * taps;
          const T* k = wts.data() + w * taps;
          T acc = 0;
          for (int t = 0; t < taps; ++t)
            if (o[t] >= 0) acc += k[t] * plane[o[t]];
          out[w] = acc;
        }
      }
    }
  };
  parallel_or_serial(pool, N * Ho, body);
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  const Params p = params(c.node, c.opset);
  const Tensor& X = c.in(0);
  const Tensor& G0 = c.in(1);
  require_4d(c.node, static_cast<size_t>(X.rank()), "X");
  require_4d(c.node, static_cast<size_t>(G0.rank()), "grid");
  if (G0.dim(0) != X.dim(0) || G0.dim(3) != 2)
    fail(c.node.where() + ": grid must be [N, H_out, W_out, 2] with N = " + std::to_string(X.dim(0)) +
         ", got " + G0.describe());
  if (!is_floating(G0.dtype())) fail(c.node.where() + ": grid must be floating point, got " + G0.describe());
  const Tensor G = G0.dtype() == X.dtype() ? G0 : G0.cast(X.dtype());
  const int64_t Ho = G.dim(1), Wo = G.dim(2);
  if ((X.dim(2) == 0 || X.dim(3) == 0) && X.dim(1) * Ho * Wo > 0)
    fail(c.node.where() + ": X " + X.describe() + " has no pixels to sample");
  Tensor& Y = c.output(0, X.dtype(), {X.dim(0), X.dim(1), Ho, Wo});
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    grid_sample<T>(X, G, p, Y, c.pool);
  });
}

// Two flops per tap: 1, 4 or 16 taps per output element.
Cost cost(const CostContext& c) {
  Cost r;
  const std::string mode = c.node.attr_string("mode", "linear");
  const double taps = mode == "nearest" ? 1 : (mode == "bicubic" || mode == "cubic") ? 16 : 4;
  if (!c.out.empty()) r.flops = nn::numel_d(c.out[0]) * 2 * taps;
  r.bytes = io_bytes(c);
  return r;
}

std::string check(const ir::Node& n, int64_t opset) { return problem(n, opset); }

}  // namespace

extern const OpDef kOpGridSample;
const OpDef kOpGridSample{"GridSample", "", 2, 2, infer, run, cost, check};

}  // namespace joule::ops
