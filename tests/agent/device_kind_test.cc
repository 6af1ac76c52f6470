// rig-agent --device-kind on a machine without a usable GPU (no driver, no GPU, or a build
// without the CUDA backend): `cuda` refuses to start and says why; `auto` serves simulated
// devices and logs why it has no GPU. On a GPU host these skip: the GPU paths are the Device
// conformance suite's and the proxy suite's under RIG_TEST_DEVICES=cuda.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "agent_process.h"
#include "devices/gpu_devices.h"

namespace rig::agent {
namespace {

struct AgentRun {
  std::string output;  // stdout and stderr together
  int status = -1;
};

// Runs rig-agent with `args` (stopped after `seconds` by SIGTERM if it is still serving).
AgentRun run_agent(const std::string& args, int seconds) {
  const std::string cmd = "timeout -s TERM " + std::to_string(seconds) + " " + test::agent_path() + " --listen 127.0.0.1:0 " +
                          args + " 2>&1";
  AgentRun r;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) r.output.append(buf, n);
  r.status = ::pclose(f);
  return r;
}

class DeviceKindWithoutGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::uint32_t n = 0;
    const wire::Outcome found = gpu_count(n);
    if (found.ok()) GTEST_SKIP() << "this machine has a GPU";
    EXPECT_EQ(found.err(), -ENODEV);
    EXPECT_EQ(n, 0u);
    why_ = found.why();
    ASSERT_FALSE(why_.empty());
  }
  std::string why_;  // the loader's reason
};

TEST_F(DeviceKindWithoutGpu, CudaRefusesToStartAndSaysWhy) {
  const AgentRun r = run_agent("--device-kind cuda", 20);
  ASSERT_TRUE(WIFEXITED(r.status)) << r.output;
  EXPECT_EQ(WEXITSTATUS(r.status), 1) << r.output;
  EXPECT_NE(r.output.find("--device-kind cuda: " + why_), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("listening"), std::string::npos) << r.output;
}

TEST_F(DeviceKindWithoutGpu, AutoServesSimulatedDevicesAndLogsWhy) {
  const AgentRun r = run_agent("--device-kind auto --devices 3 --log info", 3);
  EXPECT_NE(r.output.find("listening on"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no GPU (" + why_ + "); opening 3 simulated devices"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("3 simulated devices,"), std::string::npos) << r.output;
}

TEST_F(DeviceKindWithoutGpu, TheDefaultStaysSimulatedDevicesWithoutAWordOfGpus) {
  const AgentRun r = run_agent("--log info", 3);
  EXPECT_NE(r.output.find("2 simulated devices,"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("GPU"), std::string::npos) << r.output;
}

TEST(DeviceKind, TheLoadersReasonNamesTheCause) {
  std::uint32_t n = 0;
  const wire::Outcome found = gpu_count(n);
  if (found.ok()) GTEST_SKIP() << "this machine has a GPU";
  const std::string& why = found.why();
#if defined(RIG_CUDA)
  // No libcuda.so.1 here names the library; a driver without a GPU names the driver's error.
  EXPECT_TRUE(why.find("libcuda.so.1") != std::string::npos || why.find("CUDA_ERROR_") != std::string::npos) << why;
#else
  EXPECT_NE(why.find("built without the CUDA backend"), std::string::npos) << why;
#endif
}

}  // namespace
}  // namespace rig::agent
