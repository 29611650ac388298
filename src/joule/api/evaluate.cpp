#include "joule/api/evaluate.h"

#include <fmt/format.h>

#include "joule/api/run.h"
#include "joule/runtime/numerics.h"

namespace joule::api {

nlohmann::json EvalReport::to_json() const {
  nlohmann::json j = result.to_json();
  j["model"] = model;
  j["data"] = data;
  j["preprocessing"] = preprocessing;
  j["precision"] = precision.to_json();
  if (!numerics.is_null()) j["numerics"] = numerics;
  return j;
}

data::EvalResult evaluate_session(runtime::Session& s, const data::Dataset& d, size_t limit, const Hooks& hooks,
                                  const std::string& stage) {
  return data::evaluate(s, d, limit, [&](size_t done, size_t total) {
    if (done % 50 == 0 || done == total) hooks.report(stage, done, total, fmt::format("{}: {}/{}", stage, done, total));
    else hooks.check();
  });
}

EvalReport evaluate(const Model& model, const EvalOptions& o, const Hooks& hooks) {
  const Model m = model.with_input_shapes(o.input_shapes);
  EvalReport r;
  auto d = open_data(o.data, m, o.preprocess, &r.preprocessing);
  Prepared p = prepare(m, o.prepare);
  runtime::NumericsObserver numerics;
  if (o.check_numerics) p.session->add_observer(&numerics);
  r.result = evaluate_session(*p.session, *d, o.limit, hooks, "evaluating");
  p.session->clear_observers();
  if (o.check_numerics) {
    r.numerics = numerics.to_json();
    r.numerics_summary = numerics.summary();
  }
  r.model = model_label(m);
  r.data = d->describe();
  r.precision = std::move(p.precision);
  return r;
}

}  // namespace joule::api
