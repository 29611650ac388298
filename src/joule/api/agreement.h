#pragma once
// Simulated against integer execution of one quantized (QDQ) model: both plans run on the same
// inputs and every tensor the two share is compared — quantized tensors code by code (how many
// elements differ, by how many quantization steps), float tensors by SQNR — in the integer
// plan's execution order, with the first tensor where the two part. This is the check that the
// simulation (what sensitivity, AutoMP, QAT and search decide on) computes what runs.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "joule/api/model.h"
#include "joule/runtime/session.h"

namespace joule::api {

struct TensorAgreement {
  std::string tensor;        // the simulated plan's name
  std::string node, op;      // the integer plan's producer
  std::string dtype;         // uint8 / int8 codes, or float32
  bool channels_last = false;  // the integer plan holds it N,H,W,C (compared transposed)
  int64_t elements = 0;
  // Codes: elements that differ at all, by more than one step, and the largest difference.
  int64_t differ = 0, beyond_one = 0, max_steps = 0;
  // Float tensors (and codes, on their values): SQNR of the integer plan's values against the
  // simulated ones, dB (infinity when equal).
  double sqnr_db = 0;
  bool codes() const { return dtype != "float32"; }
  double within_one() const { return elements ? 1.0 - static_cast<double>(beyond_one) / elements : 1.0; }
  nlohmann::json to_json() const;
};

struct AgreementReport {
  std::string model;
  int threads = 1;
  std::vector<TensorAgreement> tensors;  // integer plan's order; graph outputs included
  std::vector<TensorAgreement> outputs;  // the graph outputs
  size_t integer_nodes = 0;              // QConv / QMatMul steps of the integer plan on integer kernels
  std::string note;                      // why no integer kernel ran ("" when some did, or none exist)
  std::string first_difference;          // first quantized tensor with any code differing ("" none)
  std::string first_beyond_one;          // first with a code more than one step apart ("" none)
  double min_within_one = 1;             // over the quantized tensors
  double output_sqnr_db = 0;             // lowest over the graph outputs
  nlohmann::json to_json() const;
};

// Runs `m` (a QDQ model) with int8 "simulated" and "real" on `inputs` (empty: seeded random
// inputs) and compares them. BadInput when the model has no QuantizeLinear/DequantizeLinear.
AgreementReport simulation_agreement(const Model& m, const runtime::TensorMap& inputs, int threads = 1);

}  // namespace joule::api
