#pragma once
// The types of values in the IR: a dimension, and a value's type (tensor, sequence or optional).
#include <cstdint>
#include <string>
#include <vector>

#include "joule/core/tensor.h"

namespace joule::ir {

// One dimension: a static size, a named symbolic size ("batch"), or unknown.
struct Dim {
  int64_t value = -1;   // >= 0 when static
  std::string param;    // symbolic name when not static (may be empty: unknown)
  bool is_static() const { return value >= 0; }
  bool operator==(const Dim& o) const { return value == o.value && param == o.param; }
};

std::string dims_str(const std::vector<Dim>& dims);  // "[N,3,224,224]"

// The type of a value: element type plus shape. `has_shape` false means unknown rank.
// A sequence's or optional's type (kind != Tensor) describes the tensors it holds (dims: the
// shape every element has, when known); `held` says what an optional holds.
struct TensorType {
  DType dtype = DType::Undefined;
  bool has_shape = false;
  std::vector<Dim> dims;
  ValueKind kind = ValueKind::Tensor;
  ValueKind held = ValueKind::Tensor;  // Optional only: Tensor or Sequence

  static TensorType of(DType t, const Shape& s);
  // The type of a concrete value (a sequence's dims: those its items share).
  static TensorType of_value(const Tensor& v);
  bool is_tensor() const { return kind == ValueKind::Tensor; }
  // The same type with another kind (the element type of a sequence: with_kind(Tensor)).
  TensorType with_kind(ValueKind k, ValueKind held_kind = ValueKind::Tensor) const;
  bool is_static() const;  // a tensor, shape known and every dim static
  Shape static_shape() const;  // requires is_static()
  std::string str() const;     // "float32[N,3,224,224]", "seq(float32[?])", "optional(...)"
};

}  // namespace joule::ir
