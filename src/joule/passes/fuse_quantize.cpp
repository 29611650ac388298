// A float Add or Mul whose output only a per-tensor QuantizeLinear reads becomes part of it:
// joule's QuantizeLinear with the other operand as input B and binary = "Add" | "Mul" (ops/
// quantize_linear.cpp). The integer plan's float glue — a squeeze-and-excitation gate's Mul and
// a residual Add before the next layer's quantization, with a folded Relu too — then runs as one
// pass that writes the codes, instead of a float tensor written and read again. Exact: the
// fused kernel does the same float arithmetic (x op B, then the quantization) as the two ops.
// Runs after channels_last (the gate is then an N,H,W,C [N,1,1,C] tensor); fuses only where the
// quantize kernel's B layout ([P, 1, R] over [P, Q, R]) fits, so the fused node never falls
// back to a slower kernel than the two ops had.
#include <unordered_set>

#include "joule/ops/util.h"
#include "joule/passes/infer_shapes.h"
#include "joule/passes/pass.h"

namespace joule::passes {

namespace {

bool float32(const ir::Graph& g, const std::string& v, Shape* shape) {
  const ir::TensorType* t = g.type_of(v);
  if (!t || t->dtype != DType::Float32 || !t->is_static()) return false;
  *shape = t->static_shape();
  return true;
}

}  // namespace

PassResult fuse_quantize(ir::Graph& g, const PassOptions&) {
  PassResult r;
  try_infer_shapes(g);
  const auto prod = g.producers();
  const auto cons = g.consumers();
  std::unordered_set<std::string> outputs(g.outputs.begin(), g.outputs.end());
  int fused = 0;
  for (auto& up : g.nodes) {
    ir::Node& q = *up;
    if (q.op_type != "QuantizeLinear" || !(q.domain == "joule" || q.domain.empty()) || q.inputs.size() < 2 || q.has_input(3) ||
        q.outputs.size() != 1)
      continue;
    const Tensor* s = g.is_initializer(q.inputs[1]) ? &g.initializers.at(q.inputs[1]) : nullptr;
    if (!s || s->numel() != 1 || s->dtype() != DType::Float32 || q.attr_int("block_size", 0) != 0) continue;
    auto p = prod.find(q.inputs[0]);
    if (p == prod.end()) continue;
    ir::Node& op = *g.nodes[p->second];
    if (!op.domain.empty() || (op.op_type != "Add" && op.op_type != "Mul") || op.inputs.size() != 2 ||
        op.outputs.size() != 1 || outputs.count(op.outputs[0]) || op.has_attr("broadcast") || op.has_attr("axis"))
      continue;  // (before opset 7, broadcast/axis align B otherwise)
    auto c = cons.find(op.outputs[0]);
    if (c == cons.end() || c->second.size() != 1) continue;
    Shape a, b, y;
    if (!float32(g, op.inputs[0], &a) || !float32(g, op.inputs[1], &b) || !float32(g, op.outputs[0], &y)) continue;
    // x: the operand of the output's shape; B: the one broadcast to it (commutative ops).
    const bool swap = a != y;
    if (swap && b != y) continue;
    int64_t pp, qq, rr;
    if (!ops::broadcast_as_pqr(y, swap ? a : b, &pp, &qq, &rr)) continue;
    const std::string x = op.inputs[swap ? 1 : 0], other = op.inputs[swap ? 0 : 1];
    q.domain = "joule";
    q.inputs.resize(4);
    q.inputs[0] = x;
    q.inputs[3] = other;
    q.attrs["binary"] = op.op_type;
    ++fused;
  }
  if (fused) {
    g.opsets["joule"] = std::max<int64_t>(1, g.opset("joule"));
    g.remove_dead_nodes();
  }
  r.changed = fused > 0;
  r.info = {{"fused", fused}};
  return r;
}

}  // namespace joule::passes
