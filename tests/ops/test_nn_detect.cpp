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

}  // namespace
}  // namespace joule::testing::nn
