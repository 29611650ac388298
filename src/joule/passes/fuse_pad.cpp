// Explicit zero padding as exporters write it goes away. A Pad whose pads are all zero (PyTorch
// writes one before every AveragePool of a module built with padding=0 at opset >= 11) is
// removed; a constant-zero Pad of the spatial axes that feeds only a convolution, or an
// AveragePool that counts the padding (count_include_pad, what PyTorch's avg_pool2d default
// exports as Pad + AveragePool), becomes that node's own pads. No copy of the tensor is made.
#include <algorithm>

#include "joule/passes/pass.h"

namespace joule::passes {

namespace {

// The pads of a constant-mode Pad over every axis ([begin..., end...]) and its fill value;
// false when they are not known constants or the mode is not constant.
bool read_pad(const ir::Graph& g, const ir::Node& n, std::vector<int64_t>* pads, double* value) {
  if (n.attr_string("mode", "constant") != "constant" || !n.has_input(0)) return false;
  *value = 0.0;
  std::vector<int64_t> given;
  if (g.opset(n.domain) < 11) {
    given = n.attr_ints("pads", {});
    *value = n.attr_float("value", 0.f);
  } else {
    if (!n.has_input(1) || !g.is_initializer(n.inputs[1])) return false;
    const Tensor& p = g.initializers.at(n.inputs[1]);
    for (int64_t i = 0; i < p.numel(); ++i) given.push_back(p.value_as_int(i));
    if (n.has_input(2)) {
      if (!g.is_initializer(n.inputs[2]) || g.initializers.at(n.inputs[2]).numel() != 1) return false;
      *value = g.initializers.at(n.inputs[2]).value_as_double(0);
    }
  }
  int64_t rank = static_cast<int64_t>(given.size() / 2);
  std::vector<int64_t> axes;
  if (n.has_input(3)) {  // opset 18: pads of these axes only
    const ir::TensorType* xt = g.type_of(n.inputs[0]);
    if (!g.is_initializer(n.inputs[3]) || !xt || !xt->has_shape) return false;
    rank = static_cast<int64_t>(xt->dims.size());
    if (rank == 0) return false;
    const Tensor& a = g.initializers.at(n.inputs[3]);
    for (int64_t i = 0; i < a.numel(); ++i) axes.push_back((a.value_as_int(i) % rank + rank) % rank);
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  if (given.size() != 2 * axes.size()) return false;
  pads->assign(static_cast<size_t>(2 * rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    (*pads)[static_cast<size_t>(axes[i])] += given[i];
    (*pads)[static_cast<size_t>(axes[i] + rank)] += given[i + axes.size()];
  }
  return true;
}

// Folds spatial `pads` (of an N,C,spatial... tensor) into `c`'s pads when `c` pads with zeros
// the same way; false (and `c` unchanged) otherwise.
bool absorb(ir::Node& c, const std::vector<int64_t>& pads) {
  const bool conv = (c.domain.empty() && c.op_type == "Conv") || (c.domain == "joule" && c.op_type == "FusedConv");
  const bool avg = c.domain.empty() && c.op_type == "AveragePool";
  if (!conv && !avg) return false;
  if (c.attr_string("auto_pad", "NOTSET") != "NOTSET") return false;
  const size_t rank = pads.size() / 2, sp = rank - 2;
  std::vector<int64_t> own = c.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
  if (own.size() != 2 * sp) return false;
  if (avg) {
    if (c.attr_int("ceil_mode", 0) != 0) return false;  // windows past the padded end: not the same
    const bool own_zero = std::all_of(own.begin(), own.end(), [](int64_t p) { return p == 0; });
    if (c.attr_int("count_include_pad", 0) == 0 && !own_zero) return false;
    c.attrs["count_include_pad"] = int64_t{1};
  }
  for (size_t i = 0; i < sp; ++i) {
    own[i] += pads[2 + i];
    own[sp + i] += pads[rank + 2 + i];
  }
  c.attrs["pads"] = own;
  return true;
}

}  // namespace

PassResult fuse_pad(ir::Graph& g, const PassOptions&) {
  PassResult r;
  int removed = 0, into_conv = 0, into_pool = 0;
  const auto consumers = g.consumers();
  for (auto& np : g.nodes) {
    ir::Node& n = *np;
    if (!n.domain.empty() || n.op_type != "Pad" || n.outputs.empty() || n.outputs[0].empty()) continue;
    const std::string out = n.outputs[0];
    if (std::find(g.outputs.begin(), g.outputs.end(), out) != g.outputs.end()) continue;
    std::vector<int64_t> pads;
    double value = 0;
    if (!read_pad(g, n, &pads, &value)) continue;
    if (std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; })) {
      replace_uses(g, out, n.inputs[0]);
      ++removed;
      continue;
    }
    const size_t rank = pads.size() / 2;
    if (value != 0.0 || rank < 3 || pads[0] || pads[1] || pads[rank] || pads[rank + 1] ||
        std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p < 0; }))
      continue;
    auto it = consumers.find(out);
    if (it == consumers.end() || it->second.size() != 1) continue;
    ir::Node& c = *g.nodes[it->second[0]];
    if (c.inputs.empty() || c.inputs[0] != out || std::count(c.inputs.begin(), c.inputs.end(), out) != 1) continue;
    if (!absorb(c, pads)) continue;
    c.inputs[0] = n.inputs[0];
    ++(c.op_type == "AveragePool" ? into_pool : into_conv);
  }
  if (removed + into_conv + into_pool) g.remove_dead_nodes();
  r.changed = removed + into_conv + into_pool > 0;
  r.info = {{"zero_pads_removed", removed}, {"into_conv", into_conv}, {"into_average_pool", into_pool}};
  return r;
}

}  // namespace joule::passes
