#include "joule/runtime/inputs.h"

#include <random>

namespace joule::runtime {

TensorMap random_inputs(const Session& s, uint32_t seed) {
  TensorMap m;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (auto& name : s.input_names()) {
    const ir::TensorType* t = s.graph().type_of(name);
    if (!t || !t->is_static())
      fail("input '" + name + "' has no static shape (" + (t ? t->str() : "?") + "): pass real inputs with -i");
    Tensor x(t->dtype, t->static_shape());
    if (t->dtype == DType::Float32)
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = nd(rng);
    m[name] = x;
  }
  return m;
}

}  // namespace joule::runtime
