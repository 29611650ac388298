#include <gtest/gtest.h>
#include <lmdb.h>

#include <cstring>
#include <filesystem>
#include <thread>

#include "data_test_util.h"
#include "expect_error.h"
#include "joule/data/dataset.h"

using namespace joule;
using namespace joule::data;
using namespace joule::data::testing;
namespace fs = std::filesystem;

namespace {

Preprocess image_shape(int c, int h, int w) {
  Preprocess p;
  p.sample_shape = {c, h, w};
  return p;
}

// Three classes of distinct images plus one corrupt file.
void make_folder(const std::string& dir) {
  int n = 0;
  for (const char* cls : {"cat", "dog", "eel"})
    for (int k = 0; k < 3; ++k, ++n) {
      std::vector<uint8_t> px(40 * 30 * 3);
      for (size_t j = 0; j < px.size(); ++j) px[j] = static_cast<uint8_t>((j * (n + 1) + j / 120 * 17) % 256);
      write_bytes(dir + "/" + cls + "/img" + std::to_string(k) + ".jpg", encode_jpeg(px, 40, 30, 3));
    }
  write_bytes(dir + "/dog/broken.jpg", "\xff\xd8\xff\xe0 truncated nonsense");
}

// Files in `dir` whose name starts with `prefix` (leftover temporary outputs).
std::vector<std::string> entries_starting(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path().string());
  return out;
}

// Writes an LMDB at `dir` holding the given key/value pairs.
void write_raw_lmdb(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& kv) {
  fs::create_directories(dir);
  MDB_env* env;
  ASSERT_EQ(mdb_env_create(&env), 0);
  ASSERT_EQ(mdb_env_open(env, dir.c_str(), 0, 0644), 0);
  MDB_txn* txn;
  MDB_dbi dbi;
  ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
  ASSERT_EQ(mdb_dbi_open(txn, nullptr, 0, &dbi), 0);
  for (const auto& [k, v] : kv) {
    MDB_val key{k.size(), const_cast<char*>(k.data())}, val{v.size(), const_cast<char*>(v.data())};
    ASSERT_EQ(mdb_put(txn, dbi, &key, &val, 0), 0);
  }
  ASSERT_EQ(mdb_txn_commit(txn), 0);
  mdb_env_close(env);
}

}  // namespace

TEST(LmdbDataset, ConvertedMatchesFolderReader) {
  TempDir tmp;
  make_folder(tmp / "imgs");
  std::vector<std::string> skipped;
  const size_t n = convert_to_lmdb(tmp / "imgs", tmp / "imgs.lmdb", &skipped);
  EXPECT_EQ(n, 9u);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find(tmp / "imgs/dog/broken.jpg"), std::string::npos) << skipped[0];
  EXPECT_TRUE(fs::exists(tmp / "imgs.lmdb/data.mdb"));
  EXPECT_TRUE(entries_starting(tmp.path(), "imgs.lmdb.tmp").empty());

  const Preprocess p = image_shape(3, 24, 24);
  auto folder = open_dataset(tmp / "imgs", p);
  auto lmdb = open_dataset(tmp / "imgs.lmdb", p);
  ASSERT_EQ(lmdb->size(), 9u);
  EXPECT_TRUE(lmdb->has_labels());
  EXPECT_EQ(lmdb->class_names(), folder->class_names());
  EXPECT_NE(lmdb->describe().find("9 images in 3 classes"), std::string::npos) << lmdb->describe();
  size_t j = 0;
  for (size_t i = 0; i < folder->size(); ++i) {
    Sample f = folder->get(i);
    if (!f.error.empty()) continue;  // the corrupt file has no record
    Sample l = lmdb->get(j++);
    ASSERT_TRUE(l.error.empty()) << l.error;
    EXPECT_EQ(l.label, f.label) << i;
    ASSERT_EQ(l.input.shape(), f.input.shape());
    EXPECT_EQ(std::memcmp(l.input.raw(), f.input.raw(), f.input.nbytes()), 0) << "sample " << i;
  }
  EXPECT_EQ(j, 9u);
  // Gray decoding goes through the same path.
  auto lg = open_dataset(tmp / "imgs.lmdb", image_shape(1, 16, 16));
  auto fg = open_dataset(tmp / "imgs", image_shape(1, 16, 16));
  // LMDB record 4 is dog/img1, folder sample 5 (dog/broken.jpg sorts first and has no record).
  EXPECT_EQ(std::memcmp(lg->get(4).input.raw(), fg->get(5).input.raw(), 16 * 16 * 4), 0);
}

TEST(LmdbDataset, ConcurrentGetsMatchSequential) {
  TempDir tmp;
  make_folder(tmp / "imgs");
  convert_to_lmdb(tmp / "imgs", tmp / "db", nullptr);
  auto d = open_dataset(tmp / "db", image_shape(3, 16, 16));
  std::vector<Tensor> seq;
  for (size_t i = 0; i < d->size(); ++i) seq.push_back(d->get(i).input);
  std::vector<int> mismatches(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 10; ++rep)
        for (size_t i = 0; i < d->size(); ++i) {
          const size_t k = (i * 5 + t) % d->size();
          Sample s = d->get(k);
          if (!s.error.empty() || std::memcmp(s.input.raw(), seq[k].raw(), seq[k].nbytes()) != 0)
            ++mismatches[t];
        }
    });
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

TEST(LmdbDataset, BadDirectoriesFailNamingThePath) {
  TempDir tmp;
  const Preprocess p = image_shape(3, 8, 8);
  write_bytes(tmp / "garbage/data.mdb", std::string(8192, 'x'));
  expect_error([&] { open_dataset(tmp / "garbage", p); }, {tmp / "garbage"});

  write_raw_lmdb(tmp / "no_meta", {{"0000000000", "whatever"}});
  expect_error([&] { open_dataset(tmp / "no_meta", p); }, {tmp / "no_meta", "__joule_meta__"});

  write_raw_lmdb(tmp / "wrong_tag", {{"__joule_meta__", "caffe-datum 3\ncount 0\nclasses 0\n"}});
  expect_error([&] { open_dataset(tmp / "wrong_tag", p); }, {tmp / "wrong_tag", "format tag", "caffe-datum 3"});

  write_raw_lmdb(tmp / "short", {{"__joule_meta__", "joule-imagefolder-lmdb 1\ncount 5\nclasses 1\nx\n"}});
  expect_error([&] { open_dataset(tmp / "short", p); }, {tmp / "short", "5 images"});

  expect_error([&] { open_dataset(tmp / "short:test", p); }, {"only applies"});
}

TEST(LmdbDataset, BrokenRecordIsASampleError) {
  TempDir tmp;
  std::string rec(12, '\0');
  rec[0] = 2;                          // label 2, empty name
  rec += "\xff\xd8 not really a jpeg";
  write_raw_lmdb(tmp / "db", {{"__joule_meta__", "joule-imagefolder-lmdb 1\ncount 2\nclasses 3\na\nb\nc\n"},
                              {"0000000000", rec},
                              {"0000000001", "tiny"}});
  auto d = open_dataset(tmp / "db", image_shape(3, 8, 8));
  EXPECT_EQ(d->class_names(), (std::vector<std::string>{"a", "b", "c"}));
  Sample s0 = d->get(0), s1 = d->get(1);
  EXPECT_NE(s0.error.find(tmp / "db"), std::string::npos) << s0.error;
  EXPECT_EQ(s0.label, 2);
  EXPECT_NE(s1.error.find("malformed"), std::string::npos) << s1.error;
}

TEST(LmdbDataset, FailedConversionLeavesNothing) {
  TempDir tmp;
  make_folder(tmp / "imgs");
  // Destination under a regular file: cannot even create the temporary directory.
  write_bytes(tmp / "file", "x");
  expect_error([&] { convert_to_lmdb(tmp / "imgs", tmp / "file/out.lmdb", nullptr); }, {tmp / "file/out.lmdb"});

  // Every image corrupt: fails after the temporary LMDB exists, which must be removed.
  write_bytes(tmp / "bad/cls/a.jpg", "nope");
  write_bytes(tmp / "bad/cls/b.jpg", "\xff\xd8\xff");
  std::vector<std::string> skipped;
  expect_error([&] { convert_to_lmdb(tmp / "bad", tmp / "bad.lmdb", &skipped); }, {tmp / "bad", "no readable"});
  EXPECT_EQ(skipped.size(), 2u);
  EXPECT_FALSE(fs::exists(tmp / "bad.lmdb"));
  EXPECT_TRUE(entries_starting(tmp.path(), "bad.lmdb").empty());

  // Not a class-folder dataset: nothing created.
  expect_error([&] { convert_to_lmdb(tmp / "missing", tmp / "m.lmdb", nullptr); }, {tmp / "missing"});
  EXPECT_TRUE(entries_starting(tmp.path(), "m.lmdb").empty());

  // Existing output is never replaced.
  write_bytes(tmp / "taken/keep.txt", "mine");
  expect_error([&] { convert_to_lmdb(tmp / "imgs", tmp / "taken", nullptr); }, {tmp / "taken", "exists"});
  EXPECT_TRUE(fs::exists(tmp / "taken/keep.txt"));
  EXPECT_TRUE(entries_starting(tmp.path(), "taken.tmp").empty());
}
