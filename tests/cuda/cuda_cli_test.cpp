// The CUDA backend from the command line: `joule devices`, and --device refused in one line
// without a GPU (or a plan placed on it with one).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "joule/core/cpu_features.h"
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
  // The features the kernel choices depend on, as cpu_features() detected them.
  const auto& f = j["cpu"]["features"];
  ASSERT_TRUE(f.is_array()) << r.out;
  auto listed = [&](const char* name) { return std::find(f.begin(), f.end(), name) != f.end(); };
  EXPECT_EQ(listed("avx512"), joule::cpu_features().avx512) << r.out;
  EXPECT_EQ(listed("amx_bf16"), joule::cpu_features().amx_bf16) << r.out;
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

TEST(CudaCli, HalfPrecisionOptionsAreCheckedInOneLine) {
  // --gpu-fp32 names GPU nodes: refused on the CPU; --gpu-math takes four values.
  const auto cpu = run_joule("bench default --runs 1 --gpu-fp32 conv1");
  EXPECT_EQ(cpu.code, 2) << cpu.out;
  EXPECT_EQ(std::count(cpu.out.begin(), cpu.out.end(), '\n'), 1) << cpu.out;
  EXPECT_NE(cpu.out.find("needs --device cuda"), std::string::npos) << cpu.out;
  const auto math = run_joule("bench default --runs 1 --device cuda --gpu-math fp8");
  EXPECT_EQ(math.code, 2) << math.out;
  EXPECT_NE(math.out.find("fp16"), std::string::npos) << math.out;  // the allowed values are listed
  if (!have_gpu()) return;
  const auto fp32 = run_joule("bench default --runs 1 --device cuda --gpu-math tf32 --gpu-fp32 conv1");
  EXPECT_EQ(fp32.code, 2) << fp32.out;
  EXPECT_NE(fp32.out.find("fp16 or bf16"), std::string::npos) << fp32.out;
  const auto unknown = run_joule("bench default --runs 1 --device cuda --gpu-math fp16 --gpu-fp32 no_such_a,no_such_b");
  EXPECT_EQ(unknown.code, 2) << unknown.out;
  EXPECT_NE(unknown.out.find("no_such_a, no_such_b"), std::string::npos) << unknown.out;
  const auto ok = run_joule("bench default --runs 2 --device cuda --gpu-math bf16 --format json");
  EXPECT_EQ(ok.code, 0) << ok.out;
}

}  // namespace
}  // namespace joule
