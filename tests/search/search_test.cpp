// Search: the Pareto front, the space's parsing and its meaning on a model, the optimizers'
// budget and determinism, and the whole workflow on the bundled model: a front point's YAML
// reproduces its accuracy through joule quantize, and a search started again resumes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "graph_builder.h"
#include "joule/api/evaluate.h"
#include "joule/api/prune.h"
#include "joule/api/quantize.h"
#include "joule/api/search.h"
#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/core/npy.h"
#include "joule/passes/infer_shapes.h"
#include "joule/prune/prune.h"
#include "joule/quant/config.h"
#include "joule/search/optimizer.h"
#include "joule/search/space.h"
#include "test_tensors.h"

using namespace joule;
namespace fs = std::filesystem;
using Ints = std::vector<int64_t>;

namespace {
const std::string kModels = std::string(JOULE_SOURCE_DIR) + "/models";
const std::string kFashion = "/usr/share/datasets/fashion-mnist";

fs::path scratch(const std::string& tag) {
  auto p = fs::temp_directory_path() / ("joule_search_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::BadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}
}  // namespace

TEST(SearchPareto, NonDominatedRows) {
  const std::vector<std::vector<double>> rows = {
      {1, 5}, {2, 4}, {2, 4}, {3, 3}, {3, 4}, {5, 1}, {6, 6}, {NAN, 0}, {0.5, 10}};
  const std::vector<size_t> f = search::nondominated(rows);
  // {3,4} is dominated by {2,4} and {3,3}; {6,6} by everything; NaN rows never count.
  EXPECT_EQ(f, (std::vector<size_t>{0, 1, 2, 3, 5, 8}));
  EXPECT_TRUE(search::nondominated({}).empty());
}

TEST(SearchSpace, ParsesAndRefusesWithTheLine) {
  const search::SearchSpace s = search::SearchSpace::parse(
      "precision: [fp32, int8, w4]\nformats:\n  w4: {weight: {format: int, bits: 4}}\nprune: [0, 0.5]\n"
      "constraints: {latency_ms: 3, accuracy_drop: 0.5}\n",
      "s.yaml");
  EXPECT_EQ(s.precision.size(), 3u);
  EXPECT_EQ(s.prune, (std::vector<double>{0, 0.5}));
  EXPECT_EQ(*s.constraints.latency_ms, 3);
  EXPECT_NE(s.quant.find("percentile"), std::string::npos);  // the built-in W8A8
  EXPECT_NE(error_of([] { search::SearchSpace::parse("precision: [fp32]\nbogus: 1\n", "s.yaml"); }).find("s.yaml: line 2: bogus"),
            std::string::npos);
  EXPECT_NE(error_of([] { search::SearchSpace::parse("precision: [fp32, int3]\n", "s.yaml"); }).find("int3"),
            std::string::npos);
  EXPECT_NE(error_of([] { search::SearchSpace::parse("prune: [0, 1.5]\n", "s.yaml"); }).find("1.5"), std::string::npos);
  EXPECT_NE(error_of([] { search::SearchSpace::parse("precision: [int8, int8]\n", "s.yaml"); }).find("twice"),
            std::string::npos);
  EXPECT_NE(error_of([] { search::SearchSpace::parse("constraints: {speed: 1}\n", "s.yaml"); }).find("speed"),
            std::string::npos);
  EXPECT_NE(error_of([] { search::SearchSpace::parse("formats: {w4: {wieght: {bits: 4}}}\nprecision: [w4]\n", "s.yaml"); })
                .find("wieght"),
            std::string::npos);
}

TEST(SearchSpace, ChannelGroupsTieResidualConvs) {
  // conv_a and conv_b meet in an Add (one group of two); conv_c reads it and feeds the output.
  ir::Graph g = joule::testing::GraphBuilder()
                    .input("x", DType::Float32, {1, 3, 6, 6})
                    .init("wa", joule::testing::random_tensor({4, 3, 1, 1}, 1))
                    .init("wb", joule::testing::random_tensor({4, 3, 1, 1}, 2))
                    .init("wc", joule::testing::random_tensor({5, 4, 1, 1}, 3))
                    .init("wd", joule::testing::random_tensor({2, 5, 1, 1}, 4))
                    .node("Conv", {"x", "wa"}, {"a"}, {}, "conv_a")
                    .node("Conv", {"x", "wb"}, {"b"}, {}, "conv_b")
                    .node("Add", {"a", "b"}, {"s"}, {}, "add")
                    .node("Conv", {"s", "wc"}, {"c"}, {}, "conv_c")
                    .node("Conv", {"c", "wd"}, {"y"}, {}, "conv_d")
                    .output("y")
                    .build();
  passes::infer_shapes(g);
  const auto groups = prune::channel_groups(g);
  ASSERT_EQ(groups.size(), 2u);  // conv_d makes the graph output: not prunable
  EXPECT_EQ(groups[0].producers, (std::vector<std::string>{"conv_a", "conv_b"}));
  EXPECT_EQ(groups[0].channels, 4);
  EXPECT_EQ(groups[1].producers, (std::vector<std::string>{"conv_c"}));
}

TEST(SearchSpace, CandidatesOnTheBundledModel) {
  const api::Model m = api::Model::load("default");
  const search::SearchSpace s = search::SearchSpace::parse(
      "precision: [fp32, bf16, int8, w4]\nformats:\n  w4: {weight: {format: int, bits: 4, symmetric: true}}\n"
      "prune: [0, 0.25]\n",
      "s.yaml");
  api::QuantOptions qo;
  const api::QuantModel q = api::plan_model(m, qo, s.quant);
  const search::Decisions d(s, m.graph(), q.graph, q.plan.choices);
  size_t precision = 0, pruning = 0;
  for (const auto& v : d.variables()) (v.kind == search::Variable::Precision ? precision : pruning)++;
  EXPECT_EQ(precision, q.plan.choices.size());
  EXPECT_GE(pruning, 1u);
  // All fp32, nothing pruned: no quantization config at all.
  const auto g32 = d.uniform("fp32");
  ASSERT_TRUE(g32);
  const search::Candidate c32 = d.candidate(*g32);
  EXPECT_FALSE(c32.quantized());
  EXPECT_FALSE(c32.pruned());
  // All int8: the base config as it is (every layer it selects is quantized).
  const search::Candidate c8 = d.candidate(*d.uniform("int8"));
  const auto resolved = quant::resolve(q.graph, quant::QuantConfig::parse(c8.quant_yaml, "c8"));
  EXPECT_EQ(resolved.size(), q.plan.choices.size());
  // Mixed: layer 0 bf16 (float, on the bf16 kernel), layer 1 w4, the first group pruned.
  std::vector<int> x = *g32;
  x[0] = 1;
  x[1] = 3;
  const size_t first_prune = precision;
  x[first_prune] = 1;
  const search::Candidate c = d.candidate(x);
  const std::string l0 = d.variables()[0].name, l1 = d.variables()[1].name;
  EXPECT_EQ(c.bf16_nodes, std::vector<std::string>{l0});
  EXPECT_EQ(c.algo_rules(), std::vector<std::string>{l0 + "=onednn_bf16"});
  EXPECT_EQ(c.precision.at(l1), "w4");
  EXPECT_EQ(d.weight_bits(l1, "w4"), 4);
  EXPECT_EQ(d.weight_bits(l1, "int8"), 8);
  const auto mixed = quant::resolve(q.graph, quant::QuantConfig::parse(c.quant_yaml, "mixed"));
  ASSERT_EQ(mixed.size(), 1u);  // only the w4 layer is quantized
  EXPECT_EQ(q.graph.nodes[mixed[0].node]->name, l1);
  for (const auto& n : d.variables()[first_prune].nodes) EXPECT_EQ(c.prune.ratio_of(n), 0.25);
  EXPECT_TRUE(c.pruned());
  // The pruning YAML reproduces the same ratios.
  const prune::PruneOptions back = prune::PruneConfig::parse(c.prune_yaml(), "p").resolve(m.graph());
  for (const auto& n : d.variables()[first_prune].nodes) EXPECT_EQ(back.ratio_of(n), 0.25);
  EXPECT_EQ(d.key(x).size(), d.variables().size() + 1);  // one character per variable and the '|'
  x[0] = 9;
  EXPECT_THROW(d.candidate(x), Error);
  // prune_layers keeps the groups whose first conv it matches, and refuses a match of none.
  const std::string first_group = d.variables()[first_prune].name;
  const search::SearchSpace only = search::SearchSpace::parse(
      "precision: [int8]\nprune: [0, 0.25]\nprune_layers: {name: \"" + first_group + "\"}\n", "only.yaml");
  const search::Decisions d1(only, m.graph(), q.graph, q.plan.choices);
  ASSERT_EQ(d1.variables().size(), 1u);
  EXPECT_EQ(d1.variables()[0].name, first_group);
  const search::SearchSpace none =
      search::SearchSpace::parse("precision: [int8]\nprune: [0, 0.25]\nprune_layers: {regex: nothing_is_named_so}\n", "none.yaml");
  EXPECT_THROW(search::Decisions(none, m.graph(), q.graph, q.plan.choices), Error);
}

TEST(SearchOptimizer, RespectsTheBudgetAndIsSeeded) {
  // Two objectives in conflict: the sum of the genes and the sum of their complements.
  const std::vector<size_t> choices(6, 4);
  for (const std::string algo : {"random", "nsga2", "moead"}) {
    auto run = [&] {
      std::set<std::vector<int>> seen;
      std::vector<std::vector<int>> order;
      search::OptimizerOptions o;
      o.algorithm = algo;
      o.trials = 40;
      o.seed = 7;
      o.seeds = {std::vector<int>(6, 0)};
      o.evaluated = [&] { return seen.size(); };
      search::optimize(
          choices, 2,
          [&](const std::vector<int>& x) {
            if (!seen.count(x)) {
              if (seen.size() >= o.trials) throw search::Budget{};
              seen.insert(x);
              order.push_back(x);
            }
            double a = 0, b = 0;
            for (int v : x) {
              a += v;
              b += 3 - v;
            }
            return std::vector<double>{a, b * b};
          },
          o);
      return order;
    };
    const auto first = run();
    EXPECT_EQ(first.size(), 40u) << algo;
    EXPECT_EQ(first.front(), std::vector<int>(6, 0)) << algo;  // the seed genome comes first
    EXPECT_EQ(run(), first) << algo << ": the same seed gives the same trials";
    for (const auto& g : first)
      for (size_t i = 0; i < g.size(); ++i) EXPECT_TRUE(g[i] >= 0 && g[i] < 4) << algo;
  }
  search::OptimizerOptions tpe;
  tpe.algorithm = "tpe";
  EXPECT_THROW(search::optimize(choices, 1, [](const std::vector<int>&) { return std::vector<double>{0}; }, tpe), Error);
}

TEST(Search, BundledModelFrontReproducesAndResumes) {
  const fs::path dir = scratch("bundled");
  const api::Model m = api::Model::load("default");
  api::SearchOptions o;
  o.space = "precision: [fp32, int8]\nprune: [0, 0.25]\n";
  o.data = api::DataSource::from_spec(kFashion + ":train");
  o.calib_samples = 16;
  o.val = api::DataSource::from_spec(kFashion + ":test");
  o.val_samples = 200;
  o.trials = 10;
  o.runs = 3;
  o.min_time_s = 0.01;
  o.warmup = 1;
  o.algorithm = "random";
  o.objectives = {"accuracy", "latency", "size"};
  o.out_dir = (dir / "out").string();
  o.store = (dir / "store.sqlite").string();
  const api::SearchReport r = api::search(m, o);
  ASSERT_EQ(r.trials.size(), 10u);
  EXPECT_EQ(r.metric, "top1");
  EXPECT_FALSE(r.front.empty());
  // FP32 is the first trial, and its accuracy is joule eval's on the same samples.
  api::EvalOptions eo;
  eo.data = o.val;
  eo.limit = 200;
  const api::EvalReport fp32 = api::evaluate(m, eo);
  EXPECT_DOUBLE_EQ(r.fp32.accuracy, 100.0 * fp32.result.top1_rate());
  EXPECT_EQ(r.fp32.index, 0u);
  EXPECT_EQ(r.w8a8.index, 1u);
  EXPECT_LT(r.w8a8.size_mb, r.fp32.size_mb / 3);  // int8 weights
  // An estimated energy counts each trial's FLOPs and bytes beside the static power (default-cpu:
  // 10 W): unpruned trials' graphs carried no cost metadata once, and got the static part only.
  for (const auto* t : {&r.fp32, &r.w8a8})
    if (t->energy_source == "estimate:default-cpu") {
      ASSERT_TRUE(t->energy_mj.has_value());
      // (the dynamic part follows the FLOPs and bytes, about 0.1 mJ here, whatever the speed)
      EXPECT_GT(*t->energy_mj - 10.0 * t->latency_ms, 0.01) << t->index;
    }
  // Every trial feasible (no constraints), and the front's points are measured again.
  for (size_t i : r.front) EXPECT_TRUE(r.trials[i].measured_latency_ms.has_value());
  // Each front point's YAML, through joule prune and joule quantize, gives the trial's accuracy.
  eo.prepare.int8 = "real";
  for (size_t k = 0; k < r.front.size(); ++k) {
    const fs::path d = dir / "out/front" / std::to_string(k);
    api::Model p = m;
    if (fs::exists(d / "prune.yaml"))
      p = api::prune(m, prune::PruneConfig::load((d / "prune.yaml").string()).resolve(m.graph())).model;
    if (fs::exists(d / "quant.yaml")) {
      api::QuantOptions qo;
      qo.config = (d / "quant.yaml").string();
      qo.calib = o.data;
      qo.calib_samples = 16;
      p = api::quantize(p, qo).model;
    }
    EXPECT_DOUBLE_EQ(100.0 * api::evaluate(p, eo).result.top1_rate(), r.trials[r.front[k]].accuracy) << "front " << k;
  }
  for (const char* f : {"trials.csv", "trials.jsonl", "front.csv", "front.json", "front.svg", "search.json"})
    EXPECT_TRUE(fs::exists(dir / "out" / f)) << f;
  EXPECT_NE(read_file((dir / "out/front.svg").string()).find("uniform W8A8"), std::string::npos);
  // Again with the same options: everything resumed, nothing run.
  const api::SearchReport again = api::search(m, o);
  EXPECT_EQ(again.trials.size(), 10u);
  EXPECT_EQ(again.json["resumed"].get<size_t>(), 10u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(again.trials[i].accuracy, r.trials[i].accuracy);
  // A larger budget runs only the new trials.
  o.trials = 12;
  EXPECT_EQ(api::search(m, o).trials.size(), 12u);
  // Other options in the same directory: refused.
  o.val_samples = 100;
  EXPECT_NE(error_of([&] { api::search(m, o); }).find("another search"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Search, WithoutLabelsTheAccuracyIsTheOutputSqnrAndConstraintsHold) {
  const fs::path dir = scratch("sqnr");
  const api::Model m = api::Model::load("default");
  api::SearchOptions o;
  o.space = "precision: [fp32, int8]\nconstraints: {min_accuracy: 25}\n";
  o.data = api::DataSource::from_spec(kModels + "/fashion_cnn_sample.npy");
  o.calib_samples = 16;
  o.val = api::DataSource::from_arrays(load_npy(kModels + "/fashion_cnn_sample.npy"));
  o.trials = 6;
  o.runs = 2;
  o.min_time_s = 0.01;
  o.warmup = 0;
  o.algorithm = "nsga2";
  o.out_dir = (dir / "out").string();
  const api::SearchReport r = api::search(m, o);
  EXPECT_EQ(r.metric, "sqnr_db");
  EXPECT_EQ(r.fp32.accuracy, 200);  // FP32 against itself: exact (the cap)
  EXPECT_GT(r.w8a8.accuracy, 10);
  EXPECT_LT(r.w8a8.accuracy, 60);
  for (const auto& t : r.trials) EXPECT_EQ(t.feasible, t.accuracy >= 25) << t.key;
  for (size_t i : r.front) EXPECT_TRUE(r.trials[i].feasible);
  // accuracy_drop is in top-1 points: without labels it is refused.
  o.space = "precision: [fp32, int8]\nconstraints: {accuracy_drop: 1}\n";
  o.out_dir = (dir / "out2").string();
  EXPECT_NE(error_of([&] { api::search(m, o); }).find("labelled"), std::string::npos);
  fs::remove_all(dir);
}

// QAT as a choice: a variable "qat" (off | on) after the others; on means something only for a
// quantized trial (an all-FP32 genome with qat on is the same model, the same key); the QAT
// trial is trained (its accuracy is not the calibrated W8A8's) and reads back from trials.jsonl.
TEST(Search, QatIsAChoiceOfQuantizedTrials) {
  const api::Model m = api::Model::load("default");
  const search::SearchSpace s =
      search::SearchSpace::parse("precision: [fp32, int8]\nqat: {steps: 2, batch: 8, lr: 0.001, method: ste}\n", "s.yaml");
  EXPECT_EQ(s.qat_method, "ste");
  {
    api::QuantOptions qo;
    const api::QuantModel q = api::plan_model(m, qo, s.quant);
    const search::Decisions d(s, m.graph(), q.graph, q.plan.choices);
    ASSERT_EQ(d.variables().back().kind, search::Variable::Qat);
    EXPECT_EQ(d.label(d.variables().size() - 1, 1), "on");
    std::vector<int> x32 = *d.uniform("fp32"), x8 = *d.uniform("int8");
    EXPECT_EQ(x32.back(), 0);
    x32.back() = 1;
    EXPECT_FALSE(d.candidate(x32).qat);
    EXPECT_EQ(d.key(x32), d.key(*d.uniform("fp32")));  // nothing to train: the same trial
    std::vector<int> x8q = x8;
    x8q.back() = 1;
    EXPECT_TRUE(d.candidate(x8q).qat);
    EXPECT_NE(d.key(x8q), d.key(x8));
    EXPECT_EQ(d.key(x8q).back(), '1');
  }
  const fs::path dir = scratch("qat");
  api::SearchOptions o;
  o.data = api::DataSource::from_spec(kModels + "/fashion_cnn_sample.npy");
  o.calib_samples = 16;
  // Unlabelled: the accuracy is the output SQNR against FP32, which any training moves (a top-1
  // on a few samples might not).
  o.val = api::DataSource::from_arrays(load_npy(kModels + "/fashion_cnn_sample.npy"));
  o.trials = 3;  // FP32, W8A8 (the base config), W8A8 with QAT
  o.runs = 1;
  o.min_time_s = 0;
  o.warmup = 0;
  o.algorithm = "random";
  o.space = "precision: [int8]\nqat: {steps: 3, batch: 8, lr: 0.001}\n";
  o.out_dir = dir.string();
  EXPECT_NE(error_of([&] { api::search(m, o); }).find("--train-data"), std::string::npos);
  o.train = api::DataSource::from_spec(kModels + "/fashion_cnn_sample.npy");
  const api::SearchReport r = api::search(m, o);
  ASSERT_EQ(r.trials.size(), 3u);
  const api::Trial* q = nullptr;
  for (const auto& t : r.trials)
    if (t.qat) q = &t;
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->key, "1");
  EXPECT_TRUE(q->error.empty()) << q->error;
  EXPECT_FALSE(r.w8a8.qat);
  EXPECT_NE(q->accuracy, r.w8a8.accuracy);  // trained, not only calibrated
  for (size_t k = 0; k < r.front.size(); ++k)  // a QAT point says how to train it again
    EXPECT_EQ(fs::exists(dir / "front" / std::to_string(k) / "qat.txt"), r.trials[r.front[k]].qat) << k;
  const api::SearchReport again = api::search(m, o);  // resumed: nothing runs again
  for (const auto& t : again.trials) EXPECT_TRUE(t.resumed);
  bool qat_back = false;
  for (const auto& t : again.trials) qat_back = qat_back || (t.qat && t.key == "1");
  EXPECT_TRUE(qat_back);
  EXPECT_NE(error_of([] { search::SearchSpace::parse("qat: {steps: 0}\n", "s.yaml"); }).find("steps"), std::string::npos);
  EXPECT_NE(error_of([] { search::SearchSpace::parse("qat: {steps: 5, method: foo}\n", "s.yaml"); }).find("ste, lsq"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(Search, PrunedTrialsAreFineTunedWhenTheSpaceSaysSo) {
  const fs::path dir = scratch("finetune");
  const api::Model m = api::Model::load("default");
  api::SearchOptions o;
  o.data = api::DataSource::from_spec(kModels + "/fashion_cnn_sample.npy");
  o.calib_samples = 16;
  o.val = api::DataSource::from_spec(kFashion + ":test");
  o.val_samples = 200;
  o.trials = 5;
  o.runs = 1;
  o.min_time_s = 0;
  o.warmup = 0;
  o.algorithm = "random";
  o.space = "precision: [int8]\nprune: [0, 0.5]\n";
  o.out_dir = (dir / "plain").string();
  const api::SearchReport plain = api::search(m, o);
  o.space += "finetune: {steps: 3, batch: 8, lr: 0.05}\n";
  o.out_dir = (dir / "tuned").string();
  EXPECT_NE(error_of([&] { api::search(m, o); }).find("--train-data"), std::string::npos);
  o.train = api::DataSource::from_spec(kModels + "/fashion_cnn_sample.npy");
  const api::SearchReport tuned = api::search(m, o);
  ASSERT_EQ(plain.trials.size(), tuned.trials.size());
  size_t pruned = 0, changed = 0;
  for (size_t i = 0; i < plain.trials.size(); ++i) {
    ASSERT_EQ(plain.trials[i].key, tuned.trials[i].key);  // the same seed draws the same trials
    if (plain.trials[i].prune.empty()) {
      EXPECT_EQ(plain.trials[i].accuracy, tuned.trials[i].accuracy) << plain.trials[i].key;
    } else {
      ++pruned;
      changed += plain.trials[i].accuracy != tuned.trials[i].accuracy;
    }
  }
  EXPECT_GT(pruned, 0u);
  EXPECT_GT(changed, 0u);
  EXPECT_NE(error_of([] { search::SearchSpace::parse("prune: [0, 0.5]\nfinetune: {steps: -1}\n", "s.yaml"); }).find("steps"),
            std::string::npos);
  EXPECT_NE(error_of([] { search::SearchSpace::parse("prune: [0]\nfinetune: {optimiser: sgd}\n", "s.yaml"); }).find("optimiser"),
            std::string::npos);
  fs::remove_all(dir);
}
