#pragma once
// What the RoiAlign reference kernel (ops/roi_align.cpp) and its fast algorithm
// (kernels/eltwise/roi_align.cpp) share: the attributes, the checks of the inputs, and each
// roi's sampling grid (bilinear taps per axis), so that both sample exactly the same points.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "joule/ops/op.h"

namespace joule::ops::roi {

struct Params {
  bool max_mode = false, half_pixel = false;
  int64_t oh = 1, ow = 1, sampling = 0;
  float scale = 1.f;
};

// "" when the node's attributes are valid, else the reason.
std::string problem(const ir::Node& n, int64_t opset);
// The attributes; BadInput naming the node when invalid.
Params params(const ir::Node& n, int64_t opset);
// Checks X [N, C, H, W], rois [R, 4] of X's dtype and batch_indices [R] (integers in [0, N));
// returns the batch indices.
std::vector<int64_t> checked_batch_indices(const KernelContext& c);

// Bilinear taps of one sample coordinate along an axis: low/high index and their weights
// (both 0 for a sample outside [-1, size]).
template <class T>
struct Tap {
  int64_t lo = 0, hi = 0;
  T wlo = 0, whi = 0;
};

// One roi's samples: gh x gw per bin, the taps of every sample of every bin along each axis
// (ty: oh * gh entries, tx: ow * gw), and 1 / (samples per bin) for the average.
template <class T>
struct Grid {
  int64_t gh = 0, gw = 0;
  T inv_count = 1;
  std::vector<Tap<T>> ty, tx;
};

template <class T>
void axis_taps(T start, T bin, int64_t bins, int64_t grid, int64_t size, std::vector<Tap<T>>& taps) {
  taps.assign(static_cast<size_t>(bins * grid), {});
  for (int64_t b = 0; b < bins; ++b)
    for (int64_t i = 0; i < grid; ++i) {
      T v = start + static_cast<T>(b) * bin + (static_cast<T>(i) + T(0.5)) * bin / static_cast<T>(grid);
      Tap<T>& t = taps[static_cast<size_t>(b * grid + i)];
      if (!(v >= T(-1) && v <= static_cast<T>(size))) continue;  // (a NaN position samples nothing)
      v = std::max(v, T(0));
      t.lo = static_cast<int64_t>(v);
      if (t.lo >= size - 1) {
        t.lo = t.hi = size - 1;
        v = static_cast<T>(t.lo);
      } else {
        t.hi = t.lo + 1;
      }
      t.whi = v - static_cast<T>(t.lo);
      t.wlo = T(1) - t.whi;
    }
}

// Samples per bin along an axis, as ONNX: ceil(the bin's size in pixels), 0 when negative. A
// NaN, infinite or absurd bin (more than 2^16 pixels per bin) is refused: converting it to an
// integer is undefined, looping over it a hang (both found by fuzzing).
template <class T>
int64_t grid_count(T bin) {
  const double c = std::ceil(static_cast<double>(bin));
  if (!std::isfinite(c) || c > static_cast<double>(1 << 16))
    fail("RoiAlign: a roi whose bins measure " + std::to_string(static_cast<double>(bin)) +
         " pixels (not finite, or above 2^16): refused");
  return std::max<int64_t>(static_cast<int64_t>(c), 0);
}

// The grid of roi q = [x1, y1, x2, y2] on an H x W map.
template <class T>
void roi_grid(const T* q, const Params& p, int64_t H, int64_t W, Grid<T>& g) {
  const T offset = p.half_pixel ? T(0.5) : T(0);
  const T scale = static_cast<T>(p.scale);
  const T x0 = q[0] * scale - offset, y0 = q[1] * scale - offset;
  T rw = q[2] * scale - offset - x0, rh = q[3] * scale - offset - y0;
  if (!p.half_pixel) {
    rw = std::max(rw, T(1));
    rh = std::max(rh, T(1));
  }
  const T bh = rh / static_cast<T>(p.oh), bw = rw / static_cast<T>(p.ow);
  g.gh = p.sampling > 0 ? p.sampling : grid_count(bh);
  g.gw = p.sampling > 0 ? p.sampling : grid_count(bw);
  g.inv_count = T(1) / static_cast<T>(std::max<int64_t>(g.gh * g.gw, 1));
  axis_taps(y0, bh, p.oh, g.gh, H, g.ty);
  axis_taps(x0, bw, p.ow, g.gw, W, g.tx);
}

}  // namespace joule::ops::roi
