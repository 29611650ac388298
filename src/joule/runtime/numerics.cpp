#include "joule/runtime/numerics.h"

#include <cmath>

#include <fmt/format.h>

#include "joule/core/dtype_visit.h"
#include "joule/cuda/backend.h"
#include "joule/runtime/observed.h"

namespace joule::runtime {

namespace {
// NaN and Inf counts of a floating tensor (zero for other dtypes and values).
std::pair<int64_t, int64_t> nonfinite(const Tensor& t) {
  if (!t.defined() || !t.is_tensor() || !is_floating(t.dtype())) return {0, 0};
  const Tensor h = t.on_host() ? t : cuda::download(t);
  int64_t nan = 0, inf = 0;
  visit_floating(h.dtype(), "check-numerics", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = h.data<T>();
    for (int64_t i = 0; i < h.numel(); ++i) {
      const double v = static_cast<double>(p[i]);
      nan += std::isnan(v);
      inf += std::isinf(v);
    }
  });
  return {nan, inf};
}
}  // namespace

void NumericsObserver::after_node(size_t step, const ir::Node& node, const std::vector<const Tensor*>&,
                                  const std::vector<Tensor>& outputs) {
  ++checked_;
  if (found_) return;
  for (size_t j = 0; j < outputs.size() && j < node.outputs.size(); ++j) {
    const auto [nan, inf] = nonfinite(outputs[j]);
    if (nan + inf == 0) continue;
    found_ = true;
    first_ = {{"node", node.name}, {"op", node.op_type}, {"output", node.outputs[j]}, {"step", step},
              {"nan", nan},       {"inf", inf},         {"values", outputs[j].numel()}};
    return;
  }
}

nlohmann::json NumericsObserver::to_json() const {
  return {{"nodes_checked", checked_}, {"first_nonfinite", found_ ? first_ : nlohmann::json(nullptr)}};
}

std::string NumericsObserver::summary() const {
  if (!found_) return fmt::format("numerics: every node's output is finite ({} node runs checked)", checked_);
  return fmt::format("numerics: first non-finite output at node '{}' ({}), output '{}': {} NaN, {} Inf of {} values",
                     first_["node"].get<std::string>(), first_["op"].get<std::string>(), first_["output"].get<std::string>(),
                     first_["nan"].get<int64_t>(), first_["inf"].get<int64_t>(), first_["values"].get<int64_t>());
}

NumericsReport check_numerics(Session& s, const std::map<std::string, Tensor>& inputs) {
  NumericsObserver numerics;
  run_observed(s, inputs, numerics);
  return {numerics.to_json(), numerics.summary()};
}

}  // namespace joule::runtime
