// RoiAlign (opset 10, 16): for each roi [x1, y1, x2, y2] (scaled by spatial_scale) of image
// batch_indices[r], output_height x output_width bins, each the average (mode avg) or maximum
// (mode max) of sampling_ratio^2 bilinear samples (0: ceil(roi size / bins) per axis). Samples
// outside [-1, size] count as 0. Opset 16's coordinate_transformation_mode half_pixel (its
// default) shifts coordinates by -0.5; output_half_pixel (opset 10's only behaviour) does not
// and stretches rois smaller than 1 to 1. Max mode follows ONNX, not torchvision: the maximum
// over samples of the largest of the four weighted corner values. Rois x channels run in
// parallel; each roi's sample positions and weights are computed once per thread.
#include <algorithm>
#include <cmath>
#include <vector>

#include "joule/ops/nn_util.h"
#include "joule/ops/roi_align_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  const roi::Params p = roi::params(c.node, c.opset);
  const ir::TensorType& x = c.in(0);
  const ir::TensorType& rois = c.in(1);
  if (x.has_shape && x.dims.size() != 4) fail(c.node.where() + ": X must be 4-D [N, C, H, W], got " + x.str());
  if (rois.has_shape && rois.dims.size() != 2) fail(c.node.where() + ": rois must be [num_rois, 4], got " + rois.str());
  ir::TensorType out;
  out.dtype = x.dtype;
  out.has_shape = true;
  out.dims = {rois.has_shape ? rois.dims[0] : ir::Dim{}, x.has_shape ? x.dims[1] : ir::Dim{},
              ir::Dim{p.oh, ""}, ir::Dim{p.ow, ""}};
  c.out(0) = out;
}

template <class T>
void roi_align(const Tensor& X, const Tensor& R, const std::vector<int64_t>& bidx, const roi::Params& p,
               Tensor& Y, ThreadPool* pool) {
  const int64_t C = X.dim(1), H = X.dim(2), W = X.dim(3), nr = R.dim(0);
  const T* x = X.data<T>();
  const T* rois = R.data<T>();
  T* y = Y.data<T>();
  auto body = [&](int64_t begin, int64_t end) {
    roi::Grid<T> g;
    int64_t cur = -1;
    for (int64_t t = begin; t < end; ++t) {
      const int64_t r = t / C, ch = t % C;
      if (r != cur) {  // this roi's taps, shared by its channels
        cur = r;
        roi::roi_grid(rois + 4 * r, p, H, W, g);
      }
      const int64_t gh = g.gh, gw = g.gw;
      const std::vector<roi::Tap<T>>& ty = g.ty;
      const std::vector<roi::Tap<T>>& tx = g.tx;
      const T inv_count = g.inv_count;
      const T* plane = x + (bidx[static_cast<size_t>(r)] * C + ch) * H * W;
      T* out = y + t * p.oh * p.ow;
      for (int64_t ph = 0; ph < p.oh; ++ph)
        for (int64_t pw = 0; pw < p.ow; ++pw) {
          T acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy) {
            const roi::Tap<T>& a = ty[static_cast<size_t>(ph * gh + iy)];
            const T* rlo = plane + a.lo * W;
            const T* rhi = plane + a.hi * W;
            for (int64_t ix = 0; ix < gw; ++ix) {
              const roi::Tap<T>& b = tx[static_cast<size_t>(pw * gw + ix)];
              const T v1 = a.wlo * b.wlo * rlo[b.lo], v2 = a.wlo * b.whi * rlo[b.hi];
              const T v3 = a.whi * b.wlo * rhi[b.lo], v4 = a.whi * b.whi * rhi[b.hi];
              if (!p.max_mode) {
                acc += v1 + v2 + v3 + v4;
              } else {
                const T m = std::max(std::max(v1, v2), std::max(v3, v4));
                acc = first ? m : std::max(acc, m);
                first = false;
              }
            }
          }
          out[ph * p.ow + pw] = p.max_mode ? acc : acc * inv_count;
        }
    }
  };
  parallel_or_serial(pool, nr * C, body);
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  const roi::Params p = roi::params(c.node, c.opset);
  const std::vector<int64_t> bidx = roi::checked_batch_indices(c);
  const Tensor& X = c.in(0);
  const Tensor& R = c.in(1);
  Tensor& Y = c.output(0, X.dtype(), {R.dim(0), X.dim(1), p.oh, p.ow});
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    roi_align<T>(X, R, bidx, p, Y, c.pool);
  });
}

// Four multiply-adds per sample; sampling_ratio 0 is counted as 2 x 2 samples per bin.
Cost cost(const CostContext& c) {
  Cost r;
  const double s = static_cast<double>(std::max<int64_t>(c.node.attr_int("sampling_ratio", 0), 0));
  if (!c.out.empty()) r.flops = nn::numel_d(c.out[0]) * (s > 0 ? s * s : 4.0) * 8;
  r.bytes = io_bytes(c);
  return r;
}

std::string check(const ir::Node& n, int64_t opset) { return roi::problem(n, opset); }

}  // namespace

namespace roi {

std::string problem(const ir::Node& n, int64_t opset) {
  const std::string mode = n.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") return "mode '" + mode + "' (avg, max)";
  if (opset < 16 && n.has_attr("coordinate_transformation_mode"))
    return "coordinate_transformation_mode needs opset 16";
  const std::string ctm = n.attr_string("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return "coordinate_transformation_mode '" + ctm + "' (half_pixel, output_half_pixel)";
  if (n.attr_int("output_height", 1) < 1 || n.attr_int("output_width", 1) < 1)
    return "output_height and output_width must be >= 1";
  if (n.attr_int("sampling_ratio", 0) < 0) return "sampling_ratio must be >= 0";
  return "";
}

Params params(const ir::Node& n, int64_t opset) {
  if (const std::string why = problem(n, opset); !why.empty()) fail(n.where() + ": " + why);
  Params p;
  p.max_mode = n.attr_string("mode", "avg") == "max";
  p.half_pixel = opset >= 16 && n.attr_string("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  p.oh = n.attr_int("output_height", 1);
  p.ow = n.attr_int("output_width", 1);
  p.sampling = n.attr_int("sampling_ratio", 0);
  p.scale = n.attr_float("spatial_scale", 1.f);
  return p;
}

std::vector<int64_t> checked_batch_indices(const KernelContext& c) {
  const Tensor& X = c.in(0);
  const Tensor& R = c.in(1);
  const Tensor& B = c.in(2);
  if (X.rank() != 4) fail(c.node.where() + ": X must be 4-D [N, C, H, W], got " + X.describe());
  if (R.rank() != 2 || R.dim(1) != 4) fail(c.node.where() + ": rois must be [num_rois, 4], got " + R.describe());
  if (R.dtype() != X.dtype())
    fail(c.node.where() + ": rois dtype " + dtype_name(R.dtype()) + " differs from X's " + dtype_name(X.dtype()));
  if (!is_integer(B.dtype()) || B.rank() != 1 || B.dim(0) != R.dim(0))
    fail(c.node.where() + ": batch_indices must be integer [num_rois] (" + std::to_string(R.dim(0)) +
         "), got " + B.describe());
  if ((X.dim(2) == 0 || X.dim(3) == 0) && R.dim(0) * X.dim(1) > 0)
    fail(c.node.where() + ": X " + X.describe() + " has no pixels to sample");
  const std::vector<int64_t> bidx = B.to_int_vector();
  for (int64_t b : bidx)
    if (b < 0 || b >= X.dim(0))
      fail(c.node.where() + ": batch index " + std::to_string(b) + " out of range for " +
           std::to_string(X.dim(0)) + " images");
  return bidx;
}

}  // namespace roi

extern const OpDef kOpRoiAlign;
const OpDef kOpRoiAlign{"RoiAlign", "", 3, 3, infer, run, cost, check};

}  // namespace joule::ops
