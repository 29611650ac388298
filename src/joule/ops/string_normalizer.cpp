// StringNormalizer (opset 10): removes the `stopwords` from a string tensor of shape [C] or
// [1, C] (compared exactly, or case-insensitively unless is_case_sensitive), then changes the
// case of what is left (case_change_action LOWER, UPPER or NONE). When every string is removed
// the output is one empty string ([1] or [1, 1]). Case is mapped per Unicode code point with
// the C.UTF-8 locale's simple case mapping (ASCII only where that locale is missing); the
// `locale` attribute is accepted and not used.
#include <locale>
#include <set>

#include "joule/ops/util.h"

namespace joule::ops {
namespace {

std::string case_action(const ir::Node& n) {
  const std::string a = n.attr_string("case_change_action", "NONE");
  if (a != "NONE" && a != "LOWER" && a != "UPPER")
    fail(n.where() + ": case_change_action must be NONE, LOWER or UPPER, got '" + a + "'");
  return a;
}

std::string check(const ir::Node& n, int64_t) {
  const std::string a = n.attr_string("case_change_action", "NONE");
  return a == "NONE" || a == "LOWER" || a == "UPPER" ? "" : "case_change_action '" + a + "' is not LOWER, UPPER or NONE";
}

// UTF-8 <-> code points (invalid bytes are kept as they are, one per code point).
std::u32string decode(const std::string& s) {
  std::u32string r;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + static_cast<size_t>(len) <= s.size();
    char32_t cp = len == 1 ? b : len == 2 ? (b & 0x1f) : len == 3 ? (b & 0x0f) : (b & 0x07);
    for (int k = 1; ok && k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((c >> 6) != 2) ok = false;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (!ok) {
      r.push_back(0xDC00 + b);  // a lone byte, restored by encode()
      ++i;
      continue;
    }
    r.push_back(cp);
    i += static_cast<size_t>(len);
  }
  return r;
}

std::string encode(const std::u32string& s) {
  std::string r;
  for (char32_t c : s) {
    if (c >= 0xDC80 && c <= 0xDCFF) r.push_back(static_cast<char>(c - 0xDC00));
    else if (c < 0x80) r.push_back(static_cast<char>(c));
    else if (c < 0x800) r += {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3f))};
    else if (c < 0x10000)
      r += {static_cast<char>(0xE0 | (c >> 12)), static_cast<char>(0x80 | ((c >> 6) & 0x3f)), static_cast<char>(0x80 | (c & 0x3f))};
    else
      r += {static_cast<char>(0xF0 | (c >> 18)), static_cast<char>(0x80 | ((c >> 12) & 0x3f)),
            static_cast<char>(0x80 | ((c >> 6) & 0x3f)), static_cast<char>(0x80 | (c & 0x3f))};
  }
  return r;
}

std::string change_case(const std::string& s, bool upper) {
  static const std::locale utf8 = [] {
    try {
      return std::locale("C.UTF-8");
    } catch (const std::exception&) {
      return std::locale::classic();
    }
  }();
  const auto& ct = std::use_facet<std::ctype<wchar_t>>(utf8);
  std::u32string cps = decode(s);
  for (char32_t& c : cps)
    if (c < 0xDC80 || c > 0xDCFF) c = static_cast<char32_t>(upper ? ct.toupper(static_cast<wchar_t>(c)) : ct.tolower(static_cast<wchar_t>(c)));
  return encode(cps);
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (!x.is_tensor() || x.dtype != DType::String) fail(c.node.where() + ": the input must be a string tensor, got " + x.str());
  if (x.has_shape && !(x.dims.size() == 1 || (x.dims.size() == 2 && x.dims[0].value == 1)))
    fail(c.node.where() + ": the input must have shape [C] or [1, C], got " + x.str());
  case_action(c.node);
  ir::TensorType t = x;
  if (t.has_shape) t.dims.back() = ir::Dim{};
  c.out(0) = t;
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  if (x.dtype() != DType::String || !(x.rank() == 1 || (x.rank() == 2 && x.dim(0) == 1)))
    fail(c.node.where() + ": the input must be a string tensor of shape [C] or [1, C], got " + x.describe());
  const bool sensitive = c.node.attr_int("is_case_sensitive", 0) != 0;
  const std::string action = case_action(c.node);
  std::set<std::string> stop;
  for (const std::string& w : c.node.attr_strings("stopwords")) stop.insert(sensitive ? w : change_case(w, false));
  std::vector<std::string> kept;
  const std::string* in = x.data<std::string>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (stop.count(sensitive ? in[i] : change_case(in[i], false))) continue;
    kept.push_back(action == "NONE" ? in[i] : change_case(in[i], action == "UPPER"));
  }
  if (kept.empty()) kept.emplace_back();
  Shape shape = x.shape();
  shape.back() = static_cast<int64_t>(kept.size());
  Tensor& out = c.output(0, DType::String, shape);
  std::copy(kept.begin(), kept.end(), out.data<std::string>());
}

}  // namespace

extern const OpDef kOpStringNormalizer;
const OpDef kOpStringNormalizer{"StringNormalizer", "", 1, 1, infer, run, nullptr, check, false, true};

}  // namespace joule::ops
