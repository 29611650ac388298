// The explicit table of algorithms (no static registration, which a linker may drop).
#include "joule/kernels/algorithm.h"
#include "joule/cuda/backend.h"
#include "joule/kernels/eltwise/eltwise.h"

namespace joule::kernels {

extern const Algorithm kConvDirect;
extern const Algorithm kConvIm2colGemm;
extern const Algorithm kConvImplicitGemm;
extern const Algorithm kConvFft;
extern const Algorithm kConvWinograd;
extern const Algorithm kConvWinogradF2;
extern const Algorithm kConvOnednn;
extern const Algorithm kConvOnednnBf16;
extern const Algorithm kConvWinogradBf16;
extern const Algorithm kConvWinogradF2Bf16;
extern const Algorithm kConvGrouped;
extern const Algorithm kConvImplicitNhwc;
extern const Algorithm kGemmOnednnBf16;
extern const Algorithm kMatMulOnednnBf16;
extern const Algorithm kMatMulOnednnBf16Rt;
extern const Algorithm kLookupPermute;
extern const Algorithm kGemmBlas;
extern const Algorithm kMatMulBlas;
extern const Algorithm kGemmOnednn;
extern const Algorithm kMatMulOnednn;
extern const Algorithm kGemmOnednnPacked;
extern const Algorithm kMatMulOnednnPacked;
extern const Algorithm kGemmSmallM;
extern const Algorithm kMatMulSmallM;
extern const Algorithm kQConvOnednnInt8;
extern const Algorithm kQMatMulOnednnInt8;
extern const Algorithm kQConvEmulated;
extern const Algorithm kQMatMulEmulated;
extern const Algorithm kQMatMulAvx2Int8;
extern const Algorithm kConvGradDataOnednn;
extern const Algorithm kConvGradWeightOnednn;
extern const Algorithm kUnarySimd;
extern const Algorithm kBinarySimd;
extern const Algorithm kPoolSimd;
extern const Algorithm kTransposeTiled;
extern const Algorithm kConcatCopy;
extern const Algorithm kSliceCopy;
extern const Algorithm kSoftmaxSimd;
extern const Algorithm kLayerNormSimd;
extern const Algorithm kBatchNormSimd;
extern const Algorithm kRecurrentFused;
extern const Algorithm kRoiAlignChannels;
extern const Algorithm kConvTransposeGemm;
extern const Algorithm kQuantizeSimd;
extern const Algorithm kGatherCopy;
extern const Algorithm kViewAlias;
bool is_recurrent(const ir::Node& n);  // kernels/recurrent/recurrent.cpp

const std::vector<const Algorithm*>& all_algorithms() {
  static const std::vector<const Algorithm*> all = [] {
    std::vector<const Algorithm*> r = {&kConvDirect, &kConvIm2colGemm, &kConvImplicitGemm, &kConvFft, &kConvWinograd, &kConvWinogradF2, &kConvOnednn, &kConvOnednnBf16, &kConvWinogradBf16, &kConvWinogradF2Bf16, &kConvGrouped, &kConvImplicitNhwc,
                                                     &kGemmOnednnPacked, &kGemmOnednn, &kGemmBlas, &kGemmSmallM, &kGemmOnednnBf16, &kMatMulOnednnPacked, &kMatMulOnednn, &kMatMulBlas, &kMatMulSmallM, &kMatMulOnednnBf16, &kMatMulOnednnBf16Rt,
                                                     &kQConvOnednnInt8, &kQMatMulOnednnInt8, &kQMatMulAvx2Int8, &kQConvEmulated, &kQMatMulEmulated, &kConvGradDataOnednn,
                                                     &kConvGradWeightOnednn, &kUnarySimd, &kBinarySimd, &kPoolSimd, &kTransposeTiled, &kConcatCopy, &kSliceCopy,
                                                     &kSoftmaxSimd, &kLayerNormSimd, &kBatchNormSimd, &kRecurrentFused, &kRoiAlignChannels, &kConvTransposeGemm, &kQuantizeSimd, &kLookupPermute, &kGatherCopy, &kViewAlias};
    for (const Algorithm* a : cuda::algorithms()) r.push_back(a);
    return r;
  }();
  return all;
}

std::string op_class_of(const ir::Node& n) {
  if (n.domain.empty() || n.domain == "ai.onnx") {
    if (n.op_type == "Conv") return "conv";
    if (n.op_type == "Gemm") return "gemm";
    if (n.op_type == "MatMul") return "matmul";
  }
  if (n.domain == "joule" && n.op_type == "FusedConv") return "conv";
  if (n.domain == "joule" && n.op_type == "FusedMatMul") return "matmul";
  if (n.domain == "joule" && n.op_type == "QConv") return "qconv";
  if (n.domain == "joule" && n.op_type == "QMatMul") return "qmatmul";
  if (n.domain == "joule" && n.op_type == "LookupTable") return "lookup";
  if (n.domain == "joule" && n.op_type == "ConvGradData") return "conv_grad_data";
  if (n.domain == "joule" && n.op_type == "ConvGradWeight") return "conv_grad_weight";
  if (is_unary_eltwise(n)) return "unary";
  if (is_binary_eltwise(n)) return "binary";
  if (is_pool(n)) return "pool";
  if (is_quantize(n)) return "quantize";
  if (std::string m = movement_class(n); !m.empty()) return m;
  if (std::string m = norm_class(n); !m.empty()) return m;
  if (is_recurrent(n)) return "recurrent";
  if (n.domain.empty() && n.op_type == "RoiAlign") return "roi_align";
  if (n.domain.empty() && n.op_type == "ConvTranspose") return "conv_transpose";
  return "";
}

std::vector<const Algorithm*> algorithms_for(const std::string& op_class, bool gpu) {
  std::vector<const Algorithm*> r;
  for (const Algorithm* a : all_algorithms())
    if (op_class == a->op_class && a->on_gpu() == gpu) r.push_back(a);
  return r;
}

const Algorithm* find_algorithm(const std::string& op_class, const std::string& name) {
  for (const Algorithm* a : all_algorithms())
    if (op_class == a->op_class && name == a->name) return a;
  return nullptr;
}

const Algorithm* find_algorithm(const std::string& op_class, const std::string& name, bool gpu) {
  for (const Algorithm* a : all_algorithms())
    if (op_class == a->op_class && name == a->name && a->on_gpu() == gpu) return a;
  return nullptr;
}

NodeView view_of(const ir::Graph& g, const ir::Node& n, int threads) {
  NodeView v{n, {}, {}, {}, threads, g.opset(n.domain)};
  if (n.meta.contains("device") && n.meta["device"].is_string())
    v.device = cuda::parse_device_syntax(n.meta["device"].get<std::string>());
  for (const std::string& in : n.inputs) {
    v.in_types.push_back(in.empty() ? nullptr : g.type_of(in));
    auto it = in.empty() ? g.initializers.end() : g.initializers.find(in);
    v.constants.push_back(it == g.initializers.end() ? nullptr : &it->second);
  }
  for (const std::string& out : n.outputs) v.out_types.push_back(out.empty() ? nullptr : g.type_of(out));
  return v;
}

bool NodeView::static_shape(size_t i, Shape* out) const {
  if (!has(i) || !in_types[i]->is_static()) return false;
  *out = in_types[i]->static_shape();
  return true;
}

}  // namespace joule::kernels
