#include "joule/python/convert.h"

#include <pybind11/stl.h>

#include "joule/core/error.h"

namespace joule::python {

namespace {

// numpy's dtype names are joule's (float32, int8, uint8, bool, ...); bfloat16 has none.
DType dtype_of(const py::dtype& d, const std::string& what) {
  const std::string name = py::str(d.attr("name"));
  const DType t = dtype_from_name(name);
  if (t == DType::Undefined || t == DType::BFloat16)
    fail(what + ": numpy dtype " + name + " is not supported (float, int, uint or bool)");
  return t;
}

}  // namespace

Tensor to_tensor(const py::handle& obj, const std::string& what) {
  py::array a = py::array::ensure(obj, py::array::c_style);
  if (!a) {
    PyErr_Clear();
    fail(what + ": expected an array, got " + std::string(py::str(py::type::of(obj).attr("__name__"))));
  }
  if (!a.dtype().attr("isnative").cast<bool>())  // byte-swapped: the native order first
    a = py::array::ensure(a.attr("astype")(a.dtype().attr("newbyteorder")("=")), py::array::c_style);
  const DType dt = dtype_of(a.dtype(), what);
  Shape shape(a.shape(), a.shape() + a.ndim());
  // The array stays referenced while the tensor (or any copy of it) lives; the reference is
  // dropped with the GIL held, whichever thread drops the last copy.
  auto* keep = new py::object(a);
  std::shared_ptr<py::object> owner(keep, [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
  auto* data = static_cast<std::byte*>(const_cast<void*>(a.data()));
  return Tensor::wrap(dt, std::move(shape), std::shared_ptr<std::byte[]>(owner, data));
}

py::array to_array(const Tensor& t) {
  const Tensor v = t.dtype() == DType::BFloat16 ? t.cast(DType::Float32) : t;
  if (!v.defined()) fail_internal("an output tensor is undefined");
  auto* keep = new Tensor(v);
  py::capsule base(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  std::vector<py::ssize_t> shape(v.shape().begin(), v.shape().end());
  return py::array(py::dtype(dtype_name(v.dtype())), shape, {}, v.raw(), base);
}

py::object to_value(const Tensor& t) {
  if (t.kind() == ValueKind::Sequence) {
    py::list items;
    for (const Tensor& item : t.items()) items.append(to_value(item.clone()));  // items may share inputs' buffers
    return items;
  }
  if (t.kind() == ValueKind::Optional) return t.items().empty() ? py::none() : to_value(t.items()[0]);
  if (t.dtype() == DType::String) {
    py::list words;
    for (int64_t i = 0; i < t.numel(); ++i) words.append(py::str(t.data<std::string>()[i]));
    py::object np = py::module_::import("numpy");
    return np.attr("array")(words, py::arg("dtype") = "object").attr("reshape")(py::cast(t.shape()));
  }
  return to_array(t);
}

runtime::TensorMap to_inputs(const py::handle& obj, const std::vector<std::string>& names) {
  runtime::TensorMap m;
  if (py::isinstance<py::dict>(obj)) {
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(obj)) {
      if (!py::isinstance<py::str>(k)) fail("inputs: keys must be input names (str)");
      const std::string name = k.cast<std::string>();
      m[name] = to_tensor(v, "input '" + name + "'");
    }
  } else if (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj)) {
    const py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
    if (seq.size() != names.size())
      fail("inputs: " + std::to_string(seq.size()) + " arrays for a model of " + std::to_string(names.size()) +
           " inputs");
    for (size_t i = 0; i < names.size(); ++i) m[names[i]] = to_tensor(seq[i], "input '" + names[i] + "'");
  } else {
    if (names.size() != 1)
      fail("inputs: the model has " + std::to_string(names.size()) + " inputs; pass a dict {name: array}");
    m[names[0]] = to_tensor(obj, "input '" + names[0] + "'");
  }
  return m;
}

std::string to_path(const py::handle& obj) {
  return py::str(py::module_::import("os").attr("fspath")(obj));
}

api::DataSource to_data(const py::handle& obj, const std::string& what) {
  if (py::isinstance<py::str>(obj)) return api::DataSource::from_spec(obj.cast<std::string>());
  if (py::isinstance(obj, py::module_::import("os").attr("PathLike"))) return api::DataSource::from_spec(to_path(obj));
  if (py::isinstance<py::tuple>(obj) || py::isinstance<py::list>(obj)) {
    const py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
    if (seq.size() != 2) fail(what + ": a sequence must be (images, labels)");
    return api::DataSource::from_arrays(to_tensor(seq[0], what + " images"), to_tensor(seq[1], what + " labels"));
  }
  return api::DataSource::from_arrays(to_tensor(obj, what));
}

py::object Kwargs::take(const char* name) {
  used_.insert(name);
  return kw_.contains(name) ? py::reinterpret_borrow<py::object>(kw_[name]) : py::none();
}

void Kwargs::strings(const char* name, std::vector<std::string>& field) {
  py::object v = take(name);
  if (v.is_none()) return;
  if (py::isinstance<py::str>(v)) {
    field = {v.cast<std::string>()};
    return;
  }
  try {
    field = v.cast<std::vector<std::string>>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string(fn_) + "(): " + name + " must be a str or a list of str");
  }
}

void Kwargs::data(const char* name, api::DataSource& field) {
  py::object v = take(name);
  if (!v.is_none()) field = to_data(v, name);
}

std::map<std::string, Shape> to_shapes(const py::handle& obj, const std::string& what) {
  try {
    if (py::isinstance<py::dict>(obj)) return obj.cast<std::map<std::string, Shape>>();
    return {{"", obj.cast<Shape>()}};
  } catch (const py::cast_error&) {
    throw py::type_error(what + " must be {input name: dims} or the dims of the only input");
  }
}

void Kwargs::shapes(const char* name, std::map<std::string, Shape>& field) {
  py::object v = take(name);
  if (!v.is_none()) field = to_shapes(v, std::string(fn_) + "(): " + name);
}

void Kwargs::prepare(api::PrepareOptions& o) {
  get("threads", o.threads);
  get("passes", o.passes);
  get("int8", o.int8);
  get("precision", o.precision);
  get("bf16_min_sqnr", o.bf16_min_sqnr_db);
  get("device", o.device);
  get("gpu_math", o.gpu_math);
  strings("gpu_fp32", o.gpu_fp32);
  strings("algo", o.algo.rules);
  get("algo_file", o.algo.file);
  get("tuning_cache", o.algo.tuning_cache);
}

void Kwargs::preprocess(api::DataOptions& o) {
  get("mean", o.mean);
  get("std", o.std);
  get("scale", o.scale);
  get("resize", o.resize);
}

void Kwargs::finish() const {
  for (auto item : kw_) {
    const std::string k = py::str(item.first);
    if (!used_.count(k)) throw py::type_error(std::string(fn_) + "() got an unexpected keyword argument '" + k + "'");
  }
}

}  // namespace joule::python
