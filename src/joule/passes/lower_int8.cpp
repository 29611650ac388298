// INT8 lowering of a QDQ simulation graph (quant/qdq.cpp, or any standard ONNX QDQ model):
//  1. QuantizeLinear is moved above MaxPool / Reshape / Flatten / Transpose / Squeeze /
//     Unsqueeze when it is the only consumer of their output and they the only consumer of
//     their input (Q is elementwise and monotone, so Q(maxpool(x)) = maxpool(Q(x)) exactly).
//  2. DequantizeLinear(x codes) + DequantizeLinear(const int8 weight) [+ float bias | DQ(const
//     int32 bias)] -> Conv / FusedConv / MatMul / Gemm (transA=0, alpha=beta=1) becomes a joule
//     QConv / QMatMul reading the codes, with a float output. A FusedConv's activation moves
//     into the QConv; its residual stays a float Add (followed by the activation).
//  3. A float QConv / QMatMul absorbs a following Relu / LeakyRelu / Clip (constant bounds) or
//     y * Sigmoid(y) (SiLU) / y * HardSigmoid(y) (HardSwish), and then a QuantizeLinear (per
//     tensor) that is its output's only consumer: it requantizes itself, so activations stay
//     8-bit between quantized layers.
//  4. QuantizeLinear(DequantizeLinear(c)) with the same scale, zero point and type is c.
//  5. A per-tensor QuantizeLinear of a Relu / Clip (constant bounds) output that it alone reads
//     becomes joule's QuantizeLinear with clip_min / clip_max, reading the Relu's input: the
//     same codes (quantization is monotone), one pass instead of two (ResNet's Add + Relu,
//     DenseNet's BN + Relu before each integer conv).
//  6. A per-tensor QuantizeLinear of a chain of elementwise ops (scalar constants aside) whose
//     only source is a per-tensor 8-bit DequantizeLinear, Q(f(DQ(c))) — a SiLU or HardSwish
//     between two quantization points, say — becomes a joule LookupTable of c: the chain's 256
//     possible results, computed here by the ops' reference kernels, exactly as the QDQ model
//     defines them. Runs before 5, whose clamp folding it covers too. A chain from such a
//     DequantizeLinear whose float result other ops read (a SiLU feeding a squeeze-and-excitation
//     block) becomes a LookupTable of 256 float32 values, one read per code instead of a
//     dequantization and the chain's passes.
// Anything not matched exactly stays on the float path. Dead DQ/Q nodes and initializers are
// removed at the end. Not in the default pipeline: `--int8 real` runs it before the default
// pipeline (whose fold_constants would fold the weights' DequantizeLinear into float weights).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_set>

#include "joule/core/thread_pool.h"
#include "joule/ops/op.h"
#include "joule/passes/infer_shapes.h"
#include "joule/passes/pass.h"

namespace joule::passes {

namespace {

// An ONNX node of type `op` with the inputs and the output the patterns read: a malformed one (no
// output, too few inputs) matches nothing and is left to check_support, which names it.
bool is_onnx(const ir::Node& n, const char* op) {
  if (!n.domain.empty() || n.op_type != op || n.outputs.empty() || n.outputs[0].empty() || n.inputs.empty()) return false;
  const std::string t = op;
  const bool two = t == "QuantizeLinear" || t == "DequantizeLinear" || t == "Conv" || t == "MatMul" || t == "Gemm" ||
                   t == "Mul" || t == "Add";
  return n.inputs.size() >= (two ? 2u : 1u);
}

class Lowering {
 public:
  explicit Lowering(ir::Graph& g) : g_(g) {
    for (auto& o : g.outputs) outputs_.insert(o);
    refresh();
  }

  // Rebuilds the producer / consumer maps, ignoring removed nodes (erased by finish()).
  void refresh() {
    prod_.clear();
    cons_.clear();
    for (auto& n : g_.nodes) {
      if (removed_.count(n.get())) continue;
      for (auto& o : n->outputs)
        if (!o.empty()) prod_[o] = n.get();
      for (auto& i : n->inputs)
        if (!i.empty()) cons_[i].push_back(n.get());
    }
  }

  ir::Node* producer(const std::string& v, const char* op) const {
    auto it = prod_.find(v);
    return it != prod_.end() && is_onnx(*it->second, op) && !removed_.count(it->second) ? it->second : nullptr;
  }
  ir::Node* only_consumer(const std::string& v) const {
    if (outputs_.count(v)) return nullptr;
    auto it = cons_.find(v);
    if (it == cons_.end() || it->second.size() != 1 || removed_.count(it->second[0])) return nullptr;
    return it->second[0];
  }
  const Tensor* init(const std::string& v) const {
    auto it = g_.initializers.find(v);
    return it == g_.initializers.end() ? nullptr : &it->second;
  }
  DType dtype_of(const std::string& v) const {
    if (const Tensor* t = init(v)) return t->dtype();
    const ir::TensorType* t = g_.type_of(v);
    return t ? t->dtype : DType::Undefined;
  }
  std::string add_init(const std::string& base, Tensor t) {
    const std::string name = g_.unique_name(base);
    g_.initializers[name] = std::move(t);
    return name;
  }
  void remove(ir::Node* n) { removed_.insert(n); }
  void finish() {
    std::erase_if(g_.nodes, [&](const std::unique_ptr<ir::Node>& n) { return removed_.count(n.get()) != 0; });
    removed_.clear();
  }

  // A QuantizeLinear / DequantizeLinear with a constant scalar scale and (absent or constant
  // scalar) zero point: the scale, zero point and code type.
  struct Scalar {
    float scale = 0;
    int64_t zp = 0;
    DType type = DType::UInt8;
  };
  bool per_tensor(const ir::Node& n, DType codes, Scalar* s) const {
    const Tensor* sc = init(n.inputs.at(1));
    if (!sc || sc->numel() != 1 || sc->dtype() != DType::Float32) return false;
    s->scale = sc->data<float>()[0];
    s->type = codes;
    if (n.has_input(2)) {
      const Tensor* z = init(n.inputs[2]);
      if (!z || z->numel() != 1) return false;
      s->zp = z->value_as_int(0);
      s->type = z->dtype();
    } else if (n.has_attr("output_dtype")) {
      return false;
    }
    return s->type == DType::UInt8 || s->type == DType::Int8;
  }

  // ---- 1. move Q above data movement
  int move_quantize() {
    static const std::unordered_set<std::string> kMovable = {"MaxPool", "Reshape", "Flatten",
                                                             "Transpose", "Squeeze", "Unsqueeze"};
    int moved = 0;
    for (bool again = true; again;) {
      again = false;
      for (auto& up : g_.nodes) {
        ir::Node& q = *up;
        if (!is_onnx(q, "QuantizeLinear")) continue;
        Scalar s;
        if (!per_tensor(q, DType::UInt8, &s)) continue;
        auto it = prod_.find(q.inputs[0]);
        if (it == prod_.end()) continue;
        ir::Node& p = *it->second;
        if (!p.domain.empty() || !kMovable.count(p.op_type) || p.inputs.empty()) continue;
        if (p.outputs.size() != 1 || only_consumer(p.outputs[0]) != &q || only_consumer(p.inputs[0]) != &p) continue;
        const std::string u = p.inputs[0], codes = q.outputs[0];
        const std::string uq = g_.unique_name(u + "_quantized");
        g_.types.erase(p.outputs[0]);
        q.inputs[0] = u;
        q.outputs[0] = uq;
        p.inputs[0] = uq;
        p.outputs[0] = codes;
        ++moved;
        again = true;
        refresh();
        break;
      }
    }
    return moved;
  }

  // ---- 2. integer compute nodes
  // The codes and parameters of a DequantizeLinear producing `v`, per tensor.
  ir::Node* dq_activation(const std::string& v) const {
    ir::Node* d = producer(v, "DequantizeLinear");
    if (!d) return nullptr;
    const DType t = dtype_of(d->inputs[0]);
    Scalar s;
    return (t == DType::UInt8 || t == DType::Int8) && per_tensor(*d, t, &s) ? d : nullptr;
  }
  // A DequantizeLinear of a constant int8 weight with constant scale / zero point, per tensor
  // or along `axis` of a weight with `channels` entries on that axis.
  ir::Node* dq_weight(const std::string& v, int axis, int64_t channels) const {
    ir::Node* d = producer(v, "DequantizeLinear");
    if (!d) return nullptr;
    const Tensor* w = init(d->inputs[0]);
    const Tensor* s = init(d->inputs[1]);
    if (!w || w->dtype() != DType::Int8 || !s || s->dtype() != DType::Float32) return nullptr;
    const Tensor* z = d->has_input(2) ? init(d->inputs[2]) : nullptr;
    if (d->has_input(2) && (!z || z->numel() != s->numel())) return nullptr;
    if (s->numel() == 1) return d;
    int64_t a = d->attr_int("axis", 1);
    if (a < 0) a += w->rank();
    return s->rank() == 1 && s->numel() == channels && a == axis ? d : nullptr;
  }
  // The float32 [n] bias for value `b` ("" for none): a float initializer or the dequantized
  // values of DequantizeLinear(const int32 codes). `ok` false when it is neither.
  std::string float_bias(const std::string& b, int64_t n, bool* ok) {
    *ok = true;
    if (b.empty()) return "";
    if (const Tensor* t = init(b)) {
      if (t->dtype() != DType::Float32 || t->numel() != n) return *ok = false, "";
      return t->rank() == 1 ? b : add_init(b + "_1d", t->reshaped({n}));
    }
    ir::Node* d = producer(b, "DequantizeLinear");
    const Tensor* c = d ? init(d->inputs[0]) : nullptr;
    const Tensor* s = d ? init(d->inputs[1]) : nullptr;
    const Tensor* z = d && d->has_input(2) ? init(d->inputs[2]) : nullptr;
    if (!c || c->dtype() != DType::Int32 || c->numel() != n || !s || s->dtype() != DType::Float32 ||
        (s->numel() != 1 && s->numel() != n) || (d->has_input(2) && (!z || z->numel() != s->numel())))
      return *ok = false, "";
    Tensor f(DType::Float32, {n});
    for (int64_t i = 0; i < n; ++i) {  // as DequantizeLinear computes it
      const int64_t k = s->numel() == 1 ? 0 : i;
      f.data<float>()[i] = static_cast<float>(c->value_as_int(i) - (z ? z->value_as_int(k) : 0)) * s->data<float>()[k];
    }
    return add_init(b + "_dequantized", std::move(f));
  }

  // The int8 codes, scale and zero point of weight `v` (DequantizeLinear of constant codes), per
  // tensor or along `axis`.
  bool weight_codes(const std::string& v, int axis, std::string* codes, std::string* scale, std::string* zp) {
    ir::Node* d0 = producer(v, "DequantizeLinear");
    const Tensor* w = d0 ? init(d0->inputs[0]) : nullptr;
    ir::Node* d = w && w->rank() > axis ? dq_weight(v, axis, w->dim(axis)) : nullptr;
    if (!d) return false;
    *codes = d->inputs[0];
    *scale = d->inputs[1];
    *zp = d->has_input(2) ? d->inputs[2] : "";
    return true;
  }

  bool lower_conv(ir::Node& n) {
    ir::Node* dx = dq_activation(n.inputs[0]);
    std::string wc, ws, wz;
    if (!dx || !weight_codes(n.inputs.at(1), 0, &wc, &ws, &wz)) return false;
    const Tensor& w = g_.initializers.at(wc);
    if (w.rank() < 3) return false;
    bool ok;
    const std::string bias = float_bias(n.has_input(2) ? n.inputs[2] : "", w.dim(0), &ok);
    if (!ok) return false;
    const bool fused = n.domain == "joule";
    const std::string residual = fused && n.has_input(3) ? n.inputs[3] : "";
    n.inputs = {dx->inputs[0], dx->inputs[1], dx->has_input(2) ? dx->inputs[2] : "", wc, ws, wz, bias};
    n.op_type = "QConv";
    n.domain = "joule";
    if (residual.empty()) return true;
    // act(conv + z): the QConv computes conv, a float Add and the activation follow.
    ir::Node add;
    add.op_type = "Add";
    add.name = g_.unique_name(n.name + "_residual");
    const std::string sum = n.attrs.count("activation") && !n.attr_string("activation", "").empty()
                                ? g_.unique_name(n.outputs[0] + "_sum")
                                : n.outputs[0];
    const std::string conv = g_.unique_name(n.outputs[0] + "_conv");
    add.inputs = {conv, residual};
    add.outputs = {sum};
    if (sum != n.outputs[0]) {
      ir::Node act;
      act.op_type = n.attr_string("activation", "");
      act.name = g_.unique_name(n.name + "_act");
      act.inputs = {sum};
      act.outputs = {n.outputs[0]};
      const std::vector<float> p = n.attr_floats("activation_params", {});
      if (act.op_type == "LeakyRelu") act.attrs["alpha"] = p.at(0);
      if (act.op_type == "Clip") {
        act.inputs.push_back(add_init(n.name + "_min", Tensor::scalar<float>(p.at(0))));
        act.inputs.push_back(add_init(n.name + "_max", Tensor::scalar<float>(p.at(1))));
      }
      new_nodes_.push_back(std::move(act));
    }
    new_nodes_.push_back(std::move(add));
    n.attrs.erase("activation");
    n.attrs.erase("activation_params");
    n.outputs[0] = conv;
    return true;
  }

  bool lower_matmul(ir::Node& n) {
    const bool gemm = n.op_type == "Gemm";
    if (gemm && (n.attr_int("transA", 0) != 0 || n.attr_float("alpha", 1.f) != 1.f ||
                 (n.has_input(2) && n.attr_float("beta", 1.f) != 1.f)))
      return false;
    const bool trans_b = gemm && n.attr_int("transB", 0) != 0;
    ir::Node* dx = dq_activation(n.inputs[0]);
    std::string wc, ws, wz;
    if (!dx || !weight_codes(n.inputs.at(1), trans_b ? 0 : 1, &wc, &ws, &wz)) return false;
    const Tensor* w = &g_.initializers.at(wc);
    if (w->rank() != 2) return false;
    const int64_t N = trans_b ? w->dim(0) : w->dim(1);
    bool ok;
    const std::string bias = float_bias(gemm && n.has_input(2) ? n.inputs[2] : "", N, &ok);
    if (!ok) return false;
    std::string codes = wc;
    if (trans_b) {  // [N, K] -> [K, N]
      const int64_t K = w->dim(1);
      Tensor t(DType::Int8, {K, N});
      for (int64_t i = 0; i < N; ++i)
        for (int64_t k = 0; k < K; ++k) t.data<int8_t>()[k * N + i] = w->data<int8_t>()[i * K + k];
      codes = add_init(codes + "_t", std::move(t));
    }
    n.inputs = {dx->inputs[0], dx->inputs[1], dx->has_input(2) ? dx->inputs[2] : "", codes, ws, wz, bias};
    n.attrs.clear();
    n.op_type = "QMatMul";
    n.domain = "joule";
    return true;
  }

  std::pair<int, int> lower_compute() {
    int convs = 0, matmuls = 0;
    for (auto& up : g_.nodes) {
      ir::Node& n = *up;
      if ((is_onnx(n, "Conv") || (n.domain == "joule" && n.op_type == "FusedConv" && n.inputs.size() >= 2)) && n.outputs.size() == 1)
        convs += lower_conv(n);
      else if ((is_onnx(n, "MatMul") || is_onnx(n, "Gemm")) && n.outputs.size() == 1)
        matmuls += lower_matmul(n);
    }
    for (auto& n : new_nodes_) g_.add_node(std::move(n));
    new_nodes_.clear();
    refresh();
    return {convs, matmuls};
  }

  // ---- 3. activation and requantization
  bool clip_bounds(const ir::Node& c, std::vector<float>* p) const {
    float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
    if (g_.opset(c.domain) < 11) {
      lo = c.attr_float("min", lo);
      hi = c.attr_float("max", hi);
    } else {
      for (size_t i = 1; i < 3; ++i) {
        if (!c.has_input(i)) continue;
        const Tensor* t = init(c.inputs[i]);
        if (!t || t->numel() != 1 || t->dtype() != DType::Float32) return false;
        (i == 1 ? lo : hi) = t->data<float>()[0];
      }
    }
    *p = {lo, hi};
    return true;
  }

  // y * gate(y) on y = n's output, with gate Sigmoid (SiLU) or HardSigmoid(1/6, 1/2)
  // (HardSwish), as PyTorch exports them: "SiLU" / "HardSwish" and the Mul, or "".
  std::string swish(const ir::Node& n, ir::Node** gate, ir::Node** mul) const {
    const std::string& y = n.outputs[0];
    auto it = cons_.find(y);
    if (outputs_.count(y) || it == cons_.end() || it->second.size() != 2) return "";
    for (ir::Node* g : it->second) {
      if (!g->domain.empty() || g->inputs.size() != 1 || g->outputs.size() != 1) continue;
      const bool hard = g->op_type == "HardSigmoid";
      if (g->op_type != "Sigmoid" &&
          !(hard && std::fabs(g->attr_float("alpha", 0.2f) - 1.f / 6) < 1e-6f && g->attr_float("beta", 0.5f) == 0.5f))
        continue;
      ir::Node* m = only_consumer(g->outputs[0]);
      if (!m || !is_onnx(*m, "Mul") || m->inputs.size() != 2) continue;
      const bool pair = (m->inputs[0] == y && m->inputs[1] == g->outputs[0]) ||
                        (m->inputs[1] == y && m->inputs[0] == g->outputs[0]);
      if (!pair || (it->second[0] != m && it->second[1] != m)) continue;
      *gate = g;
      *mul = m;
      return hard ? "HardSwish" : "SiLU";
    }
    return "";
  }

  bool absorb_activation(ir::Node& n) {
    if (!n.attr_string("activation", "").empty()) return false;
    ir::Node *gate = nullptr, *mul = nullptr;
    if (const std::string kind = swish(n, &gate, &mul); !kind.empty()) {
      n.attrs["activation"] = kind;
      n.attrs["activation_params"] = std::vector<float>{};
      g_.types.erase(n.outputs[0]);
      n.outputs[0] = mul->outputs[0];
      remove(gate);
      remove(mul);
      refresh();
      return true;
    }
    ir::Node* a = only_consumer(n.outputs[0]);
    if (!a || !a->domain.empty() || a->outputs.size() != 1 || a->inputs.empty()) return false;
    std::vector<float> params;
    if (a->op_type == "LeakyRelu") {
      params = {a->attr_float("alpha", 0.01f)};
    } else if (a->op_type == "Clip") {
      if (!clip_bounds(*a, &params)) return false;
    } else if (a->op_type != "Relu") {
      return false;
    }
    n.attrs["activation"] = a->op_type;
    n.attrs["activation_params"] = params;
    g_.types.erase(n.outputs[0]);
    n.outputs[0] = a->outputs[0];
    remove(a);
    refresh();
    return true;
  }

  bool requantize(ir::Node& n) {
    ir::Node* q = only_consumer(n.outputs[0]);
    Scalar s;
    if (!q || !is_onnx(*q, "QuantizeLinear") || !per_tensor(*q, DType::UInt8, &s)) return false;
    n.inputs.resize(9);
    n.inputs[7] = q->inputs[1];
    n.inputs[8] = q->has_input(2) ? q->inputs[2] : "";
    g_.types.erase(n.outputs[0]);
    n.outputs[0] = q->outputs[0];
    remove(q);
    refresh();
    return true;
  }

  std::pair<int, int> fuse_epilogues() {
    int acts = 0, requants = 0;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      ir::Node& n = *g_.nodes[i];
      if (removed_.count(&n)) continue;
      if (n.domain != "joule" || (n.op_type != "QConv" && n.op_type != "QMatMul") || n.has_input(7)) continue;
      acts += absorb_activation(n);
      requants += requantize(n);
    }
    return {acts, requants};
  }

  // ---- 4. Q(DQ(c)) with the same parameters
  int drop_pairs() {
    int dropped = 0;
    for (auto& up : g_.nodes) {
      ir::Node& q = *up;
      if (removed_.count(&q) || !is_onnx(q, "QuantizeLinear") || outputs_.count(q.outputs[0])) continue;
      ir::Node* d = producer(q.inputs[0], "DequantizeLinear");
      Scalar a, b;
      if (!d || !per_tensor(*d, dtype_of(d->inputs[0]), &a) || !per_tensor(q, DType::UInt8, &b)) continue;
      if (a.scale != b.scale || a.zp != b.zp || a.type != b.type || dtype_of(d->inputs[0]) != a.type) continue;
      dropped += replace_uses(g_, q.outputs[0], d->inputs[0]) > 0;
    }
    refresh();
    return dropped;
  }

  // ---- 5. Q(Relu(x)), Q(Clip(x)) -> joule's QuantizeLinear clamping x first
  int fold_clamps() {
    int folded = 0;
    for (auto& up : g_.nodes) {
      ir::Node& q = *up;
      Scalar sc;
      if (removed_.count(&q) || !is_onnx(q, "QuantizeLinear") || !per_tensor(q, DType::UInt8, &sc)) continue;
      auto it = prod_.find(q.inputs[0]);
      if (it == prod_.end() || removed_.count(it->second)) continue;
      ir::Node& a = *it->second;
      if (!a.domain.empty() || a.outputs.size() != 1 || a.inputs.empty() || only_consumer(a.outputs[0]) != &q) continue;
      std::vector<float> bounds;
      if (a.op_type == "Relu") bounds = {0.f, std::numeric_limits<float>::infinity()};
      else if (a.op_type != "Clip" || !clip_bounds(a, &bounds)) continue;
      if (!(bounds[0] <= bounds[1])) continue;
      q.domain = "joule";
      if (std::isfinite(bounds[0])) q.attrs["clip_min"] = bounds[0];
      if (std::isfinite(bounds[1])) q.attrs["clip_max"] = bounds[1];
      q.inputs[0] = a.inputs[0];
      remove(&a);
      ++folded;
    }
    refresh();
    return folded;
  }

  // ---- 6. Q(f(DQ(c))) -> joule LookupTable
  // Elementwise ops a code's value alone decides (scalar constants as the other operands).
  static bool tabulable(const ir::Node& n) {
    static const std::unordered_set<std::string> kOps = {
        "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Relu", "LeakyRelu", "Elu", "Selu", "Celu", "Softplus",
        "Softsign", "Exp", "Log", "Neg", "Abs", "Sqrt", "Reciprocal", "Erf", "Clip", "Mul", "Add", "Sub", "Div",
        "Max", "Min", "Pow", "Mish", "Identity", "Floor", "Ceil", "Round", "Sign", "ThresholdedRelu", "Shrink"};
    return n.domain.empty() && n.outputs.size() == 1 && kOps.count(n.op_type);
  }

  // The chain of tabulable nodes between `value` and one DequantizeLinear (its source), each
  // value of which only the chain reads — and q, when q is given; without q, `value` (the
  // chain's float result) may have any readers. False when `value` is not such a chain.
  bool chain_of(const std::string& value, const ir::Node* q, std::vector<ir::Node*>* chain, ir::Node** source) const {
    std::unordered_set<const ir::Node*> seen;
    std::vector<std::string> stack{value};
    *source = nullptr;
    while (!stack.empty()) {
      const std::string v = stack.back();
      stack.pop_back();
      if (const Tensor* c = init(v)) {
        if (c->numel() != 1 || c->dtype() != DType::Float32) return false;
        continue;
      }
      auto it = prod_.find(v);
      if (it == prod_.end() || removed_.count(it->second)) return false;  // a graph input
      ir::Node* p = it->second;
      if (seen.count(p)) continue;
      if (is_onnx(*p, "DequantizeLinear")) {
        if ((*source && *source != p) || !dq_activation(v)) return false;
        *source = p;
        continue;
      }
      if (!tabulable(*p) || chain->size() >= 32) return false;
      seen.insert(p);
      chain->push_back(p);
      for (const std::string& i : p->inputs)
        if (!i.empty()) stack.push_back(i);
    }
    if (!*source || chain->empty()) return false;
    for (const ir::Node* p : *chain) {
      if (!q && p->outputs[0] == value) continue;
      if (outputs_.count(p->outputs[0])) return false;
      auto it = cons_.find(p->outputs[0]);
      if (it != cons_.end())
        for (const ir::Node* c : it->second)
          if (c != q && !seen.count(c)) return false;
    }
    return true;
  }

  // What q(chain(source(c))) — or, without q, chain(source(c)) ending in `value` — gives for each
  // of the 256 codes c, by the ops' reference kernels (the QDQ model's float32 arithmetic): the
  // LookupTable's entries, indexed by the code's byte; undefined when the chain cannot be run.
  Tensor table_of(const std::string& value, const ir::Node* q, const std::vector<ir::Node*>& chain,
                  const ir::Node& source) const {
    const DType codes = dtype_of(source.inputs[0]);
    Tensor c(codes, {256});
    for (int i = 0; i < 256; ++i) static_cast<uint8_t*>(c.raw())[i] = static_cast<uint8_t>(i);
    std::unordered_map<std::string, Tensor> values{{source.inputs[0], c}};
    ThreadPool pool(1);
    auto run = [&](const ir::Node& n) {
      const ops::OpDef* def = ops::find_op(n.domain, n.op_type);
      if (!def) fail_internal(n.where() + ": no op definition");
      std::vector<const Tensor*> in;
      for (const std::string& i : n.inputs) {
        if (i.empty()) {
          in.push_back(nullptr);
        } else if (const Tensor* t = init(i)) {
          in.push_back(t);
        } else {
          in.push_back(&values.at(i));
        }
      }
      ops::KernelContext k{n, g_.opset(n.domain), in, std::vector<Tensor>(n.outputs.size()), &pool};
      def->run(k);
      values[n.outputs[0]] = k.outputs.at(0);
    };
    run(source);
    // Each node once its inputs are known (the chain was collected from its end back).
    std::vector<const ir::Node*> todo(chain.begin(), chain.end());
    while (!todo.empty()) {
      auto ready = std::find_if(todo.begin(), todo.end(), [&](const ir::Node* n) {
        return std::all_of(n->inputs.begin(), n->inputs.end(),
                           [&](const std::string& i) { return i.empty() || init(i) || values.count(i); });
      });
      if (ready == todo.end()) return Tensor();  // not a DAG over the source: leave it alone
      run(**ready);
      todo.erase(ready);
    }
    if (q) run(*q);
    return values.at(q ? q->outputs[0] : value);
  }

  // A LookupTable of `source`'s codes writing `out` in place of the chain (and q).
  void replace_by_table(const ir::Node& source, const std::vector<ir::Node*>& chain, ir::Node* q, const Tensor& table,
                        const std::string& out) {
    ir::Node t;
    t.op_type = "LookupTable";
    t.domain = "joule";
    t.name = g_.unique_name((q ? q->name : chain.front()->name) + "_table");
    t.inputs = {source.inputs[0]};
    t.outputs = {out};
    t.attrs["to"] = int64_t{dtype_to_onnx(table.dtype())};
    if (table.dtype() == DType::Float32) {
      t.attrs["values"] = std::vector<float>(table.data<float>(), table.data<float>() + 256);
    } else {
      std::vector<int64_t> v(256);
      for (int64_t i = 0; i < 256; ++i) v[static_cast<size_t>(i)] = table.value_as_int(i);
      t.attrs["table"] = v;
    }
    for (ir::Node* p : chain) {
      if (p->outputs[0] != out) g_.types.erase(p->outputs[0]);
      remove(p);
    }
    if (q) remove(q);
    new_nodes_.push_back(std::move(t));
  }

  std::pair<int, int> tabulate() {
    int codes = 0, floats = 0;
    // Chains ending in a QuantizeLinear: a table of codes.
    for (size_t qi = 0; qi < g_.nodes.size(); ++qi) {
      ir::Node& q = *g_.nodes[qi];
      Scalar sq;
      if (removed_.count(&q) || !is_onnx(q, "QuantizeLinear") || !per_tensor(q, DType::UInt8, &sq)) continue;
      std::vector<ir::Node*> chain;
      ir::Node* source = nullptr;
      if (!chain_of(q.inputs[0], &q, &chain, &source)) continue;
      const Tensor table = table_of(q.inputs[0], &q, chain, *source);
      if (!table.defined()) continue;
      replace_by_table(*source, chain, &q, table, q.outputs[0]);
      ++codes;
    }
    // Chains ending in float (a SiLU whose result a squeeze-and-excitation block reads): a table
    // of float32 values, the longest chain only.
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      ir::Node& end = *g_.nodes[i];
      if (removed_.count(&end) || !tabulable(end)) continue;
      std::vector<ir::Node*> chain;
      ir::Node* source = nullptr;
      if (!chain_of(end.outputs[0], nullptr, &chain, &source)) continue;
      bool longer = false;
      if (auto it = cons_.find(end.outputs[0]); it != cons_.end())
        for (const ir::Node* u : it->second) {
          std::vector<ir::Node*> c2;
          ir::Node* s2 = nullptr;
          longer = longer || (!removed_.count(u) && tabulable(*u) && chain_of(u->outputs[0], nullptr, &c2, &s2));
        }
      if (longer) continue;
      const Tensor table = table_of(end.outputs[0], nullptr, chain, *source);
      if (!table.defined() || table.dtype() != DType::Float32) continue;
      replace_by_table(*source, chain, nullptr, table, end.outputs[0]);
      ++floats;
    }
    for (auto& n : new_nodes_) g_.add_node(std::move(n));
    new_nodes_.clear();
    refresh();
    return {codes, floats};
  }

 private:
  ir::Graph& g_;
  std::unordered_set<std::string> outputs_;
  std::unordered_map<std::string, ir::Node*> prod_;
  std::unordered_map<std::string, std::vector<ir::Node*>> cons_;
  std::unordered_set<const ir::Node*> removed_;
  std::vector<ir::Node> new_nodes_;
};

}  // namespace

PassResult lower_int8(ir::Graph& g, const PassOptions& o) {
  PassResult r;
  try_infer_shapes(g);
  Lowering l(g);
  const int moved = l.move_quantize();
  const auto [convs, matmuls] = l.lower_compute();
  const auto [acts, requants] = l.fuse_epilogues();
  const int dropped = l.drop_pairs();
  const auto [tables, float_tables] = l.tabulate();
  const int clamps = l.fold_clamps();
  l.finish();
  r.changed = moved + convs + matmuls + dropped + tables + float_tables + clamps > 0;
  if (r.changed) {
    g.opsets["joule"] = std::max<int64_t>(1, g.opset("joule"));
    g.sort_topologically();
    eliminate_dead_code(g, o);
    try_infer_shapes(g);
  }
  r.info = {{"qconv", convs},          {"qmatmul", matmuls},         {"activations_fused", acts},
            {"requantized", requants}, {"quantize_moved", moved},    {"dq_q_pairs_dropped", dropped},
            {"clamps_folded", clamps},  {"tables", tables},       {"float_tables", float_tables}};
  return r;
}

}  // namespace joule::passes
