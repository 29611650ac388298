#include "joule/runtime/bodies.h"

#include <algorithm>
#include <chrono>

#include "joule/ops/subgraph_util.h"
#include "joule/runtime/algorithm.h"
#include "joule/runtime/observed.h"

namespace joule::runtime {

namespace {
using Clock = std::chrono::steady_clock;

// Times every node of a body session and hands it to the parent session's observers, as run
// inside the parent's step `step`; nested bodies' reports pass through unchanged.
class Forwarder final : public Observer {
 public:
  Forwarder(const std::vector<Observer*>& parents, size_t step, const ir::Node& owner, const std::string& attribute)
      : parents_(parents), step_(step), owner_(owner), attribute_(attribute) {}
  void before_node(size_t, const ir::Node&, const std::vector<const Tensor*>&) override { t0_ = Clock::now(); }
  bool reads_inputs_after() const override { return false; }
  void after_node(size_t, const ir::Node& n, const std::vector<const Tensor*>&, const std::vector<Tensor>&) override {
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0_).count();
    for (Observer* p : parents_) p->body_node(step_, owner_, attribute_, n, algorithm_of(n), ms);
  }
  void body_node(size_t, const ir::Node& owner, const std::string& attribute, const ir::Node& n, const std::string& algorithm,
                 double ms) override {
    for (Observer* p : parents_) p->body_node(step_, owner, attribute, n, algorithm, ms);
  }

 private:
  const std::vector<Observer*>& parents_;
  size_t step_;
  const ir::Node& owner_;
  const std::string& attribute_;
  Clock::time_point t0_;
};

// The attribute of `owner` that holds `g`.
std::string attribute_of(const ir::Node& owner, const ir::Graph& g) {
  for (const auto& [name, a] : owner.attrs)
    if (const auto* r = std::get_if<ir::GraphRef>(&a); r && r->get() == &g) return name;
  return "body";
}
}  // namespace

bool has_bodies(const ir::Node& n) {
  return std::any_of(n.attrs.begin(), n.attrs.end(), [](const auto& a) { return std::holds_alternative<ir::GraphRef>(a.second); });
}

struct Bodies::Body {
  const ir::Graph* graph = nullptr;
  std::string attribute;
  std::string signature;               // the input types the session was planned for
  std::vector<std::string> captured;   // outer-scope values bound as extra graph inputs
  std::vector<size_t> captured_input;  // their index in the owner's inputs
  std::unique_ptr<Session> session;    // null: the interpreter runs it
  std::string fallback;
  long long runs = 0;
};

Bodies::Bodies(const ir::Node& owner, SessionOptions options) : owner_(owner), options_(std::move(options)) {
  options_.device = -1;  // bodies run on the CPU (no GPU placement inside control flow)
  options_.input_shapes.clear();
  options_.release_packed_constants = false;
}

Bodies::~Bodies() = default;

Bodies::Body& Bodies::body_for(const ir::Graph& g, const std::vector<Tensor>& inputs, const ops::KernelContext& c) const {
  // The outer-scope values this owner binds (every depth's), present in this run.
  std::vector<std::string> names = g.inputs;
  std::vector<const Tensor*> values;
  for (const Tensor& t : inputs) values.push_back(&t);
  std::vector<std::string> captured;
  std::vector<size_t> captured_input;
  const size_t first = owner_.explicit_inputs();
  for (size_t i = 0; i < owner_.captured.size(); ++i) {
    const std::string& name = owner_.captured[i];
    if (!c.has(first + i) || g.is_initializer(name) || std::find(names.begin(), names.end(), name) != names.end()) continue;
    names.push_back(name);
    values.push_back(c.inputs[first + i]);
    captured.push_back(name);
    captured_input.push_back(first + i);
  }
  // Each input's type: kind and element type of the value; its declared dims where they hold
  // for this value, else symbolic dims of its rank (one session for every iteration's shapes).
  std::vector<ir::TensorType> types;
  std::string sig;
  for (size_t i = 0; i < names.size(); ++i) {
    ir::TensorType t = ir::TensorType::of_value(*values[i]);
    if (!t.is_tensor()) {  // a sequence's items may change shape: the declared type, or none
      const ir::TensorType* d = g.type_of(names[i]);
      if (d && d->kind == t.kind) t = *d;
      else t.has_shape = false, t.dims.clear();
    } else if (t.has_shape) {
      const ir::TensorType* d = g.type_of(names[i]);
      bool keep = d && d->is_tensor() && d->has_shape && d->dims.size() == t.dims.size();
      for (size_t k = 0; keep && k < t.dims.size(); ++k)
        if (d->dims[k].is_static() && d->dims[k].value != t.dims[k].value) keep = false;
      for (size_t k = 0; k < t.dims.size(); ++k) t.dims[k] = keep ? d->dims[k] : ir::Dim{};
    }
    sig += t.str() + ";";
    types.push_back(std::move(t));
  }
  for (auto& b : bodies_)
    if (b->graph == &g && b->signature == sig) return *b;
  auto b = std::make_unique<Body>();
  b->graph = &g;
  b->attribute = attribute_of(owner_, g);
  b->signature = sig;
  b->captured = std::move(captured);
  b->captured_input = std::move(captured_input);
  try {
    ir::Graph plan = g;
    plan.inputs = names;
    for (size_t i = 0; i < names.size(); ++i) plan.types[names[i]] = types[i];
    if (plan.name.empty()) plan.name = owner_.name + "/" + b->attribute;
    b->session = std::make_unique<Session>(std::move(plan), options_);
  } catch (const Error& e) {
    if (e.kind() == Error::Kind::Internal) throw;
    b->fallback = e.what();
  }
  bodies_.push_back(std::move(b));
  return *bodies_.back();
}

std::vector<Tensor> Bodies::run(const ops::KernelContext& c, const ir::Graph& body, const std::vector<Tensor>& inputs) const {
  if (inputs.size() != body.inputs.size())
    fail(owner_.where() + ": body '" + body.name + "' takes " + std::to_string(body.inputs.size()) + " inputs, given " +
         std::to_string(inputs.size()));
  Body* b = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    b = &body_for(body, inputs, c);
    ++b->runs;
  }
  if (!b->session) return ops::subgraph::interpret(c, body, inputs);
  TensorMap in;
  for (size_t i = 0; i < inputs.size(); ++i) in[body.inputs[i]] = inputs[i];
  for (size_t i = 0; i < b->captured.size(); ++i) in[b->captured[i]] = *c.inputs[b->captured_input[i]];
  const std::vector<Observer*>* parents = observers_;
  TensorMap out;
  if (parents && !parents->empty()) {
    Forwarder fwd(*parents, step_, owner_, b->attribute);
    out = run_observed(*b->session, in, fwd);
  } else {
    out = b->session->run(in);
  }
  std::vector<Tensor> r;
  r.reserve(body.outputs.size());
  for (const std::string& o : body.outputs) r.push_back(out.at(o));
  return r;
}

std::vector<Bodies::Stats> Bodies::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Stats> r;
  for (const auto& b : bodies_) {
    auto it = std::find_if(r.begin(), r.end(), [&](const Stats& s) { return s.attribute == b->attribute; });
    if (it == r.end()) {
      r.push_back(Stats{b->attribute, 0, b->fallback, {}});
      it = r.end() - 1;
      if (b->session)
        for (size_t i = 0; i < b->session->num_steps(); ++i) it->algorithms.push_back(algorithm_of(b->session->step_node(i)));
    }
    it->runs += b->runs;
  }
  return r;
}

}  // namespace joule::runtime
