#pragma once
// numpy arrays <-> joule tensors, and keyword arguments -> the library's option structs.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "joule/api/data.h"
#include "joule/api/prepare.h"
#include "joule/runtime/session.h"

namespace joule::python {

namespace py = pybind11;

// An array (anything numpy.asarray accepts) as a tensor. C-contiguous arrays of a supported
// dtype are wrapped without a copy (the tensor keeps the array alive); others are made
// contiguous first. `what` names the value in errors.
Tensor to_tensor(const py::handle& obj, const std::string& what);
// A tensor as a numpy array over the same buffer (the array keeps the tensor's buffer alive);
// bfloat16 comes back as float32.
py::array to_array(const Tensor& t);

// Any value as Python sees it: a tensor as an array (to_array), a string tensor as an object
// array of str, a sequence as a list, an optional as None or what it holds.
py::object to_value(const Tensor& t);

// Session inputs from a dict {name: array}, a list/tuple in input order, or one array (a
// one-input model).
runtime::TensorMap to_inputs(const py::handle& obj, const std::vector<std::string>& names);

// Data for a workflow: a SPEC string or path, an images array, or an (images, labels) tuple.
api::DataSource to_data(const py::handle& obj, const std::string& what);

// A str or os.PathLike as a path.
std::string to_path(const py::handle& obj);

// Input shapes: {name: dims}, or the dims of a one-input model's input.
std::map<std::string, Shape> to_shapes(const py::handle& obj, const std::string& what);

// Reads keyword arguments into option fields; None means "the default". Unknown names and
// values of the wrong type raise TypeError naming the function and the argument.
class Kwargs {
 public:
  Kwargs(const char* function, py::kwargs kw) : fn_(function), kw_(std::move(kw)) {}
  template <class T>
  void get(const char* name, T& field) {
    if (py::object v = take(name); !v.is_none()) {
      try {
        field = v.cast<T>();
      } catch (const py::cast_error&) {
        throw py::type_error(std::string(fn_) + "(): " + name + " has the wrong type (" +
                             std::string(py::str(py::type::of(v).attr("__name__"))) + ")");
      }
    }
  }
  py::object take(const char* name);  // None when absent
  void strings(const char* name, std::vector<std::string>& field);  // a str or a list of str
  void data(const char* name, api::DataSource& field);
  void shapes(const char* name, std::map<std::string, Shape>& field);  // {name: dims} or dims
  void prepare(api::PrepareOptions& o);  // threads, passes, int8, algo, algo_file, tuning_cache
  void preprocess(api::DataOptions& o);  // mean, std, scale, resize
  // TypeError for every keyword not read.
  void finish() const;

 private:
  const char* fn_;
  py::kwargs kw_;
  std::set<std::string> used_;
};

}  // namespace joule::python
