// Conv and ConvTranspose: hand-computed cases (from the ONNX operator docs) and randomised
// comparisons against naive per-output-element loops.
#include <cstdio>
#include <random>

#include "ops/test_nn_util.h"

namespace joule::testing::nn {
namespace {

Tensor iota(Shape s, float start = 0.f) {
  Tensor t(DType::Float32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

Tensor ones(Shape s) {
  Tensor t(DType::Float32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 1.f;
  return t;
}

TEST(NnConv, BasicWithPadding) {
  Tensor y = run1("Conv", {iota({1, 1, 5, 5}), ones({1, 1, 3, 3})},
                  {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}});
  expect_values(y, {12,  21, 27, 33,  24,  33,  54,  63, 72,  51,  63,  99, 108,
                    117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84},
                {1, 1, 5, 5});
}

TEST(NnConv, BasicWithoutPaddingKernelFromWeight) {
  Tensor y = run1("Conv", {iota({1, 1, 5, 5}), ones({1, 1, 3, 3})});
  expect_values(y, {54, 63, 72, 99, 108, 117, 144, 153, 162}, {1, 1, 3, 3});
}

TEST(NnConv, StridesPadding) {
  Tensor y = run1("Conv", {iota({1, 1, 7, 5}), ones({1, 1, 3, 3})},
                  {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}});
  expect_values(y, {12, 27, 24, 63, 108, 81, 123, 198, 141, 112, 177, 124}, {1, 1, 4, 3});
}

TEST(NnConv, StridesAsymmetricPadding) {
  Tensor y = run1("Conv", {iota({1, 1, 7, 5}), ones({1, 1, 3, 3})},
                  {{"pads", Ints{1, 0, 1, 0}}, {"strides", Ints{2, 2}}});
  expect_values(y, {21, 33, 99, 117, 189, 207, 171, 183}, {1, 1, 4, 2});
}

TEST(NnConv, AutoPadSameUpperStride2) {
  // in 5, stride 2 -> out 3, total pad = (3-1)*2 + 3 - 5 = 2 -> 1 each side
  Tensor y = run1("Conv", {iota({1, 1, 5, 5}), ones({1, 1, 3, 3})},
                  {{"auto_pad", std::string("SAME_UPPER")}, {"strides", Ints{2, 2}}});
  expect_values(y, {12, 27, 24, 63, 108, 81, 72, 117, 84}, {1, 1, 3, 3});
}

TEST(NnConv, AutoPadSameLowerVsUpper) {
  // 1-D: x = [1 2 3 4], w = [1 10], SAME: out 4, total pad 1.
  Tensor x = F({1, 2, 3, 4}, {1, 1, 4});
  Tensor w = F({1, 10}, {1, 1, 2});
  // upper: pad at end -> [1*1+2*10, 2+30, 3+40, 4+0]
  expect_values(run1("Conv", {x, w}, {{"auto_pad", std::string("SAME_UPPER")}}), {21, 32, 43, 4},
                {1, 1, 4});
  // lower: pad at start -> [0+10, 1+20, 2+30, 3+40]
  expect_values(run1("Conv", {x, w}, {{"auto_pad", std::string("SAME_LOWER")}}), {10, 21, 32, 43},
                {1, 1, 4});
  // valid ignores pads
  expect_values(run1("Conv", {x, w}, {{"auto_pad", std::string("VALID")}, {"pads", Ints{3, 3}}}),
                {21, 32, 43}, {1, 1, 3});
}

TEST(NnConv, BiasGroupsDilation) {
  // 2 groups, 1 input channel each, dilation 2 in 1-D
  Tensor x = F({1, 2, 3, 4, 5, 10, 20, 30, 40, 50}, {1, 2, 5});
  Tensor w = F({1, 1, 2, -1}, {2, 1, 2});
  Tensor b = F({100, 200}, {2});
  Tensor y = run1("Conv", {x, w, b}, {{"group", int64_t{2}}, {"dilations", Ints{2}}});
  // ch0: x0[i] + x0[i+2]; ch1: 2*x1[i] - x1[i+2]
  expect_values(y, {104, 106, 108, 200 + 20 - 30, 200 + 40 - 40, 200 + 60 - 50}, {1, 2, 3});
}

TEST(NnConv, Float64AndHalf) {
  Tensor x = iota({1, 1, 5, 5}).cast(DType::Float64);
  Tensor y = run1("Conv", {x, ones({1, 1, 3, 3}).cast(DType::Float64)});
  EXPECT_EQ(y.dtype(), DType::Float64);
  expect_values(y, {54, 63, 72, 99, 108, 117, 144, 153, 162}, {1, 1, 3, 3});
  Tensor yh = run1(
      "Conv", {iota({1, 1, 5, 5}).cast(DType::Float16), ones({1, 1, 3, 3}).cast(DType::Float16)});
  EXPECT_EQ(yh.dtype(), DType::Float16);
  expect_values(yh, {54, 63, 72, 99, 108, 117, 144, 153, 162}, {1, 1, 3, 3});
}

TEST(NnConv, Errors) {
  auto run = [](std::vector<Tensor> in, Attrs a = {}) { return run1("Conv", in, std::move(a)); };
  EXPECT_THROW(run({iota({1, 2, 5, 5}), ones({1, 1, 3, 3})}), Error);  // channels
  EXPECT_THROW(run({iota({1, 1, 5, 5}), ones({1, 1, 3})}), Error);     // rank
  EXPECT_THROW(run({iota({1, 1, 2, 2}), ones({1, 1, 3, 3})}), Error);  // too small
  EXPECT_THROW(run({iota({1, 1, 5, 5}), ones({1, 1, 3, 3})}, {{"strides", Ints{0, 1}}}), Error);
  EXPECT_THROW(run({iota({1, 1, 5, 5}), ones({1, 1, 3, 3})}, {{"pads", Ints{1, 1}}}), Error);
  EXPECT_THROW(run({iota({1, 1, 5, 5}), ones({1, 1, 3, 3})}, {{"kernel_shape", Ints{2, 2}}}),
               Error);
  EXPECT_THROW(run({iota({1, 1, 5, 5}), ones({1, 1, 3, 3})}, {{"auto_pad", std::string("SAME")}}),
               Error);
  EXPECT_THROW(run({iota({1, 4, 5, 5}), ones({3, 2, 3, 3})}, {{"group", int64_t{2}}}),
               Error);                                                              // 3 % 2
  EXPECT_THROW(run({iota({1, 1, 5, 5}), ones({2, 1, 3, 3}), F({1}, {1})}), Error);  // bias size
  EXPECT_THROW(run({iota({5, 5}), ones({1, 1})}), Error);
}

TEST(NnConv, InferSymbolicBatchAndSpatial) {
  const ops::OpDef* def = ops::find_op("", "Conv");
  ASSERT_NE(def, nullptr);
  auto node = make_node("Conv", 2, 1, {{"pads", Ints{1, 1, 1, 1}}});
  ir::TensorType x, w = ir::TensorType::of(DType::Float32, {8, 3, 3, 3});
  x.dtype = DType::Float32;
  x.has_shape = true;
  x.dims = {ir::Dim{-1, "N"}, ir::Dim{3, ""}, ir::Dim{-1, "H"}, ir::Dim{32, ""}};
  ops::InferContext ic{node, 17, {&x, &w}, {nullptr, nullptr}, {}, {}};
  ic.output_types.resize(1);
  def->infer(ic);
  const auto& o = ic.output_types[0];
  ASSERT_TRUE(o.has_shape);
  ASSERT_EQ(o.dims.size(), 4u);
  EXPECT_EQ(o.dims[0].param, "N");
  EXPECT_EQ(o.dims[1].value, 8);
  EXPECT_FALSE(o.dims[2].is_static());  // 3x3 pad 1 keeps H, but only SAME/1x1 pass symbols
  EXPECT_EQ(o.dims[3].value, 32);

  auto same = make_node("Conv", 2, 1, {{"auto_pad", std::string("SAME_UPPER")}});
  ops::InferContext ic2{same, 17, {&x, &w}, {nullptr, nullptr}, {}, {}};
  ic2.output_types.resize(1);
  def->infer(ic2);
  EXPECT_EQ(ic2.output_types[0].dims[2].param, "H");
}

TEST(NnConv, Cost) {
  const ops::OpDef* def = ops::find_op("", "Conv");
  auto node = make_node("Conv", 3, 1);
  ops::CostContext cc{node,
                      {{1, 4, 8, 8}, {6, 2, 3, 3}, {6}},
                      {{1, 6, 6, 6}},
                      {DType::Float32, DType::Float32, DType::Float32},
                      {DType::Float32}};
  const ops::Cost c = ops::node_cost(*def, cc);
  EXPECT_DOUBLE_EQ(c.macs, 1.0 * 6 * 36 * 2 * 9);
  EXPECT_DOUBLE_EQ(c.flops, 2 * c.macs + 216);
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (256 + 108 + 6 + 216));
}

// ---- randomised comparison against a naive loop ----

struct Geo {
  int nsp;
  Ints in, k, s, d, pb, pe, out;
};

// Naive: for each output element, sum over (c, kernel taps) with explicit bounds checks.
Tensor naive_conv(const Tensor& x, const Tensor& w, const Tensor* b, const Geo& g, int64_t group) {
  const int64_t N = x.dim(0), C = x.dim(1), M = w.dim(0), cg = C / group;
  Shape ys = {N, M};
  for (int i = 0; i < g.nsp; ++i) ys.push_back(g.out[i]);
  Tensor y(DType::Float32, ys);
  const int64_t osz = shape_numel(Shape(ys.begin() + 2, ys.end()));
  const int64_t ksz = shape_numel(g.k);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o = 0; o < osz; ++o) {
        Ints opos(g.nsp);
        for (int64_t r = o, i = g.nsp - 1; i >= 0; --i) {
          opos[i] = r % g.out[i];
          r /= g.out[i];
        }
        double acc = b ? b->data<float>()[m] : 0.0;
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t kk = 0; kk < ksz; ++kk) {
            Ints kpos(g.nsp);
            for (int64_t r = kk, i = g.nsp - 1; i >= 0; --i) {
              kpos[i] = r % g.k[i];
              r /= g.k[i];
            }
            int64_t xoff = (n * C + (m / (M / group)) * cg + c), inside = 1;
            for (int i = 0; i < g.nsp; ++i) {
              const int64_t p = opos[i] * g.s[i] + kpos[i] * g.d[i] - g.pb[i];
              if (p < 0 || p >= g.in[i]) inside = 0;
              xoff = xoff * g.in[i] + p;
            }
            if (!inside) continue;
            acc += static_cast<double>(x.data<float>()[xoff]) *
                   w.data<float>()[(m * cg + c) * ksz + kk];
          }
        y.data<float>()[(n * M + m) * osz + o] = static_cast<float>(acc);
      }
  return y;
}

TEST(NnConv, RandomVsNaive) {
  std::mt19937 rng(1234);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* pads[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
  for (int iter = 0; iter < 150; ++iter) {
    Geo g;
    g.nsp = ri(1, 3);
    const int64_t group = ri(0, 3) == 0 ? ri(2, 3) : 1;
    const bool depthwise = ri(0, 4) == 0;
    // 4..9 channels per group exercise the kernel's 4-channel blocks and their remainder
    const int64_t cg = depthwise ? 1 : (ri(0, 2) == 0 ? ri(4, 9) : ri(1, 3)), mg = ri(1, 3);
    const int64_t gr = depthwise ? ri(2, 4) : group;
    const int64_t N = ri(1, 2), C = cg * gr, M = mg * gr;
    const std::string ap = pads[ri(0, 3)];
    Attrs a{{"group", gr}};
    if (ap != "NOTSET") a["auto_pad"] = ap;
    Ints ks, st, dl, pd(2 * g.nsp);
    for (int i = 0; i < g.nsp; ++i) {
      const int64_t k = ri(1, g.nsp == 3 ? 3 : 5), s = ri(1, 3), d = ri(1, 2);
      const int64_t ek = (k - 1) * d + 1;
      const int64_t in = ek + ri(0, g.nsp == 3 ? 4 : 9);
      int64_t pb = ri(0, 2), pe = ri(0, 2);
      if (pb >= ek) pb = ek - 1;
      if (pe >= ek) pe = ek - 1;
      pd[i] = pb;
      pd[g.nsp + i] = pe;
      ks.push_back(k), st.push_back(s), dl.push_back(d), g.in.push_back(in);
      if (ap == "NOTSET") {
        g.pb.push_back(pb), g.pe.push_back(pe);
        g.out.push_back((in + pb + pe - ek) / s + 1);
      } else if (ap == "VALID") {
        g.pb.push_back(0), g.pe.push_back(0);
        g.out.push_back((in - ek) / s + 1);
      } else {
        const int64_t out = (in + s - 1) / s;
        const int64_t total = std::max<int64_t>(0, (out - 1) * s + ek - in);
        const int64_t b = ap == "SAME_UPPER" ? total / 2 : (total + 1) / 2;
        g.pb.push_back(b), g.pe.push_back(total - b), g.out.push_back(out);
      }
    }
    g.k = ks, g.s = st, g.d = dl;
    if (ri(0, 1)) a["kernel_shape"] = ks;
    a["strides"] = st;
    a["dilations"] = dl;
    if (ap == "NOTSET") a["pads"] = pd;
    Shape xs = {N, C}, wsh = {M, cg};
    for (int i = 0; i < g.nsp; ++i) xs.push_back(g.in[i]), wsh.push_back(ks[i]);
    Tensor x = random_tensor(xs, 10 * iter + 1), w = random_tensor(wsh, 10 * iter + 2);
    Tensor b = random_tensor({M}, 10 * iter + 3);
    const bool bias = ri(0, 1);
    std::vector<Tensor> in = {x, w};
    if (bias) in.push_back(b);
    Tensor y = run1("Conv", in, a);
    expect_close(y, naive_conv(x, w, bias ? &b : nullptr, g, gr), 1e-4, 1e-4,
                 "iter " + std::to_string(iter) + " auto_pad " + ap);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace joule::testing::nn

namespace joule::testing::nn {
namespace {

// ---- ConvTranspose ----

TEST(NnConvTranspose, Basic2D) {
  Tensor y = run1("ConvTranspose", {iota({1, 1, 3, 3}), ones({1, 2, 3, 3})});
  const std::vector<float> ch = {0,  1,  3, 3,  2,  3,  8,  15, 12, 7,  9,  21, 36,
                                 27, 15, 9, 20, 33, 24, 13, 6,  13, 21, 15, 8};
  std::vector<float> both = ch;
  both.insert(both.end(), ch.begin(), ch.end());
  expect_values(y, both, {1, 2, 5, 5});
}

TEST(NnConvTranspose, OneDimStridesPadsOutputPadding) {
  // x = [1 2 3], w = [1 10], stride 2: full = [1 10 2 20 3 30] (+ output_padding zeros)
  Tensor x = F({1, 2, 3}, {1, 1, 3}), w = F({1, 10}, {1, 1, 2});
  expect_values(run1("ConvTranspose", {x, w}, {{"strides", Ints{2}}}), {1, 10, 2, 20, 3, 30},
                {1, 1, 6});
  expect_values(run1("ConvTranspose", {x, w}, {{"strides", Ints{2}}, {"pads", Ints{1, 2}}}),
                {10, 2, 20}, {1, 1, 3});
  expect_values(run1("ConvTranspose", {x, w}, {{"strides", Ints{2}}, {"output_padding", Ints{1}}}),
                {1, 10, 2, 20, 3, 30, 0}, {1, 1, 7});
  // output_shape 8: total padding 6 - 8 = -2, split (floor) as begin -1, end -1 as in the
  // ONNX spec / reference implementation
  expect_values(run1("ConvTranspose", {x, w}, {{"strides", Ints{2}}, {"output_shape", Ints{8}}}),
                {0, 1, 10, 2, 20, 3, 30, 0}, {1, 1, 8});
  // output_shape 7: total -1 -> begin 0, end -1 (the extra output at the end)
  expect_values(run1("ConvTranspose", {x, w}, {{"strides", Ints{2}}, {"output_shape", Ints{7}}}),
                {1, 10, 2, 20, 3, 30, 0}, {1, 1, 7});
  // output_shape 4 (total padding 2, split 1/1)
  expect_values(run1("ConvTranspose", {x, w}, {{"strides", Ints{2}}, {"output_shape", Ints{4}}}),
                {10, 2, 20, 3}, {1, 1, 4});
  // SAME_UPPER: out = in * stride = 6, total padding 0; with kernel 3 total is 1 -> 1 at the end
  Tensor w3 = F({1, 10, 100}, {1, 1, 3});
  // full (7): [1, 10, 102, 20, 203, 30, 300]
  expect_values(run1("ConvTranspose", {x, w3},
                     {{"strides", Ints{2}}, {"auto_pad", std::string("SAME_UPPER")}}),
                {1, 10, 102, 20, 203, 30}, {1, 1, 6});
  expect_values(run1("ConvTranspose", {x, w3},
                     {{"strides", Ints{2}}, {"auto_pad", std::string("SAME_LOWER")}}),
                {10, 102, 20, 203, 30, 300}, {1, 1, 6});
}

TEST(NnConvTranspose, GroupsBiasDilation) {
  // 2 groups with 1 in / 1 out channel each, dilation 2: y[i*1 + k*2] += x[i] * w[k]
  Tensor x = F({1, 2, 3, 4}, {1, 2, 2});
  Tensor w = F({1, 1, 2, 3}, {2, 1, 2});
  Tensor b = F({0.5f, -1}, {2});
  Tensor y = run1("ConvTranspose", {x, w, b}, {{"group", int64_t{2}}, {"dilations", Ints{2}}});
  // ch0: x=[1,2], w=[1,1]: out len (2-1)+3 = 4: [1,2,1,2] + 0.5
  // ch1: x=[3,4], w=[2,3]: [6,8,9,12] - 1
  expect_values(y, {1.5f, 2.5f, 1.5f, 2.5f, 5, 7, 8, 11}, {1, 2, 4});
}

TEST(NnConvTranspose, Errors) {
  EXPECT_THROW(run1("ConvTranspose", {iota({1, 2, 3, 3}), ones({1, 2, 3, 3})}), Error);  // channels
  EXPECT_THROW(run1("ConvTranspose", {iota({1, 1, 3, 3}), ones({1, 2, 3})}), Error);     // rank
  EXPECT_THROW(
      run1("ConvTranspose", {iota({1, 1, 3}), ones({1, 1, 3})}, {{"output_padding", Ints{1}}}),
      Error);
  EXPECT_THROW(run1("ConvTranspose", {iota({1, 1, 3}), ones({1, 1, 3}), F({1, 2}, {2})}),
               Error);  // bias
  EXPECT_THROW(run1("ConvTranspose", {iota({1, 1, 2}), ones({1, 1, 2})}, {{"pads", Ints{2, 2}}}),
               Error);
}

Tensor naive_conv_transpose(const Tensor& x, const Tensor& w, const Geo& g, int64_t group) {
  const int64_t N = x.dim(0), C = x.dim(1), mg = w.dim(1), M = mg * group, cg = C / group;
  Shape ys = {N, M};
  for (int i = 0; i < g.nsp; ++i) ys.push_back(g.out[i]);
  Tensor y(DType::Float32, ys);
  const int64_t isz = shape_numel(g.in), ksz = shape_numel(g.k), osz = shape_numel(g.out);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < isz; ++i)
        for (int64_t om = 0; om < mg; ++om)
          for (int64_t kk = 0; kk < ksz; ++kk) {
            int64_t ri = i, rk = kk, ooff = 0, inside = 1, mul = 1;
            for (int64_t d = g.nsp - 1; d >= 0; --d) {
              const int64_t ip = ri % g.in[d], kp = rk % g.k[d];
              ri /= g.in[d], rk /= g.k[d];
              const int64_t o = ip * g.s[d] + kp * g.d[d] - g.pb[d];
              if (o < 0 || o >= g.out[d]) inside = 0;
              ooff += o * mul;
              mul *= g.out[d];
            }
            if (!inside) continue;
            const int64_t m = (c / cg) * mg + om;
            y.data<float>()[(n * M + m) * osz + ooff] +=
                x.data<float>()[(n * C + c) * isz + i] * w.data<float>()[(c * mg + om) * ksz + kk];
          }
  return y;
}

TEST(NnConvTranspose, RandomVsNaive) {
  std::mt19937 rng(99);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 100; ++iter) {
    Geo g;
    g.nsp = ri(1, 3);
    const int64_t group = ri(1, 2), cg = ri(1, 2), mg = ri(1, 3), N = ri(1, 2);
    Ints pads(2 * g.nsp), opad, ks;
    const bool use_shape = ri(0, 3) == 0;
    Ints oshape;
    for (int i = 0; i < g.nsp; ++i) {
      const int64_t k = ri(1, 3), s = ri(1, 3), d = ri(1, 2), in = ri(1, 4);
      const int64_t ek = (k - 1) * d + 1, op = ri(0, static_cast<int>(std::max(s, d)) - 1);
      const int64_t full = s * (in - 1) + op + ek;
      int64_t pb = ri(0, 2), pe = ri(0, 2);
      if (pb + pe >= full) pb = pe = 0;
      if (use_shape) {
        const int64_t out = std::max<int64_t>(1, full + ri(-2, 2));
        const int64_t total = full - out;
        const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor
        pb = total - half, pe = half;
        oshape.push_back(out);
      }
      pads[i] = pb, pads[g.nsp + i] = pe;
      g.in.push_back(in), g.k.push_back(k), g.s.push_back(s), g.d.push_back(d), g.pb.push_back(pb);
      g.pe.push_back(pe), g.out.push_back(full - pb - pe), opad.push_back(op), ks.push_back(k);
    }
    Attrs a{{"group", group}, {"strides", g.s}, {"dilations", g.d}, {"output_padding", opad}};
    if (use_shape)
      a["output_shape"] = oshape;
    else
      a["pads"] = pads;
    Shape xs = {N, cg * group}, ws = {cg * group, mg};
    for (int i = 0; i < g.nsp; ++i) xs.push_back(g.in[i]), ws.push_back(ks[i]);
    Tensor x = random_tensor(xs, 7 * iter + 1), w = random_tensor(ws, 7 * iter + 2);
    expect_close(run1("ConvTranspose", {x, w}, a), naive_conv_transpose(x, w, g, group), 1e-4, 1e-4,
                 "iter " + std::to_string(iter));
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace joule::testing::nn
