// The CUDA backend from the command line: `joule devices`, and --device refused in one line
// without a GPU (or a plan placed on it with one).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "joule/cuda/backend.h"

namespace joule {
namespace {

using testing::run_joule;

bool have_gpu() {
  const cuda::DeviceList l = cuda::list_devices();
  return !l.gpus.empty() && l.gpus[0].usable;
}

TEST(CudaCli, DevicesListsTheCpuAndTheGpusOrWhyNone) {
  const auto r = run_joule("devices --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cpu"]["device"], "cpu");
  EXPECT_EQ(j["cuda_built"].get<bool>(), cuda::built());
  ASSERT_TRUE(j["gpus"].is_array());
  if (j["gpus"].empty()) {
    EXPECT_FALSE(j.value("why_no_gpu", std::string()).empty()) << r.out;
  } else {
    EXPECT_EQ(j["gpus"][0]["device"], "cuda:0");
  }
  const auto t = run_joule("devices");
  EXPECT_EQ(t.code, 0);
  EXPECT_NE(t.out.find("cpu "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("CUDA "), std::string::npos) << t.out;
}

TEST(CudaCli, DeviceFlagIsRefusedInOneLineWithoutAGpu) {
  const auto bad = run_joule("bench default --runs 1 --device tpu");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("expected cpu, cuda or cuda:N"), std::string::npos) << bad.out;
  if (have_gpu()) {
    const auto r = run_joule("info default --plan --device cuda --format json");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["plan"]["device"], "cuda:0");
    EXPECT_GT(j["plan"]["gpu_nodes"].get<int>(), 0);
    return;
  }
  for (const char* cmd : {"bench default --runs 1 --device cuda", "info default --plan --device cuda:0"}) {
    const auto r = run_joule(cmd);
    EXPECT_EQ(r.code, 2) << cmd << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("--device cuda"), std::string::npos) << cmd << ": " << r.out;
  }
}

}  // namespace
}  // namespace joule
