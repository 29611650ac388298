// Resource limits on what a model file claims: each crafted file (written here byte by byte, as
// an attacker would) is refused with one line naming what and where, quickly, without
// allocating what it claims -- a tensor larger than memory, a shape larger than its data, a
// billion-entry attribute list, protobuf nested thousands deep, external data outside the
// model's folder or past its file's end, a graph with a cycle.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "joule/core/error.h"
#include "joule/onnx/model_io.h"
#include "joule/runtime/session.h"

using namespace joule;
namespace fs = std::filesystem;

namespace {

// Protobuf wire format, enough to write ModelProto by hand.
std::string varint(uint64_t n) {
  std::string out;
  do {
    uint8_t b = n & 0x7f;
    n >>= 7;
    out += static_cast<char>(n ? b | 0x80 : b);
  } while (n);
  return out;
}
std::string key(int field, int wire) { return varint(static_cast<uint64_t>(field) << 3 | wire); }
std::string num(int field, uint64_t v) { return key(field, 0) + varint(v); }
std::string bytes(int field, const std::string& data) { return key(field, 2) + varint(data.size()) + data; }

// ValueInfoProto of a float tensor of the given dims.
std::string value_info(const std::string& name, const std::vector<uint64_t>& dims) {
  std::string shape;
  for (uint64_t d : dims) shape += bytes(1, num(1, d));
  return bytes(1, name) + bytes(2, bytes(1, num(1, 1) + bytes(2, shape)));
}
std::string node(const std::vector<std::string>& in, const std::vector<std::string>& out, const std::string& op,
                 const std::string& attrs = "") {
  std::string n;
  for (auto& i : in) n += bytes(1, i);
  for (auto& o : out) n += bytes(2, o);
  return n + bytes(4, op) + attrs;
}
// GraphProto parts: a node, a graph input, a graph output.
std::string nd(const std::vector<std::string>& in, const std::vector<std::string>& out, const std::string& op,
               const std::string& attrs = "") {
  return bytes(1, node(in, out, op, attrs));
}
std::string gin(const std::string& name, const std::vector<uint64_t>& dims) { return bytes(11, value_info(name, dims)); }
std::string gout(const std::string& name) { return bytes(12, value_info(name, {})); }
std::string model(const std::string& graph) { return num(1, 8) + bytes(8, bytes(1, "") + num(2, 13)) + bytes(7, graph); }

template <class F>
std::string refusal(F&& f, double* seconds = nullptr) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    f();
  } catch (const Error& e) {
    if (seconds) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_NE(e.kind(), Error::Kind::Internal) << e.what();
    const std::string w = e.what();
    EXPECT_EQ(w.find('\n'), std::string::npos) << "one line: " << w;
    return w;
  }
  ADD_FAILURE() << "not refused";
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  const bool found = s.find(part) != std::string::npos;
  if (!found) std::printf("message: %s\n(wanted: %s)\n", s.c_str(), part.c_str());
  return found;
}

TEST(Limits, TensorsLargerThanMemoryAreRefusedBeforeAllocation) {
  const std::string w = refusal([] { Tensor t(DType::Float32, {1000000, 1000000}); });
  EXPECT_TRUE(contains(w, "float32[1000000,1000000] tensor needs 3.6 TiB, more than this machine's memory")) << w;
  EXPECT_TRUE(contains(refusal([] { Tensor t(DType::Float32, {int64_t{1} << 40, int64_t{1} << 40}); }), "more bytes than fit in 64 bits"));
  // ConstantOfShape asked for 1e12 elements at run time: the node's error, at once.
  const std::string m = model(nd({"s"}, {"y"}, "ConstantOfShape") + bytes(2, "g") +
                              bytes(5, num(1, 2) + num(2, 7) + bytes(7, varint(1000000) + varint(1000000)) + bytes(8, "s")) + gout("y"));
  ir::Graph g = onnx::parse_model(m, ".", "crafted");
  double s = 0;
  const std::string r = refusal([&] { runtime::Session(g).run({}); }, &s);
  EXPECT_TRUE(contains(r, "more than this machine's memory")) << r;
  EXPECT_LT(s, 5.0);
}

TEST(Limits, AShapeClaimingMoreThanItsDataIsRefused) {
  // An initializer of shape [1000000, 1000000] with 16 bytes of raw data; and one of [1000] with
  // 2 floats: the data is compared with the shape before the tensor is made.
  std::string init = num(1, 1000000) + num(1, 1000000) + num(2, 1) + bytes(8, "w") + bytes(9, std::string(16, '\0'));
  std::string g = nd({"x", "w"}, {"y"}, "Add") + bytes(2, "g") + bytes(5, init) + gin("x", {1}) + gout("y");
  std::string w = refusal([&] { onnx::parse_model(model(g), ".", "crafted"); });
  EXPECT_TRUE(contains(w, "initializer") || contains(w, "'w'")) << w;
  EXPECT_TRUE(contains(w, "more than this machine's memory")) << w;
  init = num(1, 1000) + num(2, 1) + bytes(8, "w") + key(4, 5) + std::string(4, '\0') + key(4, 5) + std::string(4, '\0');
  g = nd({"x", "w"}, {"y"}, "Add") + bytes(2, "g") + bytes(5, init) + gin("x", {1}) + gout("y");
  w = refusal([&] { onnx::parse_model(model(g), ".", "crafted"); });
  EXPECT_TRUE(contains(w, "has 2 values, shape [1000] of float32 needs 1000 values")) << w;
}

TEST(Limits, HugeAttributeListsAreRefused) {
  // A claimed list of 4e9 packed entries in a 100-byte file: protobuf refuses to read past the end.
  std::string attr = bytes(1, "perm") + num(20, 7) + key(8, 2) + varint(4000000000) + std::string(16, '\0');
  std::string g = nd({"x"}, {"y"}, "Transpose", bytes(5, attr)) + bytes(2, "g") + gin("x", {4}) + gout("y");
  EXPECT_TRUE(contains(refusal([&] { onnx::parse_model(model(g), ".", "crafted"); }), "field claiming more bytes than the file holds"));
  // A list that is really there (17M one-byte entries): refused by joule's limit, naming it.
  attr = bytes(1, "perm") + num(20, 7) + bytes(8, std::string((1 << 24) + 1, '\0'));
  g = nd({"x"}, {"y"}, "Transpose", bytes(5, attr)) + bytes(2, "g") + gin("x", {4}) + gout("y");
  double s = 0;
  const std::string w = refusal([&] { onnx::parse_model(model(g), ".", "crafted"); }, &s);
  EXPECT_TRUE(contains(w, "attribute 'perm' is a list of 16777217 entries")) << w;
  EXPECT_LT(s, 10.0);
}

TEST(Limits, DeeplyNestedGraphsAreRefused) {
  const std::string leaf = bytes(1, node({"x"}, {"o"}, "Identity")) + bytes(2, "t") + bytes(12, value_info("o", {4}));
  std::string graph = leaf;
  for (int i = 0; i < 3000; ++i) {
    const std::string attrs = bytes(5, bytes(1, "then_branch") + num(20, 5) + bytes(6, graph)) +
                              bytes(5, bytes(1, "else_branch") + num(20, 5) + bytes(6, leaf));
    graph = bytes(1, node({"c"}, {"o"}, "If", attrs)) + bytes(2, "g") + bytes(12, value_info("o", {4}));
  }
  EXPECT_TRUE(contains(refusal([&] { onnx::parse_model(model(graph), ".", "crafted"); }), "nested over 100 deep"));
}

TEST(Limits, ExternalDataStaysInTheModelsFolderAndInsideItsFile) {
  const fs::path dir = fs::temp_directory_path() / ("joule_limits_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "w.bin", std::ios::binary) << std::string(8, '\0');
  auto with_location = [&](const std::string& location, const std::string& offset) {
    std::string ext = bytes(13, bytes(1, "location") + bytes(2, location));
    if (!offset.empty()) ext += bytes(13, bytes(1, "offset") + bytes(2, offset));
    const std::string init = num(1, 4) + num(2, 1) + bytes(8, "w") + ext + num(14, 1);
    const std::string g = nd({"x", "w"}, {"y"}, "Add") + bytes(2, "g") + bytes(5, init) + gin("x", {4}) + gout("y");
    const fs::path p = dir / "m.onnx";
    std::ofstream(p, std::ios::binary) << model(g);
    return refusal([&] { onnx::load_model(p.string()); });
  };
  EXPECT_TRUE(contains(with_location("../../etc/passwd", ""), "must be relative to the model"));
  EXPECT_TRUE(contains(with_location("/etc/passwd", ""), "must be relative to the model"));
  EXPECT_TRUE(contains(with_location("w.bin", "4"), "is too short (8 bytes, need 20)"));
  EXPECT_TRUE(contains(with_location("missing.bin", ""), "not found"));
  fs::remove_all(dir);
}

TEST(Limits, GraphsWithACycleAreRefused) {
  const std::string g = nd({"b"}, {"a"}, "Relu") + nd({"a"}, {"b"}, "Relu") + bytes(2, "g") + gin("x", {1}) + gout("b");
  const std::string w = refusal([&] { runtime::Session(onnx::parse_model(model(g), ".", "crafted")); });
  EXPECT_TRUE(contains(w, "cycle")) << w;
}

}  // namespace
