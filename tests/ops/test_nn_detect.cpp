// NonMaxSuppression, RoiAlign and GridSample: hand-computed cases, and the kernels against
// naive implementations of the ONNX definitions on random shapes and values.
#include <algorithm>
#include <numeric>
#include <random>

#include "ops/test_nn_util.h"

namespace joule::testing::nn {
namespace {

using ir::Attribute;

std::vector<int64_t> ints(const Tensor& t) { return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel()); }

Tensor random_f(Shape s, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (auto& x : v) x = d(rng);
  return F(v, std::move(s));
}

// ---------------- NonMaxSuppression ----------------

// The boxes of the ONNX suppress_by_IOU example as [y1, x1, y2, x2].
const std::vector<float> kBoxes = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f,
                                   0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101};
const std::vector<float> kScores = {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f};

Tensor nms(const std::vector<Tensor>& in, int64_t center = 0) {
  return run1("NonMaxSuppression", in, {{"center_point_box", Attribute{center}}}, 11);
}

TEST(NnNms, HandComputed) {
  const Tensor b = F(kBoxes, {1, 6, 4}), s = F(kScores, {1, 1, 6});
  // Order 3 (.95), 0, 1, 2, 4, 5: 1 and 2 overlap 0 with IoU .9/1.1, 4 overlaps 3.
  Tensor out = nms({b, s, I64({3}, {1}), F({0.5f}, {1}), F({0.f}, {1})});
  EXPECT_EQ(out.shape(), (Shape{3, 3}));
  EXPECT_EQ(ints(out), (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 5}));
  // At most 2 per class; score_threshold .4 drops box 5; absent score_threshold keeps it.
  EXPECT_EQ(ints(nms({b, s, I64({2}, {1}), F({0.5f}, {1}), F({0.f}, {1})})), (std::vector<int64_t>{0, 0, 3, 0, 0, 0}));
  EXPECT_EQ(ints(nms({b, s, I64({10}, {1}), F({0.5f}, {1}), F({0.4f}, {1})})), (std::vector<int64_t>{0, 0, 3, 0, 0, 0}));
  EXPECT_EQ(ints(nms({b, s, I64({10}, {}), F({0.5f}, {})})), (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 5}));
  // iou_threshold absent = 0: any overlap suppresses (boxes 0 and 3 do not overlap).
  EXPECT_EQ(ints(nms({b, s, I64({10}, {1})})), (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 5}));
  // iou_threshold .85: box 1 (IoU .818 with box 0) survives, box 4 too.
  EXPECT_EQ(ints(nms({b, s, I64({10}, {1}), F({0.85f}, {1})})),
            (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 4, 0, 0, 5}));
  // max_output_boxes_per_class absent or 0: no output.
  EXPECT_EQ(nms({b, s}).shape(), (Shape{0, 3}));
  EXPECT_EQ(nms({b, s, I64({0}, {1}), F({0.5f}, {1})}).shape(), (Shape{0, 3}));
}

TEST(NnNms, FormatsAndClasses) {
  const Tensor s = F(kScores, {1, 1, 6});
  // Flipped corners and the centre format select the same boxes.
  std::vector<float> flipped = kBoxes, center;
  for (size_t i = 0; i < 6; ++i) {
    const float* q = &kBoxes[4 * i];
    if (i % 2) std::swap(flipped[4 * i], flipped[4 * i + 2]);
    else std::swap(flipped[4 * i + 1], flipped[4 * i + 3]);
    center.insert(center.end(), {(q[1] + q[3]) / 2, (q[0] + q[2]) / 2, q[3] - q[1], q[2] - q[0]});
  }
  const std::vector<int64_t> want = {0, 0, 3, 0, 0, 0, 0, 0, 5};
  EXPECT_EQ(ints(nms({F(flipped, {1, 6, 4}), s, I64({3}, {1}), F({0.5f}, {1})})), want);
  EXPECT_EQ(ints(nms({F(center, {1, 6, 4}), s, I64({3}, {1}), F({0.5f}, {1})}, 1)), want);
  // Two batches x two classes: output ordered by batch, class, then score.
  std::vector<float> b2 = kBoxes, s2;
  b2.insert(b2.end(), kBoxes.begin(), kBoxes.end());
  for (int k = 0; k < 4; ++k) s2.insert(s2.end(), kScores.begin(), kScores.end());
  std::reverse(s2.begin() + 6, s2.begin() + 12);  // class 1 of batch 0: .3 .5 .95 .6 .75 .9
  Tensor out = nms({F(b2, {2, 6, 4}), F(s2, {2, 2, 6}), I64({2}, {1}), F({0.5f}, {1})});
  EXPECT_EQ(ints(out), (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 1, 2, 0, 1, 5,
                                             1, 0, 3, 1, 0, 0, 1, 1, 3, 1, 1, 0}));
  // Identical boxes: only the first of equal scores survives.
  Tensor same = F(std::vector<float>(40, 0.f), {1, 10, 4});
  for (int i = 0; i < 10; ++i) same.data<float>()[4 * i + 2] = same.data<float>()[4 * i + 3] = 1;
  out = nms({same, F(std::vector<float>(10, 0.9f), {1, 1, 10}), I64({3}, {1}), F({0.5f}, {1})});
  EXPECT_EQ(ints(out), (std::vector<int64_t>{0, 0, 0}));
}

// O(n^2) greedy NMS written from the definition: pick the best remaining, drop what overlaps.
std::vector<int64_t> naive_nms(const Tensor& boxes, const Tensor& scores, int64_t max_out, float iou_thr,
                               const float* score_thr, bool center) {
  const int64_t nb = boxes.dim(0), n = boxes.dim(1), nc = scores.dim(1);
  auto corners = [&](int64_t b, int64_t i) {
    const float* q = boxes.data<float>() + (b * n + i) * 4;
    if (center) return std::array<float, 4>{q[0] - q[2] / 2, q[1] - q[3] / 2, q[0] + q[2] / 2, q[1] + q[3] / 2};
    return std::array<float, 4>{std::min(q[1], q[3]), std::min(q[0], q[2]), std::max(q[1], q[3]), std::max(q[0], q[2])};
  };
  auto iou = [&](int64_t b, int64_t i, int64_t j) {
    auto p = corners(b, i), q = corners(b, j);
    const float w = std::min(p[2], q[2]) - std::max(p[0], q[0]), h = std::min(p[3], q[3]) - std::max(p[1], q[1]);
    if (w <= 0 || h <= 0) return 0.f;
    const float ap = (p[2] - p[0]) * (p[3] - p[1]), aq = (q[2] - q[0]) * (q[3] - q[1]);
    return w * h / (ap + aq - w * h);
  };
  std::vector<int64_t> out;
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t c = 0; c < nc; ++c) {
      const float* s = scores.data<float>() + (b * nc + c) * n;
      std::vector<bool> gone(static_cast<size_t>(n), false);
      for (int64_t i = 0; i < n; ++i) gone[static_cast<size_t>(i)] = score_thr && !(s[i] > *score_thr);
      std::vector<int64_t> kept;
      while (static_cast<int64_t>(kept.size()) < max_out) {
        int64_t best = -1;
        for (int64_t i = 0; i < n; ++i)
          if (!gone[static_cast<size_t>(i)] && (best < 0 || s[i] > s[best])) best = i;
        if (best < 0) break;
        gone[static_cast<size_t>(best)] = true;
        bool ok = true;
        for (int64_t k : kept) ok = ok && !(iou(b, best, k) > iou_thr);
        if (!ok) continue;
        kept.push_back(best);
        out.insert(out.end(), {b, c, best});
      }
    }
  return out;
}

TEST(NnNms, RandomAgainstNaive) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t nb = 1 + trial % 3, nc = 1 + trial % 4, n = 20 + 37 * trial;
    const bool center = trial % 2 == 1;
    Tensor boxes = random_f({nb, n, 4}, 0, 10, rng);
    if (center)  // widths and heights in (0.5, 4)
      for (int64_t i = 0; i < nb * n; ++i)
        for (int k = 2; k < 4; ++k) boxes.data<float>()[4 * i + k] = 0.5f + boxes.data<float>()[4 * i + k] * 0.35f;
    // Distinct scores: a shuffled ramp per (batch, class).
    std::vector<float> s(static_cast<size_t>(nb * nc * n));
    for (int64_t t = 0; t < nb * nc; ++t) {
      std::vector<int64_t> perm(static_cast<size_t>(n));
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      for (int64_t i = 0; i < n; ++i) s[static_cast<size_t>(t * n + i)] = static_cast<float>(perm[static_cast<size_t>(i)] + 1) / static_cast<float>(n);
    }
    const Tensor scores = F(s, {nb, nc, n});
    const int64_t max_out = trial % 3 == 0 ? n : 5 + trial;
    const float iou_thr = 0.1f + 0.07f * static_cast<float>(trial), score_thr = 0.3f;
    const bool with_score = trial % 4 != 3;
    std::vector<Tensor> in = {boxes, scores, I64({max_out}, {1}), F({iou_thr}, {1})};
    if (with_score) in.push_back(F({score_thr}, {1}));
    const Tensor got = nms(in, center ? 1 : 0);
    const auto want = naive_nms(boxes, scores, max_out, iou_thr, with_score ? &score_thr : nullptr, center);
    EXPECT_EQ(ints(got), want) << "trial " << trial;
    EXPECT_GT(want.size(), 3u * static_cast<size_t>(nb * nc)) << "trial " << trial;
  }
}

TEST(NnNms, Errors) {
  const Tensor b = F(kBoxes, {1, 6, 4}), s = F(kScores, {1, 1, 6});
  EXPECT_THROW(nms({F(kBoxes, {6, 4}), s, I64({3}, {1})}), Error);
  EXPECT_THROW(nms({F(kBoxes, {1, 8, 3}), s, I64({3}, {1})}), Error);
  EXPECT_THROW(nms({b, F(kScores, {1, 2, 3}), I64({3}, {1})}), Error);
  EXPECT_THROW(nms({b, s, I64({3, 4}, {2})}), Error);
  EXPECT_THROW(nms({b, s, I64({3}, {1})}, 2), Error);
}

// ---------------- RoiAlign ----------------

Tensor roi_align(const std::vector<Tensor>& in, std::map<std::string, Attribute> attrs, int64_t opset = 16) {
  return run1("RoiAlign", in, std::move(attrs), opset);
}

// X[0, 0, y, x] = 4y + x on 4x4: bilinear samples reproduce the linear function inside.
Tensor ramp() {
  std::vector<float> v(16);
  std::iota(v.begin(), v.end(), 0.f);
  return F(v, {1, 1, 4, 4});
}

TEST(NnRoiAlign, HandComputed) {
  const Attribute out_half{std::string("output_half_pixel")};
  // roi [0, 0, 3, 3], 2x2 samples at 0.75 and 2.25 per axis: mean f(1.5, 1.5) = 7.5.
  expect_values(roi_align({ramp(), F({0, 0, 3, 3}, {1, 4}), I64({0}, {1})},
                          {{"coordinate_transformation_mode", out_half}, {"sampling_ratio", Attribute{int64_t{2}}}}),
                {7.5f}, {1, 1, 1, 1});
  // 2x2 bins of roi [0, 0, 2, 2], one sample each at 0.5 and 1.5.
  expect_values(roi_align({ramp(), F({0, 0, 2, 2}, {1, 4}), I64({0}, {1})},
                          {{"coordinate_transformation_mode", out_half}, {"sampling_ratio", Attribute{int64_t{1}}},
                           {"output_height", Attribute{int64_t{2}}}, {"output_width", Attribute{int64_t{2}}}}),
                {2.5f, 3.5f, 6.5f, 7.5f}, {1, 1, 2, 2});
  // Max mode (ONNX): the largest weighted corner, 0.25 * 10 at sample (1.5, 1.5); avg 7.5.
  expect_values(roi_align({ramp(), F({1, 1, 2, 2}, {1, 4}), I64({0}, {1})},
                          {{"coordinate_transformation_mode", out_half}, {"sampling_ratio", Attribute{int64_t{1}}},
                           {"mode", Attribute{std::string("max")}}}),
                {2.5f}, {1, 1, 1, 1});
  // half_pixel (opset 16 default) shifts by -0.5: roi [1, 1, 3, 3] -> sample at (1.5, 1.5).
  expect_values(roi_align({ramp(), F({1, 1, 3, 3}, {1, 4}), I64({0}, {1})}, {{"sampling_ratio", Attribute{int64_t{1}}}}),
                {7.5f}, {1, 1, 1, 1});
  // Opset 10 has no shift; spatial_scale 0.5 maps [2, 2, 6, 6] to [1, 1, 3, 3]: sample (2, 2).
  expect_values(roi_align({ramp(), F({2, 2, 6, 6}, {1, 4}), I64({0}, {1})},
                          {{"sampling_ratio", Attribute{int64_t{1}}}, {"spatial_scale", Attribute{0.5f}}}, 10),
                {10.f}, {1, 1, 1, 1});
  // A roi far outside samples nothing: 0. Output_half_pixel stretches an empty roi to 1x1.
  expect_values(roi_align({ramp(), F({20, 20, 30, 30}, {1, 4}), I64({0}, {1})}, {}), {0.f}, {1, 1, 1, 1});
  expect_values(roi_align({ramp(), F({1, 1, 1, 1}, {1, 4}), I64({0}, {1})},
                          {{"coordinate_transformation_mode", out_half}, {"sampling_ratio", Attribute{int64_t{1}}}}),
                {7.5f}, {1, 1, 1, 1});
}

// The ONNX definition per output element, in double.
Tensor naive_roi_align(const Tensor& X, const Tensor& rois, const std::vector<int64_t>& bidx, int64_t oh, int64_t ow,
                       int64_t sampling, double scale, bool half_pixel, bool max_mode) {
  const int64_t C = X.dim(1), H = X.dim(2), W = X.dim(3), R = rois.dim(0);
  Tensor Y(DType::Float64, {R, C, oh, ow});
  double* y = Y.data<double>();
  auto at = [&](int64_t b, int64_t c, int64_t i, int64_t j) {
    return static_cast<double>(X.data<float>()[((b * C + c) * H + i) * W + j]);
  };
  for (int64_t r = 0; r < R; ++r) {
    const float* q = rois.data<float>() + 4 * r;
    const double off = half_pixel ? 0.5 : 0.0;
    const double x0 = q[0] * scale - off, y0 = q[1] * scale - off;
    double rw = q[2] * scale - off - x0, rh = q[3] * scale - off - y0;
    if (!half_pixel) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
    const double bh = rh / static_cast<double>(oh), bw = rw / static_cast<double>(ow);
    const int64_t gh = sampling > 0 ? sampling : std::max<int64_t>(0, static_cast<int64_t>(std::ceil(bh)));
    const int64_t gw = sampling > 0 ? sampling : std::max<int64_t>(0, static_cast<int64_t>(std::ceil(bw)));
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ph = 0; ph < oh; ++ph)
        for (int64_t pw = 0; pw < ow; ++pw) {
          double sum = 0, mx = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              double sy = y0 + static_cast<double>(ph) * bh + (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh);
              double sx = x0 + static_cast<double>(pw) * bw + (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw);
              double v[4] = {0, 0, 0, 0};
              if (!(sy < -1 || sy > static_cast<double>(H) || sx < -1 || sx > static_cast<double>(W))) {
                sy = std::max(sy, 0.0), sx = std::max(sx, 0.0);
                int64_t yl = static_cast<int64_t>(std::floor(sy)), xl = static_cast<int64_t>(std::floor(sx));
                int64_t yh = yl + 1, xh = xl + 1;
                if (yl >= H - 1) yl = yh = H - 1, sy = static_cast<double>(yl);
                if (xl >= W - 1) xl = xh = W - 1, sx = static_cast<double>(xl);
                const double ly = sy - static_cast<double>(yl), lx = sx - static_cast<double>(xl);
                const int64_t b = bidx[static_cast<size_t>(r)];
                v[0] = (1 - ly) * (1 - lx) * at(b, c, yl, xl);
                v[1] = (1 - ly) * lx * at(b, c, yl, xh);
                v[2] = ly * (1 - lx) * at(b, c, yh, xl);
                v[3] = ly * lx * at(b, c, yh, xh);
              }
              sum += v[0] + v[1] + v[2] + v[3];
              const double m = *std::max_element(v, v + 4);
              mx = first ? m : std::max(mx, m);
              first = false;
            }
          y[((r * C + c) * oh + ph) * ow + pw] = max_mode ? mx : sum / static_cast<double>(std::max<int64_t>(gh * gw, 1));
        }
  }
  return Y;
}

TEST(NnRoiAlign, RandomAgainstNaive) {
  std::mt19937 rng(11);
  const Tensor X = random_f({2, 3, 9, 11}, -2, 2, rng);
  const int64_t R = 7;
  // rois in input pixels of a 2x larger image (spatial_scale 0.5), some partly outside, some tiny.
  std::uniform_real_distribution<float> pos(-4, 24), len(0.2f, 14);
  std::vector<float> rv;
  std::vector<int64_t> bidx;
  for (int64_t r = 0; r < R; ++r) {
    const float x = pos(rng), y = pos(rng);
    rv.insert(rv.end(), {x, y, x + len(rng), y + len(rng)});
    bidx.push_back(r % 2);
  }
  const Tensor rois = F(rv, {R, 4});
  for (const char* mode : {"avg", "max"})
    for (const char* ctm : {"half_pixel", "output_half_pixel"})
      for (int64_t sampling : {0, 2}) {
        const Tensor got = roi_align({X, rois, I64(bidx, {R})},
                                     {{"mode", Attribute{std::string(mode)}},
                                      {"coordinate_transformation_mode", Attribute{std::string(ctm)}},
                                      {"sampling_ratio", Attribute{sampling}}, {"spatial_scale", Attribute{0.5f}},
                                      {"output_height", Attribute{int64_t{3}}}, {"output_width", Attribute{int64_t{4}}}});
        const Tensor want = naive_roi_align(X, rois, bidx, 3, 4, sampling, 0.5, std::string(ctm) == "half_pixel",
                                            std::string(mode) == "max");
        expect_close(got, want, 1e-5, 1e-4, std::string(mode) + " " + ctm + " sampling " + std::to_string(sampling));
      }
  // float16 runs through float32.
  const Tensor h = roi_align({X.cast(DType::Float16), rois.cast(DType::Float16), I64(bidx, {R})}, {});
  EXPECT_EQ(h.dtype(), DType::Float16);
  expect_close(h, roi_align({X.cast(DType::Float16).cast(DType::Float32), rois.cast(DType::Float16).cast(DType::Float32),
                             I64(bidx, {R})}, {}),
               2e-3, 1e-2, "float16");
}

TEST(NnRoiAlign, Errors) {
  const Tensor r = F({0, 0, 3, 3}, {1, 4});
  EXPECT_THROW(roi_align({ramp(), r, I64({1}, {1})}, {}), Error);             // batch index out of range
  EXPECT_THROW(roi_align({ramp(), F({0, 0, 3}, {1, 3}), I64({0}, {1})}, {}), Error);
  EXPECT_THROW(roi_align({ramp(), r, I64({0, 0}, {2})}, {}), Error);
  EXPECT_THROW(roi_align({F({1, 2, 3, 4}, {1, 4}), r, I64({0}, {1})}, {}), Error);
  EXPECT_THROW(roi_align({ramp(), r, I64({0}, {1})}, {{"mode", Attribute{std::string("sum")}}}), Error);
  const ops::OpDef* def = ops::find_op("", "RoiAlign");
  ASSERT_NE(def, nullptr);
  EXPECT_EQ(def->check(make_node("RoiAlign", 3, 1), 16), "");
  EXPECT_NE(def->check(make_node("RoiAlign", 3, 1, {{"coordinate_transformation_mode", Attribute{std::string("asymmetric")}}}), 16), "");
  EXPECT_NE(def->check(make_node("RoiAlign", 3, 1, {{"coordinate_transformation_mode", Attribute{std::string("half_pixel")}}}), 10), "");
}

// ---------------- GridSample ----------------

Tensor grid_sample(const Tensor& x, const Tensor& g, const std::string& mode, const std::string& pad, int64_t align,
                   int64_t opset = 16) {
  return run1("GridSample", {x, g},
              {{"mode", Attribute{mode}}, {"padding_mode", Attribute{pad}}, {"align_corners", Attribute{align}}}, opset);
}

TEST(NnGridSample, HandComputed) {
  const Tensor x = F({1, 2, 3, 4}, {1, 1, 2, 2});
  // align_corners: -1 and 1 are the corner pixel centres.
  const Tensor g = F({-1, -1, 1, 1, 0, 0, 1, -1}, {1, 1, 4, 2});
  expect_values(grid_sample(x, g, "bilinear", "zeros", 1), {1, 4, 2.5f, 2}, {1, 1, 1, 4});
  // Without: (-1, -1) is the outer corner (-0.5, -0.5). Zeros: a quarter of pixel 1; border and
  // reflection read pixel 1 at every tap.
  expect_values(grid_sample(x, g, "bilinear", "zeros", 0), {0.25f, 1, 2.5f, 0.5f}, {1, 1, 1, 4});
  expect_values(grid_sample(x, g, "bilinear", "border", 0), {1, 4, 2.5f, 2}, {1, 1, 1, 4});
  expect_values(grid_sample(x, g, "bilinear", "reflection", 0), {1, 4, 2.5f, 2}, {1, 1, 1, 4});
  // Outside, align_corners: (x, y) = (2, 0) and (0.5, 1.5). Zeros: 0, and half of row 1.
  const Tensor far = F({3, -1, 0, 2}, {1, 1, 2, 2});
  expect_values(grid_sample(x, far, "bilinear", "zeros", 1), {0, 1.75f}, {1, 1, 1, 2});
  // border clamps x 2 -> 1 and y 1.5 -> 1.
  expect_values(grid_sample(x, far, "bilinear", "border", 1), {2, 3.5f}, {1, 1, 1, 2});
  // reflection in [0, 1]: x 2 -> 0; y 1.5 -> 0.5.
  expect_values(grid_sample(x, far, "bilinear", "reflection", 1), {1, 2.5f}, {1, 1, 1, 2});
  // nearest: (0.2, -0.6) -> x 0.7 rounds to 1, y -0.1 to 0; ties go to even (0.5 -> 0).
  expect_values(grid_sample(x, F({0.2f, -0.6f, 0, 0}, {1, 1, 2, 2}), "nearest", "zeros", 0), {2, 1}, {1, 1, 1, 2});
  // bicubic reproduces a constant image inside (weights sum to 1) and matches at pixel centres.
  const Tensor c = F(std::vector<float>(16, 3.f), {1, 1, 4, 4});
  expect_values(grid_sample(c, F({0.1f, 0.3f}, {1, 1, 1, 2}), "bicubic", "border", 0), {3}, {1, 1, 1, 1});
  expect_values(grid_sample(ramp(), F({-1.f / 3, 1.f / 3}, {1, 1, 1, 2}), "bicubic", "zeros", 1), {9}, {1, 1, 1, 1}, 1e-5);
}

double reflect_naive(double v, double lo, double hi) {
  if (hi <= lo) return lo;
  while (v < lo || v > hi) v = v < lo ? 2 * lo - v : 2 * hi - v;
  return v;
}

// The ONNX definition per output element, in double.
Tensor naive_grid_sample(const Tensor& X, const Tensor& G, const std::string& mode, const std::string& pad, bool align) {
  const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3), Ho = G.dim(1), Wo = G.dim(2);
  Tensor Y(DType::Float64, {N, C, Ho, Wo});
  auto unnorm = [&](double g, int64_t size) {
    return align ? (g + 1) / 2 * static_cast<double>(size - 1) : ((g + 1) * static_cast<double>(size) - 1) / 2;
  };
  auto adjust = [&](double v, int64_t size) {
    const double lo = align ? 0 : -0.5, hi = align ? static_cast<double>(size - 1) : static_cast<double>(size) - 0.5;
    if (v >= lo && v <= hi) return v;
    if (pad == "border") return std::min(std::max(v, 0.0), static_cast<double>(size - 1));
    if (pad == "reflection") return reflect_naive(v, lo, hi);
    return v;
  };
  auto pixel = [&](int64_t n, int64_t c, int64_t i, int64_t j) -> double {
    auto fix = [&](int64_t k, int64_t size) -> int64_t {
      if (pad == "border") return std::min(std::max<int64_t>(k, 0), size - 1);
      const double lo = align ? 0 : -0.5, hi = align ? static_cast<double>(size - 1) : static_cast<double>(size) - 0.5;
      return static_cast<int64_t>(reflect_naive(static_cast<double>(k), lo, hi));
    };
    if (pad != "zeros") i = fix(i, H), j = fix(j, W);
    if (i < 0 || i >= H || j < 0 || j >= W) return 0;
    return X.data<float>()[((n * C + c) * H + i) * W + j];
  };
  auto cubic = [](double t, double w[4]) {
    const double a = -0.75;
    for (int k = 0; k < 4; ++k) {
      const double d = std::abs(t - (k - 1));
      w[k] = d <= 1 ? (a + 2) * d * d * d - (a + 3) * d * d + 1 : a * d * d * d - 5 * a * d * d + 8 * a * d - 4 * a;
    }
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < Ho; ++h)
        for (int64_t w = 0; w < Wo; ++w) {
          const float* q = G.data<float>() + ((n * Ho + h) * Wo + w) * 2;
          double sx = unnorm(q[0], W), sy = unnorm(q[1], H);
          double out = 0;
          if (mode == "nearest") {
            sx = adjust(std::nearbyint(sx), W), sy = adjust(std::nearbyint(sy), H);
            out = pixel(n, c, static_cast<int64_t>(sy), static_cast<int64_t>(sx));
          } else {
            sx = adjust(sx, W), sy = adjust(sy, H);
            const int64_t x0 = static_cast<int64_t>(std::floor(sx)), y0 = static_cast<int64_t>(std::floor(sy));
            const double tx = sx - static_cast<double>(x0), ty = sy - static_cast<double>(y0);
            if (mode == "bilinear") {
              out = (1 - ty) * ((1 - tx) * pixel(n, c, y0, x0) + tx * pixel(n, c, y0, x0 + 1)) +
                    ty * ((1 - tx) * pixel(n, c, y0 + 1, x0) + tx * pixel(n, c, y0 + 1, x0 + 1));
            } else {
              double wx[4], wy[4];
              cubic(tx, wx), cubic(ty, wy);
              for (int a = 0; a < 4; ++a)
                for (int b = 0; b < 4; ++b) out += wy[a] * wx[b] * pixel(n, c, y0 - 1 + a, x0 - 1 + b);
            }
          }
          Y.data<double>()[((n * C + c) * Ho + h) * Wo + w] = out;
        }
  return Y;
}

TEST(NnGridSample, RandomAgainstNaive) {
  std::mt19937 rng(5);
  const Tensor X = random_f({2, 3, 5, 7}, -1, 1, rng);
  const Tensor G = random_f({2, 6, 9, 2}, -1.7f, 1.7f, rng);
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* pad : {"zeros", "border", "reflection"})
      for (int64_t align : {0, 1}) {
        const std::string what = std::string(mode) + " " + pad + " align " + std::to_string(align);
        expect_close(grid_sample(X, G, mode, pad, align), naive_grid_sample(X, G, mode, pad, align != 0), 1e-5, 1e-4, what);
      }
  // Opset 20 names the modes linear and cubic.
  expect_close(grid_sample(X, G, "linear", "border", 0, 20), naive_grid_sample(X, G, "bilinear", "border", false), 1e-5, 1e-4, "linear");
  expect_close(grid_sample(X, G, "cubic", "zeros", 1, 20), naive_grid_sample(X, G, "bicubic", "zeros", true), 1e-5, 1e-4, "cubic");
  // A 1-pixel axis with align_corners reflects onto that pixel.
  const Tensor one = random_f({1, 2, 1, 4}, -1, 1, rng), g1 = random_f({1, 3, 3, 2}, -1.5f, 1.5f, rng);
  expect_close(grid_sample(one, g1, "bilinear", "reflection", 1), naive_grid_sample(one, g1, "bilinear", "reflection", true),
               1e-5, 1e-4, "1-pixel reflection");
}

TEST(NnGridSample, ChecksAndErrors) {
  const ops::OpDef* def = ops::find_op("", "GridSample");
  ASSERT_NE(def, nullptr);
  auto node = [](const char* mode) { return make_node("GridSample", 2, 1, {{"mode", Attribute{std::string(mode)}}}); };
  EXPECT_EQ(def->check(node("bicubic"), 16), "");
  EXPECT_EQ(def->check(node("cubic"), 20), "");
  EXPECT_NE(def->check(node("cubic"), 16), "");
  EXPECT_NE(def->check(node("bilinear"), 20), "");
  EXPECT_NE(def->check(make_node("GridSample", 2, 1, {{"padding_mode", Attribute{std::string("wrap")}}}), 16), "");
  const Tensor x = F({1, 2, 3, 4}, {1, 1, 2, 2});
  EXPECT_THROW(grid_sample(x, F({0, 0, 0}, {1, 1, 1, 3}), "bilinear", "zeros", 0), Error);
  EXPECT_THROW(grid_sample(x, F({0, 0, 0, 0}, {2, 1, 1, 2}), "bilinear", "zeros", 0), Error);
  try {  // 5-D (opset 20 volumetric) input is refused as unsupported
    grid_sample(F({1, 2}, {1, 1, 1, 1, 2}), F({0, 0, 0}, {1, 1, 1, 1, 3}), "linear", "zeros", 0, 20);
    ADD_FAILURE() << "5-D GridSample ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Unsupported) << e.what();
  }
}

}  // namespace
}  // namespace joule::testing::nn
