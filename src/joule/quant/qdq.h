#pragma once
// From a resolved config to a quantized graph, in three steps (ncnn's ncnn2table then
// ncnn2int8, ORT's calibrate then quantize):
//   plan_quantization  which tensors get which format (one point per tensor and spec)
//   calibrate          clipping ranges of activations over sample inputs (FP32 model),
//                      weights from their values; scales and zero points from the ranges
//   insert_qdq         the simulation graph: QuantizeLinear/DequantizeLinear pairs for 8-bit
//                      integers (standard ONNX QDQ, weights stored as int8 + DequantizeLinear),
//                      joule FakeQuant nodes for every other format
// The FP32 engine running the result computes what the quantized model would.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "joule/quant/config.h"
#include "joule/runtime/session.h"

namespace joule::quant {

struct QuantPoint {
  std::string tensor;  // value quantized
  Role role = Role::Input;
  TensorSpec spec;
  bool constant = false;  // an initializer (weight, bias)
  // (node index, input index) of every use that reads the quantized value; for Role::Output the
  // producing node with input index -1 (every use of the output, graph outputs included).
  std::vector<std::pair<size_t, int>> uses;
  // Filled by calibrate():
  std::vector<float> lo, hi;  // clipping range (one, or per channel)
  QParams q;
  int64_t observed = 0;       // finite values seen during calibration (activations)
  bool calibrated = false;
};

struct QuantPlan {
  std::vector<NodeChoice> choices;
  std::vector<QuantPoint> points;
  // The points (and uses) that belong to nodes accepted by `keep_node`, and roles accepted by
  // `keep_role`: isolated and weight-only / activation-only variants of one calibrated plan.
  QuantPlan subset(const std::function<bool(size_t node)>& keep_node,
                   const std::function<bool(Role)>& keep_role) const;
};

QuantPlan plan_quantization(const ir::Graph& g, std::vector<NodeChoice> choices);

// Next calibration sample (graph inputs by name); false at the end.
using SampleFn = std::function<bool(runtime::TensorMap& inputs)>;

struct CalibrationOptions {
  int threads = 1;
  std::string cache_path;   // --calib-cache: ranges read from / written to this JSON file
  std::string data_label;   // what the samples were (part of the cache key)
  std::function<void(size_t done)> progress;
};

// Calibrates every point: weights from their values, activations by running `g` over the
// samples. With a cache file, ranges whose key (tensor, calibrator, data label) is there are
// read back instead of observed; the file is rewritten with the union. Returns the number of
// samples run (0 when everything came from the cache).
size_t calibrate(const ir::Graph& g, QuantPlan& plan, const SampleFn& next, const CalibrationOptions& o);

struct QdqOptions {
  // Every quantized tensor as a joule FakeQuant of its float value (weights stay float
  // initializers, biases stay float): the graph quantization-aware training trains.
  bool fake_quant = false;
  std::string qat_method;  // with fake_quant: FakeQuant's attribute `qat` (ste | lsq | pact) for its gradient
  std::vector<std::string>* scale_names = nullptr;  // filled: per plan point, its scale initializer ("" none)
};

// The simulation graph for a calibrated plan. Writes each node's resolved choice with its
// scales, zero points and ranges to meta["software"]["quant"].
ir::Graph insert_qdq(const ir::Graph& g, const QuantPlan& plan, const QdqOptions& o = {});

// The passes run before planning (BatchNorm folded into the weights it scales, constants
// folded) so that the weights quantized are the ones the engine multiplies by.
void prepare_for_quantization(ir::Graph& g);

// Bytes of the model's weights with the plan's formats (the bits of each quantized weight plus
// its scales and zero points; every other initializer at its own dtype).
double weight_bytes(const ir::Graph& g, const QuantPlan& plan);

// A printable per-node table of a plan (for --dry-run and reports).
std::string describe_plan(const ir::Graph& g, const QuantPlan& plan);
nlohmann::json plan_json(const ir::Graph& g, const QuantPlan& plan);

}  // namespace joule::quant
