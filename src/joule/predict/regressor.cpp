#include "joule/predict/regressor.h"

#include <xgboost/c_api.h>

#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "joule/core/error.h"

namespace joule::predict {
namespace {

// Throws joule::Error with XGBoost's last error on one line (its messages carry a
// "[hh:mm:ss] file:line: " prefix, the time dropped here, and some a stack trace after).
void xgb(int rc, const char* what) {
  if (rc == 0) return;
  std::string msg = XGBGetLastError();
  if (size_t st = msg.find("Stack trace"); st != std::string::npos) msg.resize(st);
  if (size_t ts = msg.find("] "); msg.starts_with('[') && ts < 12) msg.erase(0, ts + 2);
  for (char& c : msg)
    if (c == '\n' || c == '\r') c = ' ';
  while (!msg.empty() && msg.back() == ' ') msg.pop_back();
  fail(fmt::format("xgboost: {} failed: {}", what, msg));
}

// XGBoost's verbosity is per thread (its global config is a thread-local store): silence it
// once on each thread that calls in.
void quiet() {
  thread_local bool done = false;
  if (!done) xgb(XGBSetGlobalConfig(R"({"verbosity": 0})"), "XGBSetGlobalConfig");
  done = true;
}

void set(BoosterHandle b, const char* name, const std::string& value) {
  xgb(XGBoosterSetParam(b, name, value.c_str()), name);
}

std::vector<float> flatten(const std::vector<std::vector<float>>& X, size_t cols) {
  std::vector<float> flat;
  flat.reserve(X.size() * cols);
  for (const auto& row : X) flat.insert(flat.end(), row.begin(), row.end());
  return flat;
}

// A dense row-major DMatrix of X; NaN is "missing". Freed on scope exit.
struct Matrix {
  DMatrixHandle h = nullptr;
  Matrix(const std::vector<std::vector<float>>& X, size_t cols) {
    std::vector<float> flat = flatten(X, cols);
    const float missing = std::numeric_limits<float>::quiet_NaN();
    xgb(XGDMatrixCreateFromMat(flat.data(), X.size(), cols, missing, &h), "XGDMatrixCreateFromMat");
  }
  ~Matrix() { XGDMatrixFree(h); }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
};

void check_rows(const std::vector<std::vector<float>>& X, size_t cols, const char* what) {
  for (size_t i = 0; i < X.size(); ++i)
    if (X[i].size() != cols)
      fail(fmt::format("regressor {}: row {} has {} features, expected {}", what, i, X[i].size(), cols));
}

}  // namespace

Regressor::Regressor(void* booster) : booster_(booster) {}

Regressor::Regressor(Regressor&& o) noexcept
    : booster_(std::exchange(o.booster_, nullptr)), num_features_(std::exchange(o.num_features_, 0)) {}

Regressor& Regressor::operator=(Regressor&& o) noexcept {
  if (this != &o) {
    if (booster_) XGBoosterFree(booster_);
    booster_ = std::exchange(o.booster_, nullptr);
    num_features_ = std::exchange(o.num_features_, 0);
  }
  return *this;
}

Regressor::~Regressor() {
  if (booster_) XGBoosterFree(booster_);
}

Regressor Regressor::train(const std::vector<std::vector<float>>& X, const std::vector<float>& y,
                           const RegressorParams& p) {
  JOULE_CHECK(!X.empty(), "regressor train: no rows");
  JOULE_CHECK(!X[0].empty(), "regressor train: rows have no features");
  JOULE_CHECK(y.size() == X.size(),
              fmt::format("regressor train: {} targets for {} rows", y.size(), X.size()));
  check_rows(X, X[0].size(), "train");
  double sum = 0;
  for (float v : y) {
    JOULE_CHECK(std::isfinite(v), "regressor train: a target is not finite");
    sum += v;
  }
  JOULE_CHECK(p.rounds >= 1 && p.max_depth >= 1 && p.threads >= 0,
              "regressor train: rounds and max_depth must be >= 1, threads >= 0 (0: all cores)");
  quiet();
  Matrix m(X, X[0].size());
  xgb(XGDMatrixSetFloatInfo(m.h, "label", y.data(), y.size()), "XGDMatrixSetFloatInfo");
  BoosterHandle b = nullptr;
  xgb(XGBoosterCreate(&m.h, 1, &b), "XGBoosterCreate");
  Regressor r(b);  // frees b if a step below throws
  set(b, "objective", "reg:squarederror");
  // exact: splits at midpoints between the training values (no histogram binning), and the
  // same data, params and seed give the same trees.
  set(b, "tree_method", "exact");
  set(b, "base_score", fmt::format("{}", sum / y.size()));  // start from the mean, not 0.5
  set(b, "max_depth", std::to_string(p.max_depth));
  set(b, "eta", fmt::format("{}", p.eta));
  set(b, "subsample", fmt::format("{}", p.subsample));
  set(b, "min_child_weight", fmt::format("{}", p.min_child_weight));
  set(b, "lambda", fmt::format("{}", p.lambda));
  set(b, "nthread", std::to_string(p.threads));
  set(b, "seed", std::to_string(static_cast<int64_t>(p.seed)));  // XGBoost's seed is an int64
  for (int i = 0; i < p.rounds; ++i)
    xgb(XGBoosterUpdateOneIter(b, i, m.h), "XGBoosterUpdateOneIter");
  r.num_features_ = X[0].size();
  return r;
}

std::vector<float> Regressor::predict(const std::vector<std::vector<float>>& X) const {
  JOULE_CHECK(booster_, "regressor predict: moved-from regressor");
  check_rows(X, num_features_, "predict");
  if (X.empty()) return {};
  quiet();
  std::vector<float> flat = flatten(X, num_features_);
  // Inplace prediction: no DMatrix, and safe to call from several threads at once (prediction
  // through a DMatrix goes through the booster's prediction cache, an unlocked map in 1.7).
  std::string array = fmt::format(
      R"({{"data": [{}, true], "shape": [{}, {}], "typestr": "<f4", "version": 3}})",
      reinterpret_cast<uintptr_t>(flat.data()), X.size(), num_features_);
  const char* config = R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0,
                           "strict_shape": false, "missing": NaN, "cache_id": 0})";
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* out = nullptr;
  xgb(XGBoosterPredictFromDense(booster_, array.c_str(), config, nullptr, &shape, &dim, &out),
      "XGBoosterPredictFromDense");
  JOULE_CHECK(dim == 1 && shape[0] == X.size(), "regressor predict: unexpected prediction shape");
  return {out, out + X.size()};  // (a per-thread buffer of XGBoost's, valid until its next call)
}

float Regressor::predict(const std::vector<float>& row) const {
  return predict(std::vector<std::vector<float>>{row})[0];
}

std::string Regressor::to_bytes() const {
  JOULE_CHECK(booster_, "regressor to_bytes: moved-from regressor");
  quiet();
  bst_ulong len = 0;
  const char* data = nullptr;
  xgb(XGBoosterSaveModelToBuffer(booster_, R"({"format": "ubj"})", &len, &data),
      "XGBoosterSaveModelToBuffer");
  return {data, len};
}

Regressor Regressor::from_bytes(const std::string& bytes) {
  JOULE_CHECK(!bytes.empty(), "regressor from_bytes: no bytes");
  quiet();
  BoosterHandle b = nullptr;
  xgb(XGBoosterCreate(nullptr, 0, &b), "XGBoosterCreate");
  Regressor r(b);
  xgb(XGBoosterLoadModelFromBuffer(b, bytes.data(), bytes.size()), "XGBoosterLoadModelFromBuffer");
  // The model holds no training config: predict on one thread (XGBoost's default is all cores).
  set(b, "nthread", "1");
  bst_ulong n = 0;
  xgb(XGBoosterGetNumFeature(b, &n), "XGBoosterGetNumFeature");
  JOULE_CHECK(n >= 1, "regressor from_bytes: the model has no features");
  r.num_features_ = n;
  return r;
}

}  // namespace joule::predict
