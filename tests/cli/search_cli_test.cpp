// joule search from the command line: a bad space or option is one line and exit 2; a small
// search prints the front and --export writes the point as ONNX with its profile.
#include <gtest/gtest.h>

#include <fstream>

#include "cli/cli_util.h"

using joule::testing::run_joule;
using joule::testing::scratch_dir;

namespace {
const std::string kSamples = std::string(JOULE_SOURCE_DIR) + "/models/fashion_cnn_sample.npy";
}

TEST(SearchCli, BadSpaceIsOneLine) {
  const auto dir = scratch_dir("search_cli_bad");
  std::ofstream(dir / "space.yaml") << "precision: [fp32, int9]\n";
  auto r = run_joule("search default --space " + (dir / "space.yaml").string() + " --val " + kSamples + " -o " +
                     (dir / "out").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("int9"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  r = run_joule("search default --space " + (dir / "space.yaml").string() + " --val " + kSamples + " -o " +
                (dir / "out").string() + " --objectives accuracy,speed");
  EXPECT_EQ(r.code, 2) << r.out;
  std::filesystem::remove_all(dir);
}

TEST(SearchCli, FrontAndExport) {
  const auto dir = scratch_dir("search_cli");
  std::ofstream(dir / "space.yaml") << "precision: [fp32, int8]\nprune: [0, 0.25]\n";
  const auto r = run_joule("search default --space " + (dir / "space.yaml").string() + " --data " + kSamples +
                           " --calib-samples 8 --val " + kSamples + " --trials 5 --runs 2 --min-time 0.01 --algorithm random -o " +
                           (dir / "out").string() + " --export 0");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("5 trials"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("w8a8"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir / "out/export/0/model.onnx"));
  EXPECT_TRUE(std::filesystem::exists(dir / "out/export/0/trial.json"));
  EXPECT_FALSE(std::filesystem::is_empty(dir / "out/export/0/profile"));
  // The exported model loads and runs.
  const auto run = run_joule("bench " + (dir / "out/export/0/model.onnx").string() + " --runs 2 --warmup 1");
  EXPECT_EQ(run.code, 0) << run.out;
  std::filesystem::remove_all(dir);
}
