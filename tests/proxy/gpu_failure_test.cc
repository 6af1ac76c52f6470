// A GPU failing under jobs, end to end: a real rig-agent whose devices are GPUs, where the
// emulated CUDA driver (tests/support/emulated_cuda.cc) fails the copy the test names inside
// the agent. Runs in ctest's proxy_tests_emulated_cuda; elsewhere it skips, saying why.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent_process.h"
#include "emulated_cuda.h"
#include "fixture.h"
#include "random_bytes.h"
#include "run_and_wait.h"
#include "rig/harness/runtime.h"
#include "rig/remote/job.h"
#include "rig/remote/link.h"

namespace rig::test {
namespace {

using harness::Driven;
using harness::Work;
using remote::Job;

// The job's root cause once it failed (bounded wait), else "".
// How often `what` occurs in `text`.
std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// The agent names a GPU's fault once: "device 1 (its name) faulted: " before the driver's words.
constexpr const char* kGpu1Faulted = "device 1 (Emulated GPU 0) faulted: ";

std::string failure_of(Job& job) {
  for (int i = 0; i < 10000 && !job.failed(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return job.failed() ? job.fault_text() : std::string();
}

// Whether dev copies bytes to its device and back exactly.
bool round_trip(Driven& dev) {
  try {
    auto region = dev->alloc(edge::Memory::kDevice, 4096);
    if (!region) return false;
    const auto up = random_bytes(4096, 51);
    std::vector<std::byte> down(4096);
    Work w;
    w.to_device(up.data(), *region, 0, 4096).to_host(*region, 0, down.data(), 4096);
    run_and_wait(dev, w, 10000);
    return down == up;
  } catch (const std::exception&) {
    return false;
  }
}

// Whether a fresh job on `endpoint` copies bytes to `device` (the first GPU unless told) and
// back exactly.
bool round_trip(const std::string& endpoint, std::uint32_t device = 1) {
  try {
    auto job = Job::create();
    Driven dev(job->connect(endpoint), device);
    return round_trip(dev);
  } catch (const std::exception&) {
    return false;
  }
}

TEST(GpuFailure, AStickyErrorFailsEveryJobUsingTheGpuWithTheDriversWordsNotOneThatNeverDidAndTheGpuServesAgainOnceTheyEnded) {
  if (!agent_devices_are_gpus() || !emulated_cuda()) {
    GTEST_SKIP() << "skipped: needs the agent's devices on the emulated CUDA driver (ctest -R proxy_tests_emulated_cuda)";
  }
  // The agent's first host-to-GPU copy fails as it runs, with a sticky error (armed in this
  // test's own agent only: it reads the variable at cuInit).
  // Two GPUs, also where the suite runs the emulator with one (as on a one-GPU host).
  AgentProcess agent(AgentEnv{{"RIG_EMULATED_CUDA_FAIL=cuMemcpyAsync:1:700:run",  // CUDA_ERROR_ILLEGAL_ADDRESS
                               "RIG_EMULATED_CUDA_GPUS=2"}});

  {  // the three jobs, ended (their clients gone) at the block's end
    auto first = Job::create(), second = Job::create(), third = Job::create();
    Driven a(first->connect(agent.endpoint()), 1);
    Driven b(second->connect(agent.endpoint()), 1);
    Driven c(third->connect(agent.endpoint()), 2);  // it will use the second GPU only
    auto region = a->alloc(edge::Memory::kDevice, 4096);
    ASSERT_TRUE(region);
    ASSERT_TRUE(b->alloc(edge::Memory::kDevice, 4096));
    const auto up = random_bytes(4096, 52);
    Work w;
    w.to_device(up.data(), *region, 0, 4096);
    a.run(w);
    const std::string why = failure_of(*first);
    EXPECT_NE(why.find("CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)"), std::string::npos)
        << why;
    EXPECT_EQ(occurrences(why, kGpu1Faulted), 1u) << why;
    // The other job, which used the same GPU and has nothing in flight there, fails too, saying why.
    const std::string why_b = failure_of(*second);
    EXPECT_NE(why_b.find("is lost"), std::string::npos) << why_b;
    EXPECT_NE(why_b.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << why_b;
    // A job that never used the lost GPU goes on.
    EXPECT_TRUE(round_trip(c));
    EXPECT_FALSE(third->failed()) << third->fault_text();
  }
  // Once the jobs ended in the agent, the GPU opens afresh for the next job.
  bool served = false;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       !served && std::chrono::steady_clock::now() < deadline;) {
    served = round_trip(agent.endpoint());
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(served) << "no job copied through GPU 1 within 20 s of the failed jobs' end";
  EXPECT_TRUE(agent.alive());
}

// The number of jobs the agent runs, as its status query says, asked by a job of its own (which
// counts itself); -1 if it could not be asked.
int jobs_running(const std::string& endpoint) {
  try {
    auto job = Job::create();
    const std::string text = job->connect(endpoint).agent_status();
    return nlohmann::json::parse(text)["jobs"].get<int>() - 1;
  } catch (const std::exception&) {
    return -1;
  }
}

// An agent on the emulated driver with `gpus` GPUs whose first host-to-GPU copy fails as it runs
// (sticky); fills and copies with a host side wait 300 ms first, so another GPU's wait on that
// copy's value is queued before the failure. The emulator never ends a wait on an event of a
// context that broke first, and ends the process where the agent frees or unpins memory such a
// wait's queued work still names.
std::unique_ptr<AgentProcess> agent_whose_first_copy_to_a_gpu_fails(const char* gpus = "2") {
  return std::make_unique<AgentProcess>(AgentEnv{{"RIG_EMULATED_CUDA_FAIL=cuMemcpyAsync:1:700:run",  // CUDA_ERROR_ILLEGAL_ADDRESS
                                                   "RIG_EMULATED_CUDA_DELAY_US=300000",
                                                   std::string("RIG_EMULATED_CUDA_GPUS=") + gpus}});
}

// Whether the agent comes to run `n` jobs (besides the asking one) within 30 s; stops early if
// the agent died.
bool jobs_come_to(AgentProcess& agent, int n) {
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       std::chrono::steady_clock::now() < deadline && agent.alive();) {
    if (jobs_running(agent.endpoint()) == n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// After such a job's client went: the job ends in the agent (its session does not wait forever
// on the given-up stream), the agent lives, and every GPU (both, unless told) opens afresh for
// the next job. Stops at the first of these that fails (a job still running holds its GPUs, and
// a GPU that does not serve is said once, not waited out for each GPU).
void expect_the_job_ended_and_both_gpus_serve(AgentProcess& agent, std::uint32_t gpus = 2) {
  if (!jobs_come_to(agent, 0)) {
    ADD_FAILURE() << "the failed job had not ended in the agent 30 s after its client went";
    return;
  }
  for (std::uint32_t device = 1; device <= gpus; ++device) {
    bool served = false;
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
         !served && agent.alive() && std::chrono::steady_clock::now() < deadline;) {
      served = round_trip(agent.endpoint(), device);
      if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!served) {
      ADD_FAILURE() << "no job copied through device " << device << " within 20 s";
      break;
    }
  }
  EXPECT_TRUE(agent.alive());
}

bool on_emulated_cuda() { return agent_devices_are_gpus() && emulated_cuda(); }

// A large copy between this process and a GPU goes in ranges, each a cuMemcpyAsync of the
// agent's (the memory's zeroing is a fill): out of the GPU, 16 MiB in four ranges, each sent once
// copied out; into it, 64 MiB copied there range by range as its bytes come. The third range's
// copy fails as `fail` says, with the first two issued and (300 ms each on the emulator, behind
// the memory's zeroing) still queued, or done and (out of the GPU) perhaps sent. The job fails with the driver's words; the agent lives (nothing is freed under
// the queued copies: the emulator would end it) and the GPU serves the next job. (Staging of
// these sizes given back is kept as a spare, still pinned; GpuStreaming.AConnectionLostInA...
// covers a part too large for that.)
void expect_a_copy_failing_in_its_third_range_to_fail_the_job_alone(bool out, const char* fail,
                                                                     const std::string& words) {
  AgentProcess agent(AgentEnv{{std::string("RIG_EMULATED_CUDA_FAIL=") + fail, "RIG_EMULATED_CUDA_DELAY_US=300000"}});
  const std::uint64_t bytes = out ? 16u << 20 : 64u << 20, range = 4u << 20;
  std::vector<std::byte> here(bytes, std::byte{0x3c});  // outlives the proxy; the GPU's memory is zeroed
  {
    auto job = Job::create();
    Driven gpu(job->connect(agent.endpoint()), 1);
    auto region = gpu->alloc(edge::Memory::kDevice, bytes);
    ASSERT_TRUE(region);
    Work w;
    if (out) {
      w.to_host(*region, 0, here.data(), bytes);
    } else {
      w.to_device(here.data(), *region, 0, bytes);
    }
    static_cast<void>(gpu.submit(w));  // committed, or failed already (the job's failure says why either way)
    const std::string why = failure_of(*job);
    EXPECT_NE(why.find(words), std::string::npos) << why;
    EXPECT_EQ(occurrences(why, kGpu1Faulted), 1u) << why;
  }  // the proxy stopped: nothing writes `here` any more
  if (out) {
    // The third range and those after it were never sent; of the first two, each one sent is
    // whole and exact (zeros), one not sent is untouched.
    for (std::uint64_t at = 0; at < bytes; at += range) {
      const bool zeros = std::all_of(here.begin() + at, here.begin() + at + range, [](std::byte b) { return b == std::byte{0}; });
      const bool untouched = std::all_of(here.begin() + at, here.begin() + at + range, [](std::byte b) { return b == std::byte{0x3c}; });
      EXPECT_TRUE(at < 2 * range ? zeros || untouched : untouched) << "the range at " << (at >> 20) << " MiB";
    }
  }
  expect_the_job_ended_and_both_gpus_serve(agent, 1);
}

TEST(GpuFailure, ACopyOutOfAGpuWhoseThirdRangeFailsAsItRunsFailsTheJobWithTheDriversWordsAndTheGpuServesAgain) {
  if (!on_emulated_cuda()) GTEST_SKIP() << "skipped: needs the agent's devices on the emulated CUDA driver";
  // 700: CUDA_ERROR_ILLEGAL_ADDRESS, sticky: the GPU is lost until the job ended.
  expect_a_copy_failing_in_its_third_range_to_fail_the_job_alone(
      true, "cuMemcpyAsync:3:700:run", "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)");
}

TEST(GpuFailure, ACopyOutOfAGpuWhoseThirdRangeIsRefusedFailsTheJobWithTheDriversWordsAndTheGpuServesAgain) {
  if (!on_emulated_cuda()) GTEST_SKIP() << "skipped: needs the agent's devices on the emulated CUDA driver";
  // 1: CUDA_ERROR_INVALID_VALUE, returned by the call, not sticky.
  expect_a_copy_failing_in_its_third_range_to_fail_the_job_alone(true, "cuMemcpyAsync:3:1",
                                                                 "cuMemcpyAsync: CUDA_ERROR_INVALID_VALUE");
}

TEST(GpuFailure, ACopyIntoAGpuWhoseThirdRangeIsRefusedAsItsBytesComeFailsTheJobWithTheDriversWordsAndTheGpuServesAgain) {
  if (!on_emulated_cuda()) GTEST_SKIP() << "skipped: needs the agent's devices on the emulated CUDA driver";
  expect_a_copy_failing_in_its_third_range_to_fail_the_job_alone(false, "cuMemcpyAsync:3:1",
                                                                 "cuMemcpyAsync: CUDA_ERROR_INVALID_VALUE");
}

TEST(GpuFailure, ACopyIntoAGpuWhoseThirdRangeFailsAsItRunsFailsTheJobWithTheDriversWordsAndTheGpuServesAgain) {
  if (!on_emulated_cuda()) GTEST_SKIP() << "skipped: needs the agent's devices on the emulated CUDA driver";
  expect_a_copy_failing_in_its_third_range_to_fail_the_job_alone(
      false, "cuMemcpyAsync:3:700:run", "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)");
}

// A GPU that fails an alloc for another reason than room (neither out of memory nor a size the
// driver refuses, and not sticky): the alloc has no value, and the job fails at its next look at
// the GPU, naming the device once and the driver's words; the agent serves on.
TEST(GpuFailure, AnAllocTheGpuFailsForAnotherReasonThanRoomFailsTheJobNamingTheDeviceOnce) {
  if (!on_emulated_cuda()) GTEST_SKIP() << "skipped: needs the agent's devices on the emulated CUDA driver";
  AgentProcess agent(AgentEnv{{"RIG_EMULATED_CUDA_FAIL=cuMemAlloc:1:800"}});  // CUDA_ERROR_NOT_PERMITTED
  {
    auto job = Job::create();
    Driven gpu(job->connect(agent.endpoint()), 1);
    try {
      EXPECT_FALSE(gpu->alloc(edge::Memory::kDevice, 4096));
      static_cast<void>(gpu->alloc(edge::Memory::kDevice, 4096));  // the job's next look at the GPU
    } catch (const edge::Fault&) {  // the job failed first: its fault says why
    }
    const std::string why = failure_of(*job);
    EXPECT_EQ(occurrences(why, std::string(kGpu1Faulted) + "cuMemAlloc: CUDA_ERROR_NOT_PERMITTED"), 1u) << why;
  }
  EXPECT_TRUE(round_trip(agent.endpoint()));
  EXPECT_TRUE(agent.alive());
}

// A copy out of a GPU is packed into staging before it goes to the client: past the job's
// staging limit it fails the job naming the limit and its option, not "out of memory".
TEST(GpuFailure, ACopyOutOfAGpuPastTheStagingLimitFailsTheJobNamingTheLimit) {
  if (!on_emulated_cuda()) GTEST_SKIP() << "skipped: needs the agent's devices on the emulated CUDA driver";
  AgentProcess agent({"--max-staged-bytes", "1048576"});
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven gpu(link, 1);
  auto x = gpu->alloc(edge::Memory::kDevice, 2u << 20);
  ASSERT_TRUE(x);
  std::vector<std::byte> here(2u << 20);
  Work out;
  out.to_host(*x, 0, here.data(), here.size());
  ASSERT_EQ(gpu.submit(out).rc, RIG_COMMITTED);
  const std::string why = failure_of(*job);
  EXPECT_NE(why.find("staging 2097152 bytes for the client would pass the job's limit of 1048576 staged bytes "
                     "(rig-agent --max-staged-bytes"),
            std::string::npos)
      << why;
}

TEST(GpuFailure, AJobWhoseGpuWaitsOnAGpuLostMeanwhileEndsInTheAgentAndBothGpusServeAgain) {
  if (!on_emulated_cuda()) {
    GTEST_SKIP() << "skipped: needs the agent's devices on the emulated CUDA driver (ctest -R proxy_tests_emulated_cuda)";
  }
  const auto agent = agent_whose_first_copy_to_a_gpu_fails();
  {  // the job, ended (its client gone) at the block's end
    auto job = Job::create();
    remote::Link& link = job->connect(agent->endpoint());
    Driven gpu0(link, 1), gpu1(link, 2);
    auto x = gpu0->alloc(edge::Memory::kDevice, 4096), y = gpu0->alloc(edge::Memory::kDevice, 4096);
    auto z = gpu1->alloc(edge::Memory::kDevice, 4096);
    ASSERT_TRUE(x && y && z);
    const auto up = random_bytes(4096, 53);
    Work to_gpu1;
    to_gpu1.to_device(up.data(), *z, 0, 4096);
    const std::uint64_t v = gpu1.run(to_gpu1);
    Work after;  // GPU 0's stream waits on the event of GPU 1's copy, which will fail
    after.wait(gpu1.word(), 2, v).between(*x, 0, *y, 0, 4096);
    gpu0.run(after);
    const std::string why = failure_of(*job);
    EXPECT_NE(why.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << why;
  }
  expect_the_job_ended_and_both_gpus_serve(*agent);
}

// The same where the work queued behind the given-up wait names the client's bytes in pinned
// staging, a pinned host object and the lost GPU's memory: the agent keeps them until the
// given-up GPU's context, with that work, is destroyed, rather than unpin and free the staging,
// or destroy the lost GPU's context, under the work (the emulator ends the agent for each).
// Both ways round: the staging and the host object are registered in GPU 0's context, so in the
// given-up GPU's own one way (left to it) and in the lost GPU's the other (kept pinned there),
// and the job's devices go in id order, so the lost GPU's context would go first the second way.
TEST(GpuFailure, WorkQueuedBehindAGivenUpWaitKeepsTheStagingAndMemoryItNamesUntilItsGpuIsGone) {
  if (!on_emulated_cuda()) {
    GTEST_SKIP() << "skipped: needs the agent's devices on the emulated CUDA driver (ctest -R proxy_tests_emulated_cuda)";
  }
  for (const auto& [lost, waiting] : {std::pair<std::uint32_t, std::uint32_t>{2, 1}, {1, 2}}) {
    SCOPED_TRACE("device " + std::to_string(lost) + " lost, device " + std::to_string(waiting) + " waiting");
    const auto agent = agent_whose_first_copy_to_a_gpu_fails();
    {
      auto job = Job::create();
      remote::Link& link = job->connect(agent->endpoint());
      Driven host(link, 0), failing(link, lost), given_up(link, waiting);
      auto x = given_up->alloc(edge::Memory::kDevice, 4096), y = given_up->alloc(edge::Memory::kDevice, 4096);
      auto z = failing->alloc(edge::Memory::kDevice, 4096);
      auto h = host->alloc(edge::Memory::kDevice, 4096);  // a host object, pinned like the staging
      ASSERT_TRUE(x && y && z && h);
      auto z_mapped = given_up->map_peer(failing.proxy(), *z);
      auto h_mapped = given_up->map_peer(host.proxy(), *h);
      ASSERT_TRUE(z_mapped && h_mapped);
      const auto up = random_bytes(4096, 54), more = random_bytes(4096, 55);
      Work fails;
      fails.to_device(up.data(), *z, 0, 4096);
      const std::uint64_t v = failing.run(fails);
      Work after;  // queued behind the wait: copies from the lost GPU's memory and the host object
      after.wait(failing.word(), lost, v).between(*z_mapped, 0, *y, 0, 4096).between(*h_mapped, 0, *x, 0, 4096);
      given_up.run(after);
      Work staged;  // and, on the same stream, a copy of the client's bytes from staging
      staged.to_device(more.data(), *x, 0, 4096);
      given_up.run(staged);
      const std::string why = failure_of(*job);
      EXPECT_NE(why.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << why;
    }
    expect_the_job_ended_and_both_gpus_serve(*agent);
    if (HasFailure()) return;  // the other way round would only wait the same failure out again
  }
}

// A chain: GPU 1's stream waits on GPU 2's failing copy and GPU 0's waits on GPU 1's work. At
// the job's end GPU 0's stream waits, through GPU 1, on the lost GPU 2: the wait is followed
// through GPU 1's own waits, so both streams are given up and the job ends.
TEST(GpuFailure, AWaitThroughAnotherGpuOnALostOneIsFollowedAndTheJobEndsInTheAgent) {
  if (!on_emulated_cuda()) {
    GTEST_SKIP() << "skipped: needs the agent's devices on the emulated CUDA driver (ctest -R proxy_tests_emulated_cuda)";
  }
  const auto agent = agent_whose_first_copy_to_a_gpu_fails("3");
  {
    auto job = Job::create();
    remote::Link& link = job->connect(agent->endpoint());
    Driven gpu0(link, 1), gpu1(link, 2), gpu2(link, 3);
    auto a0 = gpu0->alloc(edge::Memory::kDevice, 4096), b0 = gpu0->alloc(edge::Memory::kDevice, 4096);
    auto a1 = gpu1->alloc(edge::Memory::kDevice, 4096), b1 = gpu1->alloc(edge::Memory::kDevice, 4096);
    auto z = gpu2->alloc(edge::Memory::kDevice, 4096);
    ASSERT_TRUE(a0 && b0 && a1 && b1 && z);
    const auto up = random_bytes(4096, 56);
    Work fails;
    fails.to_device(up.data(), *z, 0, 4096);
    const std::uint64_t v2 = gpu2.run(fails);
    Work middle;  // GPU 1's stream waits on GPU 2's failing copy
    middle.wait(gpu2.word(), 3, v2).between(*a1, 0, *b1, 0, 4096);
    const std::uint64_t v1 = gpu1.run(middle);
    Work last;  // GPU 0's stream waits on GPU 1's work
    last.wait(gpu1.word(), 2, v1).between(*a0, 0, *b0, 0, 4096);
    gpu0.run(last);
    const std::string why = failure_of(*job);
    EXPECT_NE(why.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << why;
  }
  expect_the_job_ended_and_both_gpus_serve(*agent, 3);
}

}  // namespace
}  // namespace rig::test
