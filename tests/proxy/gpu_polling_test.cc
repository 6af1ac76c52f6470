// Polling mode on an agent whose devices are GPUs: a GPU completes work in the background, so
// the session's spin (rig-agent --poll-us) asks the devices at each try and reports a
// completion while it spins, not once the spin is over (docs/TUNING.md, "Polling mode"). Runs
// where the agent's devices are GPUs (RIG_TEST_DEVICES=cuda: ctest's proxy_tests_emulated_cuda,
// or scripts/gpu-check on a GPU host); elsewhere it skips, saying why.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent_process.h"
#include "random_bytes.h"
#include "rig/harness/runtime.h"
#include "rig/remote/job.h"
#include "rig/remote/link.h"

namespace rig::test {
namespace {

using harness::Driven;
using harness::Work;
using remote::Job;

TEST(GpuPolling, AnAgentThatSpinsReportsAGpusCompletionWhileItSpinsNotAfter) {
  if (!agent_devices_are_gpus()) {
    GTEST_SKIP() << "skipped: needs the agent's devices on GPUs (RIG_TEST_DEVICES=cuda; ctest -R "
                    "proxy_tests_emulated_cuda)";
  }
  // Each read that finds nothing spins a second: the client sends nothing while it waits for a
  // report, so a report held until the spin is over comes a second late, twice the bound below.
  // On the emulated driver each copy with a host side waits 20 ms on its stream, so it is done
  // only once the agent spins, never already at the look before its read (a GPU's tiny copy
  // may be: there the test cannot tell, and passes).
  AgentProcess agent(AgentEnv{{"RIG_EMULATED_CUDA_DELAY_US=20000"}}, {"--poll-us", "1000000"});
  auto job = Job::create();
  remote::LinkOptions options;
  options.poll_us = 0;  // the agent's spin is the one under test
  remote::Link& link = job->connect(agent.endpoint(), options);
  std::vector<std::byte> down;
  Driven gpu(link, 1);
  auto region = gpu->alloc(edge::Memory::kDevice, 4096);
  ASSERT_TRUE(region);
  // The fastest of three round trips, so that one slowed by a loaded machine does not decide.
  auto fastest = std::chrono::steady_clock::duration::max();
  for (int round = 0; round < 3; ++round) {
    const auto up = random_bytes(64, 70 + round);
    down.assign(64, std::byte{0});
    Work w;
    w.to_device(up.data(), *region, 0, 64).to_host(*region, 0, down.data(), 64);
    const auto start = std::chrono::steady_clock::now();
    gpu.wait(gpu.run(w), 30000);
    fastest = std::min(fastest, std::chrono::steady_clock::now() - start);
    EXPECT_EQ(down, up) << "round " << round;
  }
  EXPECT_LT(fastest, std::chrono::milliseconds(500)) << "every GPU completion waited for the agent's spin to end";
  const auto status = nlohmann::json::parse(link.agent_status());
  EXPECT_GT(status["job"]["spin_reads"].get<std::uint64_t>(), 0u) << "the agent did not spin";
  EXPECT_FALSE(job->failed()) << job->fault_text();
}

}  // namespace
}  // namespace rig::test
