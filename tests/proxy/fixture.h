// A real rig-agent per test suite and a fresh job per test.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>
#include <thread>

#include "agent_process.h"
#include "rig/harness/runtime.h"
#include "rig/program/program.h"
#include "rig/remote/job.h"
#include "rig/remote/proxy.h"

namespace rig::test {

using harness::Driven;
using harness::Work;

// rig.program's binary of an assembly text; throws with the assembler's reason.
inline std::vector<std::byte> assemble(const std::string& text) {
  auto out = program::assemble(text);
  if (auto* err = std::get_if<std::string>(&out)) throw std::runtime_error(*err);
  return std::get<std::vector<std::byte>>(out);
}

// The devices the agent opened besides its host: the suite's three simulated ones, as many as
// the machine has GPUs where the suite runs on CUDA (RIG_TEST_DEVICES=cuda), or at most
// RIG_TEST_DEVICE_COUNT's (ctest's proxy_tests_one_device, as on a host with one GPU).
inline std::size_t devices_of(const remote::Link& link) { return link.accounts().size() - 1; }

// Skips the test, saying why, where the agent opened fewer than `n` devices besides its host.
#define RIG_NEED_DEVICES(link, n)                                                               \
  do {                                                                                         \
    if (::rig::test::devices_of(link) < (n)) {                                                 \
      GTEST_SKIP() << "skipped: the agent has " << ::rig::test::devices_of(link)               \
                   << " device(s) besides its host (one GPU?); the test needs " << (n);        \
    }                                                                                          \
  } while (0)

// Skips the test, saying why, unless the agent's device `id` reaches no other device's memory
// (the suite's --isolated device; GPUs of one machine may all reach each other).
#define RIG_NEED_ISOLATED(link, id)                                                             \
  do {                                                                                         \
    const auto* isolated_account = (link).account(id);                                         \
    if (isolated_account == nullptr || isolated_account->reaches != (1ull << (id))) {          \
      GTEST_SKIP() << "skipped: the agent has no device " << (id)                              \
                   << " that reaches no other device's memory (its devices are GPUs?)";        \
    }                                                                                          \
  } while (0)

class AgentSuite : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    agent_ = new AgentProcess({"--devices", "3", "--isolated", "3", "--device-budget", std::to_string(256u << 20),
                               "--host-budget", std::to_string(32u << 20)});
  }
  static void TearDownTestSuite() {
    delete agent_;
    agent_ = nullptr;
  }

 protected:
  void SetUp() override {
    job_ = remote::Job::create();
    link_ = &job_->connect(agent_->endpoint());
  }
  void TearDown() override { job_.reset(); }

  std::uint64_t sent() const { return link_->counters().bytes_sent; }
  // Waits until the job has failed.
  void wait_failed() {
    for (int i = 0; i < 5000 && !job_->failed(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_TRUE(job_->failed());
  }

  static AgentProcess* agent_;
  std::shared_ptr<remote::Job> job_;
  remote::Link* link_ = nullptr;
};

inline AgentProcess* AgentSuite::agent_ = nullptr;

}  // namespace rig::test
