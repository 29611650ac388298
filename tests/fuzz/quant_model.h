#pragma once
// The bundled Fashion-MNIST CNN prepared for quantization, and one seeded calibration sample:
// what the quantization-config and calibration-cache targets quantize.
#include <random>

#include "joule/api/model.h"
#include "joule/quant/qdq.h"

namespace joule::fuzz {

inline const ir::Graph& quant_graph() {
  static const ir::Graph g = [] {
    ir::Graph x = api::Model::load("default").graph();
    quant::prepare_for_quantization(x);
    return x;
  }();
  return g;
}

inline quant::SampleFn one_sample() {
  return [done = false](runtime::TensorMap& inputs) mutable {
    if (done) return false;
    const ir::Graph& g = quant_graph();
    const ir::TensorType* t = g.type_of(g.inputs[0]);
    Tensor x(DType::Float32, t->static_shape());
    std::mt19937 rng(1);
    std::normal_distribution<float> nd;
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = nd(rng);
    inputs = {{g.inputs[0], x}};
    done = true;
    return true;
  };
}

}  // namespace joule::fuzz
