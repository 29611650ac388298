#pragma once
// Implementation of visit_dtype / visit_numeric (included from dtype.h).
#include "joule/core/error.h"

namespace joule {

template <class Fn>
decltype(auto) visit_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::Float32: return fn(TypeTag<float>{});
    case DType::Float64: return fn(TypeTag<double>{});
    case DType::Float16: return fn(TypeTag<Half>{});
    case DType::BFloat16: return fn(TypeTag<BFloat16>{});
    case DType::Int8: return fn(TypeTag<int8_t>{});
    case DType::Int16: return fn(TypeTag<int16_t>{});
    case DType::Int32: return fn(TypeTag<int32_t>{});
    case DType::Int64: return fn(TypeTag<int64_t>{});
    case DType::UInt8: return fn(TypeTag<uint8_t>{});
    case DType::UInt16: return fn(TypeTag<uint16_t>{});
    case DType::UInt32: return fn(TypeTag<uint32_t>{});
    case DType::UInt64: return fn(TypeTag<uint64_t>{});
    case DType::Bool: return fn(TypeTag<bool>{});
    case DType::String: fail_unsupported("string tensors are not supported by this operation");
    default: break;
  }
  fail_internal("visit_dtype: undefined dtype");
}

template <class Fn>
decltype(auto) visit_numeric(DType t, const char* what, Fn&& fn) {
  switch (t) {
    case DType::Float32: return fn(TypeTag<float>{});
    case DType::Float64: return fn(TypeTag<double>{});
    case DType::Int8: return fn(TypeTag<int8_t>{});
    case DType::Int16: return fn(TypeTag<int16_t>{});
    case DType::Int32: return fn(TypeTag<int32_t>{});
    case DType::Int64: return fn(TypeTag<int64_t>{});
    case DType::UInt8: return fn(TypeTag<uint8_t>{});
    case DType::UInt16: return fn(TypeTag<uint16_t>{});
    case DType::UInt32: return fn(TypeTag<uint32_t>{});
    case DType::UInt64: return fn(TypeTag<uint64_t>{});
    default: break;
  }
  fail_unsupported(std::string(what) + ": dtype " + dtype_name(t) + " is not supported");
}

template <class Fn>
decltype(auto) visit_floating(DType t, const std::string& what, Fn&& fn) {
  if (t == DType::Float32) return fn(TypeTag<float>{});
  if (t == DType::Float64) return fn(TypeTag<double>{});
  fail_unsupported(what + ": dtype " + dtype_name(t) + " is not supported (float32, float64)");
}

}  // namespace joule
