#pragma once
// --check-numerics: an observer that counts NaN and Inf in every float output of every node and
// keeps the first node whose output holds one (the quickest way to find the layer that
// overflows in low precision or where a bad input starts to spread). GPU outputs are copied back
// to be counted.
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "joule/runtime/session.h"

namespace joule::runtime {

class NumericsObserver : public Observer {
 public:
  bool reads_inputs_after() const override { return false; }
  void after_node(size_t step, const ir::Node& node, const std::vector<const Tensor*>& inputs,
                  const std::vector<Tensor>& outputs) override;
  bool found() const { return found_; }
  // {"nodes_checked", "first_nonfinite": null | {"node", "op", "output", "step", "nan", "inf", "values"}}
  nlohmann::json to_json() const;
  // One line for the console.
  std::string summary() const;

 private:
  bool found_ = false;
  size_t checked_ = 0;
  nlohmann::json first_;
};

// One run of `s` on `inputs` with a NumericsObserver (bench and profile: outside their timed
// runs); the session's observers are cleared after it.
struct NumericsReport {
  nlohmann::json json;  // NumericsObserver::to_json()
  std::string summary;  // NumericsObserver::summary()
};
NumericsReport check_numerics(Session& s, const std::map<std::string, Tensor>& inputs);

}  // namespace joule::runtime
