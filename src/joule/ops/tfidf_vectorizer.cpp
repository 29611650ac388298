// TfIdfVectorizer (opset 9): counts, per row of X ([C] or [N, C]; int32, int64 or string), the
// n-grams of the pool (pool_int64s or pool_strings; ngram_counts[k] is where the (k+1)-grams
// start in the pool) whose length lies in [min_gram_length, max_gram_length]. An n-gram takes
// every (s+1)-th token from its start for s = 0 .. max_skip_count, each (start, s) counted once
// (1-grams once per position). Output [.., max(ngram_indexes) + 1] float: the count (TF), the
// weight where the count is non-zero (IDF), or count x weight (TFIDF), at the pool n-gram's
// ngram_indexes entry; weights default to 1.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "joule/ops/util.h"

namespace joule::ops {
namespace {

struct Pool {
  int64_t min_n = 1, max_n = 1, max_skip = 0;
  std::string mode;
  std::map<std::vector<int64_t>, int64_t> grams;    // token ids -> n-gram number
  std::unordered_map<std::string, int64_t> words;   // string pools: token -> id
  std::vector<int64_t> out_index;                   // n-gram number -> output column
  std::vector<float> weights;                       // per n-gram number (empty: all 1)
  int64_t width = 0;                                // output columns
};

Pool read_pool(const ir::Node& n) {
  Pool p;
  p.min_n = n.attr_int("min_gram_length", 0);
  p.max_n = n.attr_int("max_gram_length", 0);
  p.max_skip = n.attr_int("max_skip_count", 0);
  p.mode = n.attr_string("mode", "");
  if (p.mode != "TF" && p.mode != "IDF" && p.mode != "TFIDF")
    fail(n.where() + ": mode must be TF, IDF or TFIDF, got '" + p.mode + "'");
  if (p.min_n < 1 || p.max_n < p.min_n || p.max_skip < 0)
    fail(n.where() + ": need 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0");
  const std::vector<int64_t> counts = n.attr_ints("ngram_counts");
  p.out_index = n.attr_ints("ngram_indexes");
  p.weights = n.attr_floats("weights");
  std::vector<int64_t> ints = n.attr_ints("pool_int64s");
  const std::vector<std::string> strs = n.attr_strings("pool_strings");
  if (ints.empty() == strs.empty()) fail(n.where() + ": exactly one of pool_int64s and pool_strings must be given");
  if (!strs.empty()) {
    for (const std::string& s : strs) ints.push_back(p.words.emplace(s, static_cast<int64_t>(p.words.size())).first->second);
  }
  const int64_t pool_size = static_cast<int64_t>(ints.size());
  if (counts.empty() || counts[0] != 0) fail(n.where() + ": ngram_counts must start at 0");
  int64_t number = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    const int64_t len = static_cast<int64_t>(k) + 1;
    const int64_t begin = counts[k], end = k + 1 < counts.size() ? counts[k + 1] : pool_size;
    if (end < begin || end > pool_size || (end - begin) % len != 0)
      fail(n.where() + ": ngram_counts do not split the pool into whole " + std::to_string(len) + "-grams");
    for (int64_t at = begin; at < end; at += len, ++number)
      p.grams.emplace(std::vector<int64_t>(ints.begin() + at, ints.begin() + at + len), number);
  }
  if (static_cast<int64_t>(p.out_index.size()) != number)
    fail(n.where() + ": ngram_indexes has " + std::to_string(p.out_index.size()) + " entries, the pool " +
         std::to_string(number) + " n-grams");
  if (!p.weights.empty() && static_cast<int64_t>(p.weights.size()) != number)
    fail(n.where() + ": weights has " + std::to_string(p.weights.size()) + " entries, the pool " + std::to_string(number) +
         " n-grams");
  for (int64_t i : p.out_index) {
    if (i < 0) fail(n.where() + ": ngram_indexes must be non-negative");
    p.width = std::max(p.width, i + 1);
  }
  return p;
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (!x.is_tensor() || (x.dtype != DType::Int32 && x.dtype != DType::Int64 && x.dtype != DType::String))
    fail(c.node.where() + ": X must be an int32, int64 or string tensor, got " + x.str());
  const Pool p = read_pool(c.node);
  ir::TensorType t;
  t.dtype = DType::Float32;
  if (x.has_shape) {
    if (x.dims.size() != 1 && x.dims.size() != 2) fail(c.node.where() + ": X must be [C] or [N, C], got " + x.str());
    t.has_shape = true;
    if (x.dims.size() == 2) t.dims.push_back(x.dims[0]);
    t.dims.push_back(ir::Dim{p.width, ""});
  }
  c.out(0) = t;
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  if (x.rank() != 1 && x.rank() != 2) fail(c.node.where() + ": X must be [C] or [N, C], got " + x.describe());
  const Pool p = read_pool(c.node);
  const bool strings = x.dtype() == DType::String;
  if (strings == p.words.empty())
    fail(c.node.where() + ": " + (strings ? "string input needs pool_strings" : "integer input needs pool_int64s"));
  const int64_t rows = x.rank() == 2 ? x.dim(0) : 1, cols = x.dim(-1);
  // Token ids: the integers themselves, or a string's pool id (an unknown word matches nothing).
  std::vector<int64_t> ids(static_cast<size_t>(x.numel()));
  const int64_t unknown = static_cast<int64_t>(p.words.size());
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (!strings) {
      ids[static_cast<size_t>(i)] = x.value_as_int(i);
      continue;
    }
    auto it = p.words.find(x.data<std::string>()[i]);
    ids[static_cast<size_t>(i)] = it == p.words.end() ? unknown : it->second;
  }
  Shape shape = x.rank() == 2 ? Shape{rows, p.width} : Shape{p.width};
  Tensor& out = c.output(0, DType::Float32, shape);
  float* y = out.data<float>();
  std::fill(y, y + out.numel(), 0.0f);
  std::vector<int64_t> count(p.out_index.size());
  std::vector<int64_t> gram;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t* row = ids.data() + r * cols;
    std::fill(count.begin(), count.end(), 0);
    for (int64_t start = 0; start < cols; ++start)
      for (int64_t skip = 0; skip <= p.max_skip; ++skip) {
        gram.clear();
        for (int64_t len = 1, at = start; len <= p.max_n && at < cols; ++len, at += skip + 1) {
          gram.push_back(row[at]);
          if (len < p.min_n || (len == 1 && skip > 0)) continue;
          auto it = p.grams.find(gram);
          if (it != p.grams.end()) ++count[static_cast<size_t>(it->second)];
        }
      }
    float* yr = y + r * p.width;
    for (size_t g = 0; g < count.size(); ++g) {
      if (count[g] == 0) continue;
      const float w = p.weights.empty() ? 1.0f : p.weights[g];
      const float v = p.mode == "TF" ? static_cast<float>(count[g]) : p.mode == "IDF" ? w : static_cast<float>(count[g]) * w;
      yr[p.out_index[g]] = v;
    }
  }
}

}  // namespace

extern const OpDef kOpTfIdfVectorizer;
const OpDef kOpTfIdfVectorizer{"TfIdfVectorizer", "", 1, 1, infer, run, nullptr, nullptr, false, true};

}  // namespace joule::ops
