#pragma once
// The accuracy-vs-cost table: for the FP32 model (and, asked, the same at --precision bf16) and
// each quantization config, accuracy on
// labelled data, latency (QDQ patterns on integer kernels with int8 "real"), energy per
// inference with its source (a named sensor, or the named estimator), and weight size.
#include <optional>
#include <string>
#include <vector>

#include "joule/api/precision.h"
#include "joule/api/quantize.h"
#include "joule/profile/profiler.h"

namespace joule::api {

struct CompareOptions {
  QuantOptions quant;                // calib (required), eval (optional); `config` unused
  std::vector<std::string> configs;  // the configs compared with FP32 (files or YAML text)
  std::string energy = "none";       // none | auto | rapl | perf | nvml | estimate
  std::string energy_profile;
  int runs = 20, warmup = 3;
  std::string out_dir;               // "" writes nothing; else compare.json and compare.csv
  bool bf16 = false;                 // add a "bf16" row: the FP32 model at --precision bf16
  double bf16_min_sqnr_db = 30;      // its ladder's threshold, checked on the timing sample
};

struct CompareRow {
  std::string name, config;
  std::optional<data::EvalResult> eval;
  profile::Stats latency_ms;
  std::optional<profile::EnergyResult> energy;
  double weight_bytes = 0;
  size_t integer_nodes = 0, fake_quant_nodes = 0;
  std::optional<PrecisionReport> precision;  // the bf16 row: layers on bf16 kernels, kept fp32
  std::optional<double> output_sqnr_db;      // the bf16 row: outputs against fp32 on the timing sample
  nlohmann::json to_json() const;
};

struct CompareReport {
  std::string model;
  std::vector<CompareRow> rows;  // fp32 first
  std::string data;              // the eval data, "" without
  nlohmann::json settings;       // threads, int8, calibration, runs
  nlohmann::json to_json() const;  // what `joule compare --format json` prints
  std::string csv() const;
};

CompareReport compare(const Model& m, const CompareOptions& o, const Hooks& hooks = {});

}  // namespace joule::api
