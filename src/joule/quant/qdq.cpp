#include "joule/quant/qdq.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/passes/infer_shapes.h"
#include "joule/passes/pass.h"
#include "joule/quant/format_attrs.h"

namespace joule::quant {

namespace {

bool is_float_value(const ir::Graph& g, const std::string& v) {
  const ir::TensorType* t = g.type_of(v);
  return t && t->dtype == DType::Float32;
}

bool conv_like(const std::string& op) { return op == "Conv" || op == "ConvTranspose" || op == "FusedConv"; }

// The role of input `i` of node `n`: weight/bias for the constant operands of the linear ops,
// input for every other float tensor; nullopt for operands that are not quantized (shapes, ...).
std::optional<Role> input_role(const ir::Graph& g, const ir::Node& n, size_t i) {
  const std::string& v = n.inputs[i];
  if (v.empty() || !is_float_value(g, v)) return std::nullopt;
  const bool constant = g.is_initializer(v);
  if (weights_only(n))  // W and R; X and the states stay float
    return constant && (i == 1 || i == 2) ? std::optional<Role>(Role::Weight) : std::nullopt;
  const bool linear = conv_like(n.op_type) || n.op_type == "Gemm" || n.op_type == "MatMul";
  if (linear && constant && i == 1) return Role::Weight;
  if (linear && constant && i == 2 && n.op_type != "MatMul") return Role::Bias;
  if (constant) return std::nullopt;  // other constants (e.g. a constant Add operand) stay float
  return Role::Input;
}

// Everything that makes two specs quantize a tensor differently.
std::string spec_key(const TensorSpec& s) {
  const Format& f = s.format;
  return fmt::format("{}|{}|{}{}{}|{}|{}|{}|{}.{}.{}|{}{}{}{}|{}|{}|{}|{}|{}|{}|{}", static_cast<int>(f.kind), f.bits,
                     f.symmetric, f.is_signed, f.narrow_range, static_cast<int>(f.granularity), f.axis, f.frac_bits,
                     f.exp_bits, f.man_bits, f.bias, f.finite_only, f.denormals, f.saturate, f.scaled, f.block,
                     static_cast<int>(s.calib.method), s.calib.percentile, s.calib.momentum, s.calib.bins,
                     s.derived_bias, s.axis_set);
}

// What a cached activation range depends on.
std::string calib_key(const QuantPoint& p, const std::string& data_label) {
  const Format& f = p.spec.format;
  const CalibOptions& c = p.spec.calib;
  return fmt::format("{}|{}|p{}|m{}|b{}|bits{}|sym{}|{}|axis{}|{}", p.tensor, calib_method_name(c.method), c.percentile,
                     c.momentum, c.bins, f.bits, f.symmetric, f.granularity == Granularity::PerChannel ? "pc" : "pt",
                     f.axis, data_label);
}

CalibOptions calib_for(const TensorSpec& s) {
  CalibOptions c = s.calib;
  c.bits = s.format.kind == FormatKind::Int ? s.format.bits : 8;
  c.symmetric = s.format.kind != FormatKind::Int || s.format.symmetric;
  return c;
}

int channel_axis(const QuantPoint& p, int rank) {
  int a = p.spec.format.axis;
  if (a < 0) a += rank;
  if (a < 0 || a >= rank) fail(p.tensor + ": channel axis " + std::to_string(p.spec.format.axis) +
                               " is out of range for a tensor of rank " + std::to_string(rank));
  return a;
}

// Observes one activation tensor into its calibrators (one, or one per channel).
struct ActivationStats {
  QuantPoint* first = nullptr;  // the points sharing this key read its ranges
  std::vector<Calibrator> cal;
  std::vector<float> buf;

  void observe(const Tensor& t) {
    const float* x = t.data<float>();
    if (cal.size() == 1) {
      cal[0].observe(x, t.numel());
      return;
    }
    const int axis = channel_axis(*first, t.rank());
    JOULE_CHECK(t.dim(axis) == static_cast<int64_t>(cal.size()),
                first->tensor + ": channel count changed during calibration");
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; ++i) outer *= t.dim(i);
    for (int i = axis + 1; i < t.rank(); ++i) inner *= t.dim(i);
    for (size_t ch = 0; ch < cal.size(); ++ch) {
      buf.clear();
      for (int64_t o = 0; o < outer; ++o) {
        const float* p = x + (o * static_cast<int64_t>(cal.size()) + static_cast<int64_t>(ch)) * inner;
        buf.insert(buf.end(), p, p + inner);
      }
      cal[ch].observe(buf.data(), static_cast<int64_t>(buf.size()));
    }
  }
};

class CalibObserver : public runtime::Observer {
 public:
  explicit CalibObserver(std::map<std::string, std::vector<ActivationStats*>> watch) : watch_(std::move(watch)) {}
  bool reads_inputs_after() const override { return false; }
  void after_node(size_t, const ir::Node& n, const std::vector<const Tensor*>&,
                  const std::vector<Tensor>& outputs) override {
    for (size_t i = 0; i < n.outputs.size() && i < outputs.size(); ++i) observe(n.outputs[i], outputs[i]);
  }
  void observe(const std::string& name, const Tensor& t) {
    auto it = watch_.find(name);
    if (it == watch_.end() || !t.defined() || t.dtype() != DType::Float32) return;
    for (ActivationStats* s : it->second) s->observe(t);
  }

 private:
  std::map<std::string, std::vector<ActivationStats*>> watch_;
};

void weight_ranges(QuantPoint& p, const Tensor& w) {
  const CalibOptions c = calib_for(p.spec);
  if (p.spec.format.granularity == Granularity::PerChannel) {
    const int axis = channel_axis(p, w.rank());
    channel_ranges(c, w.shape(), axis, w.data<float>(), p.lo, p.hi);
  } else {
    Calibrator cal(c);
    cal.observe(w.data<float>(), w.numel());
    auto [lo, hi] = cal.range();
    p.lo = {lo};
    p.hi = {hi};
  }
}

nlohmann::json read_cache(const std::string& path) {
  if (path.empty() || !std::filesystem::exists(path)) return nlohmann::json::object();
  try {
    nlohmann::json j = nlohmann::json::parse(read_file(path));
    if (j.value("schema", 0) == 1 && j.contains("ranges") && j["ranges"].is_object()) return j["ranges"];
    std::fprintf(stderr, "joule: calibration cache %s has an unknown layout; ignoring it\n", path.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "joule: calibration cache %s is unreadable (%s); ignoring it\n", path.c_str(), e.what());
  }
  return nlohmann::json::object();
}

// The ranges of `key` from the cache into p when its entry is well formed for `channels`
// channels (finite lo <= hi); a malformed entry is reported and observed again.
bool cached_range(const nlohmann::json& cache, const std::string& key, size_t channels, const std::string& path,
                  QuantPoint& p) {
  const auto e = cache.find(key);
  if (e == cache.end()) return false;
  auto floats = [&](const char* field, std::vector<float>& out) {
    const auto f = e->is_object() ? e->find(field) : e->end();
    if (f == e->end() || !f->is_array() || f->size() != channels) return false;
    out.clear();
    for (const auto& v : *f) {
      if (!v.is_number() || !std::isfinite(v.get<double>())) return false;
      out.push_back(v.get<float>());
    }
    return true;
  };
  std::vector<float> lo, hi;
  bool ok = floats("lo", lo) && floats("hi", hi);
  for (size_t c = 0; ok && c < channels; ++c) ok = lo[c] <= hi[c];
  const auto count = e->is_object() ? e->find("count") : e->end();
  if (!ok || (count != e->end() && !count->is_number_integer())) {
    std::fprintf(stderr, "joule: calibration cache %s: the entry for '%s' is malformed; observing it again\n", path.c_str(),
                 p.tensor.c_str());
    return false;
  }
  p.lo = std::move(lo);
  p.hi = std::move(hi);
  p.observed = count == e->end() ? 0 : count->get<int64_t>();
  return true;
}

bool standard_qdq(const ir::Graph& g, const QuantPoint& p) {
  const Format& f = p.spec.format;
  if (f.kind != FormatKind::Int) return false;
  if (f.narrow_range && !p.constant) return false;  // QuantizeLinear would saturate to -128
  // Constant weights of fewer bits are their codes stored as int8/uint8 (e.g. 7-bit weights in
  // [-64, 63], which oneDNN's int8 kernels compute exactly without VNNI); a QuantizeLinear of a
  // computed value cannot clamp to fewer than 8 bits.
  if (p.constant && f.bits < 8) return true;
  return f.bits == 8 || (f.bits == 16 && g.opset() >= 21);
}

DType code_type(const Format& f) {
  if (f.bits <= 8) return f.is_signed ? DType::Int8 : DType::UInt8;
  return f.is_signed ? DType::Int16 : DType::UInt16;
}

Tensor param_tensor(const std::vector<float>& v, bool per_channel) {
  return per_channel ? Tensor::from_vector(v, {static_cast<int64_t>(v.size())}) : Tensor::scalar<float>(v.at(0));
}

Tensor zero_point_tensor(const std::vector<int32_t>& zp, DType t, bool per_channel) {
  Tensor z(t, per_channel ? Shape{static_cast<int64_t>(zp.size())} : Shape{});
  for (size_t i = 0; i < zp.size() && i < static_cast<size_t>(z.numel()); ++i)
    visit_dtype(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_integral_v<T>) z.data<T>()[i] = static_cast<T>(zp[i]);
    });
  return z;
}

nlohmann::json point_json(const QuantPoint& p) {
  nlohmann::json j{{"tensor", p.tensor}, {"format", p.spec.format.name()}, {"describe", p.spec.describe()}};
  if (!p.q.scale.empty()) {
    j["scale"] = p.q.scale;
    j["zero_point"] = p.q.zero_point;
  }
  if (!p.lo.empty()) {
    j["range_lo"] = p.lo;
    j["range_hi"] = p.hi;
  }
  if (!p.constant && p.spec.format.needs_calibration()) j["observed"] = p.observed;
  return j;
}

}  // namespace

QuantPlan QuantPlan::subset(const std::function<bool(size_t)>& keep_node, const std::function<bool(Role)>& keep_role) const {
  QuantPlan s;
  for (const NodeChoice& c : choices)
    if (keep_node(c.node)) s.choices.push_back(c);
  for (const QuantPoint& p : points) {
    if (!keep_role(p.role)) continue;
    QuantPoint q = p;
    q.uses.clear();
    for (auto& u : p.uses)
      if (keep_node(u.first)) q.uses.push_back(u);
    if (!q.uses.empty()) s.points.push_back(std::move(q));
  }
  return s;
}

QuantPlan plan_quantization(const ir::Graph& g, std::vector<NodeChoice> choices) {
  QuantPlan plan;
  std::map<std::string, size_t> index;  // role class | tensor | spec -> point
  auto add = [&](const std::string& tensor, Role role, const TensorSpec& spec, size_t node, int input) {
    const std::string key = (role == Role::Output ? "out|" : "in|") + tensor + "|" + spec_key(spec);
    auto it = index.find(key);
    if (it == index.end()) {
      QuantPoint p;
      p.tensor = tensor;
      p.role = role;
      p.spec = spec;
      p.constant = g.is_initializer(tensor);
      if (p.constant && role == Role::Input) p.role = Role::Weight;
      it = index.emplace(key, plan.points.size()).first;
      plan.points.push_back(std::move(p));
    }
    plan.points[it->second].uses.emplace_back(node, input);
  };
  for (NodeChoice& c : choices) {
    const ir::Node& n = *g.nodes[c.node];
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      std::optional<Role> r = input_role(g, n, i);
      if (!r || !c.roles[static_cast<int>(*r)]) continue;
      TensorSpec spec = *c.roles[static_cast<int>(*r)];
      if (*r == Role::Input && spec.format.granularity == Granularity::PerChannel && !spec.axis_set)
        spec.format.axis = 1;  // activations: NC...
      add(n.inputs[i], *r, spec, c.node, static_cast<int>(i));
    }
    const auto& out = c.roles[static_cast<int>(Role::Output)];
    if (out && !n.outputs.empty() && is_float_value(g, n.outputs[0])) {
      TensorSpec spec = *out;
      if (spec.format.granularity == Granularity::PerChannel && !spec.axis_set) spec.format.axis = 1;
      add(n.outputs[0], Role::Output, spec, c.node, -1);
    }
  }
  plan.choices = std::move(choices);
  return plan;
}

size_t calibrate(const ir::Graph& g, QuantPlan& plan, const SampleFn& next, const CalibrationOptions& o) {
  const nlohmann::json cache = read_cache(o.cache_path);
  nlohmann::json updated = cache;
  std::map<std::string, ActivationStats> stats;  // calib key -> calibrators
  std::map<std::string, std::vector<ActivationStats*>> watch;
  for (QuantPoint& p : plan.points) {
    if (p.spec.derived_bias || !p.spec.format.needs_calibration()) continue;
    if (p.constant) {
      weight_ranges(p, g.initializers.at(p.tensor));
      continue;
    }
    const std::string key = calib_key(p, o.data_label);
    size_t channels = 1;
    if (p.spec.format.granularity == Granularity::PerChannel) {
      const ir::TensorType* t = g.type_of(p.tensor);
      if (!t || !t->is_static()) fail(p.tensor + ": per-channel activation quantization needs a static shape");
      const Shape s = t->static_shape();
      channels = static_cast<size_t>(s[static_cast<size_t>(channel_axis(p, static_cast<int>(s.size())))]);
    }
    if (cached_range(cache, key, channels, o.cache_path, p)) continue;
    auto [it, fresh] = stats.try_emplace(key);
    if (fresh) {
      it->second.first = &p;
      it->second.cal.assign(channels, Calibrator(calib_for(p.spec)));
      watch[p.tensor].push_back(&it->second);
    }
  }
  size_t samples = 0;
  if (!stats.empty()) {
    runtime::SessionOptions so;
    so.threads = o.threads;
    runtime::Session session(g, so);
    CalibObserver obs(watch);
    session.add_observer(&obs);
    runtime::TensorMap inputs;
    while (next(inputs)) {
      for (auto& [name, t] : inputs) obs.observe(name, t);
      session.run(inputs);
      ++samples;
      if (o.progress) o.progress(samples);
    }
    if (samples == 0) fail("calibration: the calibration data has no samples");
  }
  // Ranges and parameters.
  for (QuantPoint& p : plan.points) {
    if (p.spec.derived_bias || !p.spec.format.needs_calibration()) continue;
    if (!p.constant && p.lo.empty()) {
      const std::string key = calib_key(p, o.data_label);
      ActivationStats& s = stats.at(key);
      for (Calibrator& c : s.cal) {
        if (c.count() == 0) fail("calibration: tensor '" + p.tensor + "' saw no finite values over " +
                                 std::to_string(samples) + " samples");
        auto [lo, hi] = c.range();
        p.lo.push_back(lo);
        p.hi.push_back(hi);
      }
      p.observed = s.cal[0].count();
      updated[key] = {{"lo", p.lo}, {"hi", p.hi}, {"count", p.observed}};
    }
    p.q = compute_qparams(p.spec.format, p.lo, p.hi);
    p.calibrated = true;
  }
  if (!o.cache_path.empty() && updated != cache)
    write_file_atomic(o.cache_path, nlohmann::json{{"schema", 1}, {"ranges", updated}}.dump(1) + "\n");
  return samples;
}

ir::Graph insert_qdq(const ir::Graph& g, const QuantPlan& plan, const QdqOptions& o) {
  ir::Graph q = g;
  if (o.scale_names) o.scale_names->assign(plan.points.size(), "");
  bool joule_ops = false;
  // The quantized value that replaces each (node, input); derived biases need the input and
  // weight scales of their node.
  std::map<size_t, const QuantPoint*> input0_of, weight_of;
  for (const QuantPoint& p : plan.points)
    for (auto& [node, idx] : p.uses) {
      if (idx == 0 && p.role == Role::Input) input0_of[node] = &p;
      if (p.role == Role::Weight && idx == 1) weight_of[node] = &p;
    }
  auto add_node = [&](std::string op, std::string domain, std::vector<std::string> in, std::string out,
                      const std::string& base) -> ir::Node& {
    ir::Node n;
    n.name = q.unique_name(base + "_" + op);
    n.op_type = std::move(op);
    n.domain = std::move(domain);
    n.inputs = std::move(in);
    n.outputs = {std::move(out)};
    return q.add_node(std::move(n));
  };
  auto add_init = [&](const std::string& base, Tensor t) {
    const std::string name = q.unique_name(base);
    q.types[name] = ir::TensorType::of(t.dtype(), t.shape());
    q.initializers[name] = std::move(t);
    return name;
  };
  for (size_t pi = 0; pi < plan.points.size(); ++pi) {
    const QuantPoint& p = plan.points[pi];
    const Format& f = p.spec.format;
    if (o.fake_quant && p.spec.derived_bias) continue;  // QAT: the bias trains in float
    const bool per_channel = f.granularity == Granularity::PerChannel;
    const ir::TensorType* type = g.type_of(p.tensor);
    std::string src = p.tensor;  // float value quantized
    std::string result;          // its quantized (dequantized) replacement
    const std::string base = p.tensor;
    if (p.role == Role::Output) {
      // The producer now writes `<tensor>_fp`; the dequantized value takes the original name so
      // every consumer and graph output sees the quantized tensor.
      src = q.unique_name(p.tensor + "_fp");
      ir::Node& producer = *q.nodes[p.uses.at(0).first];
      for (auto& o : producer.outputs)
        if (o == p.tensor) o = src;
      if (type) q.types[src] = *type;
      result = p.tensor;
    } else {
      result = q.unique_name(p.tensor + (p.constant ? "_dq" : "_qdq"));
    }
    if (p.spec.derived_bias) {
      auto in = input0_of.find(p.uses.at(0).first);
      auto w = weight_of.find(p.uses.at(0).first);
      if (in == input0_of.end() || w == weight_of.end() || in->second->q.scale.size() != 1 ||
          w->second->q.scale.empty())
        continue;  // no integer input/weight scale to derive from: the bias stays float
      const Tensor& b = g.initializers.at(p.tensor);
      const float s_in = in->second->q.scale[0];
      std::vector<float> scales(static_cast<size_t>(b.numel()));
      Tensor codes(DType::Int32, b.shape());
      for (int64_t i = 0; i < b.numel(); ++i) {
        const size_t wc = w->second->q.scale.size() == 1 ? 0 : static_cast<size_t>(i);
        scales[static_cast<size_t>(i)] = s_in * w->second->q.scale.at(wc);
        const double c = std::nearbyint(static_cast<double>(b.data<float>()[i]) / scales[static_cast<size_t>(i)]);
        codes.data<int32_t>()[i] = static_cast<int32_t>(std::clamp(c, -2147483648.0, 2147483647.0));
      }
      const std::string bq = add_init(base + "_int32", std::move(codes));
      const std::string sc = add_init(base + "_scale", Tensor::from_vector(scales, {b.numel()}));
      ir::Node& dq = add_node("DequantizeLinear", "", {bq, sc}, result, base);
      dq.attrs["axis"] = int64_t{0};
    } else if (!o.fake_quant && standard_qdq(g, p)) {
      const DType ct = code_type(f);
      const std::string sc = add_init(base + "_scale", param_tensor(p.q.scale, per_channel));
      const std::string zp = add_init(base + "_zero_point", zero_point_tensor(p.q.zero_point, ct, per_channel));
      std::string codes_name;
      if (p.constant) {
        const Tensor& w = g.initializers.at(p.tensor);
        std::vector<int32_t> codes(static_cast<size_t>(w.numel()));
        Format fw = f;
        if (per_channel) fw.axis = channel_axis(p, w.rank());
        quantize_int(fw, p.q, w.shape(), w.data<float>(), codes.data());
        Tensor ct_tensor = Tensor::from_vector(codes, w.shape()).cast(ct);
        codes_name = add_init(base + "_quantized", std::move(ct_tensor));
      } else {
        codes_name = q.unique_name(base + "_quantized");
        ir::Node& qn = add_node("QuantizeLinear", "", {src, sc, zp}, codes_name, base);
        if (per_channel) qn.attrs["axis"] = int64_t{f.axis};
        if (type) q.types[codes_name] = ir::TensorType{ct, type->has_shape, type->dims};
      }
      ir::Node& dq = add_node("DequantizeLinear", "", {codes_name, sc, zp}, result, base);
      if (per_channel) dq.attrs["axis"] = int64_t{p.constant ? channel_axis(p, g.initializers.at(p.tensor).rank()) : f.axis};
    } else {
      std::vector<std::string> in{src};
      if (!p.q.scale.empty()) {
        in.push_back(add_init(base + "_scale", param_tensor(p.q.scale, per_channel)));
        in.push_back(add_init(base + "_zero_point", zero_point_tensor(p.q.zero_point, DType::Int32, per_channel)));
        if (o.scale_names) (*o.scale_names)[pi] = in[1];
      }
      ir::Node& fq = add_node("FakeQuant", "joule", in, result, base);
      set_format_attrs(fq, f);
      if (per_channel && p.constant) fq.attrs["axis"] = int64_t{channel_axis(p, g.initializers.at(p.tensor).rank())};
      if (!o.qat_method.empty()) fq.attrs["qat"] = o.qat_method;
      joule_ops = true;
    }
    if (type) q.types[result] = *type;
    if (p.role != Role::Output)
      for (auto& [node, idx] : p.uses) q.nodes[node]->inputs[static_cast<size_t>(idx)] = result;
  }
  if (joule_ops) q.opsets["joule"] = 1;
  // Metadata: each node's resolved choice with its parameters.
  for (const NodeChoice& c : plan.choices) {
    nlohmann::json m = c.to_json();
    for (const QuantPoint& p : plan.points)
      for (auto& u : p.uses)
        if (u.first == c.node) m["tensors"][role_name(p.role)].push_back(point_json(p));
    q.nodes[c.node]->meta["software"]["quant"] = m;
  }
  q.sort_topologically();
  // The float weights replaced by int8 codes are no longer used.
  for (auto it = q.initializers.begin(); it != q.initializers.end();) {
    bool used = false;
    for (auto& n : q.nodes) used |= std::find(n->inputs.begin(), n->inputs.end(), it->first) != n->inputs.end();
    used |= std::find(q.outputs.begin(), q.outputs.end(), it->first) != q.outputs.end();
    it = used ? std::next(it) : q.initializers.erase(it);
  }
  return q;
}

void prepare_for_quantization(ir::Graph& g) {
  passes::run_pipeline(g, {"eliminate_identity", "fold_constants", "fold_batch_norm", "eliminate_dead_code"});
  passes::infer_shapes(g);
}

double weight_bytes(const ir::Graph& g, const QuantPlan& plan) {
  std::map<std::string, double> bytes;
  for (auto& [name, t] : g.initializers) bytes[name] = static_cast<double>(t.nbytes());
  for (const QuantPoint& p : plan.points) {
    if (!p.constant) continue;
    const Format& f = p.spec.format;
    double bits = 32;
    switch (f.kind) {
      case FormatKind::Int:
      case FormatKind::Fixed: bits = f.bits; break;
      case FormatKind::Float16:
      case FormatKind::BFloat16: bits = 16; break;
      case FormatKind::MiniFloat: bits = 1 + f.exp_bits + f.man_bits; break;
      case FormatKind::BlockFloat: bits = f.bits + 8.0 / f.block; break;
      case FormatKind::None: break;
    }
    if (p.spec.derived_bias) bits = 32;
    const Tensor& t = g.initializers.at(p.tensor);
    bytes[p.tensor] = static_cast<double>(t.numel()) * bits / 8 + 8.0 * static_cast<double>(p.q.scale.size());
  }
  double total = 0;
  for (auto& [n, b] : bytes) total += b;
  return total;
}

nlohmann::json plan_json(const ir::Graph& g, const QuantPlan& plan) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const NodeChoice& c : plan.choices) {
    const ir::Node& n = *g.nodes[c.node];
    nlohmann::json j{{"node", n.name}, {"op", n.op_type}, {"roles", c.to_json()}, {"rules", c.rules}};
    for (const QuantPoint& p : plan.points)
      for (auto& u : p.uses)
        if (u.first == c.node) j["tensors"][role_name(p.role)].push_back(point_json(p));
    nodes.push_back(std::move(j));
  }
  return nlohmann::json{{"nodes", nodes}, {"points", plan.points.size()}};
}

std::string describe_plan(const ir::Graph& g, const QuantPlan& plan) {
  struct Row {
    std::string node, op, input, weight, tail;
  };
  std::vector<Row> rows;
  size_t w[4] = {4, 2, 5, 6};
  for (const NodeChoice& c : plan.choices) {
    const ir::Node& n = *g.nodes[c.node];
    auto role = [&](Role r) {
      const auto& t = c.roles[static_cast<int>(r)];
      return t ? t->describe() : std::string("float32");
    };
    Row r{n.name, n.op_type, role(Role::Input), role(Role::Weight), ""};
    if (c.roles[static_cast<int>(Role::Bias)]) r.tail += "bias " + role(Role::Bias);
    if (c.roles[static_cast<int>(Role::Output)]) r.tail += (r.tail.empty() ? "" : "; ") + ("output " + role(Role::Output));
    if (!c.rules.empty()) {
      r.tail += r.tail.empty() ? "rules" : "; rules";
      for (int i : c.rules) r.tail += " " + std::to_string(i + 1);
    }
    w[0] = std::max(w[0], r.node.size());
    w[1] = std::max(w[1], r.op.size());
    w[2] = std::max(w[2], r.input.size());
    w[3] = std::max(w[3], r.weight.size());
    rows.push_back(std::move(r));
  }
  std::string s = fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<{}}  {}\n", "node", w[0], "op", w[1], "input", w[2], "weight",
                              w[3], "bias / output / rules");
  for (const Row& r : rows)
    s += fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<{}}  {}\n", r.node, w[0], r.op, w[1], r.input, w[2], r.weight, w[3],
                     r.tail);
  s += fmt::format("{} nodes quantized, {} tensors\n", plan.choices.size(), plan.points.size());
  // What stays float: control flow and detection ops named first (a detector's box arithmetic,
  // NMS and RoiAlign run in float32 by default), then the other op types by count.
  std::vector<bool> quantized(g.nodes.size(), false);
  for (const NodeChoice& c : plan.choices) quantized[c.node] = true;
  std::map<std::string, int> left;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!quantized[i] && g.nodes[i]->op_type != "Constant") ++left[g.nodes[i]->op_type];
  static const std::set<std::string> kFlow = {"If", "Loop", "Scan", "SequenceMap", "NonMaxSuppression", "RoiAlign", "TopK", "NonZero"};
  std::string flow, other;
  std::vector<std::pair<int, std::string>> by_count;
  for (const auto& [op, n] : left) {
    if (kFlow.count(op)) flow += fmt::format("{}{} x{}", flow.empty() ? "" : ", ", op, n);
    else by_count.emplace_back(-n, op);
  }
  std::sort(by_count.begin(), by_count.end());
  for (size_t i = 0; i < by_count.size() && i < 6; ++i)
    other += fmt::format("{}{} x{}", other.empty() ? "" : ", ", by_count[i].second, -by_count[i].first);
  if (by_count.size() > 6) other += fmt::format(", {} more op types", by_count.size() - 6);
  if (!flow.empty()) s += "left in float32: control flow and detection ops (" + flow + ")\n";
  if (!other.empty()) s += "left in float32" + std::string(flow.empty() ? "" : ", also") + ": " + other + "\n";
  return s;
}

}  // namespace joule::quant
