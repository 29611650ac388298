#pragma once
// From a Conv / FusedConv node at plan time to the ConvShape + Epilogue the algorithms solve,
// and the Kernel that runs a prepared ConvKernel on the node's tensors.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "joule/kernels/algorithm.h"
#include "joule/kernels/conv/conv_shape.h"

namespace joule::kernels {

struct AlgoSpec;

struct ConvProblem {
  ConvShape shape;
  Epilogue epilogue;
  const float* weight = nullptr;  // [M, C/group, KH, KW]; null with runtime_weights
  const float* bias = nullptr;    // [M] or null
  bool channels_last = false;     // x, residual and y are N,H,W,C (FusedConv `channels_last`)
  bool runtime_weights = false;   // weight (and bias) are inputs read at run time, not constants
  bool has_bias = false;
};

// The ConvShape of a Conv-like node from its N,C,H,W (or N,C,W) input shape `xs`, weight shape
// `ws` and output shape `ys`; "" or why the channels or the output do not fit.
std::string read_conv_shape(const ir::Node& n, const Shape& xs, const Shape& ws, const Shape& ys, ConvShape* s);

// Reads the node; "" and fills `p` when the node is a 2-D (or 1-D) FP32 convolution with
// static shapes and constant weights/bias (or, with `runtime_weights_ok`, weights and bias
// that are inputs), otherwise the reason it is not.
std::string read_conv_problem(const NodeView& v, ConvProblem* p, bool runtime_weights_ok = false);
// The same for algorithms that compute only N,C,H,W: a channels_last node is refused.
std::string read_nchw_conv_problem(const NodeView& v, ConvProblem* p);

// The conv algorithms that compute channels_last (N,H,W,C) nodes; every other one refuses them.
const std::vector<std::string>& channels_last_conv_algorithms();

// Would the float Conv/FusedConv `n` of `g` (N,C,H,W) run faster channels_last? True when the
// guess estimate of one of channels_last_conv_algorithms() on N,H,W,C tensors is below the
// lowest estimate of the algorithms that support the node as it is, with the Transposes
// around it (the channels_last pass's choice under guess and auto).
bool channels_last_estimated_faster(const ir::Graph& g, const ir::Node& n, int threads, const AlgoSpec& spec);

using ConvFactory = std::function<std::unique_ptr<ConvKernel>(const ConvProblem&, int threads)>;
// Prepares `factory`'s kernel for the node (read_conv_problem must have succeeded).
std::unique_ptr<Kernel> prepare_conv(const NodeView& v, const ConvFactory& factory);

}  // namespace joule::kernels
