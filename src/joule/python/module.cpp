// The Python module `joule._joule`: thin bindings over api/ (the package `joule` in
// python/joule/ wraps the JSON results into objects). The GIL is released while the engine
// runs; Ctrl-C and exceptions from progress callbacks stop a workflow at its next check;
// joule::Error becomes joule.BadInput / joule.Unsupported / joule.Error.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "joule/api/agreement.h"
#include "joule/api/automp.h"
#include "joule/api/compare.h"
#include "joule/api/energy.h"
#include "joule/api/evaluate.h"
#include "joule/api/info.h"
#include "joule/api/opdb.h"
#include "joule/api/profile.h"
#include "joule/api/prune.h"
#include "joule/api/search.h"
#include "joule/api/quantize.h"
#include "joule/api/run.h"
#include "joule/api/train.h"
#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/experiment/runner.h"
#include "joule/experiment/serve.h"
#include "joule/python/convert.h"
#include "joule/report/report.h"

namespace joule::python {

namespace {

using Clock = std::chrono::steady_clock;

// A workflow's hooks for one call from Python: Ctrl-C (Python's signal handlers, run at most
// every 50 ms) and the progress callback (at most every 100 ms, and at the end of each stage)
// with the GIL taken only for them. An exception they raise stops the workflow and is raised
// again when the call returns.
class CallHooks {
 public:
  explicit CallHooks(py::object progress) : progress_(std::move(progress)) {}
  ~CallHooks() {
    if (pending_) {
      py::gil_scoped_acquire gil;
      pending_.reset();
    }
  }

  api::Hooks hooks() {
    api::Hooks h;
    h.cancelled = [this] { return poll(); };
    if (!progress_.is_none()) h.progress = [this](const api::Progress& p) { report(p); };
    return h;
  }

  // With the GIL held: raises what stopped the workflow (KeyboardInterrupt, or the callback's).
  void raise_pending() {
    if (!pending_) return;
    py::error_already_set e = std::move(*pending_);
    pending_.reset();
    throw e;
  }

 private:
  bool poll() {
    if (stopped_) return true;
    const auto now = Clock::now();
    if (now - last_poll_ < std::chrono::milliseconds(50)) return false;
    last_poll_ = now;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) stop();
    return stopped_;
  }

  void report(const api::Progress& p) {
    if (stopped_) return;
    const auto now = Clock::now();
    const bool last = p.total > 0 && p.done >= p.total;
    if (!last && now - last_progress_ < std::chrono::milliseconds(100)) return;
    last_progress_ = now;
    py::gil_scoped_acquire gil;
    try {
      progress_(p.stage, p.done, p.total, p.message);
    } catch (py::error_already_set& e) {
      e.restore();
      stop();
    }
  }

  void stop() {  // with the GIL held and a Python error set
    pending_ = std::make_unique<py::error_already_set>();
    stopped_ = true;
  }

  py::object progress_;
  std::unique_ptr<py::error_already_set> pending_;
  bool stopped_ = false;
  Clock::time_point last_poll_{}, last_progress_{};
};

// Runs `f(hooks)` without the GIL; a cancelled workflow raises what cancelled it.
template <class F>
auto without_gil(const py::object& progress, F&& f) {
  CallHooks ch(progress);
  try {
    py::gil_scoped_release nogil;
    return f(ch.hooks());
  } catch (const Error& e) {
    if (e.kind() == Error::Kind::Cancelled) ch.raise_pending();
    throw;
  }
}

// A compiled model for Python: one run at a time (runs from several threads queue up).
struct PySession {
  api::Prepared prepared;
  std::mutex mu;
  std::unordered_set<const void*> constants;  // initializer buffers: outputs aliasing them are copied
};

py::list value_types(const ir::Graph& g, const std::vector<std::string>& names) {
  py::list l;
  for (const std::string& n : names) {
    const ir::TensorType* t = g.type_of(n);
    py::list shape;
    if (t && t->has_shape)
      for (const ir::Dim& d : t->dims) shape.append(d.is_static() ? py::object(py::int_(d.value)) : py::object(py::str(d.param)));
    py::dict e;
    e["name"] = n;
    e["dtype"] = t ? dtype_name(t->dtype) : "unknown";
    e["shape"] = t && t->has_shape ? py::object(shape) : py::object(py::none());
    l.append(e);
  }
  return l;
}

api::QuantOptions quant_options(Kwargs& k) {
  api::QuantOptions o;
  k.get("config", o.config);
  k.data("calib", o.calib);
  k.get("calib_samples", o.calib_samples);
  k.get("calib_cache", o.calib_cache);
  k.data("eval", o.eval);
  k.get("eval_samples", o.eval_samples);
  k.shapes("input_shapes", o.input_shapes);
  k.get("threads", o.threads);
  k.get("int8", o.int8);
  k.preprocess(o.preprocess);
  return o;
}

api::TrainOptions train_options(Kwargs& k, const py::handle& data) {
  api::TrainOptions o;
  o.data = to_data(data, "data");
  k.data("val", o.val);
  k.get("val_samples", o.val_samples);
  k.preprocess(o.preprocess);
  k.get("loss", o.loss);
  if (py::object t = k.take("teacher"); !t.is_none()) o.teacher = t.cast<api::Model>();
  k.get("temperature", o.kd_temperature);
  k.get("kd_alpha", o.kd_alpha);
  k.get("bn", o.bn);
  k.get("init", o.init);
  k.get("optimizer", o.optimizer.name);
  k.get("lr", o.optimizer.lr);
  k.get("momentum", o.optimizer.momentum);
  k.get("nesterov", o.optimizer.nesterov);
  k.get("weight_decay", o.optimizer.weight_decay);
  k.get("beta1", o.optimizer.beta1);
  k.get("beta2", o.optimizer.beta2);
  k.get("eps", o.optimizer.eps);
  k.get("clip_grad_norm", o.optimizer.clip_grad_norm);
  k.get("schedule", o.schedule.name);
  k.get("warmup_steps", o.schedule.warmup_steps);
  k.get("step_size", o.schedule.step_size);
  k.get("gamma", o.schedule.gamma);
  k.get("min_lr", o.schedule.min_lr);
  k.get("batch", o.batch);
  k.get("epochs", o.epochs);
  k.get("steps", o.steps);
  k.get("shuffle", o.shuffle);
  k.get("seed", o.seed);
  k.get("hflip", o.augment.hflip);
  k.get("crop_padding", o.augment.crop_padding);
  k.get("threads", o.threads);
  k.strings("algo", o.algo.rules);
  k.get("checkpoint", o.checkpoint);
  k.get("checkpoint_every", o.checkpoint_every);
  k.get("resume", o.resume);
  k.strings("trainable", o.trainable);
  k.strings("frozen", o.frozen);
  k.get("keep_zeros", o.keep_zeros);
  return o;
}

// quantize(), automp() and the training workflows return models that carry their report.
struct DerivedModel : api::Model {
  std::string report;
};

std::string dump(const nlohmann::json& j) { return j.dump(2); }

}  // namespace

}  // namespace joule::python

using namespace joule;
using namespace joule::python;

PYBIND11_MODULE(_joule, m) {
  m.doc() = "joule's engine (use the package `joule`)";
  m.attr("__version__") = JOULE_VERSION;

  static py::object error = py::reinterpret_steal<py::object>(
      PyErr_NewExceptionWithDoc("joule.Error", "An error inside joule (an internal fault unless a subclass).",
                                PyExc_RuntimeError, nullptr));
  static py::object bad_input = py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(
      "joule.BadInput", "Bad input: a missing or malformed file, a wrong shape or dtype, a bad option value.",
      py::make_tuple(error, py::handle(PyExc_ValueError)).ptr(), nullptr));
  static py::object unsupported = py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(
      "joule.Unsupported", "A model construct or operator joule does not support (all are listed).", error.ptr(),
      nullptr));
  m.attr("Error") = error;
  m.attr("BadInput") = bad_input;
  m.attr("Unsupported") = unsupported;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      switch (e.kind()) {
        case Error::Kind::BadInput: PyErr_SetString(bad_input.ptr(), e.what()); break;
        case Error::Kind::Unsupported: PyErr_SetString(unsupported.ptr(), e.what()); break;
        case Error::Kind::Cancelled: PyErr_SetNone(PyExc_KeyboardInterrupt); break;
        default: PyErr_SetString(error.ptr(), e.what()); break;
      }
    }
  });

  py::class_<api::Model>(m, "Model", "An ONNX model loaded once and shared read-only.")
      .def_property_readonly("name", &api::Model::name)
      .def_property_readonly("path", [](const api::Model& x) { return x.path().empty() ? py::object(py::none()) : py::object(py::str(x.path())); })
      .def_property_readonly("inputs", [](const api::Model& x) { return value_types(x.graph(), x.input_names()); })
      .def_property_readonly("outputs", [](const api::Model& x) { return value_types(x.graph(), x.output_names()); })
      .def_property_readonly("num_nodes", [](const api::Model& x) { return x.graph().nodes.size(); })
      .def("save", [](const api::Model& x, py::object path, bool allow) { x.save(to_path(path), allow); },
           py::arg("path"), py::kw_only(), py::arg("allow_joule_ops") = false)
      .def("to_bytes", [](const api::Model& x, bool allow) { return py::bytes(x.to_bytes(allow)); }, py::kw_only(),
           py::arg("allow_joule_ops") = false)
      .def("with_input_shapes", [](const api::Model& x, py::object shapes) {
        return x.with_input_shapes(to_shapes(shapes, "with_input_shapes(): shapes"));
      }, py::arg("shapes"))
      .def("__repr__", [](const api::Model& x) {
        return "<joule.Model " + x.name() + ": " + std::to_string(x.graph().nodes.size()) + " nodes>";
      });
  py::class_<DerivedModel, api::Model>(m, "DerivedModel", "A model a workflow made (quantize, automp, train).")
      .def_readonly("_report", &DerivedModel::report);

  m.def("load", [](py::object src, const std::string& name) {
    if (py::isinstance<py::bytes>(src)) {
      std::string b = src.cast<std::string>();
      py::gil_scoped_release nogil;
      return api::Model::from_bytes(b, name.empty() ? "model" : name);
    }
    const std::string path = to_path(src);
    py::gil_scoped_release nogil;
    return api::Model::load(path);
  }, py::arg("source"), py::arg("name") = "");

  py::class_<PySession>(m, "Session", "A model compiled to run: passes, int8 lowering, kernels chosen, memory planned.")
      .def(py::init([](const api::Model& model, py::kwargs kw) {
             Kwargs k("Session", kw);
             api::PrepareOptions o;
             k.prepare(o);
             k.finish();
             auto s = std::make_unique<PySession>();
             {
               py::gil_scoped_release nogil;
               s->prepared = api::prepare(model, o);
             }
             for (auto& [name, t] : s->prepared.session->graph().initializers) s->constants.insert(t.raw());
             return s;
           }),
           py::arg("model"))
      .def("run", [](PySession& s, py::object inputs) {
        runtime::Session& sess = *s.prepared.session;
        runtime::TensorMap in = to_inputs(inputs, sess.input_names());
        runtime::TensorMap out;
        {
          py::gil_scoped_release nogil;
          std::lock_guard<std::mutex> lock(s.mu);
          out = sess.run(in);
        }
        std::unordered_set<const void*> given;
        for (auto& [k, t] : in) given.insert(t.raw());
        py::dict d;
        for (const std::string& name : sess.output_names()) {
          Tensor t = out.at(name);
          if (s.constants.count(t.raw()) || given.count(t.raw())) t = t.clone();  // never a view of weights or inputs
          d[py::str(name)] = to_value(t);
        }
        return d;
      }, py::arg("inputs"))
      .def_property_readonly("input_names", [](PySession& s) { return s.prepared.session->input_names(); })
      .def_property_readonly("output_names", [](PySession& s) { return s.prepared.session->output_names(); })
      .def_property_readonly("threads", [](PySession& s) { return s.prepared.session->threads(); })
      .def_property_readonly("peak_activation_bytes", [](PySession& s) { return s.prepared.session->peak_bytes(); })
      .def("_plan", [](PySession& s) { return dump(api::plan_json(*s.prepared.session)); })
      .def("_pipeline", [](PySession& s) { return dump(s.prepared.pipeline); })
      .def("_precision", [](PySession& s) { return dump(s.prepared.precision.to_json()); });

  m.def("bench", [](const api::Model& model, py::kwargs kw) {
    Kwargs k("bench", kw);
    api::BenchOptions o;
    k.prepare(o.prepare);
    if (py::object in = k.take("inputs"); !in.is_none()) o.inputs = to_inputs(in, model.input_names());
    k.get("warmup", o.warmup);
    k.get("runs", o.runs);
    py::object progress = k.take("progress");
    k.finish();
    return dump(without_gil(progress, [&](const api::Hooks& h) { return api::bench(model, o, h); }).to_json());
  }, py::arg("model"));

  // The operator cost database (joule opdb add / sweep) and prediction (joule predict).
  auto opdb_options = [](Kwargs& k, api::OpdbOptions& o) {
    k.get("db", o.db);
    if (py::object t = k.take("threads"); !t.is_none())
      o.threads = py::isinstance<py::int_>(t) ? std::vector<int>{t.cast<int>()} : t.cast<std::vector<int>>();
    k.get("warmup", o.warmup);
    k.get("runs", o.runs);
    k.get("sample_ms", o.sample_ms);
    k.get("min_time", o.min_time_s);
    k.strings("regimes", o.regimes);
    k.get("energy", o.energy);
    k.get("force", o.force);
    k.get("passes", o.passes);
  };
  m.def("opdb_add", [opdb_options](const std::vector<api::Model>& models, py::kwargs kw) {
    Kwargs k("opdb_add", kw);
    api::OpdbOptions o;
    opdb_options(k, o);
    py::object progress = k.take("progress");
    k.finish();
    return dump(without_gil(progress, [&](const api::Hooks& h) { return api::opdb_add(models, o, h); }).to_json());
  }, py::arg("models"));
  m.def("opdb_sweep", [opdb_options](const std::string& config, const std::string& stage, py::kwargs kw) {
    Kwargs k("opdb_sweep", kw);
    api::OpdbOptions o;
    opdb_options(k, o);
    py::object progress = k.take("progress");
    k.finish();
    return dump(without_gil(progress, [&](const api::Hooks& h) { return api::opdb_sweep(config, stage, o, h); }).to_json());
  }, py::arg("config"), py::arg("stage"));
  m.def("predict", [](const api::Model& model, py::kwargs kw) {
    Kwargs k("predict", kw);
    api::PredictOptions o;
    k.get("db", o.db);
    k.get("threads", o.threads);
    int64_t batch = 0;
    k.get("batch", batch);
    if (batch > 0) o.batch = batch;
    k.get("regime", o.predictor.regime);
    k.get("llc_bytes", o.predictor.llc_bytes);
    k.get("passes", o.passes);
    k.get("int8", o.int8);
    k.strings("exclude_origins", o.predictor.exclude_origins);
    k.finish();
    return dump(without_gil(py::none(), [&](const api::Hooks&) { return api::predict_model(model, o); }).to_json());
  }, py::arg("model"));

  m.def("profile", [](const api::Model& model, py::kwargs kw) {
    Kwargs k("profile", kw);
    api::ProfileOptions o;
    if (py::object t = k.take("threads"); !t.is_none())
      o.threads = py::isinstance<py::int_>(t) ? std::vector<int>{t.cast<int>()} : t.cast<std::vector<int>>();
    if (py::object in = k.take("inputs"); !in.is_none()) o.inputs = to_inputs(in, model.input_names());
    int warmup = -1, runs = -1;
    k.get("warmup", warmup);
    k.get("runs", runs);
    if (warmup >= 0) o.warmup = warmup;
    if (runs >= 0) o.runs = runs;
    k.get("warmup_time", o.warmup_time_s);
    k.get("min_time", o.min_time_s);
    k.get("coverage", o.coverage);
    k.get("energy", o.energy);
    k.get("energy_profile", o.energy_profile);
    k.get("energy_window", o.energy_window_s);
    k.get("powercap_root", o.powercap_root);
    k.get("layer_energy", o.layer_energy);
    k.get("batches", o.batches);
    k.get("input_sizes", o.input_sizes);
    k.get("stage", o.stage);
    k.get("passes", o.passes);
    k.get("int8", o.int8);
    k.strings("algo", o.algo.rules);
    k.get("algo_file", o.algo.file);
    k.get("tuning_cache", o.algo.tuning_cache);
    k.strings("algo_sweep", o.algo_sweep);
    k.get("out_dir", o.out_dir);
    py::object progress = k.take("progress");
    k.finish();
    return dump(without_gil(progress, [&](const api::Hooks& h) { return api::profile(model, o, h); }).to_json());
  }, py::arg("model"));

  m.def("evaluate", [](const api::Model& model, py::object data, py::kwargs kw) {
    Kwargs k("evaluate", kw);
    api::EvalOptions o;
    o.data = to_data(data, "data");
    k.prepare(o.prepare);
    k.preprocess(o.preprocess);
    k.get("limit", o.limit);
    k.shapes("input_shapes", o.input_shapes);
    py::object progress = k.take("progress");
    k.finish();
    return dump(without_gil(progress, [&](const api::Hooks& h) { return api::evaluate(model, o, h); }).to_json());
  }, py::arg("model"), py::arg("data"));

  m.def("quantize", [](const api::Model& model, py::kwargs kw) {
    Kwargs k("quantize", kw);
    const api::QuantOptions o = quant_options(k);
    py::object progress = k.take("progress");
    k.finish();
    api::QuantizeResult r = without_gil(progress, [&](const api::Hooks& h) { return api::quantize(model, o, h); });
    DerivedModel q{r.model, dump(r.to_json())};
    return q;
  }, py::arg("model"));

  m.def("prune", [](const api::Model& model, py::kwargs kw) {
    Kwargs k("prune", kw);
    prune::PruneOptions o;
    k.get("ratio", o.ratio);
    k.get("structured", o.structured);
    k.get("criterion", o.criterion);
    k.get("scope", o.scope);
    k.get("seed", o.seed);
    k.finish();
    api::PruneResult r = without_gil(py::none(), [&](const api::Hooks& h) { return api::prune(model, o, nullptr, h); });
    return DerivedModel{r.model, dump(r.to_json())};
  }, py::arg("model"));
  m.def("prune_sensitivity", [](const api::Model& model, py::kwargs kw) {
    Kwargs k("prune_sensitivity", kw);
    api::PruneSensitivityOptions o;
    k.get("ratios", o.ratios);
    k.get("structured", o.structured);
    k.get("criterion", o.criterion);
    if (py::object d = k.take("data"); !d.is_none()) o.data = to_data(d, "data");
    k.get("samples", o.samples);
    k.get("threads", o.threads);
    k.get("out_dir", o.out_dir);
    py::object progress = k.take("progress");
    k.finish();
    return dump(without_gil(progress, [&](const api::Hooks& h) { return api::prune_sensitivity(model, o, h); }).to_json());
  }, py::arg("model"));

  m.def("search", [](const api::Model& model, const std::string& space, py::object val, const std::string& out_dir,
                     py::kwargs kw) {
    Kwargs k("search", kw);
    api::SearchOptions o;
    o.space = space;
    o.val = to_data(val, "val");
    o.out_dir = out_dir;
    if (py::object d = k.take("data"); !d.is_none()) o.data = to_data(d, "data");
    if (py::object d = k.take("train"); !d.is_none()) o.train = to_data(d, "train");
    k.get("calib_samples", o.calib_samples);
    k.get("val_samples", o.val_samples);
    k.preprocess(o.preprocess);
    k.strings("objectives", o.objectives);
    k.get("cost", o.cost);
    k.get("opdb", o.opdb);
    k.get("algorithm", o.algorithm);
    k.get("trials", o.trials);
    k.get("population", o.population);
    k.get("seed", o.seed);
    k.get("threads", o.threads);
    k.get("warmup", o.warmup);
    k.get("runs", o.runs);
    k.get("min_time", o.min_time_s);
    k.get("energy", o.energy);
    k.get("store", o.store);
    k.get("name", o.name);
    k.get("export", o.export_points);
    py::object progress = k.take("progress");
    k.finish();
    return dump(without_gil(progress, [&](const api::Hooks& h) { return api::search(model, o, h); }).to_json());
  }, py::arg("model"), py::arg("space"), py::arg("val"), py::arg("out_dir"));

  m.def("quant_plan", [](const api::Model& model, py::kwargs kw) {
    Kwargs k("quant_plan", kw);
    const api::QuantOptions o = quant_options(k);
    k.finish();
    return dump(without_gil(py::none(), [&](const api::Hooks&) { return api::quant_plan(model, o); }).plan);
  }, py::arg("model"));

  m.def("sensitivity", [](const api::Model& model, py::kwargs kw) {
    Kwargs k("sensitivity", kw);
    api::SensitivityOptions o;
    o.quant = quant_options(k);
    k.get("mode", o.mode);
    k.strings("variants", o.variants);
    k.get("samples", o.samples);
    k.get("out_dir", o.out_dir);
    py::object progress = k.take("progress");
    k.finish();
    return dump(without_gil(progress, [&](const api::Hooks& h) { return api::sensitivity(model, o, h); }).to_json());
  }, py::arg("model"));

  m.def("automp", [](const api::Model& model, py::kwargs kw) {
    Kwargs k("automp", kw);
    api::AutoMpOptions o;
    o.quant = quant_options(k);
    k.get("max_drop", o.max_drop);
    k.get("sqnr_target", o.sqnr_target);
    k.strings("ladder", o.ladder);
    k.get("strategy", o.strategy);
    k.get("samples", o.samples);
    k.get("out_dir", o.out_dir);
    py::object progress = k.take("progress");
    k.finish();
    api::AutoMpReport r = without_gil(progress, [&](const api::Hooks& h) { return api::automp(model, o, h); });
    return py::make_tuple(dump(r.to_json()), r.yaml, DerivedModel{r.model, dump(r.to_json())});
  }, py::arg("model"));

  m.def("compare", [](const api::Model& model, py::kwargs kw) {
    Kwargs k("compare", kw);
    api::CompareOptions o;
    o.quant = quant_options(k);
    k.strings("configs", o.configs);
    k.get("energy", o.energy);
    k.get("energy_profile", o.energy_profile);
    k.get("runs", o.runs);
    k.get("warmup", o.warmup);
    k.get("out_dir", o.out_dir);
    py::object progress = k.take("progress");
    k.finish();
    return dump(without_gil(progress, [&](const api::Hooks& h) { return api::compare(model, o, h); }).to_json());
  }, py::arg("model"));

  // train, finetune and qat share the training options and the way they run.
  auto train_like = [](const char* name, py::object data, py::kwargs kw, const std::function<void(Kwargs&)>& extra,
                       const std::function<api::TrainReport(const api::TrainOptions&, const api::Hooks&)>& run) {
    Kwargs k(name, kw);
    api::TrainOptions o = train_options(k, data);
    extra(k);
    py::object progress = k.take("progress"), on_record = k.take("on_record");
    k.finish();
    api::TrainReport r = without_gil(progress, [&](api::Hooks h) {
      if (!on_record.is_none())
        h.record = [&on_record](const nlohmann::json& j) {
          py::gil_scoped_acquire gil;
          on_record(j.dump());
        };
      return run(o, h);
    });
    return DerivedModel{r.model, dump(r.to_json())};
  };
  m.def("train", [train_like](const api::Model& model, py::object data, py::kwargs kw) {
    return train_like("train", data, kw, [](Kwargs&) {},
                      [&](const api::TrainOptions& o, const api::Hooks& h) { return api::train(model, o, h); });
  }, py::arg("model"), py::arg("data"));
  m.def("training_graph", [](const api::Model& model, py::object data, py::kwargs kw) {
    Kwargs k("training_graph", kw);
    api::TrainOptions o = train_options(k, data);
    k.finish();
    return without_gil(py::none(), [&](const api::Hooks&) { return api::training_graph(model, o); });
  }, py::arg("model"), py::arg("data"));
  m.def("finetune", [train_like](const api::Model& model, py::object data, py::kwargs kw) {
    train::LoraOptions lora;
    return train_like("finetune", data, kw,
                      [&](Kwargs& k) {
                        k.get("rank", lora.rank);
                        k.get("alpha", lora.alpha);
                        k.strings("types", lora.types);
                        k.get("target", lora.target);
                      },
                      [&](const api::TrainOptions& o, const api::Hooks& h) {
                        lora.seed = o.seed;
                        return api::finetune(model, api::FinetuneOptions{o, lora}, h);
                      });
  }, py::arg("model"), py::arg("data"));
  m.def("qat", [train_like](const api::Model& model, py::object data, py::kwargs kw) {
    api::QatOptions q;
    return train_like("qat", data, kw,
                      [&](Kwargs& k) {
                        q.quant = quant_options(k);
                        k.get("method", q.method);
                      },
                      [&](const api::TrainOptions& o, const api::Hooks& h) {
                        api::QatOptions qo = q;
                        qo.train = o;
                        if (qo.quant.threads == 1 && o.threads) qo.quant.threads = o.threads;
                        return api::qat(model, qo, h);
                      });
  }, py::arg("model"), py::arg("data"));

  m.def("gradients", [](const api::Model& model, py::object inputs, py::object target, py::kwargs kw) {
    Kwargs k("gradients", kw);
    api::GradientsOptions o;
    o.inputs = to_inputs(inputs, model.input_names());
    o.target = to_tensor(target, "target");
    k.get("loss", o.loss);
    k.get("bn", o.bn);
    k.strings("trainable", o.trainable);
    k.strings("frozen", o.frozen);
    k.get("threads", o.threads);
    k.get("seed", o.seed);
    k.finish();
    api::GradientsResult r = without_gil(py::none(), [&](const api::Hooks&) { return api::gradients(model, o); });
    py::dict grads, stats;
    for (auto& [name, t] : r.grads) grads[py::str(name)] = to_array(t);
    for (auto& [name, t] : r.running_stats) stats[py::str(name)] = to_array(t);
    py::dict d;
    d["loss"] = r.loss;
    d["output"] = to_array(r.output);
    d["grads"] = grads;
    d["running_stats"] = stats;
    return d;
  }, py::arg("model"), py::arg("inputs"), py::arg("target"));

  m.def("info", [](const api::Model& model, py::kwargs kw) {
    Kwargs k("info", kw);
    api::InfoOptions o;
    k.shapes("input_shapes", o.input_shapes);
    k.get("after_passes", o.after_passes);
    k.get("plan", o.plan);
    k.get("threads", o.threads);
    k.strings("algo", o.algo.rules);
    k.get("algo_file", o.algo.file);
    k.get("tuning_cache", o.algo.tuning_cache);
    k.finish();
    return dump(without_gil(py::none(), [&](const api::Hooks&) { return api::info(model, o); }));
  }, py::arg("model"));

  m.def("agreement", [](const api::Model& model, py::object inputs, int threads) {
    const runtime::TensorMap in = inputs.is_none() ? runtime::TensorMap{} : to_inputs(inputs, model.input_names());
    return dump(without_gil(py::none(), [&](const api::Hooks&) {
      return api::simulation_agreement(model, in, threads).to_json();
    }));
  }, py::arg("model"), py::arg("inputs") = py::none(), py::arg("threads") = 1);

  m.def("draw_graph", [](const api::Model& model, const std::string& out) {
    py::gil_scoped_release nogil;
    return api::draw_graph(model, out);
  }, py::arg("model"), py::arg("out"));

  m.def("energy_probe", [](const std::string& powercap_root) { return dump(api::energy_probe(powercap_root).to_json()); },
        py::arg("powercap_root") = "");

  // Experiments (docs/experiments.md): points run one after another in this process.
  m.def("experiment_run", [](const std::string& file, py::kwargs kw) {
    Kwargs k("experiment_run", kw);
    experiment::ExperimentOptions o;
    k.get("store", o.store);
    k.get("dir", o.dir);
    k.strings("only", o.only);
    py::object progress = k.take("progress");
    k.finish();
    const experiment::ExperimentSpec spec = experiment::read_experiment(file);
    return dump(without_gil(progress, [&](const api::Hooks& h) { return experiment::run_experiment(spec, o, h); }).to_json());
  }, py::arg("file"));
  m.def("experiment_status", [](const std::string& file, const std::string& store, const std::string& dir) {
    experiment::ExperimentOptions o;
    o.store = store;
    o.dir = dir;
    return dump(experiment::experiment_status(experiment::read_experiment(file), o).to_json());
  }, py::arg("file"), py::arg("store") = "", py::arg("dir") = "");
  m.def("runs", [](const std::string& store, const std::string& exp, const std::string& status, const std::string& model) {
    return dump(experiment::api_runs(store, exp, status, model));
  }, py::arg("store"), py::arg("experiment") = "", py::arg("status") = "", py::arg("model") = "");
  m.def("run_record", [](const std::string& store, int64_t id) { return dump(experiment::api_run(store, id)); },
        py::arg("store"), py::arg("id"));
  m.def("report", [](const std::string& out, const std::string& store, const std::string& exp,
                     const std::vector<std::string>& run_dirs, const std::string& title) {
    report::ReportOptions o;
    o.store = store;
    o.experiment = exp;
    o.run_dirs = run_dirs;
    o.title = title;
    if (o.store.empty() == o.run_dirs.empty()) throw Error(Error::Kind::BadInput, "report: give store or run_dirs (one of the two)");
    write_file_atomic(out, report::report_html(o));
    return out;
  }, py::arg("out"), py::arg("store") = "", py::arg("experiment") = "", py::arg("run_dirs") = std::vector<std::string>{},
     py::arg("title") = "");
}
