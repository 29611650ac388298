#include "joule/core/npy.h"

#include "joule/core/file_util.h"
#include "joule/core/parse.h"

#include <cstring>
#include <sstream>

namespace joule {

namespace {
struct NpyCode {
  const char* descr;
  DType type;
};
constexpr NpyCode kCodes[] = {
    {"<f4", DType::Float32}, {"<f8", DType::Float64}, {"<f2", DType::Float16},
    {"|i1", DType::Int8},    {"<i2", DType::Int16},   {"<i4", DType::Int32},
    {"<i8", DType::Int64},   {"|u1", DType::UInt8},   {"<u2", DType::UInt16},
    {"<u4", DType::UInt32},  {"<u8", DType::UInt64},  {"|b1", DType::Bool},
};

// Value of `key` in the header dict, as raw text up to the next top-level comma.
std::string header_field(const std::string& h, const std::string& key, const std::string& what) {
  auto p = h.find("'" + key + "'");
  if (p == std::string::npos) fail(what + ": .npy header has no '" + key + "'");
  p = h.find(':', p);
  if (p == std::string::npos) fail(what + ": malformed .npy header");
  p = h.find_first_not_of(' ', p + 1);
  const bool tuple = p != std::string::npos && h[p] == '(';
  const size_t e = p == std::string::npos ? p : tuple ? h.find(')', p) : h.find_first_of(",}", p);
  if (e == std::string::npos) fail(what + ": malformed .npy header (its '" + key + "')");
  return h.substr(p, tuple ? e - p + 1 : e - p);
}
}  // namespace

Tensor parse_npy(const std::string& b, const std::string& what) {
  if (b.size() < 10 || std::memcmp(b.data(), "\x93NUMPY", 6) != 0)
    fail(what + ": not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(b[6]);
  size_t header_len, off;
  if (major == 1) {
    header_len = static_cast<unsigned char>(b[8]) | (static_cast<unsigned char>(b[9]) << 8);
    off = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) fail(what + ": truncated .npy header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<unsigned char>(b[8 + i])) << (8 * i);
    off = 12;
  } else {
    fail(what + ": unsupported .npy version " + std::to_string(major));
  }
  if (off + header_len > b.size()) fail(what + ": truncated .npy header");
  std::string h = b.substr(off, header_len);
  std::string descr = header_field(h, "descr", what);
  std::string fortran = header_field(h, "fortran_order", what);
  std::string shape_txt = header_field(h, "shape", what);
  if (descr.size() < 2) fail(what + ": bad descr in .npy header");
  descr = descr.substr(1, descr.size() - 2);  // strip quotes
  if (descr == "=f4") descr = "<f4";
  DType dt = DType::Undefined;
  for (auto& c : kCodes)
    if (descr == c.descr || (descr.size() == 3 && descr[0] == '<' && std::string("|") + descr.substr(1) == c.descr))
      dt = c.type;
  if (dt == DType::Undefined) fail(what + ": unsupported .npy dtype '" + descr + "'");
  if (fortran.find("True") != std::string::npos) fail(what + ": Fortran-order .npy arrays are not supported");
  Shape shape;
  if (shape_txt.size() < 2 || shape_txt.front() != '(') fail(what + ": .npy shape is not a tuple");
  std::string s = shape_txt.substr(1, shape_txt.size() - 2);
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(" ") == std::string::npos) continue;
    shape.push_back(parse_int64(item, what + ": .npy shape"));
  }
  Tensor t(dt, shape);
  size_t data_off = off + header_len;
  if (b.size() - data_off < t.nbytes())
    fail(what + ": .npy data is truncated (" + std::to_string(b.size() - data_off) + " bytes, shape " +
         shape_str(shape) + " needs " + std::to_string(t.nbytes()) + ")");
  if (t.nbytes()) std::memcpy(t.raw(), b.data() + data_off, t.nbytes());
  if (dt == DType::Bool)  // any nonzero byte is true (1): a C++ bool holding 185 is undefined
    for (size_t i = 0; i < t.nbytes(); ++i) static_cast<uint8_t*>(t.raw())[i] = static_cast<uint8_t*>(t.raw())[i] != 0;
  return t;
}

Tensor load_npy(const std::string& path) { return parse_npy(read_file(path), path); }

void save_npy(const Tensor& t, const std::string& path) {
  const char* descr = nullptr;
  for (auto& c : kCodes)
    if (c.type == t.dtype()) descr = c.descr;
  if (!descr) fail(path + ": cannot write " + dtype_name(t.dtype()) + " as .npy");
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) shape += std::to_string(t.shape()[i]) + ",";
  if (t.shape().size() > 1) shape.pop_back();
  shape += ")";
  std::string h = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + h.size() + 1;
  h += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>((h.size() >> 8) & 0xff);
  out += h;
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  write_file_atomic(path, out);
}

}  // namespace joule
