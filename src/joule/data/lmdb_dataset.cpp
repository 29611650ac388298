// LMDB image datasets, made by convert_to_lmdb from a class-folder dataset: one file instead of
// ~50k small ones, and the original JPEG bytes (decoded at read time, like the folder reader).
//
// Layout: key "%010zu" (record index, so keys sort in index order) -> value
//   [int64 LE label][uint32 LE n][n bytes: "class/file.jpg", for error messages][JPEG bytes]
// and key "__joule_meta__" -> text "joule-imagefolder-lmdb 1\ncount N\nclasses K\n" + one name per line.
#include <lmdb.h>
#include <stdlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string_view>

#include "joule/core/file_util.h"
#include "joule/core/parse.h"
#include "joule/data/image.h"
#include "joule/data/readers.h"

namespace joule::data {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kMetaKey = "__joule_meta__";
constexpr const char* kFormatTag = "joule-imagefolder-lmdb 1";

std::string record_key(size_t i) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%010zu", i);
  return buf;
}

// Points into `s`, which must outlive the MDB_val.
MDB_val as_val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }

struct Env {
  MDB_env* env = nullptr;
  ~Env() {
    if (env) mdb_env_close(env);
  }
};

// Aborts unless committed: every early return or exception releases the transaction.
struct Txn {
  MDB_txn* txn = nullptr;
  ~Txn() {
    if (txn) mdb_txn_abort(txn);
  }
  int commit() {
    int rc = mdb_txn_commit(txn);
    txn = nullptr;
    return rc;
  }
};

void check_rc(int rc, const std::string& what) {
  if (rc != MDB_SUCCESS) fail(what + ": " + mdb_strerror(rc));
}

class LmdbDataset : public Dataset {
 public:
  LmdbDataset(const std::string& dir, const Preprocess& p) : dir_(dir), pre_(p) {
    check_image_preprocess(pre_, dir);
    check_rc(mdb_env_create(&env_.env), dir + ": cannot create LMDB environment");
    // Read-only without the lock file: readers need no coordination (nobody writes), and the
    // directory may be read-only.
    check_rc(mdb_env_open(env_.env, dir.c_str(), MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS, 0),
             dir + ": cannot open as LMDB");
    Txn t;
    check_rc(mdb_txn_begin(env_.env, nullptr, MDB_RDONLY, &t.txn), dir + ": cannot read LMDB");
    check_rc(mdb_dbi_open(t.txn, nullptr, 0, &dbi_), dir + ": cannot open the LMDB database");
    MDB_val key = as_val(kMetaKey), val;
    const int rc = mdb_get(t.txn, dbi_, &key, &val);
    if (rc == MDB_NOTFOUND)
      fail(dir + ": LMDB has no '" + std::string(kMetaKey) + "' record (not written by joule's converter)");
    check_rc(rc, dir + ": cannot read the meta record");
    parse_meta(std::string(static_cast<const char*>(val.mv_data), val.mv_size));
    MDB_stat st;
    check_rc(mdb_stat(t.txn, dbi_, &st), dir + ": cannot stat LMDB");
    if (st.ms_entries != count_ + 1)
      fail(dir + ": meta record says " + std::to_string(count_) + " images but the LMDB holds " +
           std::to_string(st.ms_entries - 1));
    check_rc(t.commit(), dir + ": cannot finish the LMDB read");  // keeps dbi_ open in the environment
  }

  size_t size() const override { return count_; }
  bool has_labels() const override { return true; }
  std::vector<std::string> class_names() const override { return classes_; }

  // One read transaction per call: LMDB read transactions are independent, so get() is thread-safe,
  // and the JPEG is decoded straight out of the memory map.
  Sample get(size_t i) const override {
    check_index(i, size(), dir_);
    const std::string where = dir_ + "#" + std::to_string(i);
    Sample bad;
    Txn t;
    int rc = mdb_txn_begin(env_.env, nullptr, MDB_RDONLY, &t.txn);
    MDB_val val;
    if (rc == MDB_SUCCESS) {
      const std::string k = record_key(i);
      MDB_val key = as_val(k);
      rc = mdb_get(t.txn, dbi_, &key, &val);
    }
    if (rc != MDB_SUCCESS) {
      bad.error = where + ": " + mdb_strerror(rc);
      return bad;
    }
    const auto* b = static_cast<const uint8_t*>(val.mv_data);
    uint32_t name_len = 0;
    if (val.mv_size >= 12) std::memcpy(&name_len, b + 8, 4);
    if (val.mv_size < 12 || val.mv_size - 12 < name_len) {
      bad.error = where + ": malformed record (" + std::to_string(val.mv_size) + " bytes)";
      return bad;
    }
    int64_t label;
    std::memcpy(&label, b, 8);
    const std::string name(reinterpret_cast<const char*>(b + 12), name_len);
    Sample s = jpeg_sample(b + 12 + name_len, val.mv_size - 12 - name_len, pre_, where + " (" + name + ")");
    s.label = label;
    return s;
  }

  std::string describe() const override {
    return "LMDB " + dir_ + ": " + std::to_string(size()) + " images in " + std::to_string(classes_.size()) +
           " classes, resize " + std::to_string(resize_target(pre_)) + " crop " +
           std::to_string(pre_.sample_shape[1]) + "x" + std::to_string(pre_.sample_shape[2]) +
           (pre_.sample_shape[0] == 1 ? " gray" : " RGB");
  }

 private:
  void parse_meta(const std::string& meta) {
    std::istringstream in(meta);
    std::string tag, word;
    std::getline(in, tag);
    if (tag != kFormatTag)
      fail(dir_ + ": LMDB meta record has format tag '" + tag.substr(0, 40) + "', expected '" + kFormatTag +
           "'");
    size_t n_classes = 0;
    if (!(in >> word >> count_) || word != "count" || !(in >> word >> n_classes) || word != "classes")
      fail(dir_ + ": malformed LMDB meta record");
    std::getline(in, word);  // rest of the "classes K" line
    if (n_classes > meta.size())  // each class name takes at least its line's newline
      fail(dir_ + ": LMDB meta record lists fewer than " + std::to_string(n_classes) + " classes");
    classes_.resize(n_classes);
    for (auto& c : classes_) {
      if (!std::getline(in, c))
        fail(dir_ + ": LMDB meta record lists fewer than " + std::to_string(n_classes) + " classes");
      if (!is_utf8(c)) fail(dir_ + ": LMDB meta record has a class name that is not UTF-8");
    }
  }

  std::string dir_;
  Preprocess pre_;
  Env env_;
  MDB_dbi dbi_ = 0;
  size_t count_ = 0;
  std::vector<std::string> classes_;
};

// Removes the temporary output directory unless the conversion got to the final rename.
struct TempDirGuard {
  std::string path;
  ~TempDirGuard() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

}  // namespace

std::unique_ptr<Dataset> open_lmdb(const std::string& dir, const Preprocess& p) {
  return std::make_unique<LmdbDataset>(dir, p);
}

size_t convert_to_lmdb(const std::string& folder, const std::string& out, std::vector<std::string>* skipped) {
  const FolderListing list = list_class_folders(folder);  // throws before anything is created
  for (const auto& c : list.classes)
    if (c.find('\n') != std::string::npos) fail(folder + ": class folder name with a newline is not supported");
  std::error_code ec;
  if (fs::exists(fs::symlink_status(out, ec)))
    fail(out + ": already exists; remove it or choose another output");

  std::string tmp = out + ".tmp-XXXXXX";
  if (!mkdtemp(tmp.data()))
    fail(out + ": cannot create a temporary directory " + tmp + ": " + std::strerror(errno));
  TempDirGuard guard{tmp};

  // The map is address space, not disk: the file only grows as written. JPEGs go to overflow pages,
  // so allow a page of slack per record on top of twice the bytes.
  size_t total = 0;
  for (const auto& f : list.files) total += fs::file_size(f, ec) + 8192;
  Env env;
  check_rc(mdb_env_create(&env.env), out + ": cannot create LMDB environment");
  check_rc(mdb_env_set_mapsize(env.env, 2 * total + (size_t{64} << 20)), out + ": cannot size the LMDB map");
  check_rc(mdb_env_open(env.env, tmp.c_str(), MDB_NOLOCK, 0644), out + ": cannot create LMDB in " + tmp);

  size_t count = 0, batch_bytes = 0;
  Txn t;
  MDB_dbi dbi = 0;
  auto begin = [&] {
    check_rc(mdb_txn_begin(env.env, nullptr, 0, &t.txn), out + ": cannot begin an LMDB write");
    check_rc(mdb_dbi_open(t.txn, nullptr, 0, &dbi), out + ": cannot open the LMDB database");
  };
  begin();
  for (size_t i = 0; i < list.files.size(); ++i) {
    const std::string& path = list.files[i];
    std::string jpeg;
    try {
      jpeg = read_file(path);
    } catch (const Error& e) {
      if (skipped) skipped->push_back(e.what());
      continue;
    }
    const std::string why = check_jpeg(reinterpret_cast<const uint8_t*>(jpeg.data()), jpeg.size());
    if (!why.empty()) {
      if (skipped) skipped->push_back(path + ": " + why);
      continue;
    }
    const std::string name = list.classes[list.labels[i]] + "/" + fs::path(path).filename().string();
    std::string rec(12, '\0');
    const int64_t label = list.labels[i];
    const uint32_t name_len = static_cast<uint32_t>(name.size());
    std::memcpy(rec.data(), &label, 8);
    std::memcpy(rec.data() + 8, &name_len, 4);
    rec += name;
    rec += jpeg;
    const std::string k = record_key(count);
    MDB_val key = as_val(k), val = as_val(rec);
    check_rc(mdb_put(t.txn, dbi, &key, &val, MDB_APPEND), out + ": cannot write record for " + path);
    ++count;
    batch_bytes += rec.size();
    // A write transaction keeps its dirty pages in memory: commit in ~256 MB batches.
    if (batch_bytes > (size_t{256} << 20)) {
      check_rc(t.commit(), out + ": cannot commit LMDB batch");
      batch_bytes = 0;
      begin();
    }
  }
  if (count == 0) fail(folder + ": no readable JPEGs (" + std::to_string(list.files.size()) + " skipped)");
  std::string meta = std::string(kFormatTag) + "\ncount " + std::to_string(count) + "\nclasses " +
                     std::to_string(list.classes.size()) + "\n";
  for (const auto& c : list.classes) meta += c + "\n";
  MDB_val key = as_val(kMetaKey), val = as_val(meta);
  check_rc(mdb_put(t.txn, dbi, &key, &val, 0), out + ": cannot write the meta record");
  check_rc(t.commit(), out + ": cannot commit LMDB");
  check_rc(mdb_env_sync(env.env, 1), out + ": cannot sync LMDB");
  mdb_env_close(env.env);
  env.env = nullptr;

  fs::rename(tmp, out, ec);
  if (ec) fail(out + ": cannot move " + tmp + " into place: " + ec.message());
  guard.path.clear();
  return count;
}

}  // namespace joule::data
