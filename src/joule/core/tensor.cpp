#include "joule/core/tensor.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <cstring>
#include <new>

#include <sys/resource.h>
#include <unistd.h>

namespace joule {

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n))  // [2^60, 16, 0] is empty; without a 0 it saturates
      return std::find(s.begin(), s.end(), 0) != s.end() ? 0 : std::numeric_limits<int64_t>::max();
  return n;
}

// Physical memory, or the address-space limit when lower, or $JOULE_MEMORY_LIMIT (bytes; K/M/G
// suffixes) when lower still: the fuzz targets set 256M so that a small file claiming a huge
// tensor is refused as on a small machine, not run into libFuzzer's 2.5 GB memory limit.
size_t memory_limit_bytes() {
  static const size_t limit = [] {
    size_t env_limit = SIZE_MAX;
    if (const char* e = std::getenv("JOULE_MEMORY_LIMIT"); e && *e) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(e, &end, 10);
      const int shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 : *end == 'G' || *end == 'g' ? 30 : 0;
      if (end != e && v > 0 && v < (1ull << (63 - shift))) env_limit = static_cast<size_t>(v) << shift;
      else std::fprintf(stderr, "joule: JOULE_MEMORY_LIMIT=%s is not a byte count (e.g. 512M); ignored\n", e);
    }
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    size_t phys = pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : SIZE_MAX;
    rlimit r{};
    if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY) phys = std::min(phys, static_cast<size_t>(r.rlim_cur));
    return std::min(phys, env_limit);
  }();
  return limit;
}

size_t checked_nbytes(DType dtype, const Shape& s, const std::string& what) {
  auto human = [](double b) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (b >= 1024 && u < 6) b /= 1024, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %s", b, units[u]);
    return std::string(buf);
  };
  const std::string pre = what.empty() ? "" : what + ": ";
  for (int64_t d : s) {
    if (d < 0) fail(pre + "negative dimension in " + shape_str(s));
    if (d == 0) return 0;
  }
  uint64_t bytes = dtype_size(dtype);
  for (int64_t d : s)
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
      fail(pre + "a " + std::string(dtype_name(dtype)) + shape_str(s) + " tensor has more bytes than fit in 64 bits");
  if (bytes > memory_limit_bytes())
    fail(pre + "a " + std::string(dtype_name(dtype)) + shape_str(s) + " tensor needs " + human(static_cast<double>(bytes)) +
         ", more than this machine's memory (" + human(static_cast<double>(memory_limit_bytes())) + ")");
  return static_cast<size_t>(bytes);
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

const char* value_kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::Tensor: return "tensor";
    case ValueKind::Sequence: return "sequence";
    case ValueKind::Optional: return "optional";
  }
  return "tensor";
}

namespace {
// 64-byte-aligned memory for `bytes` (at least 64), its size rounded up to 64 in *alloc.
void* aligned_block(size_t bytes, size_t* alloc) {
  *alloc = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, *alloc);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

Tensor Tensor::uninitialized(DType dtype, Shape shape) {
  JOULE_CHECK(dtype != DType::String, "Tensor::uninitialized: not for strings");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  const size_t bytes = checked_nbytes(dtype, t.shape_);
  size_t alloc = 0;
  void* p = aligned_block(bytes, &alloc);
  std::memset(static_cast<std::byte*>(p) + bytes, 0, alloc - bytes);
  t.storage_ = std::shared_ptr<std::byte[]>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
  return t;
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  size_t alloc = 0;
  void* p = aligned_block(checked_nbytes(dtype_, shape_), &alloc);  // nothing larger than memory is attempted
  std::memset(p, 0, alloc);
  if (dtype_ == DType::String) {
    const int64_t n = numel();
    auto* s = static_cast<std::string*>(p);
    for (int64_t i = 0; i < n; ++i) new (s + i) std::string();
    storage_ = std::shared_ptr<std::byte[]>(static_cast<std::byte*>(p), [n](std::byte* q) {
      auto* strs = reinterpret_cast<std::string*>(q);
      for (int64_t i = 0; i < n; ++i) strs[i].~basic_string();
      std::free(q);
    });
    return;
  }
  storage_ = std::shared_ptr<std::byte[]>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
}

Tensor Tensor::sequence(DType elem, std::vector<Tensor> items) {
  for (auto& t : items)
    JOULE_CHECK(t.is_tensor() && t.dtype() == elem,
                "a sequence of " + std::string(dtype_name(elem)) + " cannot hold " + t.describe());
  Tensor r;
  r.dtype_ = elem;
  r.kind_ = ValueKind::Sequence;
  r.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
  return r;
}

Tensor Tensor::optional(DType elem, const Tensor* value) {
  Tensor r;
  r.dtype_ = elem;
  r.kind_ = ValueKind::Optional;
  std::vector<Tensor> v;
  if (value) {
    JOULE_CHECK(value->kind() != ValueKind::Optional, "an optional cannot hold an optional");
    v.push_back(*value);
  }
  r.items_ = std::make_shared<const std::vector<Tensor>>(std::move(v));
  return r;
}

const std::vector<Tensor>& Tensor::items() const {
  static const std::vector<Tensor> kNone;
  return items_ ? *items_ : kNone;
}

void Tensor::check_type(DType t) const {
  if (t != dtype_ || kind_ != ValueKind::Tensor || device_ >= 0)
    fail_internal(std::string("tensor access as ") + dtype_name(t) + " but the value is " + describe());
}

Tensor Tensor::reshaped(Shape shape) const {
  JOULE_CHECK(shape_numel(shape) == numel(),
              "cannot reshape " + shape_str(shape_) + " to " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::view(size_t byte_offset, DType dtype, Shape shape) const {
  JOULE_CHECK(dtype != DType::String && dtype_ != DType::String && is_tensor(), "Tensor::view of " + describe());
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  JOULE_CHECK(byte_offset + t.nbytes() <= nbytes(), "Tensor::view: out of range");
  t.storage_ = std::shared_ptr<std::byte[]>(storage_, storage_.get() + byte_offset);
  t.device_ = device_;
  return t;
}

Tensor Tensor::wrap(DType dtype, Shape shape, std::shared_ptr<std::byte[]> data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  JOULE_CHECK(dtype != DType::String, "Tensor::wrap: string tensors own their elements");
  if (t.nbytes() == 0 && !data) return Tensor(dtype, t.shape_);
  JOULE_CHECK(data != nullptr, "Tensor::wrap: no data for " + t.describe());
  t.storage_ = std::move(data);
  return t;
}

Tensor Tensor::wrap_device(DType dtype, Shape shape, std::shared_ptr<std::byte[]> data, int device) {
  JOULE_CHECK(dtype != DType::String && device >= 0, "Tensor::wrap_device: a numeric tensor on a GPU");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.storage_ = std::move(data);
  t.device_ = device;
  return t;
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  JOULE_CHECK(on_host(), "Tensor::clone of " + describe() + " (GPU tensors are copied by the CUDA backend)");
  if (!is_tensor()) return *this;  // items are immutable: sharing them is a deep copy
  Tensor t(dtype_, shape_);
  if (dtype_ == DType::String)
    std::copy(data<std::string>(), data<std::string>() + numel(), t.data<std::string>());
  else if (nbytes())
    std::memcpy(t.raw(), raw(), nbytes());
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

namespace {
// ONNX Cast to and from strings: numbers in their shortest round-trip text, text parsed as a
// number ("NaN", "INF", "-inf" included); bool as 0/1.
std::string number_text(double v, DType from) {
  char buf[64];
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  std::to_chars_result r = from == DType::Float64 ? std::to_chars(buf, buf + sizeof buf, v)
                           : is_floating(from) ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v))
                                               : std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(v));
  return std::string(buf, r.ptr);
}

Tensor cast_strings(const Tensor& x, DType to) {
  Tensor out(to, x.shape());
  const int64_t n = x.numel();
  if (to == DType::String) {
    std::string* dst = out.data<std::string>();
    if (x.dtype() == DType::String) {
      std::copy(x.data<std::string>(), x.data<std::string>() + n, dst);
      return out;
    }
    for (int64_t i = 0; i < n; ++i)
      dst[i] = is_floating(x.dtype()) ? number_text(x.value_as_double(i), x.dtype())
                                      : std::to_string(x.value_as_int(i));
    return out;
  }
  const std::string* src = x.data<std::string>();
  Tensor tmp(is_floating(to) ? DType::Float64 : DType::Int64, x.shape());
  for (int64_t i = 0; i < n; ++i) {
    const char* b = src[i].c_str();
    char* e = nullptr;
    if (is_floating(to)) {
      tmp.data<double>()[i] = std::strtod(b, &e);  // accepts nan, inf, infinity in any case
    } else {
      errno = 0;
      tmp.data<int64_t>()[i] = std::strtoll(b, &e, 10);
      if (errno == ERANGE) e = const_cast<char*>(b);
    }
    while (e && *e == ' ') ++e;
    if (e == b || (e && *e != '\0'))
      fail("cannot cast the string '" + src[i] + "' to " + dtype_name(to));
  }
  return tmp.cast(to);
}
}  // namespace

Tensor Tensor::cast(DType to) const {
  JOULE_CHECK(is_tensor() && on_host(), "cannot cast " + describe());
  if (to == DType::String || dtype_ == DType::String) return cast_strings(*this, to);
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

std::string Tensor::describe() const {
  if (kind_ == ValueKind::Tensor)
    return std::string(dtype_name(dtype_)) + shape_str(shape_) + (device_ >= 0 ? "@cuda:" + std::to_string(device_) : "");
  std::string r = kind_ == ValueKind::Sequence ? "seq(" : "optional(";
  if (kind_ == ValueKind::Optional && items().empty()) return r + dtype_name(dtype_) + ", empty)";
  if (kind_ == ValueKind::Sequence)
    r += std::to_string(items().size()) + " x " + dtype_name(dtype_) + (items().empty() ? "" : ": ");
  for (size_t i = 0; i < items().size() && i < 3; ++i) r += (i ? ", " : "") + items()[i].describe();
  if (items().size() > 3) r += ", ...";
  return r + ")";
}

}  // namespace joule
