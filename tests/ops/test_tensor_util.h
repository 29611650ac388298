#pragma once
// Helpers for the data-movement op tests (test_tensor_*.cpp).
#include "op_test_util.h"

namespace joule::testing {

inline Tensor i64(std::vector<int64_t> v, Shape s) { return Tensor::from_vector(v, std::move(s)); }
inline Tensor i64v(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector(v, {n});
}
inline Tensor f32(std::vector<float> v, Shape s) { return Tensor::from_vector(v, std::move(s)); }
// 0, 1, 2, ... as float32 of the given shape.
inline Tensor iota_f(Shape s) {
  Tensor t(DType::Float32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
template <class T>
std::vector<T> vals(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

// Runs only inference with the given input types (nullptr: absent) and constant values.
struct InferResult {
  std::vector<ir::TensorType> types;
  std::vector<Tensor> values;
};
inline InferResult infer_only(const ir::Node& node, const std::vector<ir::TensorType>& types,
                              const std::vector<const Tensor*>& values = {}, int64_t opset = 17) {
  const ops::OpDef* def = ops::find_op(node.domain, node.op_type);
  if (!def) throw std::runtime_error("no op " + node.op_type);
  ops::InferContext ic{node, opset, {}, {}, {}, {}};
  for (size_t i = 0; i < types.size(); ++i) {
    ic.input_types.push_back(types[i].dtype == DType::Undefined ? nullptr : &types[i]);
    ic.input_values.push_back(i < values.size() ? values[i] : nullptr);
  }
  ic.output_types.resize(node.outputs.size());
  ic.output_values.resize(node.outputs.size());
  def->infer(ic);
  return {ic.output_types, ic.output_values};
}

inline ir::TensorType ttype(DType t, std::vector<ir::Dim> dims) {
  ir::TensorType r;
  r.dtype = t;
  r.has_shape = true;
  r.dims = std::move(dims);
  return r;
}
inline ir::Dim S(int64_t v) { return ir::Dim{v, ""}; }
inline ir::Dim P(const std::string& p) { return ir::Dim{-1, p}; }
inline ir::Dim U() { return ir::Dim{}; }

}  // namespace joule::testing
