// Runs the ONNX backend node test cases that Debian's libonnx-testdata installs. Every case
// whose ops joule supports must pass; cases joule reports as unsupported (op, dtype or
// attribute) are counted and listed by reason. JOULE_CONFORMANCE_FILTER=regex selects cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "joule/cuda/backend.h"
#include "joule/onnx/model_io.h"
#include "joule/ops/random_util.h"
#include "joule/passes/check_support.h"
#include "joule/runtime/session.h"
#include "joule/train/expand_gradient.h"

namespace fs = std::filesystem;
using namespace joule;

namespace {

// The suite's folder: JOULE_ONNX_TESTDATA (the folder holding node/, simple/, ...) or Debian's.
int g_gpu_nodes = 0, g_cases_on_gpu = 0;  // JOULE_CONFORMANCE_DEVICE: what ran on the GPU

std::string testdata_dir(const std::string& suite) {
  const char* e = std::getenv("JOULE_ONNX_TESTDATA");
  return std::string(e ? e : "/usr/share/libonnx-testdata/data") + "/" + suite;
}

// Compares like ONNX's backend tests: rtol 1e-3, atol 1e-7 for floats, exact otherwise;
// sequences and optionals item by item.
std::string compare(const Tensor& got, const Tensor& want) {
  if (got.kind() != want.kind() || got.items().size() != want.items().size())
    return "value " + got.describe() + " != expected " + want.describe();
  for (size_t i = 0; i < want.items().size(); ++i)
    if (std::string d = compare(got.items()[i], want.items()[i]); !d.empty()) return "item " + std::to_string(i) + ": " + d;
  if (!want.is_tensor()) return "";
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + dtype_name(got.dtype()) + " != expected " + dtype_name(want.dtype());
  if (got.shape() != want.shape()) return "shape " + shape_str(got.shape()) + " != expected " + shape_str(want.shape());
  if (want.dtype() == DType::String) {
    for (int64_t i = 0; i < want.numel(); ++i)
      if (got.data<std::string>()[i] != want.data<std::string>()[i])
        return "element " + std::to_string(i) + ": '" + got.data<std::string>()[i] + "' != expected '" + want.data<std::string>()[i] + "'";
    return "";
  }
  const bool fl = is_floating(want.dtype());
  for (int64_t i = 0; i < want.numel(); ++i) {
    double a = got.value_as_double(i), b = want.value_as_double(i);
    if (fl) {
      if (std::isnan(b) && std::isnan(a)) continue;
      if (std::isinf(b) && a == b) continue;
      double tol = 1e-7 + 1e-3 * std::fabs(b);
      if (want.dtype() == DType::Float16 || want.dtype() == DType::BFloat16) tol = 1e-3 + 1e-2 * std::fabs(b);
      if (!(std::fabs(a - b) <= tol))
        return "element " + std::to_string(i) + ": " + std::to_string(a) + " != expected " + std::to_string(b);
    } else if (a != b || got.value_as_int(i) != want.value_as_int(i)) {
      return "element " + std::to_string(i) + ": " + std::to_string(got.value_as_int(i)) +
             " != expected " + std::to_string(want.value_as_int(i));
    }
  }
  return "";
}

std::vector<std::string> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, std::string>> files;
  for (auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0 && n.size() > 3 && n.substr(n.size() - 3) == ".pb")
      files.push_back({std::stoi(n.substr(prefix.size())), e.path().string()});
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> r;
  for (auto& f : files) r.push_back(f.second);
  return r;
}

// ONNX 1.12's test data stores bfloat16 tensors as uint16 (the same bits); read them back as
// the type the model declares.
Tensor as_declared(Tensor t, DType declared) {
  if (t.is_tensor() && t.dtype() == DType::UInt16 && declared == DType::BFloat16) {
    Tensor r(DType::BFloat16, t.shape());
    std::memcpy(r.raw(), t.raw(), t.nbytes());
    return r;
  }
  return t;
}

// ---- Random cases ----
// Random ops (Bernoulli, RandomUniform[Like], RandomNormal[Like], Dropout in training mode) cannot
// reproduce the draws numpy made for the expected outputs. A case whose model has such a node
// (decided by the ops of the model, not the test name) is checked for properties instead, and
// ONLY such a case: every output has the expected dtype and shape; an output of Bernoulli (or of
// the Cast of a comparison, which ends Bernoulli's function body) is 0 or 1; one of RandomUniform
// in [low, high); one of RandomNormal finite; Dropout's output is, element by element, either 0
// or x / (1 - ratio) (x itself outside training mode), and its mask, when an output, is true
// exactly for the kept elements. Every other case keeps the exact comparison above.
bool is_random_node(const ir::Node& n) {
  return ops::is_random_op(n) && (n.op_type != "Dropout" || n.input_count() > 2);
}

bool has_random_node(const ir::Graph& g) {
  for (auto& n : g.nodes)
    if (is_random_node(*n)) return true;
  return false;
}

std::string check_dropout(const ir::Node& d, const Tensor& y, const Tensor* mask, const std::map<std::string, Tensor>& known) {
  auto value = [&](size_t i) -> const Tensor* {
    if (i >= d.inputs.size() || d.inputs[i].empty()) return nullptr;
    auto it = known.find(d.inputs[i]);
    return it == known.end() ? nullptr : &it->second;
  };
  const Tensor* x = value(0);
  if (!x || x->shape() != y.shape()) return "dropout check needs its input x as a graph input or initializer";
  const bool training = value(2) && value(2)->value_as_int(0) != 0;
  const double ratio = !training ? 0 : value(1) ? value(1)->value_as_double(0) : 0.5;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double xi = x->value_as_double(i), yi = y.value_as_double(i), kept = xi / (1 - ratio);
    const bool is_kept = std::fabs(yi - kept) <= 1e-6 + 1e-5 * std::fabs(kept);
    if (!is_kept && yi != 0) return "dropout element " + std::to_string(i) + ": " + std::to_string(yi) + " is neither 0 nor x/(1-ratio) = " + std::to_string(kept);
    if (mask && kept != 0 && (mask->value_as_int(i) != 0) != (yi != 0))  // x = 0: either is right
      return "dropout mask element " + std::to_string(i) + " disagrees with the output " + std::to_string(yi);
  }
  return "";
}

std::string check_random_outputs(const ir::Graph& g, const runtime::TensorMap& inputs,
                                 const runtime::TensorMap& outputs, const std::vector<Tensor>& expected) {
  std::map<std::string, Tensor> known(g.initializers.begin(), g.initializers.end());
  known.insert(inputs.begin(), inputs.end());
  const auto producers = g.producers();
  auto producer = [&](const std::string& v) -> const ir::Node* {
    auto it = producers.find(v);
    return it == producers.end() ? nullptr : g.nodes[it->second].get();
  };
  for (size_t i = 0; i < expected.size() && i < g.outputs.size(); ++i) {
    const std::string& name = g.outputs[i];
    const Tensor& got = outputs.at(name);
    if (got.dtype() != expected[i].dtype() || got.shape() != expected[i].shape())
      return "output '" + name + "': " + got.describe() + " != expected " + expected[i].describe();
    const ir::Node* p = producer(name);
    if (!p) continue;
    static const std::set<std::string> kCompare = {"Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Equal"};
    const ir::Node* src = p->op_type == "Cast" && !p->inputs.empty() ? producer(p->inputs[0]) : nullptr;
    std::string why;
    for (int64_t k = 0; k < got.numel() && why.empty(); ++k) {
      const double v = got.value_as_double(k);
      if ((p->op_type == "Bernoulli" || (src && kCompare.count(src->op_type))) && v != 0 && v != 1)
        why = std::to_string(v) + " is not 0 or 1";
      if (p->op_type.rfind("RandomUniform", 0) == 0 &&
          !(v >= p->attr_float("low", 0.f) && v < p->attr_float("high", 1.f)))
        why = std::to_string(v) + " is outside [low, high)";
      if (p->op_type.rfind("RandomNormal", 0) == 0 && !std::isfinite(v)) why = std::to_string(v) + " is not finite";
    }
    if (p->op_type == "Dropout" && name == p->outputs[0]) {
      const bool has_mask = p->outputs.size() > 1 && outputs.count(p->outputs[1]);
      why = check_dropout(*p, got, has_mask ? &outputs.at(p->outputs[1]) : nullptr, known);
    }
    if (!why.empty()) return "output '" + name + "' (random property): " + why;
  }
  return "";
}

// Returns "" on pass; "skip: reason" when unsupported; otherwise the failure.
std::string run_case(const fs::path& dir) {
  ir::Graph g;
  try {
    g = onnx::load_model((dir / "model.onnx").string());
    passes::require_supported(g, "model");
    train::expand_gradient_nodes(g);  // as api::Model does on load
  } catch (const Error& e) {
    if (e.kind() == Error::Kind::Unsupported) return std::string("skip: ") + e.what();
    return std::string("load: ") + e.what();
  }
  for (auto& set : fs::directory_iterator(dir)) {
    if (!set.is_directory() || set.path().filename().string().rfind("test_data_set", 0) != 0) continue;
    runtime::TensorMap inputs;
    std::vector<Tensor> expected;
    runtime::SessionOptions opt;
    opt.threads = 1;
    // JOULE_CONFORMANCE_DEVICE=cuda: the same cases with every node a GPU kernel supports on the GPU.
    if (const char* d = std::getenv("JOULE_CONFORMANCE_DEVICE")) opt.device = cuda::parse_device(d);
    try {
      auto in_files = sorted_files(set.path(), "input_");
      auto out_files = sorted_files(set.path(), "output_");
      if (in_files.size() > g.inputs.size()) return "more input files than graph inputs";
      for (size_t i = 0; i < in_files.size(); ++i) {
        const std::string& name = g.inputs[i];
        const ir::TensorType& declared = *g.type_of(name);
        inputs[name] = as_declared(onnx::load_value_pb(in_files[i], declared), declared.dtype);
        // Run at the data's shapes (a few ONNX 1.12 cases declare other shapes than their data).
        if (declared.is_tensor()) opt.input_shapes[name] = inputs[name].shape();
      }
      for (size_t i = 0; i < out_files.size(); ++i) {
        const ir::TensorType* t = i < g.outputs.size() ? g.type_of(g.outputs[i]) : nullptr;
        expected.push_back(as_declared(onnx::load_value_pb(out_files[i], t ? *t : ir::TensorType{}), t ? t->dtype : DType::Undefined));
      }
    } catch (const Error& e) {
      if (e.kind() == Error::Kind::Unsupported) return std::string("skip: ") + e.what();
      return std::string("data: ") + e.what();
    }
    runtime::TensorMap outputs;
    try {
      runtime::Session session(g, opt);
      outputs = session.run(inputs);
      g_gpu_nodes += session.gpu_nodes();
      g_cases_on_gpu += session.gpu_nodes() > 0;
    } catch (const Error& e) {
      if (e.kind() == Error::Kind::Unsupported) return std::string("skip: ") + e.what();
      return std::string("run: ") + e.what();
    } catch (const std::exception& e) {
      return std::string("run (std::exception): ") + e.what();
    }
    if (has_random_node(g)) {
      std::string diff = check_random_outputs(g, inputs, outputs, expected);
      if (!diff.empty()) return set.path().filename().string() + " " + diff;
      continue;
    }
    for (size_t i = 0; i < expected.size() && i < g.outputs.size(); ++i) {
      std::string diff = compare(outputs[g.outputs[i]], expected[i]);
      if (!diff.empty()) return set.path().filename().string() + " output '" + g.outputs[i] + "': " + diff;
    }
  }
  return "";
}

// Groups skip reasons: "Foo: no such op in joule", "sequence values are not supported", ...
std::string reason_key(const std::string& reason) {
  static const std::regex node_re(R"(node '[^']*' \(([^()]+)\): ([^;]*))");
  static const std::regex value_re(R"((input|output) '[^']*': ([^;]*))");
  std::smatch m;
  if (std::regex_search(reason, m, node_re)) return m[1].str() + ": " + m[2].str();
  if (std::regex_search(reason, m, value_re)) return m[2].str();
  return reason;
}

// Cases whose stored expected outputs contradict their own model (checked by hand against the
// generator in onnx/backend/test/case/node of ONNX 1.12). They still run; a mismatch is reported
// under this reason instead of failing the suite.
const std::map<std::string, std::string> kWrongExpectedData = {
    {"test_adam_multiple",
     "expected outputs computed with epsilon 1e-2, but the model's Adam node has no epsilon "
     "attribute (spec default 1e-6)"},
};

// Runs every case of one suite: every case that runs must pass; the unsupported are counted.
void run_suite(const std::string& suite) {
  fs::path root = testdata_dir(suite);
  if (!fs::is_directory(root)) GTEST_SKIP() << "ONNX test data not installed at " << root;
  const char* flt = std::getenv("JOULE_CONFORMANCE_FILTER");
  std::regex filter(flt ? flt : ".*");
  std::vector<fs::path> cases;
  for (auto& e : fs::directory_iterator(root))
    if (e.is_directory() && std::regex_search(e.path().filename().string(), filter)) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());

  int run = 0, passed = 0, skipped = 0, wrong_data = 0;
  g_gpu_nodes = g_cases_on_gpu = 0;
  std::map<std::string, int> skip_reasons;
  std::vector<std::string> failures;
  const bool verbose = std::getenv("JOULE_CONFORMANCE_VERBOSE") != nullptr;
  for (auto& c : cases) {
    std::string r = run_case(c);
    std::string name = c.filename().string();
    if (r.rfind("skip: ", 0) == 0) {
      ++skipped;
      std::string reason = r.substr(6);
      if (verbose) std::printf("SKIP %s: %s\n", name.c_str(), reason.c_str());
      skip_reasons[reason_key(reason)]++;
      continue;
    }
    if (!r.empty() && kWrongExpectedData.count(name)) {
      ++wrong_data;
      std::printf("WRONG DATA %s: %s (%s)\n", name.c_str(), kWrongExpectedData.at(name).c_str(), r.c_str());
      continue;
    }
    ++run;
    if (r.empty()) ++passed;
    else failures.push_back(name + ": " + r);
  }
  std::printf("ONNX %s conformance: %zu cases, %d run, %d passed, %d failed, %d skipped as unsupported, "
              "%d with wrong expected data\n",
              suite.c_str(), cases.size(), run, passed, run - passed, skipped, wrong_data);
  if (std::getenv("JOULE_CONFORMANCE_DEVICE"))
    std::printf("  on %s: %d data sets ran GPU nodes (%d GPU nodes in all)\n", std::getenv("JOULE_CONFORMANCE_DEVICE"),
                g_cases_on_gpu, g_gpu_nodes);
  if (verbose || std::getenv("JOULE_CONFORMANCE_REASONS"))
    for (auto& [why, n] : skip_reasons) std::printf("  skipped %4d: %s\n", n, why.c_str());
  for (auto& f : failures) ADD_FAILURE() << f;
  EXPECT_EQ(passed, run);
}

}  // namespace

// ONNX's operator cases, the PyTorch-converted models and operators, and the `simple` models.
TEST(Conformance, NodeSuite) { run_suite("node"); }
TEST(Conformance, PyTorchConvertedSuite) { run_suite("pytorch-converted"); }
TEST(Conformance, PyTorchOperatorSuite) { run_suite("pytorch-operator"); }
TEST(Conformance, SimpleSuite) { run_suite("simple"); }
