#include "joule/ops/recurrent_util.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include "joule/ops/util.h"

namespace joule::ops::recurrent {
namespace {

struct FnInfo {
  const char* name;
  Fn fn;
  bool uses_alpha, uses_beta;
  float alpha, beta;  // defaults, as the ops of the same name
};

constexpr FnInfo kFns[] = {
    {"relu", Fn::kRelu, false, false, 0, 0},
    {"tanh", Fn::kTanh, false, false, 0, 0},
    {"sigmoid", Fn::kSigmoid, false, false, 0, 0},
    {"affine", Fn::kAffine, true, true, 1.f, 0.f},
    {"leakyrelu", Fn::kLeakyRelu, true, false, 0.01f, 0},
    {"thresholdedrelu", Fn::kThresholdedRelu, true, false, 1.f, 0},
    {"scaledtanh", Fn::kScaledTanh, true, true, 1.f, 1.f},
    {"hardsigmoid", Fn::kHardSigmoid, true, true, 0.2f, 0.5f},
    {"elu", Fn::kElu, true, false, 1.f, 0},
    {"softsign", Fn::kSoftsign, false, false, 0, 0},
    {"softplus", Fn::kSoftplus, false, false, 0, 0},
};

const FnInfo* find_fn(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
  for (const FnInfo& f : kFns)
    if (name == f.name) return &f;
  return nullptr;
}

int gates_of(Kind k) { return k == Kind::kLstm ? 4 : (k == Kind::kGru ? 3 : 1); }
int acts_of(Kind k) { return k == Kind::kLstm ? 3 : (k == Kind::kGru ? 2 : 1); }

std::vector<std::string> default_acts(Kind k) {
  if (k == Kind::kLstm) return {"Sigmoid", "Tanh", "Tanh"};
  if (k == Kind::kGru) return {"Sigmoid", "Tanh"};
  return {"Tanh"};
}

int dirs_of(const std::string& direction, const ir::Node& n) {
  if (direction == "forward" || direction == "reverse") return 1;
  if (direction == "bidirectional") return 2;
  fail(n.where() + ": direction '" + direction + "' is not forward, reverse or bidirectional");
}

void zero(float* p, int64_t n) { std::memset(p, 0, static_cast<size_t>(n) * sizeof(float)); }

std::vector<std::string> activation_names(const ir::Node& n, Kind kind) {
  auto it = n.attrs.find("activations");
  if (it == n.attrs.end()) return default_acts(kind);
  if (auto* v = std::get_if<std::vector<std::string>>(&it->second)) return *v;
  fail(n.where() + ": attribute 'activations' must be a list of strings");
}

}  // namespace

std::string check(const ir::Node& n, Kind kind) {
  for (const std::string& a : activation_names(n, kind))
    if (!find_fn(a)) return "activation '" + a + "' is not one of the spec's (Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)";
  return "";
}

Spec parse(const ir::Node& n, Kind kind) {
  Spec s;
  s.kind = kind;
  s.gates = gates_of(kind);
  s.acts_per_dir = acts_of(kind);
  s.hidden = n.attr_int("hidden_size", 0);
  const std::string direction = n.attr_string("direction", "forward");
  s.dirs = dirs_of(direction, n);
  s.reverse = direction == "reverse";
  s.clip = n.attr_float("clip", 0.f);
  if (n.has_attr("clip") && !(s.clip > 0)) fail(n.where() + ": clip must be positive");
  s.input_forget = n.attr_int("input_forget", 0) != 0;
  s.linear_before_reset = n.attr_int("linear_before_reset", 0) != 0;
  const int64_t layout = n.attr_int("layout", 0);
  if (layout != 0 && layout != 1) fail(n.where() + ": layout must be 0 or 1, got " + std::to_string(layout));
  s.batch_major = layout == 1;

  std::vector<std::string> names = activation_names(n, kind);
  // One set given for both directions applies to each.
  if (s.dirs == 2 && names.size() == static_cast<size_t>(s.acts_per_dir)) {
    const std::vector<std::string> one = names;
    names.insert(names.end(), one.begin(), one.end());
  }
  if (names.size() != static_cast<size_t>(s.dirs * s.acts_per_dir))
    fail(n.where() + ": " + std::to_string(names.size()) + " activations given, expected " +
         std::to_string(s.dirs * s.acts_per_dir));
  const std::vector<float> alphas = n.attr_floats("activation_alpha"), betas = n.attr_floats("activation_beta");
  size_t ia = 0, ib = 0;  // alpha and beta are consumed in order by the activations that take them
  for (const std::string& name : names) {
    const FnInfo* f = find_fn(name);
    if (!f) fail(n.where() + ": " + check(n, kind));
    Activation a{f->fn, f->alpha, f->beta};
    if (f->uses_alpha && ia < alphas.size()) a.alpha = alphas[ia++];
    if (f->uses_beta && ib < betas.size()) a.beta = betas[ib++];
    s.acts.push_back(a);
  }
  return s;
}

float activate(const Activation& a, float x) {
  switch (a.fn) {
    case Fn::kRelu: return x > 0 ? x : 0.f;
    case Fn::kTanh: return std::tanh(x);
    case Fn::kSigmoid: return 1.f / (1.f + std::exp(-x));
    case Fn::kAffine: return a.alpha * x + a.beta;
    case Fn::kLeakyRelu: return x >= 0 ? x : a.alpha * x;
    case Fn::kThresholdedRelu: return x > a.alpha ? x : 0.f;
    case Fn::kScaledTanh: return a.alpha * std::tanh(a.beta * x);
    case Fn::kHardSigmoid: return std::clamp(a.alpha * x + a.beta, 0.f, 1.f);
    case Fn::kElu: return x >= 0 ? x : a.alpha * (std::exp(x) - 1.f);
    case Fn::kSoftsign: return x / (1.f + std::fabs(x));
    case Fn::kSoftplus: return std::log1p(std::exp(x));
  }
  return x;
}

void infer(InferContext& c, Kind kind) {
  const Spec s = parse(c.node, kind);
  const ir::TensorType& x = c.in(0);
  const ir::TensorType& w = c.in(1);
  // X, W, R, B, initial_h (and initial_c, P) share one floating type; input 4 is sequence_lens.
  if (!is_floating(x.dtype)) fail(c.node.where() + ": X must be a floating-point tensor, got " + x.str());
  for (size_t i = 1; i < c.num_inputs(); ++i)
    if (i != 4 && c.has(i) && c.in(i).dtype != x.dtype)
      fail(c.node.where() + ": input " + std::to_string(i) + " is " + c.in(i).str() + ", X is " + x.str());
  ir::Dim seq, batch, hidden{s.hidden > 0 ? s.hidden : -1, ""};
  if (x.has_shape) {
    if (x.dims.size() != 3) fail(c.node.where() + ": X must have rank 3, got " + x.str());
    seq = x.dims[s.batch_major ? 1 : 0];
    batch = x.dims[s.batch_major ? 0 : 1];
  }
  if (s.hidden <= 0 && w.has_shape && w.dims.size() == 3 && w.dims[1].is_static())
    hidden = ir::Dim{w.dims[1].value / s.gates, ""};
  const ir::Dim dirs{s.dirs, ""};
  for (size_t i = 0; i < c.output_types.size(); ++i) {
    ir::TensorType& t = c.out(i);
    t.dtype = x.dtype;
    t.has_shape = true;
    if (i == 0) t.dims = s.batch_major ? std::vector<ir::Dim>{batch, seq, dirs, hidden} : std::vector<ir::Dim>{seq, dirs, batch, hidden};
    else t.dims = s.batch_major ? std::vector<ir::Dim>{batch, dirs, hidden} : std::vector<ir::Dim>{dirs, batch, hidden};
  }
}

Cost cost(const CostContext& c, Kind kind) {
  Cost r;
  if (c.in.size() < 2 || c.in[0].size() != 3 || c.in[1].size() != 3) return r;
  const double steps = static_cast<double>(c.in[0][0] * c.in[0][1]);  // seq * batch in either layout
  const double dirs = static_cast<double>(c.in[1][0]), gh = static_cast<double>(c.in[1][1]);
  const double hidden = gh / gates_of(kind), input = static_cast<double>(c.in[1][2]);
  r.macs = steps * dirs * gh * (input + hidden);
  r.flops = 2 * r.macs + steps * dirs * gh * 8;  // gate activations and the state update
  r.bytes = io_bytes(c);
  return r;
}

Dims dims_of(const KernelContext& c, const Spec& s, bool weights) {
  const Tensor& x = c.in(0);
  const ir::Node& n = c.node;
  if (x.rank() != 3) fail(n.where() + ": X must have rank 3, got " + x.describe());
  Dims d;
  d.seq = x.dim(s.batch_major ? 1 : 0);
  d.batch = x.dim(s.batch_major ? 0 : 1);
  d.input = x.dim(2);
  const int64_t gh = s.gates * s.hidden;
  if (s.hidden <= 0) fail(n.where() + ": hidden_size must be given and positive");
  auto expect = [&](size_t i, const char* what, const Shape& want) {
    if (c.has(i) && c.in(i).shape() != want)
      fail(n.where() + ": " + what + " must be " + shape_str(want) + ", got " + c.in(i).describe());
  };
  if (weights) {
    expect(1, "W", {s.dirs, gh, d.input});
    expect(2, "R", {s.dirs, gh, s.hidden});
    expect(3, "B", {s.dirs, 2 * gh});
    if (s.kind == Kind::kLstm) expect(7, "P", {s.dirs, 3 * s.hidden});
  }
  expect(4, "sequence_lens", {d.batch});
  const Shape state = s.batch_major ? Shape{d.batch, s.dirs, s.hidden} : Shape{s.dirs, d.batch, s.hidden};
  expect(5, "initial_h", state);
  if (s.kind == Kind::kLstm) expect(6, "initial_c", state);
  return d;
}

std::vector<int64_t> sequence_lengths(const KernelContext& c, const Dims& d) {
  std::vector<int64_t> lens(static_cast<size_t>(d.batch), d.seq);
  if (!c.has(4)) return lens;
  const Tensor& t = c.in(4);
  for (int64_t b = 0; b < d.batch; ++b) {
    const int64_t v = t.value_as_int(b);
    if (v < 0 || v > d.seq)
      fail(c.node.where() + ": sequence_lens[" + std::to_string(b) + "] = " + std::to_string(v) + " is outside [0, " +
           std::to_string(d.seq) + "]");
    lens[static_cast<size_t>(b)] = v;
  }
  return lens;
}

Outputs allocate_outputs(KernelContext& c, const Spec& s, const Dims& d) {
  Outputs o;
  const auto wanted = [&](size_t i) { return i < c.node.outputs.size() && !c.node.outputs[i].empty(); };
  const Shape state = s.batch_major ? Shape{d.batch, s.dirs, s.hidden} : Shape{s.dirs, d.batch, s.hidden};
  if (wanted(0)) {
    Tensor& y = c.output(0, DType::Float32, s.batch_major ? Shape{d.batch, d.seq, s.dirs, s.hidden} : Shape{d.seq, s.dirs, d.batch, s.hidden});
    o.y = y.data<float>();
    zero(o.y, y.numel());  // steps past a sequence's end stay 0
  }
  if (wanted(1)) o.y_h = c.output(1, DType::Float32, state).data<float>();
  if (s.kind == Kind::kLstm && wanted(2)) o.y_c = c.output(2, DType::Float32, state).data<float>();
  return o;
}

void initial_state(const KernelContext& c, size_t index, const Spec& s, const Dims& d, int dir, int64_t b, float* out) {
  if (!c.has(index)) {
    zero(out, s.hidden);
    return;
  }
  const Layout l{d, s.dirs, s.hidden, s.batch_major};
  std::memcpy(out, c.in(index).data<float>() + l.state_off(dir, b), static_cast<size_t>(s.hidden) * sizeof(float));
}

void run_reference(KernelContext& c, Kind kind, const Cell& cell) {
  const Spec s = parse(c.node, kind);
  const Dims d = dims_of(c, s, true);
  const std::vector<int64_t> lens = sequence_lengths(c, d);
  const Outputs o = allocate_outputs(c, s, d);
  const Layout l{d, s.dirs, s.hidden, s.batch_major};
  const float* x = c.in(0).data<float>();
  const size_t hb = static_cast<size_t>(s.hidden) * sizeof(float);
  std::vector<float> h(static_cast<size_t>(s.hidden)), cs(static_cast<size_t>(s.hidden));
  for (int dir = 0; dir < s.dirs; ++dir) {
    for (int64_t b = 0; b < d.batch; ++b) {
      initial_state(c, 5, s, d, dir, b, h.data());
      initial_state(c, kind == Kind::kLstm ? 6 : 99, s, d, dir, b, cs.data());
      const int64_t len = lens[static_cast<size_t>(b)];
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = s.dir_reversed(dir) ? len - 1 - step : step;
        cell(dir, x + l.x_row(t, b) * d.input, h.data(), cs.data());
        if (o.y) std::memcpy(o.y + l.y_off(t, dir, b), h.data(), hb);
      }
      if (o.y_h) std::memcpy(o.y_h + l.state_off(dir, b), h.data(), hb);
      if (o.y_c) std::memcpy(o.y_c + l.state_off(dir, b), cs.data(), hb);
    }
  }
}

}  // namespace joule::ops::recurrent
