#include "joule/profile/profiler.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <thread>
#include <unordered_map>

#include "joule/ops/op.h"
#include "joule/passes/annotate_costs.h"
#include "joule/passes/pass.h"
#include "joule/runtime/algorithm.h"
#include "joule/runtime/bodies.h"
#include "joule/runtime/inputs.h"
#include "joule/runtime/numerics.h"

namespace joule::profile {

namespace {
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

// The per-layer timer: two clock reads and two stores per node, nothing else.
class TimingObserver : public runtime::Observer {
 public:
  explicit TimingObserver(size_t steps) : start_(steps), end_(steps) {}
  void before_node(size_t step, const ir::Node&, const std::vector<const Tensor*>&) override {
    start_[step] = Clock::now();
  }
  bool reads_inputs_after() const override { return false; }
  void after_node(size_t step, const ir::Node&, const std::vector<const Tensor*>&,
                  const std::vector<Tensor>&) override {
    end_[step] = Clock::now();
  }
  void body_node(size_t, const ir::Node& owner, const std::string& attribute, const ir::Node& n, const std::string& algorithm,
                 double ms) override {
    BodyNodeResult& b = body_[owner.name + "\n" + attribute + "\n" + n.name];
    if (b.calls == 0) b = BodyNodeResult{owner.name, attribute, n.name, n.op_type, algorithm, 0, 0, 0};
    ++b.calls;
    b.ms += ms;
  }
  std::vector<Clock::time_point> start_, end_;
  std::map<std::string, BodyNodeResult> body_;  // summed over the instrumented runs
};

// Runs of each body so far (Bodies::stats), by owner step and attribute.
std::map<std::pair<size_t, std::string>, long long> body_runs(const runtime::Session& s) {
  std::map<std::pair<size_t, std::string>, long long> r;
  for (size_t i = 0; i < s.num_steps(); ++i)
    if (const runtime::Bodies* b = s.step_bodies(i))
      for (const runtime::Bodies::Stats& st : b->stats()) r[{i, st.attribute}] = st.runs;
  return r;
}

// The bodies' rows: each body node per inference (the instrumented runs' mean), and how often
// each body ran, from the session's counts before and after the plain and instrumented runs.
void profile_bodies(const runtime::Session& session, const std::map<std::pair<size_t, std::string>, long long>& before,
                    const std::map<std::string, BodyNodeResult>& timed, ProfileResult& r) {
  const double runs = static_cast<double>(r.instrumented_samples_ms.size() + r.plain_samples_ms.size());
  if (runs == 0) return;
  std::map<std::string, double> owner_ms;
  for (const LayerResult& L : r.layers) owner_ms[L.name] = L.ms.median;
  for (size_t i = 0; i < session.num_steps(); ++i) {
    const runtime::Bodies* b = session.step_bodies(i);
    if (!b) continue;
    for (const runtime::Bodies::Stats& st : b->stats()) {
      auto it = before.find({i, st.attribute});
      const long long n = st.runs - (it == before.end() ? 0 : it->second);
      r.bodies.push_back({session.step_node(i).name, session.step_node(i).op_type, st.attribute, st.fallback, n / runs});
    }
  }
  const double instrumented = static_cast<double>(r.instrumented_samples_ms.size());
  for (const auto& [key, b] : timed) {
    BodyNodeResult x = b;
    x.calls /= instrumented;
    x.ms /= instrumented;
    const double owner = owner_ms.count(x.owner) ? owner_ms[x.owner] : 0;
    x.pct_of_owner = owner > 0 ? 100.0 * x.ms / owner : 0;
    r.body_nodes.push_back(std::move(x));
  }
  std::stable_sort(r.body_nodes.begin(), r.body_nodes.end(), [](const BodyNodeResult& a, const BodyNodeResult& b) { return a.ms > b.ms; });
}

// Replays each node's kernel on its own inputs under the energy meter for at least the
// sensor's window (cache-warm, as inside a forward pass), after the node has run once.
class ReplayObserver : public runtime::Observer {
 public:
  ReplayObserver(runtime::Session& s, energy::EnergyMeter& m, std::optional<double> idle_w)
      : joules_(s.num_steps(), 0.0), totals_(s.num_steps(), 0.0), iters_(s.num_steps(), 0), s_(s), m_(m), idle_w_(idle_w) {}
  void after_node(size_t step, const ir::Node& n, const std::vector<const Tensor*>& inputs,
                  const std::vector<Tensor>&) override {
    const ops::OpDef* def = ops::find_op(n.domain, n.op_type);
    if (!def) return;
    const double window = m_.min_window_s();
    m_.start();
    auto t0 = Clock::now();
    int it = 0;
    do {
      s_.replay_step(step, inputs);  // the kernel the plan chose, on the node's device
      ++it;
    } while (std::chrono::duration<double>(Clock::now() - t0).count() < window);
    energy::Reading r = m_.stop();
    double j = r.joules;
    if (idle_w_) j -= *idle_w_ * r.seconds;
    joules_[step] = j / it;
    totals_[step] = r.joules / it;
    iters_[step] = it;
  }
  std::vector<double> joules_, totals_;  // per step: idle subtracted, idle left in
  std::vector<int> iters_;

 private:
  runtime::Session& s_;
  energy::EnergyMeter& m_;
  std::optional<double> idle_w_;
};

using runtime::algorithm_of;

std::string algorithm_of(const runtime::Session& s) {
  std::set<std::string> algos;
  for (size_t i = 0; i < s.num_steps(); ++i) algos.insert(algorithm_of(s.step_node(i)));
  return algos.size() == 1 ? *algos.begin() : (algos.empty() ? "reference" : "mixed");
}

std::vector<std::string> strings_of(const nlohmann::json& j) {
  std::vector<std::string> v;
  if (j.is_array())
    for (auto& e : j) v.push_back(e.is_string() ? e.get<std::string>() : e.dump());
  return v;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::string num(double v, int prec = 6) {
  if (!std::isfinite(v)) return "";
  return fmt::format("{:.{}g}", v, prec);
}

void describe_input(const runtime::Session& s, ProfileResult& r) {
  r.input_shape = "-";
  r.input_size = "-";
  if (s.input_names().empty()) return;
  const ir::TensorType* t = s.graph().type_of(s.input_names()[0]);
  if (!t || !t->is_static()) return;
  Shape sh = t->static_shape();
  r.input_shape = shape_str(sh);
  if (!sh.empty()) r.batch = sh[0];
  if (sh.size() == 4)
    r.input_size = sh[2] == sh[3] ? std::to_string(sh[2]) : std::to_string(sh[2]) + "x" + std::to_string(sh[3]);
}
}  // namespace

namespace {
// The graph as it will run: input shapes of this point applied, then the pass pipeline.
ir::Graph prepared(const ir::Graph& graph, const ProfileOptions& opt) {
  ir::Graph g = graph;
  for (auto& [name, shape] : opt.input_shapes) {
    const ir::TensorType* t = g.type_of(name);
    if (!t) fail("input shape given for '" + name + "', which is not a graph input");
    g.types[name] = ir::TensorType::of(t->dtype, shape);
  }
  passes::PassOptions po;
  po.channels_last_conv = [&opt](const ir::Graph& graph, const ir::Node& n) {
    return opt.device < 0 && opt.algo.wants_channels_last(graph, n, opt.threads);  // cuDNN runs N,C,H,W
  };
  if (!opt.passes.empty()) passes::run_pipeline(g, opt.passes, po);
  return g;
}
}  // namespace

ProfileResult profile_model(const ir::Graph& graph, const ProfileOptions& opt, const runtime::TensorMap* given) {
  runtime::SessionOptions so;
  so.threads = opt.threads;
  so.input_shapes = opt.input_shapes;
  so.algo = opt.algo;
  so.device = opt.device;
  so.gpu_math = opt.gpu_math;
  so.gpu_fp32 = opt.gpu_fp32;
  runtime::Session session(prepared(graph, opt), so);
  runtime::TensorMap random;
  if (!given) random = runtime::random_inputs(session, opt.seed);
  const runtime::TensorMap& inputs = given ? *given : random;

  ProfileResult r;
  r.model = opt.model_name;
  r.threads = session.threads();
  r.coverage = opt.coverage;
  r.peak = cpu_peak();
  r.peak_gflops = peak_gflops(r.threads);
  describe_input(session, r);

  // Costs on a copy of the session's (shape-inferred) graph; the algorithm comes from the
  // session's node metadata (what the plan chose), "reference" when nothing chose one.
  ir::Graph costed(session.graph());
  passes::annotate_costs(costed);
  std::unordered_map<const ir::Node*, size_t> index;
  for (size_t i = 0; i < session.graph().nodes.size(); ++i) index[session.graph().nodes[i].get()] = i;
  const size_t steps = session.num_steps();
  std::vector<ir::Node*> meta(steps);
  for (size_t s = 0; s < steps; ++s) {
    const ir::Node& n = session.step_node(s);
    ir::Node* c = costed.nodes[index.at(&n)].get();
    c->meta["software"]["algorithm"] = algorithm_of(n);
    meta[s] = c;
  }
  r.algorithm = opt.algo_label.empty() ? algorithm_of(session) : opt.algo_label;

  // Warm-up.
  auto w0 = Clock::now();
  do {
    if (opt.warmup_time_s <= 0 && r.warmup_runs >= opt.warmup) break;
    if (opt.checkpoint) opt.checkpoint();
    session.run(inputs);
    ++r.warmup_runs;
  } while (opt.warmup_time_s <= 0 || std::chrono::duration<double>(Clock::now() - w0).count() < opt.warmup_time_s);

  if (opt.check_numerics) {
    runtime::NumericsReport n = runtime::check_numerics(session, inputs);
    r.numerics = std::move(n.json);
    r.numerics_summary = std::move(n.summary);
  }

  // Plain and instrumented runs, interleaved so that drift of the machine affects both alike.
  TimingObserver timer(steps);
  const auto runs_before = body_runs(session);
  std::vector<std::vector<double>> layer_ms(steps);
  std::vector<double> last_start_us(steps), last_dur_us(steps);
  double plain_total_s = 0;
  const int min_runs = std::max(1, opt.runs);
  for (int i = 0; i < min_runs || plain_total_s < opt.min_time_s; ++i) {
    if (opt.checkpoint) opt.checkpoint();
    session.clear_observers();
    auto t0 = Clock::now();
    session.run(inputs);
    auto t1 = Clock::now();
    r.plain_samples_ms.push_back(ms_since(t0, t1));
    plain_total_s += ms_since(t0, t1) / 1e3;

    session.add_observer(&timer);
    t0 = Clock::now();
    session.run(inputs);
    t1 = Clock::now();
    session.clear_observers();
    r.instrumented_samples_ms.push_back(ms_since(t0, t1));
    const std::vector<double>& gpu_ms = session.device_step_ms();  // CUDA events of GPU steps
    for (size_t s = 0; s < steps; ++s) {
      layer_ms[s].push_back(s < gpu_ms.size() && gpu_ms[s] >= 0 ? gpu_ms[s] : ms_since(timer.start_[s], timer.end_[s]));
      last_start_us[s] = ms_since(t0, timer.start_[s]) * 1e3;
      last_dur_us[s] = layer_ms[s].back() * 1e3;
    }
  }
  r.plain_ms = summarize(r.plain_samples_ms, opt.noisy_cv);
  r.instrumented_ms = summarize(r.instrumented_samples_ms, opt.noisy_cv);
  r.overhead_pct = r.plain_ms.median > 0 ? 100.0 * (r.instrumented_ms.median / r.plain_ms.median - 1.0) : 0;

  // Per-layer rows.
  for (size_t s = 0; s < steps; ++s) {
    const ir::Node& n = *meta[s];
    const auto& c = n.meta["common"];
    LayerResult L;
    L.step = s;
    L.name = n.name;
    L.op = n.op_type;
    L.algorithm = n.meta["software"]["algorithm"].get<std::string>();
    L.inputs = strings_of(c.value("inputs", nlohmann::json::array()));
    L.outputs = strings_of(c.value("outputs", nlohmann::json::array()));
    L.has_cost = c.contains("flops");
    if (L.has_cost) {
      L.flops = c["flops"].get<double>();
      L.bytes = c["bytes"].get<double>();
    }
    L.ms = summarize(layer_ms[s], opt.noisy_cv);
    r.layer_sum_ms += L.ms.median;
    r.total_flops += L.flops;
    r.total_bytes += L.bytes;
    L.on_gpu = n.meta.value("device", std::string("cpu")) != "cpu";
    if (L.has_cost && L.ms.median > 0) {
      L.gflops = L.flops / (L.ms.median * 1e-3) / 1e9;
      L.pct_peak = r.peak_gflops > 0 && !L.on_gpu ? 100.0 * L.gflops / r.peak_gflops : 0;
    }
    r.layers.push_back(std::move(L));
  }
  r.attribution_pct = r.plain_ms.median > 0 ? 100.0 * r.layer_sum_ms / r.plain_ms.median : 0;
  profile_bodies(session, runs_before, timer.body_, r);

  // Chrome trace of the last instrumented run, in execution order.
  nlohmann::json ev = nlohmann::json::array();
  ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 1},
                {"args", {{"name", "joule " + r.model}}}});
  for (auto& L : r.layers)
    ev.push_back({{"name", L.name},
                  {"cat", L.op},
                  {"ph", "X"},
                  {"ts", last_start_us[L.step]},
                  {"dur", last_dur_us[L.step]},
                  {"pid", 1},
                  {"tid", 1},
                  {"args", {{"op", L.op}, {"algorithm", L.algorithm}, {"step", L.step},
                            {"inputs", L.inputs}, {"outputs", L.outputs}, {"flops", L.flops}}}});
  r.trace = {{"traceEvents", ev}, {"displayTimeUnit", "ms"},
             {"otherData", {{"model", r.model}, {"threads", r.threads}, {"input_shape", r.input_shape}}}};

  std::stable_sort(r.layers.begin(), r.layers.end(),
                   [](const LayerResult& a, const LayerResult& b) { return a.ms.median > b.ms.median; });
  double cum = 0;
  for (auto& L : r.layers) {
    L.pct = r.layer_sum_ms > 0 ? 100.0 * L.ms.median / r.layer_sum_ms : 0;
    cum += L.pct;
    L.cum_pct = cum;
  }

  // Op types.
  std::map<std::string, OpTypeResult> by_op;
  for (auto& L : r.layers) {
    auto& o = by_op[L.op];
    o.op = L.op;
    ++o.count;
    o.ms += L.ms.median;
    o.flops += L.flops;
  }
  for (auto& [k, o] : by_op) r.op_types.push_back(o);
  std::stable_sort(r.op_types.begin(), r.op_types.end(),
                   [](const OpTypeResult& a, const OpTypeResult& b) { return a.ms > b.ms; });
  cum = 0;
  for (auto& o : r.op_types) {
    o.pct = r.layer_sum_ms > 0 ? 100.0 * o.ms / r.layer_sum_ms : 0;
    bool needed = cum < 100.0 * opt.coverage - 1e-9;
    cum += o.pct;
    o.cum_pct = cum;
    if (needed) ++r.op_types_for_coverage;
  }

  // Energy.
  if (opt.energy != "none") {
    EnergyResult e;
    std::unique_ptr<energy::EnergyMeter> meter;
    if (opt.energy == "auto") {
      meter = energy::open_auto(opt.meter, e.selection);
    } else {
      meter = energy::open_meter(opt.energy, opt.meter);
      e.selection.push_back(opt.energy + ": asked for");
    }
    e.source = meter->source();
    e.description = meter->describe();
    e.window_s = meter->min_window_s();
    if (meter->is_sensor()) {
      meter->start();
      std::this_thread::sleep_for(std::chrono::duration<double>(std::max(e.window_s, 0.05)));
      energy::Reading idle = meter->stop();
      e.idle_power_w = idle.watts();
    }
    // Whole model: plain runs for at least the sensor window (and at least the timed runs' count).
    meter->start();
    auto t0 = Clock::now();
    do {
      if (opt.checkpoint) opt.checkpoint();
      session.run(inputs);
      meter->add_work(r.total_flops, r.total_bytes);
      ++e.iterations;
    } while (e.iterations < min_runs || std::chrono::duration<double>(Clock::now() - t0).count() < e.window_s);
    energy::Reading whole = meter->stop();
    e.seconds = whole.seconds;
    e.note = whole.note;
    e.samples = whole.samples;
    e.power_mean_w = whole.watts();
    e.joules_per_inference = whole.joules / e.iterations;
    e.dynamic_joules_per_inference =
        e.idle_power_w ? (whole.joules - *e.idle_power_w * whole.seconds) / e.iterations : e.joules_per_inference;
    if (opt.layer_energy) {
      double sum = 0;
      if (meter->is_sensor()) {
        ReplayObserver replay(session, *meter, e.idle_power_w);
        session.add_observer(&replay);
        session.run(inputs);
        session.clear_observers();
        double total = 0;
        for (auto& L : r.layers) {
          L.energy_j = replay.joules_[L.step];
          L.energy_iterations = replay.iters_[L.step];
          sum += *L.energy_j;
          total += replay.totals_[L.step];
        }
        e.layer_sum_total_j = total;
        if (e.joules_per_inference > 0) e.attribution_total_pct = 100.0 * total / e.joules_per_inference;
      } else {
        for (auto& L : r.layers) {
          L.energy_j = meter->model_joules(L.ms.median * 1e-3, L.flops, L.bytes);
          if (L.energy_j) sum += *L.energy_j;
        }
      }
      e.layer_sum_j = sum;
      if (e.dynamic_joules_per_inference > 0) e.attribution_pct = 100.0 * sum / e.dynamic_joules_per_inference;
    }
    r.energy = std::move(e);
  }
  return r;
}

PointKey point_key(const ir::Graph& graph, const ProfileOptions& opt) {
  runtime::SessionOptions so;
  so.threads = opt.threads;
  so.input_shapes = opt.input_shapes;
  so.algo = opt.algo;
  so.device = opt.device;
  so.gpu_math = opt.gpu_math;
  so.gpu_fp32 = opt.gpu_fp32;
  runtime::Session session(graph, so);
  ProfileResult r;
  describe_input(session, r);
  return {opt.model_name, opt.algo_label.empty() ? algorithm_of(session) : opt.algo_label, r.input_size, r.batch,
          session.threads()};
}

std::vector<std::string> PointKey::fields() const {
  return {model, algorithm, input_size, std::to_string(batch), std::to_string(threads)};
}

nlohmann::json to_json(const ProfileResult& r) {
  nlohmann::json layers = nlohmann::json::array();
  for (auto& L : r.layers) {
    nlohmann::json j = {{"step", L.step},         {"name", L.name},       {"op", L.op},
                        {"algorithm", L.algorithm}, {"inputs", L.inputs}, {"outputs", L.outputs},
                        {"latency_ms", to_json(L.ms)}, {"pct", L.pct},    {"cum_pct", L.cum_pct}};
    if (L.has_cost) {
      j["flops"] = L.flops;
      j["bytes"] = L.bytes;
      j["gflops"] = L.gflops;
      j["pct_peak"] = L.on_gpu ? nlohmann::json(nullptr) : nlohmann::json(L.pct_peak);  // of the CPU's peak
    } else {
      j["flops"] = nullptr;
      j["bytes"] = nullptr;
    }
    if (L.energy_j) {
      j["energy_j"] = *L.energy_j;
      j["energy_iterations"] = L.energy_iterations;
    }
    layers.push_back(j);
  }
  nlohmann::json bodies = nlohmann::json::array(), body_nodes = nlohmann::json::array();
  for (const BodyResult& b : r.bodies)
    bodies.push_back({{"owner", b.owner}, {"op", b.op}, {"attribute", b.attribute}, {"runs_per_inference", b.runs},
                      {"fallback", b.fallback.empty() ? nlohmann::json(nullptr) : nlohmann::json(b.fallback)}});
  for (const BodyNodeResult& b : r.body_nodes)
    body_nodes.push_back({{"owner", b.owner}, {"attribute", b.attribute}, {"name", b.name}, {"op", b.op}, {"algorithm", b.algorithm},
                          {"calls_per_inference", b.calls}, {"ms_per_inference", b.ms}, {"pct_of_owner", b.pct_of_owner}});
  nlohmann::json ops = nlohmann::json::array();
  for (auto& o : r.op_types)
    ops.push_back({{"op", o.op}, {"count", o.count}, {"ms", o.ms}, {"pct", o.pct}, {"cum_pct", o.cum_pct},
                   {"flops", o.flops}});
  nlohmann::json j = {
      {"schema_version", 1},
      {"model", r.model},
      {"algorithm", r.algorithm},
      {"input_shape", r.input_shape},
      {"input_size", r.input_size},
      {"batch", r.batch},
      {"threads", r.threads},
      {"warmup_runs", r.warmup_runs},
      {"latency_ms", to_json(r.plain_ms)},
      {"latency_samples_ms", r.plain_samples_ms},
      {"instrumented_latency_ms", to_json(r.instrumented_ms)},
      {"instrumented_samples_ms", r.instrumented_samples_ms},
      {"observer_overhead_pct", r.overhead_pct},
      {"attribution", {{"layer_sum_ms", r.layer_sum_ms}, {"plain_median_ms", r.plain_ms.median},
                       {"pct", r.attribution_pct}}},
      {"total_flops", r.total_flops},
      {"total_bytes", r.total_bytes},
      {"cpu_peak", to_json(r.peak, r.threads)},
      {"layers", layers},
      {"bodies", bodies},
      {"numerics", r.numerics},
      {"body_nodes", body_nodes},
      {"op_types", ops},
      {"coverage", {{"target", r.coverage}, {"op_types", r.op_types_for_coverage}}},
  };
  if (r.energy) {
    const EnergyResult& e = *r.energy;
    nlohmann::json samples = nlohmann::json::array();
    for (auto& s : e.samples) samples.push_back({{"t_s", s.t_s}, {"channel", s.channel}, {"value", s.value}});
    j["energy"] = {{"source", e.source},
                   {"description", e.description},
                   {"selection", e.selection},
                   {"joules_per_inference", e.joules_per_inference},
                   {"dynamic_joules_per_inference", e.dynamic_joules_per_inference},
                   {"power_mean_w", e.power_mean_w},
                   {"seconds", e.seconds},
                   {"iterations", e.iterations},
                   {"idle_power_w", e.idle_power_w ? nlohmann::json(*e.idle_power_w) : nlohmann::json(nullptr)},
                   {"window_s", e.window_s},
                   {"note", e.note},
                   {"samples", samples},
                   {"layer_sum_j", e.layer_sum_j ? nlohmann::json(*e.layer_sum_j) : nlohmann::json(nullptr)},
                   {"attribution_pct",
                    e.attribution_pct ? nlohmann::json(*e.attribution_pct) : nlohmann::json(nullptr)},
                   {"layer_sum_total_j", e.layer_sum_total_j ? nlohmann::json(*e.layer_sum_total_j) : nlohmann::json(nullptr)},
                   {"attribution_total_pct",
                    e.attribution_total_pct ? nlohmann::json(*e.attribution_total_pct) : nlohmann::json(nullptr)}};
  } else {
    j["energy"] = nullptr;
  }
  return j;
}

std::vector<std::string> overall_csv_columns() {
  return {"model", "algorithm", "input_size", "batch", "threads", "mean_ms", "std_ms", "min_ms", "max_ms",
          "median_ms", "p90_ms", "power_mean_w", "energy_per_inference_j", "energy_source"};
}

std::vector<std::string> overall_csv_row(const ProfileResult& r) {
  const Stats& s = r.plain_ms;
  return {r.model,
          r.algorithm,
          r.input_size,
          std::to_string(r.batch),
          std::to_string(r.threads),
          num(s.mean),
          num(s.std),
          num(s.min),
          num(s.max),
          num(s.median),
          num(s.p90),
          r.energy ? num(r.energy->power_mean_w) : "",
          r.energy ? num(r.energy->joules_per_inference) : "",
          r.energy ? r.energy->source : "none"};
}

std::vector<std::string> layers_csv_columns() {
  return {"model",  "input_size", "batch",  "threads", "rank",     "node",   "op",     "algorithm",
          "inputs", "outputs",    "flops",  "bytes",   "median_ms", "mean_ms", "std_ms", "pct",
          "cum_pct", "gflops",    "pct_peak", "energy_j", "energy_source"};
}

std::vector<std::vector<std::string>> layers_csv_rows(const ProfileResult& r) {
  std::vector<std::vector<std::string>> rows;
  int rank = 0;
  for (auto& L : r.layers)
    rows.push_back({r.model, r.input_size, std::to_string(r.batch), std::to_string(r.threads),
                    std::to_string(++rank), L.name, L.op, L.algorithm, join(L.inputs, " "), join(L.outputs, " "),
                    L.has_cost ? num(L.flops, 12) : "", L.has_cost ? num(L.bytes, 12) : "", num(L.ms.median),
                    num(L.ms.mean), num(L.ms.std), num(L.pct, 4), num(L.cum_pct, 4),
                    L.has_cost ? num(L.gflops, 4) : "", L.has_cost && !L.on_gpu ? num(L.pct_peak, 4) : "",
                    L.energy_j ? num(*L.energy_j) : "", L.energy_j ? r.energy->source : ""});
  return rows;
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string s;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) s += ',';
    const std::string& f = fields[i];
    if (f.find_first_of(",\"\n\r") == std::string::npos) {
      s += f;
      continue;
    }
    s += '"';
    for (char c : f) {
      if (c == '"') s += '"';
      s += c;
    }
    s += '"';
  }
  return s + "\n";
}

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
      any = true;
    } else if (c == '\n') {
      row.push_back(field);
      rows.push_back(row);
      row.clear();
      field.clear();
      any = false;
    } else if (c != '\r') {
      field += c;
      any = true;
    }
  }
  (void)any;  // a last line without its newline is an interrupted write: dropped
  return rows;
}

std::string format_report(const ProfileResult& r, size_t top) {
  std::string o;
  const Stats& p = r.plain_ms;
  o += fmt::format("{}  input {}  batch {}  {} thread{}  algorithm {}\n", r.model, r.input_shape, r.batch, r.threads,
                   r.threads == 1 ? "" : "s", r.algorithm);
  o += fmt::format("latency ms ({} plain runs after {} warm-up): median {:.3f}  mean {:.3f}  std {:.3f}  min {:.3f}  "
                   "max {:.3f}  p90 {:.3f}  p99 {:.3f}\n",
                   p.n, r.warmup_runs, p.median, p.mean, p.std, p.min, p.max, p.p90, p.p99);
  o += fmt::format("  3-sigma trimmed mean {:.3f} ({} discarded), cv {:.1f}%{}\n", p.trimmed_mean, p.trimmed,
                   100 * p.cv, p.noisy ? "  [noisy: take more runs or quiet the machine]" : "");
  o += fmt::format("observer overhead: instrumented median {:.3f} ms vs plain {:.3f} ms ({:+.1f}%)\n",
                   r.instrumented_ms.median, p.median, r.overhead_pct);
  o += fmt::format("peak: {:.1f} GFLOP/s for {} core{} ({})\n", r.peak_gflops, r.threads, r.threads == 1 ? "" : "s",
                   r.peak.assumptions);
  if (!r.numerics_summary.empty()) o += r.numerics_summary + "\n";
  o += "\n";
  const bool en = r.energy && r.energy->layer_sum_j;
  size_t n = top == 0 ? r.layers.size() : std::min(top, r.layers.size());
  o += fmt::format("{:<28} {:<14} {:<10} {:<22} {:>10} {:>10} {:>9} {:>6} {:>6} {:>8} {:>6}{}\n", "node", "op",
                   "algorithm", "output", "FLOPs", "bytes", "median_ms", "%", "cum%", "GFLOP/s", "%peak",
                   en ? "  energy_mJ" : "");
  auto trunc = [](const std::string& s, size_t w) { return s.size() <= w ? s : s.substr(0, w - 1) + "~"; };
  // Node names keep their end (the distinctive part of "/features/features.5/conv/Conv").
  auto trunc_front = [](const std::string& s, size_t w) { return s.size() <= w ? s : "~" + s.substr(s.size() - w + 1); };
  for (size_t i = 0; i < n; ++i) {
    const LayerResult& L = r.layers[i];
    o += fmt::format("{:<28} {:<14} {:<10} {:<22} {:>10} {:>10} {:>9.4f} {:>6.1f} {:>6.1f} {:>8} {:>6}{}{}\n",
                     trunc_front(L.name, 28), trunc(L.op, 14), trunc(L.algorithm, 10),
                     trunc(L.outputs.empty() ? "" : L.outputs[0], 22), L.has_cost ? num(L.flops, 4) : "?",
                     L.has_cost ? num(L.bytes, 4) : "?", L.ms.median, L.pct, L.cum_pct,
                     L.has_cost ? fmt::format("{:.2f}", L.gflops) : "?",
                     L.on_gpu ? "gpu" : L.has_cost ? fmt::format("{:.1f}", L.pct_peak) : "?",
                     en && L.energy_j ? fmt::format("  {:>10.4f}", *L.energy_j * 1e3) : "",
                     L.ms.noisy ? "  [noisy]" : "");
  }
  if (n < r.layers.size()) o += fmt::format("... {} more layers (--top 0 shows all)\n", r.layers.size() - n);
  if (!r.bodies.empty()) {
    o += "\ncontrol-flow bodies (their time is inside the owner's row):\n";
    for (const BodyResult& b : r.bodies)
      o += fmt::format("  {} ({}) {}: {:.4g} run{} per inference{}\n", b.owner, b.op, b.attribute, b.runs, b.runs == 1 ? "" : "s",
                       b.fallback.empty() ? "" : ", on the reference interpreter: " + b.fallback);
    const size_t nb = top == 0 ? r.body_nodes.size() : std::min(top, r.body_nodes.size());
    if (nb > 0)
      o += fmt::format("{:<28} {:<14} {:<10} {:<24} {:>8} {:>9} {:>8}\n", "body node", "op", "algorithm", "in (owner/attribute)", "calls",
                       "ms", "%owner");
    for (size_t i = 0; i < nb; ++i) {
      const BodyNodeResult& b = r.body_nodes[i];
      o += fmt::format("{:<28} {:<14} {:<10} {:<24} {:>8.4g} {:>9.4f} {:>8.1f}\n", trunc_front(b.name, 28), trunc(b.op, 14),
                       trunc(b.algorithm, 10), trunc_front(b.owner + "/" + b.attribute, 24), b.calls, b.ms, b.pct_of_owner);
    }
    if (nb < r.body_nodes.size()) o += fmt::format("... {} more body nodes (--top 0 shows all)\n", r.body_nodes.size() - nb);
  }
  o += fmt::format("\nattribution: sum of per-layer medians {:.3f} ms = {:.1f}% of the plain whole-model median "
                   "{:.3f} ms\n",
                   r.layer_sum_ms, r.attribution_pct, p.median);
  o += "\nop type         count   median_ms      %   cum%\n";
  for (auto& t : r.op_types)
    o += fmt::format("{:<14} {:>6} {:>11.4f} {:>6.1f} {:>6.1f}\n", trunc(t.op, 14), t.count, t.ms, t.pct, t.cum_pct);
  o += fmt::format("{} of {} op types cover {:.0f}% of the time\n", r.op_types_for_coverage, r.op_types.size(),
                   100 * r.coverage);
  if (r.energy) {
    const EnergyResult& e = *r.energy;
    o += fmt::format("\nenergy [{}]: {}\n", e.source, e.description);
    for (auto& w : e.selection) o += "  " + w + "\n";
    o += fmt::format("  whole model: {:.6f} J/inference, mean power {:.2f} W over {:.3f} s ({} runs)\n",
                     e.joules_per_inference, e.power_mean_w, e.seconds, e.iterations);
    if (e.idle_power_w)
      o += fmt::format("  idle power {:.2f} W subtracted: {:.6f} J/inference dynamic\n", *e.idle_power_w,
                       e.dynamic_joules_per_inference);
    if (e.layer_sum_j && e.attribution_pct)
      o += fmt::format("  energy attribution: sum of per-layer energies {:.6f} J = {:.1f}% of the whole-model {}"
                       "energy\n",
                       *e.layer_sum_j, *e.attribution_pct, e.idle_power_w ? "dynamic " : "");
    if (e.layer_sum_total_j && e.attribution_total_pct)
      o += fmt::format("  with idle power left in: sum of per-layer energies {:.6f} J = {:.1f}% of the whole-model {:.6f} J\n",
                       *e.layer_sum_total_j, *e.attribution_total_pct, e.joules_per_inference);
    if (!e.note.empty()) o += "  note: " + e.note + "\n";
  }
  return o;
}

}  // namespace joule::profile
