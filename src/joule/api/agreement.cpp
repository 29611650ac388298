#include "joule/api/agreement.h"

#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <set>

#include "joule/api/prepare.h"
#include "joule/api/run.h"
#include "joule/core/cpu_features.h"
#include "joule/core/error.h"
#include "joule/runtime/inputs.h"

namespace joule::api {

namespace {

// Every output of every step, kept (the arena reuses its buffers).
class Recorder : public runtime::Observer {
 public:
  bool reads_inputs_after() const override { return false; }
  void after_node(size_t, const ir::Node& n, const std::vector<const Tensor*>&,
                  const std::vector<Tensor>& outputs) override {
    for (size_t i = 0; i < outputs.size() && i < n.outputs.size(); ++i)
      if (!n.outputs[i].empty() && outputs[i].defined()) values[n.outputs[i]] = outputs[i].clone();
  }
  std::map<std::string, Tensor> values;
};

// Compares the integer plan's outputs with the simulated values as they are produced.
class Comparer : public runtime::Observer {
 public:
  explicit Comparer(const std::map<std::string, Tensor>& sim) : sim_(sim) {}
  bool reads_inputs_after() const override { return false; }
  void after_node(size_t, const ir::Node& n, const std::vector<const Tensor*>&,
                  const std::vector<Tensor>& outputs) override {
    if (n.domain == "joule" && (n.op_type == "QConv" || n.op_type == "QMatMul")) {
      ++plan_nodes;
      const std::string algo = n.meta["software"].value("algorithm", "reference");
      integer_nodes += algo != "emulated" && algo != "reference";  // onednn_int8, avx2_int8
    }
    for (size_t i = 0; i < outputs.size() && i < n.outputs.size(); ++i) {
      if (n.outputs[i].empty() || !outputs[i].defined() || seen_.count(n.outputs[i])) continue;
      seen_.insert(n.outputs[i]);
      compare(n, n.outputs[i], outputs[i]);
    }
  }
  std::vector<TensorAgreement> rows;
  size_t integer_nodes = 0;
  size_t plan_nodes = 0;  // QConv / QMatMul steps on any kernel

 private:
  void compare(const ir::Node& n, const std::string& name, const Tensor& y) {
    static const std::regex kNhwc("(.*)_nhwc(_[0-9]+)?");
    std::string base = name;
    bool nhwc = false;
    std::smatch m;
    if (!sim_.count(name) && std::regex_match(name, m, kNhwc)) {
      base = m[1];
      nhwc = true;
    }
    auto it = sim_.find(base);
    if (it == sim_.end() || it->second.dtype() != y.dtype() || it->second.numel() != y.numel()) return;
    const Tensor& s = it->second;
    if (y.dtype() != DType::Float32 && y.dtype() != DType::UInt8 && y.dtype() != DType::Int8) return;
    if (nhwc && !(y.rank() == 4 && s.rank() == 4 && y.dim(1) == s.dim(2) && y.dim(2) == s.dim(3) &&
                  y.dim(3) == s.dim(1) && y.dim(0) == s.dim(0)))
      return;
    if (!nhwc && y.shape() != s.shape()) return;
    TensorAgreement r;
    r.tensor = base;
    r.node = n.name;
    r.op = n.op_type;
    r.dtype = dtype_name(y.dtype());
    r.channels_last = nhwc;
    r.elements = y.numel();
    const int64_t C = nhwc ? s.dim(1) : 1, HW = nhwc ? s.dim(2) * s.dim(3) : 1;
    // Index into y of simulated element i (N,C,H,W order when y is N,H,W,C).
    auto yi = [&](int64_t i) {
      if (!nhwc) return i;
      const int64_t b = i / (C * HW), c = (i / HW) % C, p = i % HW;
      return (b * HW + p) * C + c;
    };
    double sig = 0, err = 0;
    for (int64_t i = 0; i < r.elements; ++i) {
      double a, b;
      switch (y.dtype()) {
        case DType::UInt8: a = s.data<uint8_t>()[i], b = y.data<uint8_t>()[yi(i)]; break;
        case DType::Int8: a = s.data<int8_t>()[i], b = y.data<int8_t>()[yi(i)]; break;
        default: a = s.data<float>()[i], b = y.data<float>()[yi(i)]; break;
      }
      if (r.codes()) {
        const int64_t d = static_cast<int64_t>(std::fabs(a - b));
        r.differ += d > 0;
        r.beyond_one += d > 1;
        r.max_steps = std::max(r.max_steps, d);
      } else if (std::isfinite(a) && std::isfinite(b)) {
        sig += a * a;
        err += (a - b) * (a - b);
      } else if (!(std::isnan(a) && std::isnan(b)) && a != b) {
        err = std::numeric_limits<double>::infinity();
      }
    }
    r.sqnr_db = r.codes() ? std::numeric_limits<double>::quiet_NaN()
                : err == 0  ? std::numeric_limits<double>::infinity()
                            : 10 * std::log10(sig / err);
    rows.push_back(std::move(r));
  }

  const std::map<std::string, Tensor>& sim_;
  std::set<std::string> seen_;
};

bool has_qdq(const ir::Graph& g) {
  for (const auto& n : g.nodes)
    if (n->domain.empty() && (n->op_type == "QuantizeLinear" || n->op_type == "DequantizeLinear")) return true;
  return false;
}

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

nlohmann::json TensorAgreement::to_json() const {
  nlohmann::json j{{"tensor", tensor}, {"node", node}, {"op", op}, {"dtype", dtype}, {"elements", elements}};
  if (channels_last) j["channels_last"] = true;
  if (codes()) {
    j["differ"] = differ;
    j["beyond_one_step"] = beyond_one;
    j["max_steps"] = max_steps;
    j["within_one_step"] = within_one();
  } else {
    j["sqnr_db"] = number(sqnr_db);  // null when not finite: identical (+inf), or NaN/Inf that differ (-inf)
    j["identical"] = std::isinf(sqnr_db) && sqnr_db > 0;
  }
  return j;
}

nlohmann::json AgreementReport::to_json() const {
  nlohmann::json j{{"model", model},
                   {"threads", threads},
                   {"integer_nodes", integer_nodes},
                   {"note", note},
                   {"first_difference", first_difference},
                   {"first_beyond_one_step", first_beyond_one},
                   {"min_within_one_step", min_within_one},
                   {"output_sqnr_db", number(output_sqnr_db)}};
  j["tensors"] = nlohmann::json::array();
  for (const TensorAgreement& t : tensors) j["tensors"].push_back(t.to_json());
  j["outputs"] = nlohmann::json::array();
  for (const TensorAgreement& t : outputs) j["outputs"].push_back(t.to_json());
  return j;
}

AgreementReport simulation_agreement(const Model& m, const runtime::TensorMap& given, int threads) {
  if (!has_qdq(m.graph()))
    fail(model_label(m) + ": no QuantizeLinear/DequantizeLinear: not a quantized (QDQ) model (joule quantize writes one)");
  std::map<std::string, Shape> shapes;  // kernels are planned for the inputs' shapes
  for (const auto& [name, t] : given) shapes[name] = t.shape();
  const Model planned = m.with_input_shapes(shapes);
  PrepareOptions o = PrepareOptions::with_threads(threads);
  o.int8 = "simulated";
  Prepared sim = prepare(planned, o);
  o.int8 = "real";
  Prepared real = prepare(planned, o);
  const runtime::TensorMap inputs = given.empty() ? runtime::random_inputs(*sim.session) : given;

  Recorder rec;
  sim.session->add_observer(&rec);
  const runtime::TensorMap sim_out = sim.session->run(inputs);
  for (const auto& [name, t] : sim_out) rec.values.emplace(name, t.clone());  // outputs that are inputs
  Comparer cmp(rec.values);
  real.session->add_observer(&cmp);
  real.session->run(inputs);

  AgreementReport r;
  r.model = model_label(m);
  r.threads = real.session->threads();
  r.integer_nodes = cmp.integer_nodes;
  if (cmp.plan_nodes && !r.integer_nodes) r.note = int8_inexact_reason();  // both plans then run the emulated kernels
  r.tensors = std::move(cmp.rows);
  const std::vector<std::string>& outs = m.graph().outputs;
  r.output_sqnr_db = std::numeric_limits<double>::infinity();
  for (const TensorAgreement& t : r.tensors) {
    if (t.codes()) {
      if (t.differ && r.first_difference.empty()) r.first_difference = t.tensor;
      if (t.beyond_one && r.first_beyond_one.empty()) r.first_beyond_one = t.tensor;
      r.min_within_one = std::min(r.min_within_one, t.within_one());
    }
    if (std::find(outs.begin(), outs.end(), t.tensor) != outs.end()) {
      r.outputs.push_back(t);
      if (!t.codes()) r.output_sqnr_db = std::min(r.output_sqnr_db, t.sqnr_db);
    }
  }
  return r;
}

}  // namespace joule::api
