#include "joule/api/precision.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "joule/core/cpu_features.h"
#include "joule/core/error.h"
#include "joule/quant/sensitivity.h"
#include "joule/runtime/observed.h"

namespace joule::api {

namespace {

// The algorithms computing in bfloat16, ranked with the float32 ones under --precision bf16.
const std::vector<std::string> kBf16 = {"onednn_bf16", "onednn_bf16_rt", "winograd_bf16", "winograd_f2_bf16"};

bool is_bf16_algorithm(const std::string& a) {
  return std::find(kBf16.begin(), kBf16.end(), a) != kBf16.end();
}

// The float32 algorithm computing what a bf16 one computes, in float32: the same primitive
// (onednn), the same transforms (winograd); for both operands converted, oneDNN's sgemm.
const kernels::Algorithm* fp32_twin(const std::string& op_class, const std::string& algorithm) {
  if (algorithm == "onednn_bf16_rt") return kernels::find_algorithm(op_class, "onednn");
  if (op_class != "conv") return kernels::find_algorithm(op_class, "onednn_packed");
  return kernels::find_algorithm(op_class, algorithm.substr(0, algorithm.size() - 5));  // less "_bf16"
}

// After each step on a bf16 kernel, the float32 kernel of the same node on the same inputs.
// The inputs are copied before the step: the memory plan may write a fused convolution's output
// over its residual input.
class Bf16Checker : public runtime::Observer {
 public:
  explicit Bf16Checker(runtime::Session& s) : s_(s) {}
  void before_node(size_t, const ir::Node& n, const std::vector<const Tensor*>& inputs) override {
    if (!on_bf16_kernel(n)) return;
    copies_.assign(inputs.size(), Tensor());
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i]) copies_[i] = i < n.inputs.size() && s_.graph().is_initializer(n.inputs[i]) ? *inputs[i]
                                                                                                : inputs[i]->clone();
  }
  bool reads_inputs_after() const override { return false; }
  void after_node(size_t, const ir::Node& n, const std::vector<const Tensor*>&,
                  const std::vector<Tensor>& outputs) override {
    if (!on_bf16_kernel(n) || outputs.empty() || !outputs[0].defined()) return;
    std::vector<const Tensor*> inputs(copies_.size(), nullptr);
    for (size_t i = 0; i < copies_.size(); ++i)
      if (copies_[i].defined()) inputs[i] = &copies_[i];
    const std::string cls = kernels::op_class_of(n), algorithm = n.meta["software"].value("algorithm", "");
    const kernels::Algorithm* twin = fp32_twin(cls, algorithm);
    const kernels::NodeView v = kernels::view_of(s_.graph(), n, s_.threads());
    if (!twin || !twin->supports(v).empty())
      fail_internal(n.where() + ": no float32 twin of " + algorithm + " for " + cls);
    std::unique_ptr<kernels::Kernel> k = twin->prepare(v);
    ops::KernelContext ctx{n, s_.graph().opset(n.domain), inputs, {}, &s_.pool()};
    k->run(ctx);
    quant::MetricsAccumulator acc;
    acc.add(ctx.outputs.at(0), outputs[0]);
    layers.push_back({n.name, n.op_type, cls, algorithm, acc.result().sqnr_db, false});
    copies_.clear();
  }
  std::vector<LayerPrecision> layers;

 private:
  runtime::Session& s_;
  std::vector<Tensor> copies_;
};

}  // namespace

bool on_bf16_kernel(const ir::Node& n) { return is_bf16_algorithm(n.meta["software"].value("algorithm", "")); }

void check_precision(const std::string& precision) {
  if (precision != "fp32" && precision != "bf16") fail("precision: '" + precision + "' is neither fp32 nor bf16");
  if (precision == "bf16")
    if (std::string why = bf16_unsupported_reason(); !why.empty()) fail("--precision bf16: " + why);
}

void precision_algorithms(const std::string& precision, kernels::AlgoSpec& algo) {
  if (precision == "bf16") algo.also_rank.insert(algo.also_rank.end(), kBf16.begin(), kBf16.end());
}

namespace {
// The rule for `node` (the first rule naming a node wins): replaced, or added.
void set_rule(kernels::AlgoSpec& algo, const std::string& node, const std::string& name) {
  for (auto& [target, names] : algo.rules)
    if (target == node) {
      names = {name};
      return;
    }
  algo.rules.emplace_back(node, std::vector<std::string>{name});
}
}  // namespace

void keep_fp32(const PrecisionReport& r, kernels::AlgoSpec& algo) {
  for (const LayerPrecision& l : r.layers) {
    if (l.fp32) set_rule(algo, l.node, fp32_twin(l.op_class, l.algorithm)->name);
    else if (l.algorithm == "winograd_f2_bf16") set_rule(algo, l.node, l.algorithm);  // (the middle rung's, or guess's own)
  }
}

bool finer_bf16(const PrecisionReport& r, kernels::AlgoSpec& algo) {
  bool any = false;
  for (const LayerPrecision& l : r.layers)
    if (l.fp32 && l.algorithm == "winograd_bf16") {
      set_rule(algo, l.node, "winograd_f2_bf16");
      any = true;
    }
  return any;
}

std::vector<LayerPrecision> bf16_layer_sqnr(runtime::Session& s, const runtime::TensorMap& inputs) {
  Bf16Checker c(s);
  runtime::run_observed(s, inputs, c);
  return c.layers;
}

size_t PrecisionReport::fp32_layers() const {
  size_t n = 0;
  for (const LayerPrecision& l : layers) n += l.fp32;
  return n;
}

size_t PrecisionReport::bf16_layers() const { return layers.size() - fp32_layers(); }

nlohmann::json PrecisionReport::to_json() const {
  nlohmann::json L = nlohmann::json::array();
  for (const LayerPrecision& l : layers)
    L.push_back({{"node", l.node},
                 {"op", l.op},
                 {"algorithm", l.algorithm},
                 {"sqnr_db", std::isfinite(l.sqnr_db) ? nlohmann::json(l.sqnr_db) : nlohmann::json()},
                 {"precision", l.fp32 ? "fp32" : "bf16"}});
  return {{"precision", precision},     {"min_sqnr_db", min_sqnr_db}, {"check_input", check_input},
          {"bf16_layers", bf16_layers()}, {"fp32_layers", fp32_layers()}, {"layers", L}};
}

std::string PrecisionReport::summary() const {
  if (precision != "bf16") return "precision fp32";
  std::string s = fmt::format("precision bf16: {} Conv/MatMul/Gemm layer(s) on bf16 kernels", bf16_layers());
  if (min_sqnr_db <= 0) return s + " (no SQNR check)";
  double lowest = std::numeric_limits<double>::infinity();
  for (const LayerPrecision& l : layers)
    if (!l.fp32) lowest = std::min(lowest, l.sqnr_db);
  s += fmt::format(", {} kept fp32 (isolated SQNR < {:g} dB on the {} check input", fp32_layers(), min_sqnr_db,
                   check_input);
  if (std::isfinite(lowest)) s += fmt::format("; lowest bf16 layer {:.1f} dB", lowest);
  s += ")";
  size_t shown = 0;
  for (const LayerPrecision& l : layers)
    if (l.fp32 && shown++ < 5) s += fmt::format("{} {} {:.1f} dB", shown == 1 ? ": " : ", ", l.node, l.sqnr_db);
  if (fp32_layers() > 5) s += ", ...";
  return s;
}

}  // namespace joule::api
