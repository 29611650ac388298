#include "joule/train/checkpoint.h"

#include <cstring>

#include "joule/core/error.h"
#include "joule/core/file_util.h"

namespace joule::train {

namespace {
constexpr char kMagic[] = "JOULECKPT1\n";
constexpr size_t kMagicLen = sizeof(kMagic) - 1;
}  // namespace

void save_checkpoint(const std::string& path, const Checkpoint& c) {
  nlohmann::json index = nlohmann::json::array();
  size_t offset = 0;
  for (auto& [name, t] : c.tensors) {
    index.push_back({{"name", name}, {"dtype", dtype_name(t.dtype())}, {"shape", t.shape()}, {"offset", offset},
                     {"bytes", t.nbytes()}});
    offset += t.nbytes();
  }
  const std::string header = nlohmann::json{{"meta", c.meta}, {"tensors", index}}.dump();
  std::string out(kMagic, kMagicLen);
  const uint64_t len = header.size();
  out.append(reinterpret_cast<const char*>(&len), sizeof len);
  out += header;
  out.reserve(out.size() + offset);
  for (auto& [name, t] : c.tensors) out.append(static_cast<const char*>(t.raw()), t.nbytes());
  write_file_atomic(path, out);
}

Checkpoint load_checkpoint(const std::string& path) {
  const std::string bytes = read_file(path);
  if (bytes.size() < kMagicLen + 8 || bytes.compare(0, kMagicLen, kMagic) != 0)
    fail(path + ": not a joule checkpoint");
  uint64_t len = 0;
  std::memcpy(&len, bytes.data() + kMagicLen, sizeof len);
  const size_t data_at = kMagicLen + 8 + len;
  if (len > bytes.size() || data_at > bytes.size()) fail(path + ": truncated checkpoint (header)");
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(bytes.substr(kMagicLen + 8, len));
  } catch (const nlohmann::json::exception& e) {
    fail(path + ": corrupt checkpoint header: " + e.what());
  }
  Checkpoint c;
  c.meta = h.value("meta", nlohmann::json::object());
  for (const auto& e : h.value("tensors", nlohmann::json::array())) {
    const DType dt = dtype_from_name(e.at("dtype").get<std::string>());
    Tensor t(dt, e.at("shape").get<Shape>());
    const size_t off = e.at("offset").get<size_t>(), n = e.at("bytes").get<size_t>();
    if (dt == DType::Undefined || n != t.nbytes() || data_at + off + n > bytes.size())
      fail(path + ": truncated or corrupt checkpoint (tensor '" + e.at("name").get<std::string>() + "')");
    std::memcpy(t.raw(), bytes.data() + data_at + off, n);
    c.tensors[e.at("name").get<std::string>()] = t;
  }
  return c;
}

}  // namespace joule::train
