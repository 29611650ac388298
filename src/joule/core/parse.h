#pragma once
// Text read from files. Numbers (a .npy header's shape, an ONNX external-data offset): the whole
// field must be the number; anything else is BadInput naming `what`, never std::stoll's
// invalid_argument or out_of_range. Names that end up in JSON output must be UTF-8 (nlohmann's
// dump throws on anything else): readers check them with is_utf8.
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "joule/core/error.h"

namespace joule {

inline int64_t parse_int64(std::string_view s, const std::string& what) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    fail(what + ": '" + std::string(s.substr(0, 40)) + "' is not an integer" +
         (ec == std::errc::result_out_of_range ? " that fits in 64 bits" : ""));
  return v;
}

// Well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
inline bool is_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned c = *p++;
    if (c < 0x80) continue;
    int more = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC2 ? 1 : -1;
    if (more < 0 || c > 0xF4 || end - p < more) return false;
    const unsigned c1 = p[0];
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F))
      return false;
    for (int i = 0; i < more; ++i)
      if ((p[i] & 0xC0) != 0x80) return false;
    p += more;
  }
  return true;
}

}  // namespace joule
