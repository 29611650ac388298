#include "joule/kernels/gemm/onednn_matmul.h"

#include "joule/kernels/conv/onednn.h"

namespace joule::kernels {

using dnnl::memory;

OnednnMatMulPrimitive::OnednnMatMulPrimitive(const memory::desc& src_md, memory user_weights,
                                             const memory::desc& bias_md, const memory::desc& dst_md,
                                             dnnl::primitive_attr attr, int threads, memory::data_type compute)
    : stream_(onednn_engine()) {
  onednn_set_threads(threads);
  const auto& eng = onednn_engine();
  const memory::desc uw = user_weights.get_desc();
  const bool convert = compute != memory::data_type::undef && compute != src_md.data_type();
  const memory::desc prim_src = convert ? memory::desc(src_md.dims(), compute, memory::format_tag::ab) : src_md;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  pd_ = dnnl::matmul::primitive_desc(
      dnnl::matmul::desc(prim_src,
                         memory::desc(uw.dims(), convert ? compute : uw.data_type(), memory::format_tag::any),
                         bias_md, dst_md),
      attr, eng);
  prim_ = dnnl::matmul(pd_);
  memory weights(pd_.weights_desc(), eng);
  dnnl::reorder(user_weights, weights).execute(stream_, user_weights, weights);
  stream_.wait();
  src_ = memory(src_md, eng, DNNL_MEMORY_NONE);
  dst_ = memory(dst_md, eng, DNNL_MEMORY_NONE);
  if (convert) {
    converted_src_ = memory(prim_src, eng);
    convert_src_ = dnnl::reorder(src_, converted_src_);
  }
  args_ = {{DNNL_ARG_SRC, convert ? converted_src_ : src_},
           {DNNL_ARG_WEIGHTS, weights},
           {DNNL_ARG_DST, dst_},
           {DNNL_ARG_SCRATCHPAD, memory(pd_.scratchpad_desc(), eng)}};
}

void OnednnMatMulPrimitive::execute(const void* a, void* y, int threads) const {
  onednn_set_threads(threads);
  src_.set_data_handle(const_cast<void*>(a));
  if (converted_src_) convert_src_.execute(stream_, src_, converted_src_);
  dst_.set_data_handle(y);
  prim_.execute(stream_, args_);
  stream_.wait();
}

}  // namespace joule::kernels
