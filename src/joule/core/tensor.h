#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "joule/core/dtype.h"
#include "joule/core/error.h"

namespace joule {

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& s);
// Bytes of a tensor of this dtype and shape, checked before anything is allocated: throws
// BadInput ("a float32[1000000,1000000] tensor needs 3.6 TiB, more than this machine's memory
// (23.4 GiB)") when the size overflows 64 bits or exceeds the memory this process may use
// (physical memory, or the address-space limit when lower). `what` prefixes the message.
size_t checked_nbytes(DType dtype, const Shape& s, const std::string& what = "");
// The memory limit checked_nbytes enforces, in bytes.
size_t memory_limit_bytes();
std::string shape_str(const Shape& s);        // "[1,3,224,224]"
std::vector<int64_t> shape_strides(const Shape& s);  // row-major element strides

// What a value holds: a tensor, a sequence of tensors (ONNX seq(tensor)) or an optional (ONNX
// optional(tensor) / optional(seq(tensor))), which is empty or holds one tensor or sequence.
enum class ValueKind : uint8_t { Tensor, Sequence, Optional };
const char* value_kind_name(ValueKind k);  // "tensor", "sequence", "optional"

// A dense row-major tensor. Copies share the buffer (like a shared_ptr); use clone() for a
// deep copy. Storage joule allocates is 64-byte aligned and zero-initialised; a tensor over a
// caller's memory (wrap) is aligned to its element only. String tensors hold std::string
// objects (constructed and destroyed with the buffer; never memcpy'd).
//
// The same class carries the other values an ONNX graph passes between nodes: a sequence of
// tensors or an optional (kind() != Tensor), whose items() are shared and immutable; dtype() is
// then their elements' type and the value has no buffer of its own.
class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape);  // zero-filled
  // Not filled (only the alignment padding past the data is zeroed), for a caller that writes
  // every byte at once: a model's weights copied from the file skip a pass over (and the page
  // faults of) hundreds of megabytes. Not for strings.
  static Tensor uninitialized(DType dtype, Shape shape);

  template <class T>
  static Tensor scalar(T v) {
    Tensor t(dtype_of<T>, {});
    *t.data<T>() = v;
    return t;
  }
  template <class T>
  static Tensor from_vector(const std::vector<T>& v, Shape shape) {
    Tensor t(dtype_of<T>, std::move(shape));
    JOULE_CHECK(static_cast<size_t>(t.numel()) == v.size(), "Tensor::from_vector: size mismatch");
    for (size_t i = 0; i < v.size(); ++i) t.data<T>()[i] = v[i];
    return t;
  }

  // A tensor over memory the caller owns (a numpy array): `data` holds numel * dtype_size
  // bytes, row-major, aligned to the element, and stays alive while any copy of the tensor
  // does (its deleter runs when the last one goes). No copy is made.
  static Tensor wrap(DType dtype, Shape shape, std::shared_ptr<std::byte[]> data);
  // A tensor in the memory of GPU `device` (CUDA ordinal): the buffer's deleter frees it there.
  // Its shape and dtype are host metadata; data<T>() refuses it (only GPU kernels read it).
  static Tensor wrap_device(DType dtype, Shape shape, std::shared_ptr<std::byte[]> data, int device);
  // -1: host memory; else the CUDA ordinal of the GPU holding the buffer.
  int device() const { return device_; }
  bool on_host() const { return device_ < 0; }

  // A sequence of tensors of element type `elem` (all items must have it).
  static Tensor sequence(DType elem, std::vector<Tensor> items);
  // An optional of element type `elem`: empty when `value` is null, else holding *value (a
  // tensor or a sequence).
  static Tensor optional(DType elem, const Tensor* value);

  bool defined() const { return dtype_ != DType::Undefined || kind_ != ValueKind::Tensor; }
  ValueKind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == ValueKind::Tensor; }
  // A sequence's elements; an optional's value (none or one). Empty for a tensor.
  const std::vector<Tensor>& items() const;
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_[static_cast<size_t>(i < 0 ? i + rank() : i)]; }
  int64_t numel() const { return shape_numel(shape_); }
  // Bytes of the buffer (0 for a sequence or optional).
  size_t nbytes() const { return is_tensor() ? static_cast<size_t>(numel()) * dtype_size(dtype_) : 0; }

  void* raw() { return storage_ ? storage_.get() : nullptr; }
  const void* raw() const { return storage_ ? storage_.get() : nullptr; }
  template <class T>
  T* data() {
    check_type(dtype_of<T>);
    return static_cast<T*>(raw());
  }
  template <class T>
  const T* data() const {
    check_type(dtype_of<T>);
    return static_cast<const T*>(raw());
  }

  // Same buffer, new shape (numel must match).
  Tensor reshaped(Shape shape) const;
  Tensor clone() const;
  // A tensor of `dtype`/`shape` inside this tensor's buffer at `byte_offset` (it keeps the
  // buffer alive). For the session's activation arena.
  Tensor view(size_t byte_offset, DType dtype, Shape shape) const;
  // Element i converted to double / int64 (any dtype); for shape and scalar inputs.
  double value_as_double(int64_t i) const;
  int64_t value_as_int(int64_t i) const;
  std::vector<int64_t> to_int_vector() const;
  // Converts to another dtype (numeric conversion, like ONNX Cast).
  Tensor cast(DType to) const;

  std::string describe() const;  // "float32[1,3,224,224]", "seq(float32[2,3], ...)"

 private:
  void check_type(DType t) const;
  DType dtype_ = DType::Undefined;
  ValueKind kind_ = ValueKind::Tensor;
  Shape shape_;
  int device_ = -1;
  std::shared_ptr<std::byte[]> storage_;
  std::shared_ptr<const std::vector<Tensor>> items_;  // sequence / optional only
};

}  // namespace joule
