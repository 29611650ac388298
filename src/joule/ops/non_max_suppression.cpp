// NonMaxSuppression (opset 10, 11): per batch and class, the boxes kept by greedy suppression
// in descending score order (equal scores: lower box index first), at most
// max_output_boxes_per_class of them (absent: 0, no output). A box is suppressed when its IoU
// with an already kept box is > iou_threshold (absent: 0); boxes of zero area never suppress.
// With score_threshold present only boxes scoring > it are candidates; NaN scores never are.
// center_point_box 0: [y1, x1, y2, x2] with any diagonal pair of corners, 1: [xc, yc, w, h].
// Output int64 [num_selected, 3] of (batch, class, box), its first dim data-dependent.
// Float inputs of other widths are computed in float32; (batch, class) pairs run in parallel.
#include <algorithm>
#include <cmath>
#include <vector>

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

int64_t center_point_box(const ir::Node& n) {
  const int64_t v = n.attr_int("center_point_box", 0);
  if (v != 0 && v != 1)
    fail(n.where() + ": center_point_box must be 0 or 1, got " + std::to_string(v));
  return v;
}

void infer(InferContext& c) {
  center_point_box(c.node);
  const ir::TensorType& b = c.in(0);
  const ir::TensorType& s = c.in(1);
  if (b.has_shape && (b.dims.size() != 3 || (b.dims[2].is_static() && b.dims[2].value != 4)))
    fail(c.node.where() + ": boxes must be [num_batches, spatial_dimension, 4], got " + b.str());
  if (s.has_shape && s.dims.size() != 3)
    fail(c.node.where() + ": scores must be [num_batches, num_classes, spatial_dimension], got " + s.str());
  ir::TensorType out;
  out.dtype = DType::Int64;
  out.has_shape = true;
  out.dims = {ir::Dim{}, ir::Dim{3, ""}};
  c.out(0) = out;
}

// A box as corners with min <= max (corner format) and its area.
struct Box {
  float x0, y0, x1, y1, area;
};

// The reference's test: IoU > threshold, never for empty intersections or degenerate boxes.
bool suppresses(const Box& a, const Box& b, float iou_threshold) {
  const float iw = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
  if (!(iw > 0)) return false;
  const float ih = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  if (!(ih > 0)) return false;
  const float inter = iw * ih;
  const float uni = a.area + b.area - inter;
  if (!(a.area > 0) || !(b.area > 0) || !(uni > 0)) return false;
  return inter / uni > iou_threshold;
}

// Optional scalar input i: false when absent or empty, else its value in v.
bool scalar_input(const KernelContext& c, size_t i, double& v) {
  if (!c.has(i) || c.in(i).numel() == 0) return false;
  if (c.in(i).numel() != 1)
    fail(c.node.where() + ": input " + std::to_string(i) + " must be a scalar, got " + c.in(i).describe());
  v = c.in(i).value_as_double(0);
  return true;
}

void run(KernelContext& c) {
  const Tensor& B0 = c.in(0);
  const Tensor& S0 = c.in(1);
  for (const Tensor* t : {&B0, &S0})
    if (!is_floating(t->dtype()))
      fail(c.node.where() + ": boxes and scores must be floating point, got " + t->describe());
  if (B0.rank() != 3 || B0.dim(2) != 4)
    fail(c.node.where() + ": boxes must be [num_batches, spatial_dimension, 4], got " + B0.describe());
  if (S0.rank() != 3 || S0.dim(0) != B0.dim(0) || S0.dim(2) != B0.dim(1))
    fail(c.node.where() + ": scores " + S0.describe() + " do not match boxes " + B0.describe() +
         " (want [num_batches, num_classes, spatial_dimension])");
  const Tensor Bf = B0.dtype() == DType::Float32 ? B0 : B0.cast(DType::Float32);
  const Tensor Sf = S0.dtype() == DType::Float32 ? S0 : S0.cast(DType::Float32);
  const int64_t nb = B0.dim(0), nc = S0.dim(1), n = B0.dim(1);
  double mo = 0, iou = 0, st = 0;
  const int64_t max_out = scalar_input(c, 2, mo) ? std::max<int64_t>(c.in(2).value_as_int(0), 0) : 0;
  scalar_input(c, 3, iou);
  const float iou_threshold = static_cast<float>(iou);
  const bool filter = scalar_input(c, 4, st);
  const float score_threshold = static_cast<float>(st);
  const bool centered = center_point_box(c.node) == 1;

  std::vector<std::vector<int64_t>> kept(static_cast<size_t>(nb * nc));
  if (max_out > 0 && n > 0) {
    // Boxes normalised once, shared by all classes.
    std::vector<Box> boxes(static_cast<size_t>(nb * n));
    const float* pb = Bf.data<float>();
    for (size_t i = 0; i < boxes.size(); ++i) {
      const float* q = pb + 4 * i;
      Box& b = boxes[i];
      if (centered) {
        b = {q[0] - q[2] / 2, q[1] - q[3] / 2, q[0] + q[2] / 2, q[1] + q[3] / 2, 0};
      } else {
        b = {std::min(q[1], q[3]), std::min(q[0], q[2]), std::max(q[1], q[3]), std::max(q[0], q[2]), 0};
      }
      b.area = (b.x1 - b.x0) * (b.y1 - b.y0);
    }
    const float* ps = Sf.data<float>();
    auto body = [&](int64_t begin, int64_t end) {
      std::vector<int64_t> order;
      std::vector<Box> selected;
      for (int64_t t = begin; t < end; ++t) {
        const float* sc = ps + t * n;
        const Box* bx = boxes.data() + (t / nc) * n;
        order.clear();
        for (int64_t i = 0; i < n; ++i)
          if (!std::isnan(sc[i]) && (!filter || sc[i] > score_threshold)) order.push_back(i);
        std::sort(order.begin(), order.end(),
                  [&](int64_t a, int64_t b) { return sc[a] != sc[b] ? sc[a] > sc[b] : a < b; });
        selected.clear();
        std::vector<int64_t>& out = kept[static_cast<size_t>(t)];
        for (int64_t i : order) {
          if (static_cast<int64_t>(out.size()) == max_out) break;
          const Box& cand = bx[i];
          bool keep = true;
          for (const Box& s : selected)
            if (suppresses(cand, s, iou_threshold)) {
              keep = false;
              break;
            }
          if (!keep) continue;
          selected.push_back(cand);
          out.push_back(i);
        }
      }
    };
    parallel_or_serial(c.pool, nb * nc, body);
  }
  int64_t total = 0;
  for (const auto& k : kept) total += static_cast<int64_t>(k.size());
  Tensor out(DType::Int64, {total, 3});
  int64_t* o = out.data<int64_t>();
  for (int64_t t = 0; t < nb * nc; ++t)
    for (int64_t i : kept[static_cast<size_t>(t)]) {
      *o++ = t / nc;
      *o++ = t % nc;
      *o++ = i;
    }
  c.outputs[0] = out;
}

// Sorting the candidates of every (batch, class); the suppression itself is data-dependent.
Cost cost(const CostContext& c) {
  Cost r;
  if (c.in.size() > 1 && c.in[1].size() == 3) {
    const double per_class = static_cast<double>(c.in[1][2]);
    r.flops = nn::numel_d(c.in[1]) * (std::log2(std::max(per_class, 2.0)) + 1);
  }
  r.bytes = io_bytes(c);
  return r;
}

}  // namespace

extern const OpDef kOpNonMaxSuppression;
const OpDef kOpNonMaxSuppression{"NonMaxSuppression", "", 2, 5, infer, run, cost};

}  // namespace joule::ops
