#include "joule/core/dtype.h"

#include "joule/core/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <cmath>

namespace joule {

Half::Half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t man = x & 0x7fffffu;
  if (exp == 0xff) {  // inf / nan
    bits = static_cast<uint16_t>(sign | 0x7c00u | (man ? 0x200u : 0u));
    return;
  }
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) {  // overflow -> inf
    bits = static_cast<uint16_t>(sign | 0x7c00u);
    return;
  }
  if (e <= 0) {  // subnormal or zero
    if (e < -10) {
      bits = static_cast<uint16_t>(sign);
      return;
    }
    man |= 0x800000u;
    int shift = 14 - e;
    uint32_t half_man = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_man & 1u))) half_man++;
    bits = static_cast<uint16_t>(sign | half_man);
    return;
  }
  uint32_t h = sign | (static_cast<uint32_t>(e) << 10) | (man >> 13);
  uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;  // may carry into exponent: correct
  bits = static_cast<uint16_t>(h);
}

Half::operator float() const {
  uint32_t sign = (bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t man = bits & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (man == 0) {
      x = sign;
    } else {  // subnormal
      float f = std::ldexp(static_cast<float>(man), -24);
      return sign ? -f : f;
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (man << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

BFloat16::BFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // nan
    bits = static_cast<uint16_t>((x >> 16) | 0x40u);
    return;
  }
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  bits = static_cast<uint16_t>(x >> 16);
}

#if defined(__x86_64__)
namespace {
__attribute__((target("avx,f16c"))) void to_half_f16c(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) y[i] = Half(x[i]).bits;
}
}  // namespace
#endif

void to_half_bits(const float* x, uint16_t* y, int64_t n, DType to) {
  if (to == DType::BFloat16) {
    for (int64_t i = 0; i < n; ++i) y[i] = BFloat16(x[i]).bits;
    return;
  }
#if defined(__x86_64__)
  if (cpu_features().avx2_fma) return to_half_f16c(x, y, n);  // (every AVX2 + FMA CPU has F16C)
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = Half(x[i]).bits;
}

BFloat16::operator float() const {
  uint32_t x = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32: case DType::Int32: case DType::UInt32: return 4;
    case DType::Float64: case DType::Int64: case DType::UInt64: return 8;
    case DType::Float16: case DType::BFloat16: case DType::Int16: case DType::UInt16: return 2;
    case DType::Int8: case DType::UInt8: case DType::Bool: return 1;
    case DType::String: return sizeof(std::string);
    case DType::Undefined: return 0;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Int8: return "int8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::UInt8: return "uint8";
    case DType::UInt16: return "uint16";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
    case DType::Bool: return "bool";
    case DType::String: return "string";
    case DType::Undefined: return "undefined";
  }
  return "undefined";
}

DType dtype_from_name(const std::string& name) {
  for (int i = 1; i <= static_cast<int>(DType::String); ++i) {
    auto t = static_cast<DType>(i);
    if (name == dtype_name(t)) return t;
  }
  return DType::Undefined;
}

namespace {
struct OnnxCode {
  int code;
  DType type;
};
constexpr OnnxCode kOnnxCodes[] = {
    {1, DType::Float32}, {2, DType::UInt8},   {3, DType::Int8},    {4, DType::UInt16},
    {5, DType::Int16},   {6, DType::Int32},   {7, DType::Int64},   {8, DType::String}, {9, DType::Bool},
    {10, DType::Float16}, {11, DType::Float64}, {12, DType::UInt32}, {13, DType::UInt64},
    {16, DType::BFloat16},
};
}  // namespace

DType dtype_from_onnx(int code) {
  for (auto& c : kOnnxCodes)
    if (c.code == code) return c.type;
  return DType::Undefined;
}

int dtype_to_onnx(DType t) {
  for (auto& c : kOnnxCodes)
    if (c.type == t) return c.code;
  return 0;
}

}  // namespace joule
