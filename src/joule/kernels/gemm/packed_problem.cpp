#include "joule/kernels/gemm/packed_problem.h"

#include <algorithm>

namespace joule::kernels {

namespace {
std::string read_weight(const NodeView& v, PackedProblem* p) {
  p->w = v.constant(1);
  if (!p->w) return "B is not a constant";
  if (p->w->dtype() != DType::Float32 || p->w->rank() != 2) return "B is not a 2-D float32 matrix";
  if (!v.static_shape(0, &p->a) || v.in_types[0]->dtype != DType::Float32 || p->a.empty())
    return "A is not a static float32 tensor";
  if (!v.out_types[0] || !v.out_types[0]->is_static()) return "the output shape is not static";
  p->y = v.out_types[0]->static_shape();
  return "";
}
}  // namespace

std::string read_matmul(const NodeView& v, PackedProblem* p) {
  if (std::string why = read_weight(v, p); !why.empty()) return why;
  p->K = p->w->dim(0);
  p->N = p->w->dim(1);
  if (p->a.back() != p->K) return "inner dimensions differ";
  p->M = shape_numel(p->a) / std::max<int64_t>(1, p->K);
  if (shape_numel(p->y) != p->M * p->N) return "the output is not A's rows times N";
  if (std::string why = read_matmul_epilogue(v, p->N, &p->ep); !why.empty()) return why;
  if (p->ep.bias) {
    const Tensor* b = v.constant(2);
    if (!b) return "the bias is not a constant";
    p->bias.assign(b->data<float>(), b->data<float>() + p->N);
  }
  if (p->ep.residual && v.in_types[3]->static_shape() != p->y) return "residual does not have the output's shape";
  return "";
}

std::string read_gemm(const NodeView& v, PackedProblem* p) {
  if (std::string why = read_weight(v, p); !why.empty()) return why;
  if (v.node.attr_int("transA", 0) != 0) return "transA = 1";
  if (p->a.size() != 2) return "A is not 2-D";
  p->tb = v.node.attr_int("transB", 0) != 0;
  p->K = p->a[1];
  p->M = p->a[0];
  p->N = p->tb ? p->w->dim(0) : p->w->dim(1);
  if ((p->tb ? p->w->dim(1) : p->w->dim(0)) != p->K) return "inner dimensions differ";
  p->alpha = v.node.attr_float("alpha", 1.f);
  const float beta = v.node.attr_float("beta", 1.f);
  if (v.has(2) && beta != 0.f) {
    const Tensor* c = v.constant(2);
    if (!c || c->dtype() != DType::Float32) return "C is not a float32 constant";
    const Shape& cs = c->shape();
    const bool row = c->numel() == 1 || (c->numel() == p->N && cs.back() == p->N && (cs.size() == 1 || cs[0] == 1));
    if (cs.size() > 2 || !row) return "C is not a scalar or a row of N values";
    for (int64_t j = 0; j < p->N; ++j) p->bias.push_back(beta * c->data<float>()[c->numel() == 1 ? 0 : j]);
  }
  return "";
}

}  // namespace joule::kernels
