// SIGTERM: the agent stops accepting, lets each job run the handovers it already received, up
// to --drain-ms, then fails it with "the agent is stopping" and exits 0. Against real rig-agent
// processes.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "agent_process.h"
#include "raw_peer.h"
#include "rig/harness/runtime.h"
#include "rig/remote/job.h"

namespace rig::test {
namespace {

using Clock = std::chrono::steady_clock;

// Waits up to `limit` for the job to fail; its root cause then ("" if it did not fail).
std::string failure_within(remote::Job& job, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (!job.failed() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return job.failed() ? job.fault_text() : std::string();
}

bool exited_zero(int status) { return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0; }

// A job on `agent` whose agent holds a handover it cannot run: it waits for a value of device 2
// that is never handed over. Once made, the agent has read that handover (a request after it
// was answered).
struct HeldJob {
  explicit HeldJob(const AgentProcess& agent)
      : job(remote::Job::create()), link(job->connect(agent.endpoint())), dev(link, 1), gate(link, 2) {
    auto x = dev->alloc(edge::Memory::kDevice, 128);
    EXPECT_TRUE(x.has_value());
    if (!x) return;
    harness::Work held;
    held.wait(gate.word(), 2, 1).between(*x, 0, *x, 64, 64);
    dev.run(held);
    EXPECT_TRUE(dev->alloc(edge::Memory::kDevice, 64).has_value());
  }
  std::shared_ptr<remote::Job> job;
  remote::Link& link;
  harness::Driven dev, gate;
};

TEST(Drain, OnSigtermAJobWithNothingLeftToRunFailsAtOnceWithTheReasonAndTheAgentExitsZero) {
  AgentProcess agent({"--drain-ms", "60000"});
  auto job = remote::Job::create();
  harness::Driven dev(job->connect(agent.endpoint()), 1);
  ASSERT_TRUE(dev->alloc(edge::Memory::kDevice, 64).has_value());
  ::kill(agent.pid(), SIGTERM);
  // Well before the drain time: nothing it received was left to run.
  const std::string why = failure_within(*job, std::chrono::seconds(10));
  EXPECT_NE(why.find("the agent is stopping"), std::string::npos) << why;
  const int status = agent.wait_exit(10000);
  EXPECT_TRUE(exited_zero(status)) << status;
}

TEST(Drain, OnSigtermAJobWhoseReceivedHandoverCannotRunFailsOnceTheDrainTimeIsUp) {
  AgentProcess agent({"--drain-ms", "300"});
  HeldJob held(agent);
  const auto sent = Clock::now();
  ::kill(agent.pid(), SIGTERM);
  const std::string why = failure_within(*held.job, std::chrono::seconds(10));
  const auto waited = Clock::now() - sent;
  EXPECT_NE(why.find("the agent is stopping"), std::string::npos) << why;
  EXPECT_GE(waited, std::chrono::milliseconds(300));
  const int status = agent.wait_exit(10000);
  EXPECT_TRUE(exited_zero(status)) << status;
}

TEST(Drain, OnSigtermAConnectionInItsHandshakeIsToldTheAgentIsStopping) {
  AgentProcess agent;
  RawClient c(agent.endpoint());
  send_msg(c.fd(), wire::MsgType::kHello, wire::Hello{wire::kMagic, wire::kVersion, 0, 0, 0});
  RawFrame challenge;  // the agent holds it in its handshake, awaiting the proof
  ASSERT_TRUE(read_frame(c.fd(), challenge));
  ::kill(agent.pid(), SIGTERM);
  EXPECT_EQ(c.failure_text(), "the agent is stopping");
  EXPECT_TRUE(exited_zero(agent.wait_exit(10000)));
}

TEST(Drain, OnSigtermTheAgentStopsAcceptingWhileItsJobsDrain) {
  AgentProcess agent({"--drain-ms", "3000"});
  HeldJob held(agent);
  remote::Job* job = held.job.get();
  ::kill(agent.pid(), SIGTERM);
  // Within the drain the held job has not failed yet, and a new job is refused.
  std::string refused;
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (refused.empty() && Clock::now() < deadline) {
    try {
      remote::Job::create()->connect(agent.endpoint());
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } catch (const std::exception& e) {
      refused = e.what();
    }
  }
  EXPECT_FALSE(job->failed()) << job->fault_text();
  EXPECT_NE(refused, "");
  EXPECT_NE(failure_within(*job, std::chrono::seconds(10)).find("the agent is stopping"), std::string::npos);
  EXPECT_TRUE(exited_zero(agent.wait_exit(10000)));
}

}  // namespace
}  // namespace rig::test
