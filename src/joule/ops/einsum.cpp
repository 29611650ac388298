// Einsum: general Einstein summation. Explicit ("ij,jk->ik") and implicit ("ij,jk": the
// output is the ellipsis dims then the labels used exactly once, in ASCII order) forms,
// ellipsis "..." with numpy broadcasting, repeated labels within one operand (diagonals) and
// summation over labels absent from the output.
// Evaluation: two operands are packed into [batch, M, K] x [batch, K, N] and multiplied with
// the shared matmul loop; other cases iterate over the full index space (the oracle form).
#include <algorithm>
#include <string>
#include <vector>

#include "joule/ops/matmul_util.h"
#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

constexpr int kLetters = 52;  // 'A'-'Z' -> 0..25, 'a'-'z' -> 26..51; ellipsis dims after

int letter_id(char ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return 26 + (ch - 'a');
  return -1;
}

struct Term {
  std::vector<int> letters_before, letters_after;  // around the ellipsis
  bool ellipsis = false;
};

Term parse_term(const std::string& s, const ir::Node& n) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.') {
      if (t.ellipsis || s.compare(i, 3, "...") != 0)
        fail(n.where() + ": malformed ellipsis in einsum term '" + s + "'");
      t.ellipsis = true;
      i += 2;
      continue;
    }
    const int id = letter_id(s[i]);
    if (id < 0)
      fail(n.where() + ": invalid character '" + std::string(1, s[i]) + "' in einsum equation");
    (t.ellipsis ? t.letters_after : t.letters_before).push_back(id);
  }
  return t;
}

struct Equation {
  std::vector<std::vector<int>> in_labels;  // per operand, per dim
  std::vector<int> out_labels;
  int num_labels = kLetters;
};

Equation parse_equation(const std::string& eq_in, const std::vector<int64_t>& ranks,
                        const ir::Node& n) {
  std::string eq;
  for (char ch : eq_in)
    if (ch != ' ') eq += ch;
  const size_t arrow = eq.find("->");
  const std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  std::vector<Term> terms;
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(
        lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start), n));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size())
    fail(n.where() + ": einsum equation '" + eq_in + "' has " + std::to_string(terms.size()) +
         " terms for " + std::to_string(ranks.size()) + " inputs");
  // ellipsis ranks
  std::vector<int64_t> erank(terms.size(), 0);
  int64_t E = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const int64_t letters =
        static_cast<int64_t>(terms[i].letters_before.size() + terms[i].letters_after.size());
    if (terms[i].ellipsis ? letters > ranks[i] : letters != ranks[i])
      fail(n.where() + ": einsum term " + std::to_string(i) + " does not match input rank " +
           std::to_string(ranks[i]));
    erank[i] = terms[i].ellipsis ? ranks[i] - letters : 0;
    E = std::max(E, erank[i]);
  }
  Equation r;
  r.num_labels = kLetters + static_cast<int>(E);
  std::vector<int> count(static_cast<size_t>(r.num_labels), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    std::vector<int> labels = terms[i].letters_before;
    for (int64_t t = 0; t < erank[i]; ++t)
      labels.push_back(kLetters + static_cast<int>(E - erank[i] + t));
    labels.insert(labels.end(), terms[i].letters_after.begin(), terms[i].letters_after.end());
    for (int l : labels) ++count[static_cast<size_t>(l)];
    r.in_labels.push_back(labels);
  }
  if (arrow == std::string::npos) {
    for (int64_t t = 0; t < E; ++t) r.out_labels.push_back(kLetters + static_cast<int>(t));
    for (int l = 0; l < kLetters; ++l)
      if (count[static_cast<size_t>(l)] == 1) r.out_labels.push_back(l);
  } else {
    const Term out = parse_term(eq.substr(arrow + 2), n);
    r.out_labels = out.letters_before;
    if (out.ellipsis)
      for (int64_t t = 0; t < E; ++t) r.out_labels.push_back(kLetters + static_cast<int>(t));
    r.out_labels.insert(r.out_labels.end(), out.letters_after.begin(), out.letters_after.end());
    std::vector<bool> seen(static_cast<size_t>(r.num_labels), false);
    for (int l : r.out_labels) {
      if (l < kLetters && count[static_cast<size_t>(l)] == 0)
        fail(n.where() + ": einsum output label '" +
             std::string(1, l < 26 ? char('A' + l) : char('a' + l - 26)) +
             "' does not appear in the inputs");
      if (seen[static_cast<size_t>(l)]) fail(n.where() + ": repeated label in the einsum output");
      seen[static_cast<size_t>(l)] = true;
    }
  }
  return r;
}

// Label sizes from concrete shapes; size-1 ellipsis dims broadcast.
std::vector<int64_t> label_sizes(const Equation& e, const std::vector<Shape>& shapes,
                                 const ir::Node& n) {
  std::vector<int64_t> sz(static_cast<size_t>(e.num_labels), -1);
  for (size_t i = 0; i < shapes.size(); ++i)
    for (size_t d = 0; d < shapes[i].size(); ++d) {
      const size_t l = static_cast<size_t>(e.in_labels[i][d]);
      const int64_t s = shapes[i][d];
      if (sz[l] < 0 || (sz[l] == 1 && l >= kLetters)) {
        sz[l] = s;
      } else if (s != sz[l] && !(s == 1 && l >= kLetters)) {
        fail(n.where() + ": einsum label sizes differ (" + std::to_string(s) + " vs " +
             std::to_string(sz[l]) + ")");
      }
    }
  return sz;
}

std::vector<Shape> input_shapes(const KernelContext& c) {
  std::vector<Shape> s;
  for (size_t i = 0; i < c.inputs.size(); ++i) s.push_back(c.in(i).shape());
  return s;
}

void infer(InferContext& c) {
  ir::TensorType& o = c.out(0);
  o = ir::TensorType{};
  o.dtype = c.in(0).dtype;
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.in(i).has_shape) return;
    ranks.push_back(static_cast<int64_t>(c.in(i).dims.size()));
  }
  const Equation e = parse_equation(c.node.attr_string("equation", ""), ranks, c.node);
  // a label's dim: the first static size > 1 (or 1), else a symbolic dim
  std::vector<ir::Dim> dims(static_cast<size_t>(e.num_labels), ir::Dim{});
  std::vector<bool> set(static_cast<size_t>(e.num_labels), false);
  for (size_t i = 0; i < c.num_inputs(); ++i)
    for (size_t d = 0; d < e.in_labels[i].size(); ++d) {
      const size_t l = static_cast<size_t>(e.in_labels[i][d]);
      const ir::Dim& dim = c.in(i).dims[d];
      const bool is_one = dim.is_static() && dim.value == 1;
      if (!set[l] || (dims[l].is_static() && dims[l].value == 1 && !is_one) ||
          (!dims[l].is_static() && dim.is_static() && !is_one)) {
        dims[l] = dim;
        set[l] = true;
      }
    }
  o.has_shape = true;
  for (int l : e.out_labels) o.dims.push_back(dims[static_cast<size_t>(l)]);
}

// Per-operand element strides for each label (sum over repeated labels, 0 where broadcast).
std::vector<int64_t> label_strides(const std::vector<int>& labels, const Shape& shape,
                                   const std::vector<int64_t>& sizes, int num_labels) {
  std::vector<int64_t> st(static_cast<size_t>(num_labels), 0);
  const std::vector<int64_t> ds = shape_strides(shape);
  for (size_t d = 0; d < labels.size(); ++d) {
    const size_t l = static_cast<size_t>(labels[d]);
    if (shape[d] == sizes[l]) st[l] += ds[d];
  }
  return st;
}

// dst[i] = src[offset of i] iterating row-major over `sizes` with the given strides.
template <class T>
void gather(const T* src, T* dst, const std::vector<int64_t>& sizes,
            const std::vector<int64_t>& strides) {
  const int64_t n = shape_numel(sizes);
  std::vector<int64_t> idx(sizes.size(), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = src[off];
    for (size_t d = sizes.size(); d-- > 0;) {
      off += strides[d];
      if (++idx[d] < sizes[d]) break;
      off -= strides[d] * sizes[d];
      idx[d] = 0;
    }
  }
}

template <class T>
void einsum_generic(const Equation& e, const std::vector<const Tensor*>& in,
                    const std::vector<int64_t>& sz, Tensor& Y) {
  using U = nn::MacType<T>;
  // loop labels: output labels (outer), then the summed ones (inner)
  std::vector<int> loop = e.out_labels;
  for (int l = 0; l < e.num_labels; ++l)
    if (sz[static_cast<size_t>(l)] >= 0 && std::find(loop.begin(), loop.end(), l) == loop.end())
      loop.push_back(l);
  const size_t nout = e.out_labels.size(), nl = loop.size(), nin = in.size();
  std::vector<int64_t> sizes(nl);
  for (size_t j = 0; j < nl; ++j) sizes[j] = sz[static_cast<size_t>(loop[j])];
  std::vector<std::vector<int64_t>> st(nin, std::vector<int64_t>(nl));
  for (size_t i = 0; i < nin; ++i) {
    const std::vector<int64_t> ls = label_strides(e.in_labels[i], in[i]->shape(), sz, e.num_labels);
    for (size_t j = 0; j < nl; ++j) st[i][j] = ls[static_cast<size_t>(loop[j])];
  }
  const Shape out_sizes(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(nout));
  const Shape red_sizes(sizes.begin() + static_cast<std::ptrdiff_t>(nout), sizes.end());
  const int64_t n_out = shape_numel(out_sizes), n_red = shape_numel(red_sizes);
  T* y = Y.data<T>();
  std::vector<int64_t> off(nin, 0);
  for (int64_t o = 0; o < n_out; ++o) {
    // operand offsets of the output position
    std::fill(off.begin(), off.end(), 0);
    int64_t rem = o;
    for (size_t j = nout; j-- > 0;) {
      const int64_t v = rem % sizes[j];
      rem /= sizes[j];
      for (size_t i = 0; i < nin; ++i) off[i] += v * st[i][j];
    }
    U acc = U(0);
    std::vector<int64_t> ridx(red_sizes.size(), 0);
    std::vector<int64_t> roff = off;
    for (int64_t r = 0; r < n_red; ++r) {
      U prod = U(1);
      for (size_t i = 0; i < nin; ++i) prod = prod * static_cast<U>(in[i]->data<T>()[roff[i]]);
      acc += prod;
      for (size_t d = red_sizes.size(); d-- > 0;) {
        const size_t j = nout + d;
        for (size_t i = 0; i < nin; ++i) roff[i] += st[i][j];
        if (++ridx[d] < red_sizes[d]) break;
        for (size_t i = 0; i < nin; ++i) roff[i] -= st[i][j] * red_sizes[d];
        ridx[d] = 0;
      }
    }
    y[o] = static_cast<T>(acc);
  }
}

template <class T>
void einsum_two(const Equation& e, const Tensor& A, const Tensor& B, const std::vector<int64_t>& sz,
                Tensor& Y, ThreadPool* pool) {
  const std::vector<int64_t> sa = label_strides(e.in_labels[0], A.shape(), sz, e.num_labels);
  const std::vector<int64_t> sb = label_strides(e.in_labels[1], B.shape(), sz, e.num_labels);
  std::vector<bool> in_a(static_cast<size_t>(e.num_labels)), in_b(in_a), in_o(in_a);
  for (int l : e.in_labels[0]) in_a[static_cast<size_t>(l)] = true;
  for (int l : e.in_labels[1]) in_b[static_cast<size_t>(l)] = true;
  for (int l : e.out_labels) in_o[static_cast<size_t>(l)] = true;
  std::vector<int> batch, m, n, k;
  for (int l : e.out_labels) {  // keep the output order within each group
    const size_t u = static_cast<size_t>(l);
    (in_a[u] && in_b[u] ? batch : in_a[u] ? m : n).push_back(l);
  }
  for (int l = 0; l < e.num_labels; ++l) {
    const size_t u = static_cast<size_t>(l);
    if ((in_a[u] || in_b[u]) && !in_o[u]) k.push_back(l);
  }
  auto sizes_of = [&](std::initializer_list<const std::vector<int>*> groups) {
    std::vector<int64_t> r;
    for (auto* g : groups)
      for (int l : *g) r.push_back(sz[static_cast<size_t>(l)]);
    return r;
  };
  auto strides_of = [&](const std::vector<int64_t>& st,
                        std::initializer_list<const std::vector<int>*> groups) {
    std::vector<int64_t> r;
    for (auto* g : groups)
      for (int l : *g) r.push_back(st[static_cast<size_t>(l)]);
    return r;
  };
  const int64_t nb = shape_numel(sizes_of({&batch})), M = shape_numel(sizes_of({&m}));
  const int64_t N = shape_numel(sizes_of({&n})), K = shape_numel(sizes_of({&k}));
  std::vector<T> pa(static_cast<size_t>(nb * M * K)), pb(static_cast<size_t>(nb * K * N)),
      pc(static_cast<size_t>(nb * M * N), T(0));
  gather<T>(A.data<T>(), pa.data(), sizes_of({&batch, &m, &k}), strides_of(sa, {&batch, &m, &k}));
  gather<T>(B.data<T>(), pb.data(), sizes_of({&batch, &k, &n}), strides_of(sb, {&batch, &k, &n}));
  std::vector<int64_t> a_off(static_cast<size_t>(nb)), b_off(static_cast<size_t>(nb));
  for (int64_t t = 0; t < nb; ++t) {
    a_off[static_cast<size_t>(t)] = t * M * K;
    b_off[static_cast<size_t>(t)] = t * K * N;
  }
  nn::batched_matmul<T>(pa.data(), pb.data(), pc.data(), a_off, b_off, M, K, N, pool);
  // pc is [batch..., m..., n...]; the output's dims are the same labels in output order
  std::vector<int64_t> out_st(static_cast<size_t>(e.num_labels), 0);
  const std::vector<int64_t> ys = shape_strides(Y.shape());
  for (size_t d = 0; d < e.out_labels.size(); ++d)
    out_st[static_cast<size_t>(e.out_labels[d])] = ys[d];
  // gather from the output's point of view: Y[...] = pc[...] with pc strides per output label
  std::vector<int64_t> pc_st(static_cast<size_t>(e.num_labels), 0);
  {
    const std::vector<int64_t> order_sizes = sizes_of({&batch, &m, &n});
    const std::vector<int64_t> order_st = shape_strides(order_sizes);
    size_t j = 0;
    for (auto* g : {&batch, &m, &n})
      for (int l : *g) pc_st[static_cast<size_t>(l)] = order_st[j++];
  }
  gather<T>(pc.data(), Y.data<T>(), Y.shape(), strides_of(pc_st, {&e.out_labels}));
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  if (c.inputs.empty()) fail(c.node.where() + ": Einsum needs at least one input");
  nn::check_same_dtypes(c, 0, c.inputs.size());
  const std::vector<Shape> shapes = input_shapes(c);
  std::vector<int64_t> ranks;
  for (const Shape& s : shapes) ranks.push_back(static_cast<int64_t>(s.size()));
  const Equation e = parse_equation(c.node.attr_string("equation", ""), ranks, c.node);
  const std::vector<int64_t> sz = label_sizes(e, shapes, c.node);
  Shape ys;
  for (int l : e.out_labels) ys.push_back(sz[static_cast<size_t>(l)]);
  Tensor Y(c.in(0).dtype(), ys);
  visit_numeric(Y.dtype(), c.node.where().c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (c.inputs.size() == 2) {
      einsum_two<T>(e, c.in(0), c.in(1), sz, Y, c.pool);
    } else {
      std::vector<const Tensor*> in;
      for (size_t i = 0; i < c.inputs.size(); ++i) in.push_back(&c.in(i));
      einsum_generic<T>(e, in, sz, Y);
    }
  });
  c.outputs[0] = Y;
}

Cost cost(const CostContext& c) {
  Cost r;
  r.bytes = io_bytes(c);
  std::vector<int64_t> ranks;
  for (const Shape& s : c.in) ranks.push_back(static_cast<int64_t>(s.size()));
  try {
    const Equation e = parse_equation(c.node.attr_string("equation", ""), ranks, c.node);
    const std::vector<int64_t> sz = label_sizes(e, c.in, c.node);
    double space = 1;
    for (int64_t s : sz)
      if (s >= 0) space *= static_cast<double>(s);
    r.macs = space * static_cast<double>(std::max<size_t>(1, c.in.size() - 1));
    r.flops = 2 * r.macs;
  } catch (const Error&) {
  }
  return r;
}

}  // namespace

extern const OpDef kOpEinsum;
const OpDef kOpEinsum{"Einsum", "", 1, -1, infer, run, cost};

}  // namespace joule::ops
