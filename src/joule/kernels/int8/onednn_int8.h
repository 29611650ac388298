#pragma once
// What joule's two oneDNN int8 primitives (qconv, qmatmul) set up alike from an Int8Params:
// the code data type, the primitive attributes (output scales per tensor or per output channel,
// the runtime input zero point, activation and output zero point as post-ops, user scratchpad),
// and the constant arguments (float bias in accumulator units, the input zero point).
#include <dnnl.hpp>
#include <unordered_map>

#include "joule/kernels/int8/int8_node.h"

namespace joule::kernels {

dnnl::memory::data_type onednn_code_type(DType t);  // u8, s8, else f32
dnnl::primitive_attr onednn_int8_attr(const Int8Params& q);
// Adds DNNL_ARG_BIAS (when q has a bias; laid out as `bias_md`) and the input zero point.
void onednn_bind_int8_args(const Int8Params& q, const dnnl::memory::desc& bias_md,
                           std::unordered_map<int, dnnl::memory>& args);

}  // namespace joule::kernels
