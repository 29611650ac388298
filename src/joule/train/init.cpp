#include "joule/train/init.h"

#include <cmath>
#include <random>
#include <set>

namespace joule::train {

namespace {

enum class Kind { KaimingNormal, GlorotUniform, Zero, One };

void fill(Tensor& t, Kind k, double fan_in, double fan_out, std::mt19937_64& rng) {
  float* p = t.data<float>();
  const int64_t n = t.numel();
  switch (k) {
    case Kind::KaimingNormal: {
      std::normal_distribution<double> d(0.0, std::sqrt(2.0 / std::max(1.0, fan_in)));
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(d(rng));
      break;
    }
    case Kind::GlorotUniform: {
      const double a = std::sqrt(6.0 / std::max(1.0, fan_in + fan_out));
      std::uniform_real_distribution<double> d(-a, a);
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(d(rng));
      break;
    }
    case Kind::Zero: std::fill(p, p + n, 0.f); break;
    case Kind::One: std::fill(p, p + n, 1.f); break;
  }
}

}  // namespace

size_t initialize_weights(ir::Graph& g, uint64_t seed) {
  std::set<std::string> done;
  size_t count = 0;
  // Graph order, so the same model always draws the same values for the same seed.
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 1);
  auto init = [&](const ir::Node& n, size_t i, Kind k, double fan_in = 0, double fan_out = 0) {
    if (i >= n.inputs.size() || n.inputs[i].empty() || done.count(n.inputs[i])) return;
    auto it = g.initializers.find(n.inputs[i]);
    if (it == g.initializers.end() || it->second.dtype() != DType::Float32) return;
    Tensor t(DType::Float32, it->second.shape());
    fill(t, k, fan_in, fan_out, rng);
    it->second = t;
    done.insert(n.inputs[i]);
    ++count;
  };
  for (size_t idx : g.topo_order()) {
    const ir::Node& n = *g.nodes[idx];
    auto shape_of = [&](size_t i) -> Shape {
      auto it = i < n.inputs.size() ? g.initializers.find(n.inputs[i]) : g.initializers.end();
      return it == g.initializers.end() ? Shape{} : it->second.shape();
    };
    if (!n.domain.empty()) continue;
    if (n.op_type == "Conv") {
      const Shape w = shape_of(1);
      if (w.size() < 3) continue;
      double receptive = 1;
      for (size_t d = 2; d < w.size(); ++d) receptive *= static_cast<double>(w[d]);
      init(n, 1, Kind::KaimingNormal, static_cast<double>(w[1]) * receptive);
      init(n, 2, Kind::Zero);
    } else if (n.op_type == "Gemm") {
      const Shape b = shape_of(1);
      if (b.size() != 2) continue;
      const bool tb = n.attr_int("transB", 0) != 0;
      init(n, 1, Kind::GlorotUniform, static_cast<double>(tb ? b[1] : b[0]), static_cast<double>(tb ? b[0] : b[1]));
      init(n, 2, Kind::Zero);
    } else if (n.op_type == "MatMul") {
      const Shape b = shape_of(1);
      if (b.size() < 2) continue;
      init(n, 1, Kind::GlorotUniform, static_cast<double>(b[b.size() - 2]), static_cast<double>(b.back()));
    } else if (n.op_type == "BatchNormalization") {
      init(n, 1, Kind::One);
      init(n, 2, Kind::Zero);
      init(n, 3, Kind::Zero);
      init(n, 4, Kind::One);
    } else if (n.op_type == "LayerNormalization") {
      init(n, 1, Kind::One);
      init(n, 2, Kind::Zero);
    }
  }
  return count;
}

}  // namespace joule::train
