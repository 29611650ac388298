#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace joule {

// IEEE half precision, stored as bits. Arithmetic goes through float.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f);
  operator float() const;
};

// bfloat16 (upper 16 bits of a float32), round-to-nearest-even on conversion.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f);
  operator float() const;
};

enum class DType : uint8_t {
  Undefined,
  Float32,
  Float64,
  Float16,
  BFloat16,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Bool,
  String,  // ONNX string tensors (StringNormalizer, Cast): elements are std::string objects
};

// y[i] = the float16 (to = Float16) or bfloat16 bits of x[i], round to nearest even: Half(x) and
// BFloat16(x) bit for bit (F16C where the CPU has it; a NaN stays a NaN, its payload aside).
void to_half_bits(const float* x, uint16_t* y, int64_t n, DType to);

size_t dtype_size(DType t);
const char* dtype_name(DType t);
DType dtype_from_name(const std::string& name);  // "float32", ...; Undefined when unknown
// ONNX TensorProto.DataType codes (1 = FLOAT, 7 = INT64, ...). Undefined for codes joule
// does not support (string, complex, float8).
DType dtype_from_onnx(int code);
int dtype_to_onnx(DType t);
inline bool is_floating(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16;
}
inline bool is_integer(DType t) {
  return !is_floating(t) && t != DType::Bool && t != DType::String && t != DType::Undefined;
}
inline bool is_signed_int(DType t) {
  return t == DType::Int8 || t == DType::Int16 || t == DType::Int32 || t == DType::Int64;
}

template <class T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::Float32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::Float64; };
template <> struct DTypeOf<Half> { static constexpr DType value = DType::Float16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::BFloat16; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::Int8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::Int16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::UInt16; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::UInt32; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::UInt64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::Bool; };
template <> struct DTypeOf<std::string> { static constexpr DType value = DType::String; };
template <class T> inline constexpr DType dtype_of = DTypeOf<T>::value;

template <class T> struct TypeTag { using type = T; };

// Calls fn(TypeTag<T>{}) with the C++ type of `t`. Throws for Undefined.
template <class Fn>
decltype(auto) visit_dtype(DType t, Fn&& fn);

// Same, restricted to the types arithmetic ops support (no Bool/Float16/BFloat16);
// throws Unsupported naming `what` for the others.
template <class Fn>
decltype(auto) visit_numeric(DType t, const char* what, Fn&& fn);

// float32 / float64 only, for floating-point kernels; throws Unsupported naming `what`.
template <class Fn>
decltype(auto) visit_floating(DType t, const std::string& what, Fn&& fn);

}  // namespace joule

#include "joule/core/dtype_visit.h"
