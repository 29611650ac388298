#include "joule/api/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "joule/api/opdb.h"
#include "joule/api/prepare.h"
#include "joule/api/profile.h"
#include "joule/api/prune.h"
#include "joule/api/quantize.h"
#include "joule/api/train.h"
#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/experiment/store.h"
#include "joule/passes/annotate_costs.h"
#include "joule/passes/model_info.h"
#include "joule/profile/energy/energy_meter.h"
#include "joule/quant/sensitivity.h"
#include "joule/report/plot.h"
#include "joule/runtime/session.h"
#include "joule/search/optimizer.h"
#include "joule/search/space.h"

namespace joule::api {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr double kSqnrCap = 200;  // dB: an exact output (FP32 against itself) counts as this

nlohmann::json opt_num(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }
std::optional<double> num_opt(const nlohmann::json& j, const char* k) {
  if (!j.contains(k) || j[k].is_null()) return std::nullopt;
  return j[k].get<double>();
}

size_t argmax(const Tensor& t) {
  const float* p = t.data<float>();
  return static_cast<size_t>(std::max_element(p, p + t.numel()) - p);
}

// Everything a trial needs, made once.
class Searcher {
 public:
  Searcher(const Model& m, const SearchOptions& o, const Hooks& hooks) : m_(m), o_(o), hooks_(hooks) {}

  void setup() {
    check_options();
    space_ = search::SearchSpace::load(o_.space);
    QuantOptions qo;
    qo.threads = o_.threads;
    const QuantModel q = plan_model(m_, qo, space_.quant);
    dec_ = std::make_unique<search::Decisions>(space_, m_.graph(), q.graph, q.plan.choices);
    for (const auto& c : q.plan.choices) base_layers_.insert(q.graph.nodes[c.node]->name);
    if (m_.graph().inputs.size() != 1) fail("search: the model must have one input (it has " +
                                            std::to_string(m_.graph().inputs.size()) + ")");
    std::unique_ptr<data::Dataset> d = open_data(o_.val, m_, o_.preprocess, &val_how_);
    LoadedSamples s = load_samples(*d, m_.graph().inputs[0], o_.val_samples);
    if (s.inputs.empty()) fail("search: no validation sample could be read from " + o_.val.label());
    val_ = std::move(s.inputs);
    labels_ = std::move(s.labels);
    metric_ = labels_.empty() ? "sqnr_db" : "top1";
    if (metric_ == "sqnr_db") {  // the FP32 model's outputs: what every trial is compared with
      auto ref = prepare(m_, PrepareOptions::with_threads(o_.threads)).session;
      for (const auto& in : val_) reference_.push_back(ref->run(in).at(ref->output_names().at(0)).clone());
    }
    if (metric_ == "sqnr_db" && space_.constraints.accuracy_drop)
      fail(space_.source + ": constraint accuracy_drop needs labelled validation data (without labels the "
                           "accuracy is the output SQNR against FP32: use min_accuracy in dB)");
    if (space_.finetune.steps > 0 && space_.prune.empty())
      fail(space_.source + ": finetune is for pruned trials, and the space has no prune choices");
    if (space_.finetune.steps > 0 && o_.train.empty())
      fail("search: the space fine-tunes pruned trials: give the training data (--train-data SPEC)");
    if (space_.qat.steps > 0 && o_.train.empty())
      fail("search: the space trains quantized trials with QAT: give the training data (--train-data SPEC)");
    if (o_.cost == "predicted") predictor_ = open_predictor(o_.opdb);
    else open_energy();
    std::filesystem::create_directories(o_.out_dir + "/calib");
    if (!o_.store.empty()) store_ = std::make_unique<experiment::ResultsStore>(o_.store);
    name_ = o_.name.empty() ? "search:" + m_.name() : o_.name;
  }

  SearchReport run() {
    const auto t0 = Clock::now();
    resume();
    // The baselines first: FP32, then the base config on every layer (uniform W8A8 by default).
    std::optional<std::vector<int>> g32 = dec_->uniform("fp32"), g8 = dec_->uniform("int8");
    if (g32 && !dec_->candidate(*g32).quant_yaml.empty()) g32.reset();
    search::Candidate c32, c8;
    c8.quant_yaml = space_.quant;
    fp32_ = g32 ? evaluate(*g32) : evaluate_candidate(c32, {}, "fp32");
    w8a8_ = g8 ? evaluate(*g8) : evaluate_candidate(c8, {}, "w8a8");

    search::OptimizerOptions oo;
    oo.algorithm = o_.algorithm;
    oo.trials = o_.trials;
    oo.population = o_.population;
    oo.seed = o_.seed;
    if (g32) oo.seeds.push_back(*g32);
    if (g8) oo.seeds.push_back(*g8);
    oo.evaluated = [this] { return trials_.size(); };
    std::vector<size_t> choices;
    for (const auto& v : dec_->variables()) choices.push_back(v.choices);
    search::optimize(
        choices, o_.objectives.size(),
        [this](const std::vector<int>& x) {
          const std::string k = dec_->key(x);
          auto it = by_key_.find(k);
          if (it == by_key_.end()) {
            if (trials_.size() >= o_.trials) throw search::Budget{};
            return objectives(trials_[evaluate(x)]);
          }
          return objectives(trials_[it->second]);
        },
        oo);
    SearchReport r;
    r.search_s = seconds_since(t0);
    r.model = m_.name();
    r.metric = metric_;
    r.front = front();
    // The front and the baselines measured again side by side (interleaved rounds, best median),
    // so that minutes of machine drift between trials cannot make a point look faster.
    const auto t1 = Clock::now();
    std::vector<size_t> again(r.front.begin(), r.front.end());
    for (size_t b : {fp32_, w8a8_})
      if (std::find(again.begin(), again.end(), b) == again.end()) again.push_back(b);
    remeasure(again);
    r.remeasure_s = seconds_since(t1);
    r.trials = trials_;
    r.fp32 = trials_[fp32_];
    r.w8a8 = trials_[w8a8_];
    for (size_t k = 0; k < r.front.size(); ++k)
      if (dominates_w8a8(trials_[r.front[k]])) r.dominating_w8a8.push_back(k);
    write(r);
    for (size_t rank : o_.export_points) export_point(r, rank);
    return r;
  }

 private:
  void check_options() {
    if (o_.out_dir.empty()) fail("search: an output directory is required (-o DIR)");
    if (o_.val.empty()) fail("search: validation data is required (--val SPEC)");
    if (o_.cost != "measured" && o_.cost != "predicted") fail("search: cost '" + o_.cost + "': expected measured or predicted");
    if (o_.threads < 1) fail("search: threads must be at least 1");
    if (o_.runs < 1) fail("search: runs must be at least 1");
    if (!(o_.min_time_s >= 0)) fail("search: min_time must be at least 0");
    if (o_.trials < 1) fail("search: trials must be at least 1");
    if (o_.objectives.empty()) fail("search: give at least one objective");
    std::set<std::string> seen;
    for (const auto& ob : o_.objectives) {
      if (ob != "accuracy" && ob != "latency" && ob != "energy" && ob != "size")
        fail("search: objective '" + ob + "': expected accuracy, latency, energy or size");
      if (!seen.insert(ob).second) fail("search: objective '" + ob + "' given twice");
    }
  }

  void open_energy() {
    std::vector<std::string> why;
    if (o_.energy == "auto") meter_ = profile::energy::open_auto({}, why);
    else meter_ = profile::energy::open_meter(o_.energy);
  }

  // --- resume -------------------------------------------------------------------------------
  std::string trials_path() const { return o_.out_dir + "/trials.jsonl"; }
  nlohmann::json header() const {
    return {{"search", 1},
            {"model", m_.path().empty() ? m_.name() : m_.path()},
            {"space", space_.text},
            {"val", o_.val.label()},
            {"val_samples", val_.size()},
            {"calib", o_.data.label()},
            {"train", o_.train.empty() ? "" : o_.train.label()},
            {"calib_samples", o_.calib_samples},
            {"cost", o_.cost},
            {"threads", o_.threads},
            {"runs", o_.runs},
            {"min_time_s", o_.min_time_s}};
  }
  void resume() {
    const std::string p = trials_path();
    if (std::filesystem::exists(p)) {
      std::ifstream in(p);
      std::string line;
      bool first = true;
      while (std::getline(in, line)) {
        nlohmann::json j;
        try {
          j = nlohmann::json::parse(line);
        } catch (const nlohmann::json::exception&) {
          continue;  // a line cut short when the process was killed
        }
        if (first) {
          first = false;
          if (j != header())
            fail(o_.out_dir + ": holds another search (different model, space, data or options); give another -o DIR");
          continue;
        }
        Trial t = Trial::from_json(j);
        t.resumed = true;
        t.index = trials_.size();
        by_key_[t.key] = t.index;
        trials_.push_back(std::move(t));
      }
      // Rewrite without any cut line.
      std::string text = header().dump() + "\n";
      for (const Trial& t : trials_) text += t.to_json().dump() + "\n";
      write_file_atomic(p, text);
    } else {
      write_file_atomic(p, header().dump() + "\n");
    }
    if (store_) store_->put_experiment(name_, o_.out_dir, space_.text, o_.trials);
  }

  // --- one trial ----------------------------------------------------------------------------
  size_t evaluate(const std::vector<int>& x) {
    const std::string k = dec_->key(x);
    if (auto it = by_key_.find(k); it != by_key_.end()) return it->second;
    return evaluate_candidate(dec_->candidate(x), x, k);
  }

  // The candidate's model: pruned (and fine-tuned), then quantized (calibration cached per
  // pruning choice); `t` given: its parameters, FLOPs and size filled in.
  Model build(const search::Candidate& c, Trial* t = nullptr) {
    Model cur = m_;
    std::string pk = "unpruned";
    if (c.pruned()) {
      ir::Graph g = m_.graph();
      prune::prune_graph(g, c.prune);
      cur = m_.derived(std::move(g), m_.name() + "_pruned");
      if (space_.finetune.steps > 0)  // recovers on the training data before it is quantized
        cur = m_.derived(ir::Graph(train(cur, training(space_.finetune), hooks_).model.graph()), m_.name() + "_pruned");
      pk.clear();
      for (const auto& v : dec_->variables())
        if (v.kind == search::Variable::Prune) pk += fmt::format("{:g}_", c.prune.ratio_of(v.name));
    }
    if (t) {
      ir::Graph g = cur.graph();
      const nlohmann::json info = passes::model_info(g);
      t->params = info["parameters"].get<double>();
      t->flops = info["total"]["flops"].get<double>();
      t->size_mb = weight_bytes(cur.graph(), c) / 1e6;
    }
    if (c.quantized()) {
      QuantOptions qo;
      qo.config = c.quant_yaml;
      qo.calib = o_.data;
      qo.calib_samples = o_.calib_samples;
      qo.preprocess = o_.preprocess;
      qo.threads = o_.threads;
      if (c.qat) {  // (no calibration cache: QAT calibrates the model it trains, BatchNorm folded first)
        QatOptions q;
        q.quant = qo;
        q.train = training(space_.qat);
        q.method = space_.qat_method;
        cur = qat(cur, q, hooks_).model;
      } else {
        qo.calib_cache = o_.out_dir + "/calib/" + safe_filename(pk) + ".json";
        cur = quantize(cur, qo, hooks_).model;
      }
    }
    return cur;
  }

  // Training options for a finetune or qat block of the space, on the search's training data.
  TrainOptions training(const search::SearchSpace::Training& b) const {
    TrainOptions t;
    t.data = o_.train;
    t.preprocess = o_.preprocess;
    t.steps = b.steps;
    t.batch = b.batch;
    t.optimizer.name = b.optimizer;
    t.optimizer.lr = b.lr;
    t.threads = 0;  // every core: training time is not what the trial measures
    t.seed = o_.seed;
    return t;
  }

  // Bytes of the constants as the candidate stores them: each layer's weight at its precision's
  // bits, everything else at its own type's size.
  double weight_bytes(const ir::Graph& g, const search::Candidate& c) const {
    double bytes = 0;
    std::set<std::string> seen;
    for (const auto& n : g.nodes)
      for (size_t i = 0; i < n->inputs.size(); ++i) {
        const std::string& v = n->inputs[i];
        auto it = g.initializers.find(v);
        if (it == g.initializers.end() || !seen.insert(v).second) continue;
        double bits = 8.0 * static_cast<double>(dtype_size(it->second.dtype()));
        if (i == 1) {
          auto p = c.precision.find(n->name);
          if (p != c.precision.end()) bits = dec_->weight_bits(n->name, p->second);
          else if (base_layers_.count(n->name) && c.quantized()) bits = dec_->weight_bits(n->name, "int8");
        }
        bytes += static_cast<double>(it->second.numel()) * bits / 8.0;
      }
    return bytes;
  }

  std::unique_ptr<runtime::Session> compile(const Model& built, const search::Candidate& c) {
    PrepareOptions po = PrepareOptions::with_threads(o_.threads);
    po.algo.rules = c.algo_rules();
    return std::move(prepare(built, po).session);
  }

  void measure(runtime::Session& s, Trial& t) {
    const runtime::TensorMap& in = val_.front();
    for (int i = 0; i < o_.warmup; ++i) s.run(in);
    std::vector<double> ms;
    if (meter_ && meter_->is_sensor()) meter_->start();
    const auto t0 = Clock::now();
    while (ms.size() < static_cast<size_t>(o_.runs) || seconds_since(t0) < o_.min_time_s) {
      const auto a = Clock::now();
      s.run(in);
      ms.push_back(seconds_since(a) * 1e3);
    }
    std::sort(ms.begin(), ms.end());
    t.latency_ms = ms[ms.size() / 2];
    t.cost = "measured";
    if (!meter_) return;
    t.energy_source = meter_->source();
    if (meter_->is_sensor()) {
      const auto reading = meter_->stop();
      t.energy_mj = reading.joules / static_cast<double>(ms.size()) * 1e3;
    } else {
      // The costs of the graph as compiled (its own nodes' metadata may predate pruning and
      // int8 lowering, or be absent: every trial is costed afresh).
      ir::Graph costed = s.graph();
      const passes::CostTotals c = passes::annotate_costs(costed);
      if (auto j = meter_->model_joules(t.latency_ms / 1e3, c.flops, c.bytes)) t.energy_mj = *j * 1e3;
    }
  }

  void predict_cost(runtime::Session& s, Trial& t) {
    const predict::Prediction p = predictor_->predict(s, m_.name());
    t.latency_ms = p.latency_ms;
    t.cost = "predicted";
    if (p.energy_j) {
      t.energy_mj = *p.energy_j * 1e3;
      t.energy_source = p.energy_source;
    }
  }

  double accuracy(runtime::Session& s) {
    const std::string out = s.output_names().at(0);
    if (metric_ == "top1") {
      size_t correct = 0;
      for (size_t i = 0; i < val_.size(); ++i) {
        hooks_.check();
        correct += static_cast<int64_t>(argmax(s.run(val_[i]).at(out))) == labels_[i];
      }
      return 100.0 * static_cast<double>(correct) / static_cast<double>(val_.size());
    }
    std::vector<Tensor> outs;
    for (const auto& in : val_) {
      hooks_.check();
      outs.push_back(s.run(in).at(out).clone());
    }
    quant::MetricsAccumulator acc;
    for (size_t i = 0; i < outs.size(); ++i) acc.add(reference_[i], outs[i]);
    const double db = acc.result().sqnr_db;
    return std::isnan(db) ? db : std::min(db, kSqnrCap);
  }

  size_t evaluate_candidate(const search::Candidate& c, const std::vector<int>& x, const std::string& key) {
    if (auto it = by_key_.find(key); it != by_key_.end()) return it->second;
    hooks_.report("search", trials_.size(), o_.trials,
                  fmt::format("search: trial {}/{} ({})", trials_.size() + 1, o_.trials, key));
    const auto t0 = Clock::now();
    Trial t;
    t.index = trials_.size();
    t.key = key;
    t.genome = x;
    t.precision = c.precision;
    t.qat = c.qat;
    for (const auto& [n, r] : c.prune.node_ratio)
      if (r > 0) t.prune[n] = r;
    try {
      const Model built = build(c, &t);
      auto s = compile(built, c);
      t.accuracy = accuracy(*s);
      if (o_.cost == "predicted") predict_cost(*s, t);
      else measure(*s, t);
    } catch (const Error& e) {
      if (e.kind() == Error::Kind::Cancelled) throw;
      t.error = e.what();
      t.feasible = false;
    }
    // The FP32 trial must have run: the others are judged against it.
    if (!t.error.empty() && t.index == 0) fail("search: the FP32 model cannot be run: " + t.error);
    check_constraints(t);
    t.seconds = seconds_since(t0);
    by_key_[t.key] = t.index;
    trials_.push_back(t);
    std::ofstream(trials_path(), std::ios::app) << t.to_json().dump() << "\n" << std::flush;
    record(t);
    return t.index;
  }

  void check_constraints(Trial& t) const {
    if (!t.error.empty()) return;
    const search::Constraints& k = space_.constraints;
    std::vector<std::string> v;
    if (k.accuracy_drop && !trials_.empty() && trials_[fp32_].accuracy - t.accuracy > *k.accuracy_drop)
      v.push_back(fmt::format("accuracy drop {:.3g} > {:g}", trials_[fp32_].accuracy - t.accuracy, *k.accuracy_drop));
    if (k.min_accuracy && !(t.accuracy >= *k.min_accuracy))
      v.push_back(fmt::format("accuracy {:.4g} < {:g}", t.accuracy, *k.min_accuracy));
    if (k.latency_ms && t.latency_ms > *k.latency_ms)
      v.push_back(fmt::format("latency {:.4g} ms > {:g}", t.latency_ms, *k.latency_ms));
    if (k.energy_mj && t.energy_mj && *t.energy_mj > *k.energy_mj)
      v.push_back(fmt::format("energy {:.4g} mJ > {:g}", *t.energy_mj, *k.energy_mj));
    if (k.size_mb && t.size_mb > *k.size_mb) v.push_back(fmt::format("size {:.4g} MB > {:g}", t.size_mb, *k.size_mb));
    if (!v.empty()) {
      t.feasible = false;
      t.violates = fmt::format("{}", fmt::join(v, "; "));
    }
  }

  void record(const Trial& t) {
    if (!store_) return;
    experiment::RunRow r;
    r.experiment = name_;
    r.point = t.key;
    r.command = "search";
    r.model = m_.name();
    r.params = {{"precision", t.precision}, {"prune", t.prune}, {"qat", t.qat}};
    r.status = t.error.empty() ? "done" : "failed";
    r.error = t.error;
    r.result = {{"trial", t.to_json()}};
    if (t.error.empty()) {
      r.metrics["search.accuracy"] = t.accuracy;
      r.metrics["search.latency_ms"] = t.latency_ms;
      r.metrics["search.size_mb"] = t.size_mb;
      if (t.energy_mj) r.metrics["search.energy_mj"] = *t.energy_mj;
    }
    r.run_dir = o_.out_dir;
    r.wall_s = t.seconds;
    experiment::stamp(r);
    store_->finish(r);
  }

  // Minimised objectives of a trial; infeasible trials are pushed behind every feasible one.
  std::vector<double> objectives(const Trial& t) const {
    std::vector<double> v;
    for (const auto& ob : o_.objectives) {
      double x = 0;
      if (ob == "accuracy") x = -t.accuracy;
      else if (ob == "latency") x = t.latency_ms;
      else if (ob == "energy") x = t.energy_mj.value_or(HUGE_VAL);
      else x = t.size_mb;
      if (!std::isfinite(x)) x = 1e12;
      if (!t.error.empty()) x = 1e12;
      else if (!t.feasible) x += 1e9;
      v.push_back(x);
    }
    return v;
  }

  std::vector<size_t> front() const {
    std::vector<std::vector<double>> rows;
    for (const Trial& t : trials_) {
      rows.push_back(objectives(t));
      if (!t.feasible) rows.back().assign(rows.back().size(), NAN);
    }
    std::vector<size_t> f = search::nondominated(rows);
    std::stable_sort(f.begin(), f.end(), [&](size_t a, size_t b) {
      return trials_[a].accuracy != trials_[b].accuracy ? trials_[a].accuracy > trials_[b].accuracy
                                                          : trials_[a].latency_ms < trials_[b].latency_ms;
    });
    return f;
  }

  static constexpr int kRounds = 5;
  void remeasure(const std::vector<size_t>& which) {
    if (!meter_) open_energy();
    std::vector<std::pair<size_t, std::unique_ptr<runtime::Session>>> sessions;
    for (size_t i : which) {
      if (!trials_[i].error.empty()) continue;
      const search::Candidate c = candidate_of(trials_[i]);
      sessions.emplace_back(i, compile(build(c), c));
    }
    for (int round = 0; round < kRounds; ++round)
      for (auto& [i, s] : sessions) {
        hooks_.report("measuring the front", static_cast<size_t>(round), kRounds,
                      fmt::format("search: measuring the front again, round {}/{}", round + 1, kRounds));
        Trial m;
        measure(*s, m);
        Trial& t = trials_[i];
        if (!t.measured_latency_ms || m.latency_ms < *t.measured_latency_ms) {
          t.measured_latency_ms = m.latency_ms;
          t.measured_energy_mj = m.energy_mj;
        }
      }
  }

  search::Candidate candidate_of(const Trial& t) const {
    return t.genome.empty() ? baseline(t.key) : dec_->candidate(t.genome);
  }

  search::Candidate baseline(const std::string& key) const {
    search::Candidate c;
    if (key == "w8a8") c.quant_yaml = space_.quant;
    return c;
  }

  // Latency and energy as measured (the re-measured figures under predicted cost).
  static double lat(const Trial& t) { return t.measured_latency_ms.value_or(t.latency_ms); }
  static std::optional<double> energy(const Trial& t) {
    return t.measured_energy_mj ? t.measured_energy_mj : t.energy_mj;
  }
  bool dominates_w8a8(const Trial& t) const {
    const Trial& b = trials_[w8a8_];
    if (!b.error.empty() || t.key == b.key || t.accuracy < b.accuracy) return false;
    const auto e = energy(t), eb = energy(b);
    return lat(t) < lat(b) || (e && eb && *e < *eb);
  }

  // --- outputs ------------------------------------------------------------------------------
  // The YAML files that reproduce a candidate: joule prune --config, joule quantize --config, --algo-file
  // (and qat.txt: the joule qat command of a QAT point).
  void write_configs(const std::string& dir, const search::Candidate& c) const {
    if (c.quantized()) write_file_atomic(dir + "/quant.yaml", c.quant_yaml);
    if (c.qat)  // the training it had: joule qat with the same settings (after joule prune, if pruned)
      write_file_atomic(dir + "/qat.txt",
                        fmt::format("joule qat MODEL --config quant.yaml --data {} --calib {} --steps {} --batch {} "
                                    "--optimizer {} --lr {:g} --method {} --seed {} -o OUT.onnx\n",
                                    o_.train.label(), o_.data.label(), space_.qat.steps, space_.qat.batch,
                                    space_.qat.optimizer, space_.qat.lr, space_.qat_method, o_.seed));
    if (c.pruned()) write_file_atomic(dir + "/prune.yaml", c.prune_yaml());
    if (const std::string a = c.algo_yaml(); !a.empty()) write_file_atomic(dir + "/algo.yaml", a);
  }

  std::string describe(const Trial& t) const {
    std::map<std::string, int> by;
    for (const auto& [_, p] : t.precision) ++by[p];
    std::vector<std::string> parts;
    for (const auto& [p, n] : by) parts.push_back(fmt::format("{} {}", n, p));
    if (t.genome.empty()) parts = {t.key == "fp32" ? "all fp32" : "base config on every layer"};
    else if (parts.empty()) parts = {"precision as the base config"};
    if (!t.prune.empty()) {
      double mean = 0;
      for (const auto& [_, r] : t.prune) mean += r;
      parts.push_back(fmt::format("{} layers pruned (mean {:.2f})", t.prune.size(), mean / static_cast<double>(t.prune.size())));
    }
    if (t.qat) parts.push_back(fmt::format("QAT ({}, {} steps)", space_.qat_method, space_.qat.steps));
    return fmt::format("{}", fmt::join(parts, ", "));
  }

  std::string csv_row(const Trial& t, const std::string& role) const {
    auto e = [](const std::optional<double>& v) { return v ? fmt::format("{:.6g}", *v) : std::string(); };
    return fmt::format("{},{},{},{:.6g},{:.6g},{},{:.6g},{:.0f},{:.0f},{},{},{},{},{},\"{}\",\"{}\"\n", t.index, t.key,
                       role, t.accuracy, t.latency_ms, e(t.energy_mj), t.size_mb, t.params, t.flops, t.cost,
                       e(t.measured_latency_ms), e(t.measured_energy_mj), t.feasible ? 1 : 0,
                       fmt::format("{:.3f}", t.seconds), t.violates + t.error, describe(t));
  }

  void write(SearchReport& r) {
    const std::string acc_label = metric_ == "top1" ? "top-1 %" : "output SQNR dB vs FP32";
    const std::string hdr =
        "index,key,role,accuracy,latency_ms,energy_mj,size_mb,params,flops,cost,measured_latency_ms,"
        "measured_energy_mj,feasible,seconds,violates,what\n";
    std::string all = hdr, fr = hdr;
    for (const Trial& t : trials_) all += csv_row(t, t.index == fp32_ ? "fp32" : t.index == w8a8_ ? "w8a8" : "trial");
    nlohmann::json fj = nlohmann::json::array();
    for (size_t k = 0; k < r.front.size(); ++k) {
      const Trial& t = trials_[r.front[k]];
      fr += csv_row(t, fmt::format("front {}", k));
      nlohmann::json j = t.to_json();
      j["rank"] = k;
      j["what"] = describe(t);
      j["dominates_w8a8"] = std::find(r.dominating_w8a8.begin(), r.dominating_w8a8.end(), k) != r.dominating_w8a8.end();
      fj.push_back(std::move(j));
      // The configs that reproduce it.
      const std::string dir = fmt::format("{}/front/{}", o_.out_dir, k);
      std::filesystem::create_directories(dir);
      const search::Candidate c = candidate_of(t);
      write_configs(dir, c);
      write_file_atomic(dir + "/trial.json", j.dump(2) + "\n");
    }
    write_file_atomic(o_.out_dir + "/trials.csv", all);
    write_file_atomic(o_.out_dir + "/front.csv", fr);
    write_file_atomic(o_.out_dir + "/front.json", fj.dump(2) + "\n");
    write_file_atomic(o_.out_dir + "/space.yaml", space_.text);

    // The chart: accuracy against latency, circle area by energy.
    plot::XYChart ch;
    ch.title = fmt::format("{}: {} trials ({}, {} cost); circle area: energy", m_.name(), trials_.size(), o_.algorithm,
                           o_.cost);
    ch.x_label = "latency ms (" + std::to_string(o_.threads) + " thread" + (o_.threads == 1 ? "" : "s") + ")";
    ch.y_label = acc_label;
    ch.lines = false;
    ch.pareto = false;
    double emax = 0;
    for (const Trial& t : trials_)
      if (auto e = energy(t)) emax = std::max(emax, *e);
    auto radius = [&](const Trial& t) {
      const auto e = energy(t);
      return e && emax > 0 ? 3.0 + 7.0 * std::sqrt(*e / emax) : 4.0;
    };
    plot::Series others{"trials", {}, {}, {}, {}}, fs{"front", {}, {}, {}, {}}, b32{"FP32", {}, {}, {}, {}},
        b8{"uniform W8A8 (base config)", {}, {}, {}, {}};
    std::set<size_t> on_front(r.front.begin(), r.front.end());
    for (const Trial& t : trials_) {
      if (!t.error.empty()) continue;
      plot::Series& s = t.index == fp32_ ? b32 : t.index == w8a8_ ? b8 : on_front.count(t.index) ? fs : others;
      s.x.push_back(lat(t));
      s.y.push_back(t.accuracy);
      s.radius.push_back(radius(t));
      s.tips.push_back(fmt::format("#{} {}{}", t.index, describe(t), t.feasible ? "" : " (infeasible: " + t.violates + ")"));
    }
    ch.series = {others, fs, b32, b8};
    r.svg = plot::xy(ch);
    write_file_atomic(o_.out_dir + "/front.svg", r.svg);

    // The table.
    std::string tb = fmt::format("{:>4}  {:>6}  {:>10}  {:>11}  {:>10}  {:>8}  {}\n", "rank", "trial", metric_,
                                 o_.cost == "predicted" ? "pred/again ms" : "ms/again", "energy mJ", "size MB", "what");
    auto row = [&](const std::string& rank, const Trial& t) {
      const std::string l = t.measured_latency_ms ? fmt::format("{:.3f}/{:.3f}", t.latency_ms, *t.measured_latency_ms)
                                                   : fmt::format("{:.3f}", t.latency_ms);
      const auto e = energy(t);
      tb += fmt::format("{:>4}  {:>6}  {:>10.3f}  {:>11}  {:>10}  {:>8.3f}  {}\n", rank, t.index, t.accuracy, l,
                        e ? fmt::format("{:.3f}", *e) : "-", t.size_mb, describe(t));
    };
    row("fp32", trials_[fp32_]);
    row("w8a8", trials_[w8a8_]);
    for (size_t k = 0; k < r.front.size(); ++k) row(std::to_string(k), trials_[r.front[k]]);
    r.table = tb;

    size_t resumed = 0, failed = 0, infeasible = 0;
    for (const Trial& t : trials_) {
      resumed += t.resumed;
      failed += !t.error.empty();
      infeasible += t.error.empty() && !t.feasible;
    }
    nlohmann::json front_keys = nlohmann::json::array();
    for (size_t i : r.front) front_keys.push_back(trials_[i].key);
    r.json = {{"model", m_.path().empty() ? m_.name() : m_.path()},
              {"space", space_.source},
              {"variables", dec_->to_json()},
              {"objectives", o_.objectives},
              {"constraints", space_.constraints.to_json()},
              {"algorithm", o_.algorithm},
              {"seed", o_.seed},
              {"cost", o_.cost},
              {"threads", o_.threads},
              {"metric", metric_},
              {"metric_description", acc_label},
              {"val", {{"data", val_how_}, {"samples", val_.size()}, {"labels", !labels_.empty()}}},
              {"calib", {{"data", o_.data.empty() ? "none" : o_.data.label()}, {"samples", o_.calib_samples}}},
              {"energy_source", trials_[fp32_].energy_source.empty() ? nlohmann::json(nullptr)
                                                                     : nlohmann::json(trials_[fp32_].energy_source)},
              {"trials", trials_.size()},
              {"resumed", resumed},
              {"failed", failed},
              {"infeasible", infeasible},
              {"search_s", r.search_s},
              {"remeasure_s", r.remeasure_s},
              {"fp32", trials_[fp32_].to_json()},
              {"w8a8", trials_[w8a8_].to_json()},
              {"front", fj},
              {"dominating_w8a8", r.dominating_w8a8},
              {"out_dir", o_.out_dir}};
    write_file_atomic(o_.out_dir + "/search.json", r.json.dump(2) + "\n");
  }

  void export_point(const SearchReport& r, size_t rank) {
    if (rank >= r.front.size())
      fail(fmt::format("search: --export {}: the front has {} points (0..{})", rank, r.front.size(),
                       r.front.empty() ? 0 : r.front.size() - 1));
    const Trial& t = trials_[r.front[rank]];
    const search::Candidate c = candidate_of(t);
    const std::string dir = fmt::format("{}/export/{}", o_.out_dir, rank);
    std::filesystem::create_directories(dir);
    const Model built = build(c);
    built.save(dir + "/model.onnx", !built.joule_op_nodes().empty());
    ProfileOptions po;
    po.threads = {o_.threads};
    po.algo.rules = c.algo_rules();
    po.energy = o_.cost == "predicted" ? "auto" : o_.energy;
    po.inputs = val_.front();
    po.out_dir = dir + "/profile";
    profile(Model::load(dir + "/model.onnx"), po, hooks_);
    nlohmann::json j = t.to_json();
    j["what"] = describe(t);
    j["metric"] = metric_;
    j["val"] = val_how_;
    write_file_atomic(dir + "/trial.json", j.dump(2) + "\n");
    write_configs(dir, c);
  }

  const Model& m_;
  const SearchOptions& o_;
  const Hooks& hooks_;
  search::SearchSpace space_;
  std::unique_ptr<search::Decisions> dec_;
  std::set<std::string> base_layers_;
  std::vector<runtime::TensorMap> val_;
  std::vector<int64_t> labels_;
  std::string val_how_, metric_, name_;
  std::vector<Tensor> reference_;
  std::unique_ptr<profile::energy::EnergyMeter> meter_;
  std::unique_ptr<predict::Predictor> predictor_;
  std::unique_ptr<experiment::ResultsStore> store_;
  std::vector<Trial> trials_;
  std::map<std::string, size_t> by_key_;
  size_t fp32_ = 0, w8a8_ = 0;
};

}  // namespace

nlohmann::json Trial::to_json() const {
  return {{"index", index},
          {"key", key},
          {"genome", genome},
          {"precision", precision},
          {"prune", prune},
          {"qat", qat},
          {"accuracy", accuracy},
          {"latency_ms", latency_ms},
          {"energy_mj", opt_num(energy_mj)},
          {"size_mb", size_mb},
          {"params", params},
          {"flops", flops},
          {"cost", cost},
          {"energy_source", energy_source},
          {"feasible", feasible},
          {"violates", violates},
          {"error", error},
          {"seconds", seconds},
          {"measured_latency_ms", opt_num(measured_latency_ms)},
          {"measured_energy_mj", opt_num(measured_energy_mj)}};
}

Trial Trial::from_json(const nlohmann::json& j) {
  Trial t;
  t.index = j.value("index", size_t{0});
  t.key = j.at("key").get<std::string>();
  t.genome = j.value("genome", std::vector<int>{});
  t.precision = j.value("precision", std::map<std::string, std::string>{});
  t.prune = j.value("prune", std::map<std::string, double>{});
  t.qat = j.value("qat", false);
  t.accuracy = j.value("accuracy", 0.0);
  t.latency_ms = j.value("latency_ms", 0.0);
  t.energy_mj = num_opt(j, "energy_mj");
  t.size_mb = j.value("size_mb", 0.0);
  t.params = j.value("params", 0.0);
  t.flops = j.value("flops", 0.0);
  t.cost = j.value("cost", "");
  t.energy_source = j.value("energy_source", "");
  t.feasible = j.value("feasible", true);
  t.violates = j.value("violates", "");
  t.error = j.value("error", "");
  t.seconds = j.value("seconds", 0.0);
  t.measured_latency_ms = num_opt(j, "measured_latency_ms");
  t.measured_energy_mj = num_opt(j, "measured_energy_mj");
  return t;
}

SearchReport search(const Model& m, const SearchOptions& o, const Hooks& hooks) {
  Searcher s(m, o, hooks);
  s.setup();
  return s.run();
}

}  // namespace joule::api
