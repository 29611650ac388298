#include "joule/ops/util.h"

#include <algorithm>

namespace joule::ops {

const ir::TensorType& InferContext::in(size_t i) const {
  if (!has(i)) fail(node.where() + ": required input " + std::to_string(i) + " is missing");
  return *input_types[i];
}

const Tensor& KernelContext::in(size_t i) const {
  if (!has(i)) fail(node.where() + ": required input " + std::to_string(i) + " is missing");
  return *inputs[i];
}

Tensor& KernelContext::output(size_t i, DType dtype, const Shape& shape) {
  if (outputs.size() <= i) outputs.resize(i + 1);
  Tensor& t = outputs[i];
  if (!t.defined() || t.dtype() != dtype || t.shape() != shape) t = Tensor(dtype, shape);
  return t;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const ir::Node& node) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    fail(node.where() + ": axis " + std::to_string(axis) + " out of range for rank " +
         std::to_string(rank));
  return a;
}

bool broadcast_as_pqr(const Shape& x, const Shape& b, int64_t* p, int64_t* q, int64_t* r) {
  if (b.size() > x.size()) return false;
  const size_t lead = x.size() - b.size();
  int first = -1, last = -1;
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t bi = i < lead ? 1 : b[i - lead];
    if (bi == x[i]) continue;
    if (bi != 1) return false;  // B would grow x, or does not broadcast
    if (first < 0) first = static_cast<int>(i);
    last = static_cast<int>(i);
  }
  *p = *q = *r = 1;
  for (size_t i = 0; i < x.size(); ++i) {
    const int ii = static_cast<int>(i);
    if (first >= 0 && ii >= first && ii <= last) {
      const int64_t bi = i < lead ? 1 : b[i - lead];
      if (bi != 1 && x[i] != 1) return false;  // a kept dim inside the repeated run
      *q *= x[i];
    } else {
      *(first >= 0 && ii < first ? p : r) *= x[i];
    }
  }
  return true;
}

Shape broadcast_shapes(const std::vector<Shape>& shapes, const ir::Node& node) {
  size_t rank = 0;
  for (auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (auto& s : shapes) {
    size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t d = s[i];
      int64_t& o = out[off + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string all;
      for (auto& t : shapes) all += shape_str(t) + " ";
      fail(node.where() + ": shapes cannot be broadcast: " + all);
    }
  }
  return out;
}

ir::TensorType broadcast_types(const std::vector<const ir::TensorType*>& types, DType out,
                               const ir::Node& node) {
  ir::TensorType r;
  r.dtype = out;
  size_t rank = 0;
  for (auto* t : types) {
    if (!t) continue;
    if (!t->has_shape) return r;  // unknown rank
    rank = std::max(rank, t->dims.size());
  }
  r.has_shape = true;
  r.dims.assign(rank, ir::Dim{1, ""});
  for (auto* t : types) {
    if (!t) continue;
    size_t off = rank - t->dims.size();
    for (size_t i = 0; i < t->dims.size(); ++i) {
      const ir::Dim& d = t->dims[i];
      ir::Dim& o = r.dims[off + i];
      if (d.is_static() && d.value == 1) continue;
      if (o.is_static() && o.value == 1) {
        o = d;
        continue;
      }
      if (d.is_static() && o.is_static()) {
        if (d.value != o.value)
          fail(node.where() + ": shapes cannot be broadcast: " + ir::dims_str(t->dims) +
               " against dim " + std::to_string(o.value));
        continue;
      }
      if (d == o) continue;
      // one symbolic and one static (>1): the static one wins; two different symbols: unknown
      if (d.is_static()) o = d;
      else if (!o.is_static()) o = ir::Dim{};
    }
  }
  return r;
}

void infer_same_as_input(InferContext& c, size_t i) { c.out(0) = c.in(i); }

void infer_broadcast(InferContext& c, DType out) {
  std::vector<const ir::TensorType*> ts;
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.has(i)) ts.push_back(c.input_types[i]);
  c.out(0) = broadcast_types(ts, out == DType::Undefined ? c.in(0).dtype : out, c.node);
}

BroadcastIndexer::BroadcastIndexer(const Shape& out, const Shape& in) : out_(out) {
  identity_ = (out == in);
  scalar_ = shape_numel(in) == 1;
  size_t off = out.size() - in.size();
  auto in_st = shape_strides(in);
  in_strides_.assign(out.size(), 0);
  for (size_t i = 0; i < in.size(); ++i) in_strides_[off + i] = in[i] == 1 ? 0 : in_st[i];
  out_strides_ = shape_strides(out);
}

int64_t BroadcastIndexer::offset(int64_t i) const {
  int64_t o = 0;
  for (size_t d = 0; d < out_.size(); ++d) {
    int64_t idx = i / out_strides_[d];
    i -= idx * out_strides_[d];
    o += idx * in_strides_[d];
  }
  return o;
}

namespace {

// Runs `run` on float32 copies of the inputs whose dtype `widen` selects, converting float32
// outputs back to input 0's dtype when it is one of them.
bool run_widened(KernelContext& c, void (*run)(KernelContext&), bool (*widen)(DType)) {
  bool any = false;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.has(i) && widen(c.inputs[i]->dtype())) any = true;
  if (!any) return false;
  std::vector<Tensor> widened(c.inputs.size());
  KernelContext wc{c.node, c.opset, {}, {}, c.pool};
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.has(i)) {
      wc.inputs.push_back(nullptr);
      continue;
    }
    if (widen(c.inputs[i]->dtype())) {
      widened[i] = c.inputs[i]->cast(DType::Float32);
      wc.inputs.push_back(&widened[i]);
    } else {
      wc.inputs.push_back(c.inputs[i]);
    }
  }
  wc.outputs.resize(c.outputs.size());
  run(wc);
  const DType back = c.has(0) ? c.inputs[0]->dtype() : DType::Undefined;
  for (size_t i = 0; i < wc.outputs.size(); ++i) {
    Tensor& o = wc.outputs[i];
    c.outputs[i] = (widen(back) && o.dtype() == DType::Float32) ? o.cast(back) : o;
  }
  return true;
}

}  // namespace

bool run_half_as_float(KernelContext& c, void (*run)(KernelContext&)) { return run_widened(c, run, is_half); }

bool run_as_float32(KernelContext& c, void (*run)(KernelContext&)) {
  return run_widened(c, run, [](DType t) { return is_half(t) || t == DType::Float64; });
}

double io_bytes(const CostContext& c) {
  double b = 0;
  auto add = [&b](const std::vector<Shape>& shapes, const std::vector<DType>& types) {
    for (size_t i = 0; i < shapes.size() && i < types.size(); ++i)
      b += static_cast<double>(shape_numel(shapes[i])) * static_cast<double>(dtype_size(types[i]));
  };
  add(c.in, c.in_types);
  add(c.out, c.out_types);
  return b;
}

std::vector<int64_t> int_list_input(const KernelContext& c, size_t i) {
  if (!c.has(i)) return {};
  return c.inputs[i]->to_int_vector();
}

}  // namespace joule::ops
