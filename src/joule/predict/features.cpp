#include "joule/predict/features.h"

#include <array>
#include <cmath>
#include <limits>
#include <set>

#include "joule/core/dtype.h"

namespace joule::predict {

namespace {
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Integers in an attribute's text ("[3,3]", "2").
std::vector<int64_t> ints_of(const nlohmann::json& attrs, const std::string& name) {
  std::vector<int64_t> v;
  if (!attrs.contains(name) || !attrs[name].is_string()) return v;
  const std::string s = attrs[name].get<std::string>();
  size_t i = 0;
  while (i < s.size()) {
    if (std::isdigit(static_cast<unsigned char>(s[i])) || (s[i] == '-' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      size_t end = 0;
      v.push_back(std::stoll(s.substr(i), &end));
      i += end;
    } else {
      ++i;
    }
  }
  return v;
}

float log2p(double v) { return static_cast<float>(std::log2(1.0 + std::max(0.0, v))); }

// The last 5 dims, right-aligned (the last dim in the last place: a [1,M,K] and a [M,K] input
// put M and K in the same places), NaN before a shorter shape's first.
void push_dims(std::vector<float>& f, const std::vector<int64_t>& d) {
  const size_t n = std::min<size_t>(d.size(), 5);
  for (size_t i = 0; i < 5 - n; ++i) f.push_back(kNaN);
  for (size_t i = d.size() - n; i < d.size(); ++i) f.push_back(static_cast<float>(d[i]));
}

double elements(const std::vector<int64_t>& d) {
  double n = d.empty() ? 0 : 1;
  for (int64_t x : d) n *= static_cast<double>(x);
  return n;
}

// Bytes of an element of a type string's dtype ("const float32[64,3,7,7]": 4); 0 when unknown.
double element_bytes(std::string type) {
  if (type.starts_with("const ")) type.erase(0, 6);
  return static_cast<double>(dtype_size(dtype_from_name(type.substr(0, type.find('[')))));
}

float activation_kind(const nlohmann::json& attrs) {
  if (!attrs.contains("activation")) return 0;
  static const std::vector<std::string> kinds = {"\"Relu\"", "\"Clip\"", "\"Sigmoid\"", "\"SiLU\"",
                                                 "\"HardSwish\"", "\"Gelu\"", "\"LeakyRelu\""};
  for (size_t i = 0; i < kinds.size(); ++i)
    if (attrs["activation"] == kinds[i]) return static_cast<float>(i + 1);
  return static_cast<float>(kinds.size() + 1);
}
// The product a matrix-product or convolution node computes, as one GEMM per batch entry:
// {M, N, K, batch} (a convolution's M its output pixels, N its output channels per group, K
// its input channels per group times the kernel area, batch its groups), whatever the op type
// and weight layout (Gemm's [N,K] under transB, MatMul's [K,N]) — the dims the kernels'
// blocking sees, the same for every op type of a family. NaN for other ops.
std::array<double, 4> gemm_dims(const opdb::OpKey& k, float fam, const std::vector<int64_t>& in0,
                                const std::vector<int64_t>& out0, const std::vector<int64_t>& in1) {
  std::array<double, 4> g{kNaN, kNaN, kNaN, kNaN};
  const bool transposed = k.op_type.find("ConvTranspose") != std::string::npos;  // weights [C, O/g, kh, kw]
  if (fam == 1 && !transposed && in0.size() == 4 && out0.size() == 4 && in1.size() == 4) {
    const std::vector<int64_t> gr = ints_of(k.attrs, "group");
    const double groups = gr.empty() ? 1 : static_cast<double>(gr[0]);
    g = {static_cast<double>(out0[0] * out0[2] * out0[3]), static_cast<double>(out0[1]) / groups,
         static_cast<double>(in1[1] * in1[2] * in1[3]), groups};
  } else if (fam == 2 && in0.size() >= 2 && in1.size() >= 2 && !out0.empty()) {
    const bool gemm = k.op_type == "Gemm";
    const std::vector<int64_t> ta = ints_of(k.attrs, "transA"), tb = ints_of(k.attrs, "transB");
    const bool trans_a = gemm && !ta.empty() && ta[0] == 1, trans_b = gemm && !tb.empty() && tb[0] == 1;
    const size_t a = in0.size(), b = in1.size();
    const double m = static_cast<double>(trans_a ? in0[a - 1] : in0[a - 2]);
    const double kk = static_cast<double>(trans_a ? in0[a - 2] : in0[a - 1]);
    const double n = static_cast<double>(trans_b ? in1[b - 2] : in1[b - 1]);
    g = {m, n, kk, std::max(1.0, elements(out0) / std::max(1.0, m * n))};
  }
  return g;
}
}  // namespace

std::vector<int64_t> dims_of(const std::string& type) {
  std::vector<int64_t> d;
  const size_t a = type.find('['), b = type.rfind(']');
  if (a == std::string::npos || b == std::string::npos || b < a) return d;
  std::string s = type.substr(a + 1, b - a - 1);
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    const std::string part = s.substr(i, j - i);
    if (part.empty() || !std::isdigit(static_cast<unsigned char>(part[0]))) return {};  // symbolic
    d.push_back(std::stoll(part));
    i = j + 1;
  }
  return d;
}

float family(std::string op) {
  if (op.starts_with("joule.")) op.erase(0, 6);
  auto has = [&](const char* s) { return op.find(s) != std::string::npos; };
  if (has("Conv")) return 1;
  if (has("MatMul") || op == "Gemm") return 2;
  if (has("Pool")) return 3;
  if (has("Norm") || has("Softmax")) return 4;
  static const std::set<std::string> movement = {"Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                                 "Slice", "Concat", "Split", "Gather", "Pad", "Expand", "Tile",
                                                 "Resize", "DepthToSpace", "SpaceToDepth", "Identity"};
  if (movement.count(op)) return 5;
  return 6;
}

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"log2_flops", "log2_bytes", "intensity", "threads", "algorithm"};
    for (const char* t : {"in0", "out0", "in1"})
      for (int i = 0; i < 5; ++i) n.push_back(std::string(t) + "_d" + std::to_string(i));
    for (const char* s : {"log2_in0_elems", "log2_out0_elems", "kernel_area", "stride", "group", "inputs",
                          "channels_last", "activation", "log2_base_ns", "log2_weight_bytes", "weight_rows",
                          "weight_cols", "log2_out_per_row", "op_type", "family", "gemm_m", "gemm_n", "gemm_k",
                          "gemm_batch"})
      n.push_back(s);
    return n;
  }();
  return names;
}

std::vector<float> features(const opdb::OpKey& k, double flops, double bytes, int threads, float algorithm_index,
                            float op_index, double base_ms) {
  std::vector<float> f;
  f.reserve(feature_names().size());
  f.push_back(log2p(flops));
  f.push_back(log2p(bytes));
  f.push_back(static_cast<float>(flops / std::max(1.0, bytes)));
  f.push_back(static_cast<float>(threads));
  f.push_back(algorithm_index);
  // A channels-last node's activations in N,C,H,W order, as the same node in N,C,H,W has them.
  const std::vector<int64_t> cl = ints_of(k.attrs, "channels_last");
  const bool nhwc = !cl.empty() && cl[0] == 1;
  auto logical = [&](std::vector<int64_t> d) {
    if (nhwc && d.size() == 4) d = {d[0], d[3], d[1], d[2]};
    return d;
  };
  const std::vector<int64_t> in0 = k.inputs.empty() ? std::vector<int64_t>{} : logical(dims_of(k.inputs[0]));
  const std::vector<int64_t> out0 = k.outputs.empty() ? std::vector<int64_t>{} : logical(dims_of(k.outputs[0]));
  const std::vector<int64_t> in1 = k.inputs.size() < 2 ? std::vector<int64_t>{} : dims_of(k.inputs[1]);
  push_dims(f, in0);
  push_dims(f, out0);
  push_dims(f, in1);
  f.push_back(log2p(elements(in0)));
  f.push_back(log2p(elements(out0)));
  const std::vector<int64_t> ks = ints_of(k.attrs, "kernel_shape");
  double area = ks.empty() ? kNaN : 1;
  for (int64_t x : ks) area *= static_cast<double>(x);
  f.push_back(static_cast<float>(area));
  const std::vector<int64_t> st = ints_of(k.attrs, "strides");
  f.push_back(st.empty() ? kNaN : static_cast<float>(st[0]));
  const std::vector<int64_t> gr = ints_of(k.attrs, "group");
  f.push_back(gr.empty() ? kNaN : static_cast<float>(gr[0]));
  size_t given = 0;
  for (auto& s : k.inputs) given += !s.empty();
  f.push_back(static_cast<float>(given));
  f.push_back(nhwc ? 1.f : 0.f);
  f.push_back(activation_kind(k.attrs));
  f.push_back(log2p(base_ms * 1e6));
  // The constant inputs (weights): their bytes, and for the first one its rows (a conv's output
  // channels, a Gemm's or MatMul's K) and the rest per row (a conv's input channels per group
  // times its kernel); output elements per such row (a conv's output pixels per image times the
  // batch, whatever the activations' layout).
  double weight_bytes = 0;
  std::vector<int64_t> w;
  for (const std::string& t : k.inputs)
    if (t.starts_with("const ")) {
      const std::vector<int64_t> d = dims_of(t);
      if (w.empty()) w = d;
      weight_bytes += elements(d) * element_bytes(t);
    }
  f.push_back(log2p(weight_bytes));
  const double rows = w.empty() ? 0 : static_cast<double>(w[0]), cols = rows > 0 ? elements(w) / rows : 0;
  f.push_back(w.empty() ? kNaN : static_cast<float>(rows));
  f.push_back(w.empty() ? kNaN : static_cast<float>(cols));
  f.push_back(w.empty() || rows <= 0 ? kNaN : log2p(elements(out0) / rows));
  f.push_back(op_index);
  const float fam = family(k.op_type);
  f.push_back(fam);
  for (double v : gemm_dims(k, fam, in0, out0, in1)) f.push_back(std::isnan(v) ? kNaN : static_cast<float>(v));
  return f;
}

}  // namespace joule::predict
