#pragma once
// Helpers for the elementwise op tests (test_elementwise_*.cpp).
#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "joule/core/error.h"
#include "joule/ops/util.h"
#include "ops/op_test_util.h"

namespace joule::elemtest {
using namespace joule::testing;

template <class T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

inline Tensor f32(std::vector<float> v, Shape s) { return Tensor::from_vector(v, std::move(s)); }

template <class T>
Tensor vec(std::vector<T> v, Shape s) {
  return Tensor::from_vector(v, std::move(s));
}

}  // namespace joule::elemtest

namespace joule::elemtest {

// Runs only inference on the given input types (nullptr: absent); returns output 0's type.
inline ir::TensorType infer_type(const ir::Node& node, const std::vector<const ir::TensorType*>& in,
                                 int64_t opset = 17) {
  const ops::OpDef* def = ops::find_op(node.domain, node.op_type);
  if (!def) throw std::runtime_error("no op " + node.op_type);
  ops::InferContext ic{node, opset, in, std::vector<const Tensor*>(in.size(), nullptr), {}, {}};
  ic.output_types.resize(node.outputs.size());
  ic.output_values.resize(node.outputs.size());
  def->infer(ic);
  return ic.output_types[0];
}

// A type with symbolic dims: "N" -> symbolic, "3" -> static, "?" -> unknown.
inline ir::TensorType sym_type(DType t, const std::vector<std::string>& dims) {
  ir::TensorType r;
  r.dtype = t;
  r.has_shape = true;
  for (const std::string& d : dims) {
    if (d == "?")
      r.dims.push_back(ir::Dim{});
    else if (std::isdigit(static_cast<unsigned char>(d[0])))
      r.dims.push_back(ir::Dim{std::stoll(d), ""});
    else
      r.dims.push_back(ir::Dim{-1, d});
  }
  return r;
}

}  // namespace joule::elemtest
