#pragma once
// One oneDNN matmul primitive on row-major A [M, K] and Y [M, N] with a constant B reordered
// once into the layout the primitive picks (format `any`). Shared by the float `onednn_packed`
// and the int8 `onednn_int8` matmul kernels, which differ in data types and attributes only.
#include <dnnl.hpp>
#include <string>
#include <unordered_map>

namespace joule::kernels {

class OnednnMatMulPrimitive {
 public:
  // `user_weights` is B as the caller holds it ([K, N] dims; any data type and tag); `bias_md`
  // may be empty. The primitive's team is sized for `threads` (oneDNN fixes it at creation);
  // scratchpad memory is owned here. `compute` (e.g. bf16): the data type A and B are
  // multiplied in, when it is not A's: B is converted once, A at every run into a buffer
  // owned here.
  OnednnMatMulPrimitive(const dnnl::memory::desc& src_md, dnnl::memory user_weights,
                        const dnnl::memory::desc& bias_md, const dnnl::memory::desc& dst_md,
                        dnnl::primitive_attr attr, int threads,
                        dnnl::memory::data_type compute = dnnl::memory::data_type::undef);

  const dnnl::matmul::primitive_desc& pd() const { return pd_; }
  // The execution arguments: SRC, WEIGHTS, DST and SCRATCHPAD are bound; add the others
  // (bias, zero points) here after construction.
  std::unordered_map<int, dnnl::memory>& args() { return args_; }
  // Y = A B (+ post-ops) on `threads` threads.
  void execute(const void* a, void* y, int threads) const;
  std::string detail() const { return pd_.impl_info_str(); }

 private:
  mutable dnnl::stream stream_;
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul prim_;
  mutable dnnl::memory src_, dst_;
  mutable dnnl::memory converted_src_;  // A in the compute type (when it differs)
  dnnl::reorder convert_src_;
  std::unordered_map<int, dnnl::memory> args_;
};

}  // namespace joule::kernels
