// LMDB image datasets: the meta record and each image record ([int64 label][uint32 n][name][JPEG]).
// The fuzz input is the records themselves, separated by "\xffREC": the first is the meta record
// (key __joule_meta__), the others are records 0, 1, ...; they are written to a fresh LMDB with
// liblmdb (whose own file format is not what is fuzzed) and read back through open_lmdb.
#include <lmdb.h>

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <vector>

#include "fuzz.h"
#include "joule/data/readers.h"

using namespace joule;

namespace {

void put(MDB_txn* txn, MDB_dbi dbi, std::string_view k, std::string_view v) {
  MDB_val key{k.size(), const_cast<char*>(k.data())}, val{v.size(), const_cast<char*>(v.data())};
  if (mdb_put(txn, dbi, &key, &val, 0) != MDB_SUCCESS) fuzz::finding("lmdb harness", "mdb_put failed");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size), sep("\xffREC");
  std::vector<std::string_view> parts;
  for (size_t at = 0;;) {
    const size_t next = in.find(sep, at);
    parts.push_back(in.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) break;
    at = next + sep.size();
  }
  const std::filesystem::path dir = fuzz::scratch() / "lmdb";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  MDB_env* env = nullptr;
  mdb_env_create(&env);
  mdb_env_set_mapsize(env, size_t{64} << 20);
  if (mdb_env_open(env, dir.c_str(), MDB_NOLOCK | MDB_NOSYNC, 0644) != MDB_SUCCESS)
    fuzz::finding("lmdb harness", "cannot create the LMDB");
  MDB_txn* txn = nullptr;
  MDB_dbi dbi = 0;
  mdb_txn_begin(env, nullptr, 0, &txn);
  mdb_dbi_open(txn, nullptr, 0, &dbi);
  put(txn, dbi, "__joule_meta__", parts[0]);
  for (size_t i = 1; i < parts.size(); ++i) {
    char key[24];
    std::snprintf(key, sizeof key, "%010zu", i - 1);
    put(txn, dbi, key, parts[i]);
  }
  mdb_txn_commit(txn);
  mdb_env_close(env);

  data::Preprocess p;
  p.sample_shape = {3, 8, 8};
  fuzz::expect_clean([&] {
    auto ds = data::open_lmdb(dir.string(), p);
    (void)ds->describe();
    (void)ds->class_names();
    for (size_t i = 0; i < std::min<size_t>(ds->size(), 8); ++i) (void)ds->get(i);
  });
  return 0;
}
