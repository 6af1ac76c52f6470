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

  std::uint64_t sent() const { return link_->counters().bytes_sent.load(); }
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
