#include "joule/core/tensor.h"

#include <cstdlib>
#include <limits>
#include <type_traits>
#include <cstring>
#include <new>

namespace joule {

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ",";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

std::vector<int64_t> shape_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  for (int64_t d : shape_)
    JOULE_CHECK(d >= 0, "tensor dimension must be non-negative, got " + shape_str(shape_));
  size_t bytes = nbytes();
  size_t alloc = (bytes + 63) / 64 * 64;
  if (alloc == 0) alloc = 64;
  void* p = std::aligned_alloc(64, alloc);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, alloc);
  storage_ = std::shared_ptr<std::byte[]>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
}

void Tensor::check_type(DType t) const {
  if (t != dtype_)
    fail_internal(std::string("tensor access as ") + dtype_name(t) + " but tensor is " + dtype_name(dtype_));
}

Tensor Tensor::reshaped(Shape shape) const {
  JOULE_CHECK(shape_numel(shape) == numel(),
              "cannot reshape " + shape_str(shape_) + " to " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::view(size_t byte_offset, DType dtype, Shape shape) const {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  JOULE_CHECK(byte_offset + t.nbytes() <= nbytes(), "Tensor::view: out of range");
  t.storage_ = std::shared_ptr<std::byte[]>(storage_, storage_.get() + byte_offset);
  return t;
}

Tensor Tensor::wrap(DType dtype, Shape shape, std::shared_ptr<std::byte[]> data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  if (t.nbytes() == 0 && !data) return Tensor(dtype, t.shape_);
  JOULE_CHECK(data != nullptr, "Tensor::wrap: no data for " + t.describe());
  t.storage_ = std::move(data);
  return t;
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor t(dtype_, shape_);
  if (nbytes()) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

double Tensor::value_as_double(int64_t i) const {
  return visit_dtype(dtype_, [&](auto tag) -> double {
    using T = typename decltype(tag)::type;
    return static_cast<double>(static_cast<const T*>(raw())[i]);
  });
}

int64_t Tensor::value_as_int(int64_t i) const {
  return visit_dtype(dtype_, [&](auto tag) -> int64_t {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      return static_cast<int64_t>(static_cast<float>(static_cast<const T*>(raw())[i]));
    else
      return static_cast<int64_t>(static_cast<const T*>(raw())[i]);
  });
}

std::vector<int64_t> Tensor::to_int_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[static_cast<size_t>(i)] = value_as_int(i);
  return v;
}

namespace {
template <class To, class From>
To convert(From f) {
  if constexpr (std::is_same_v<To, bool>) {
    return static_cast<double>(f) != 0.0;
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(f));
  } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return static_cast<To>(static_cast<float>(f));
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // Out-of-range float->int is undefined in C++; ONNX leaves it unspecified too. Saturate.
    if (f != f) return To(0);
    if (f >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    if (f <= static_cast<From>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    return static_cast<To>(f);
  } else {
    return static_cast<To>(f);
  }
}
}  // namespace

Tensor Tensor::cast(DType to) const {
  Tensor out(to, shape_);
  const int64_t n = numel();
  visit_dtype(dtype_, [&](auto ftag) {
    using F = typename decltype(ftag)::type;
    visit_dtype(to, [&](auto ttag) {
      using T = typename decltype(ttag)::type;
      const F* src = static_cast<const F*>(raw());
      T* dst = static_cast<T*>(out.raw());
      for (int64_t i = 0; i < n; ++i) dst[i] = convert<T, F>(src[i]);
    });
  });
  return out;
}

std::string Tensor::describe() const { return std::string(dtype_name(dtype_)) + shape_str(shape_); }

}  // namespace joule
