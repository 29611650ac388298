#include "joule/api/prepare.h"

#include "joule/cuda/backend.h"

#include <cstdlib>

#include "joule/core/error.h"
#include "joule/passes/pass.h"
#include "joule/runtime/inputs.h"

namespace joule::api {

kernels::AlgoSpec AlgoOptions::spec() const {
  kernels::AlgoSpec s;
  if (!file.empty()) s.add_file(file);
  for (const std::string& a : rules) s.add(a);
  s.tuning_cache = tuning_cache;
  return s;
}

void check_int8_mode(const std::string& mode) {
  if (mode != "real" && mode != "simulated") fail("int8: '" + mode + "' is neither real nor simulated");
}

std::string int8_note(const std::string& mode) {
  return mode == "real" ? "int8 real: QDQ patterns on integer kernels (lower_int8, channels_last), the rest in float"
                        : "int8 simulated: the integer plan (lower_int8) with its integer arithmetic emulated in "
                          "float32, the rest in float";
}

void int8_algorithms(const std::string& mode, kernels::AlgoSpec& algo) {
  if (mode != "simulated" || algo.policy == "reference") return;
  for (const char* cls : {"qconv", "qmatmul"}) {
    bool ruled = false;
    for (const auto& [target, names] : algo.rules) ruled = ruled || target == cls;
    if (!ruled) algo.rules.emplace_back(cls, std::vector<std::string>{"emulated", "reference"});
  }
}

void apply_int8_mode(const std::string& mode, std::vector<std::string>& passes, kernels::AlgoSpec& algo) {
  if (mode == "none") return;
  check_int8_mode(mode);
  passes = passes::int8_pipeline(passes);
  int8_algorithms(mode, algo);
}

nlohmann::json apply_passes(ir::Graph& g, const std::string& passes, const std::string& int8,
                            const runtime::SessionOptions* session) {
  std::vector<std::string> names = passes::parse_pipeline(passes);
  runtime::SessionOptions so = session ? *session : runtime::SessionOptions{};
  apply_int8_mode(int8, names, so.algo);
  passes::PassOptions opt;
  opt.channels_last_conv = [&so](const ir::Graph& graph, const ir::Node& n) {
    return so.device < 0 && so.algo.wants_channels_last(graph, n, so.threads);  // cuDNN runs N,C,H,W
  };
  if (const char* v = std::getenv("JOULE_VERIFY_PASSES")) opt.verify = std::string(v) == "1";
  return passes::run_pipeline(g, names, opt);
}

Prepared prepare(const Model& m, const PrepareOptions& o) { return prepare(ir::Graph(m.graph()), o); }

Prepared prepare(Model&& m, const PrepareOptions& o) {
  ir::Graph g(m.graph());  // shares the weights; the model's hold on them goes now
  m = Model();
  return prepare(std::move(g), o);
}

namespace {
// bf16 with the ladder: the bf16 plan runs once on the check input; layers below the SQNR
// threshold get rules keeping them fp32 and the session is built again. Returns the session
// when it can be kept (nothing fell back, constants not to be released), else null.
std::unique_ptr<runtime::Session> bf16_ladder(const ir::Graph& g, const PrepareOptions& o,
                                              runtime::SessionOptions& so, PrecisionReport& r) {
  runtime::SessionOptions check = so;
  check.release_packed_constants = false;  // the fp32 twins read the weights
  check.plan_only = false;                 // the check runs it
  for (int rung = 0;; ++rung) {
    auto s = std::make_unique<runtime::Session>(ir::Graph(g), check);
    bool any = false;
    for (size_t i = 0; i < s->num_steps() && !any; ++i) any = on_bf16_kernel(s->step_node(i));
    if (!any) return so.release_packed_constants || so.plan_only ? nullptr : std::move(s);
    r.check_input = o.check_inputs.empty() ? "seeded random" : "given";
    r.layers = bf16_layer_sqnr(*s, o.check_inputs.empty() ? runtime::random_inputs(*s) : o.check_inputs);
    for (LayerPrecision& l : r.layers) l.fp32 = l.sqnr_db < o.bf16_min_sqnr_db;
    if (r.fp32_layers() == 0) return so.release_packed_constants || so.plan_only ? nullptr : std::move(s);
    s.reset();
    if (rung == 0 && finer_bf16(r, so.algo)) {  // F(4x4) layers below: F(2x2), checked again
      check.algo = so.algo;
      continue;
    }
    keep_fp32(r, so.algo);
    return nullptr;
  }
}
}  // namespace

Prepared prepare(ir::Graph g, const PrepareOptions& o) {
  if (o.threads < 0) fail("threads: " + std::to_string(o.threads) + " is negative (0: every core)");
  check_precision(o.precision);
  runtime::SessionOptions so;
  so.threads = o.threads;
  so.algo = o.algo.spec();
  so.release_packed_constants = o.release_packed;
  so.plan_only = o.plan_only;
  so.device = cuda::parse_device(o.device);
  so.gpu_math = o.gpu_math;
  so.gpu_fp32 = o.gpu_fp32;
  int8_algorithms(o.int8, so.algo);  // apply_passes lowers the QDQ patterns
  precision_algorithms(o.precision, so.algo);
  Prepared p;
  p.pipeline = apply_passes(g, o.passes, o.int8, &so);
  p.precision.precision = o.precision;
  if (o.precision == "bf16" && o.bf16_min_sqnr_db > 0) {
    p.precision.min_sqnr_db = o.bf16_min_sqnr_db;
    p.session = bf16_ladder(g, o, so, p.precision);
  }
  if (!p.session) p.session = std::make_unique<runtime::Session>(std::move(g), so);
  if (o.precision == "bf16" && p.precision.layers.empty())  // no check: the layers the plan runs in bf16
    for (size_t i = 0; i < p.session->num_steps(); ++i)
      if (on_bf16_kernel(p.session->step_node(i)))
        p.precision.layers.push_back({p.session->step_node(i).name, p.session->step_node(i).op_type,
                                      kernels::op_class_of(p.session->step_node(i)),
                                      p.session->step_node(i).meta["software"].value("algorithm", ""),
                                      std::numeric_limits<double>::quiet_NaN(), false});
  return p;
}

nlohmann::json plan_json(const runtime::Session& s) {
  nlohmann::json steps = nlohmann::json::array();
  std::map<std::string, int> count;
  for (size_t i = 0; i < s.num_steps(); ++i) {
    const ir::Node& n = s.step_node(i);
    const nlohmann::json& sw = n.meta["software"];
    const ir::TensorType* t = n.outputs.empty() ? nullptr : s.graph().type_of(n.outputs[0]);
    nlohmann::json e = {{"step", i},
                        {"node", n.name},
                        {"op", n.op_type},
                        {"algorithm", sw.value("algorithm", "reference")},
                        {"source", sw.value("algorithm_source", "")},
                        {"output", t ? t->str() : "?"}};
    if (sw.contains("algorithm_detail")) e["detail"] = sw["algorithm_detail"];
    if (sw.contains("algorithm_ms")) e["measured_ms"] = sw["algorithm_ms"];
    if (s.device() >= 0) {
      e["device"] = n.meta.value("device", std::string("cpu"));
      if (n.meta.contains("device_reason")) e["device_reason"] = n.meta["device_reason"];
    }
    ++count[e["algorithm"].get<std::string>()];
    steps.push_back(e);
  }
  const runtime::MemoryPlan& mp = s.memory_plan();
  nlohmann::json j = {{"threads", s.threads()},
                      {"steps", steps},
                      {"algorithms", count},
                      {"memory",
                       {{"arena_bytes", mp.arena_bytes}, {"naive_bytes", mp.naive_bytes}, {"planned_buffers", mp.planned_buffers}}}};
  if (s.device() >= 0) {
    const runtime::MemoryPlan& dp = s.device_memory_plan();
    j["device"] = cuda::device_name(s.device());
    j["gpu_nodes"] = s.gpu_nodes();
    j["copy_nodes"] = s.copy_nodes();
    j["device_memory"] = {{"arena_bytes", dp.arena_bytes}, {"naive_bytes", dp.naive_bytes}, {"planned_buffers", dp.planned_buffers}};
    j["cuda_graphs"] = s.cuda_graph_report();
  }
  return j;
}

}  // namespace joule::api
