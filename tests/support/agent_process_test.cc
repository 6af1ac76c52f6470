// The tests' agents: none outlives the test process that started it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <memory>
#include <thread>

#include "agent_process.h"
#include "rig/remote/job.h"

namespace rig::test {
namespace {

// A crashed or killed test process ends its threads: the kernel kills their agents. The end of
// the one thread that started an agent shows it without ending this process.
TEST(AgentProcess, AnAgentIsKilledWhenTheThreadThatStartedItEndsSoNoneOutlivesACrashedTest) {
  std::unique_ptr<AgentProcess> agent;
  std::thread([&agent] { agent = std::make_unique<AgentProcess>(); }).join();
  const int status = agent->wait_exit(10000);
  ASSERT_NE(status, -1) << "the agent still runs 10 s after the thread that started it ended";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "wait status " << status;
}

TEST(AgentProcess, AnAgentStartedOnTheTestsThreadRunsUntilItsScopeEnds) {
  AgentProcess agent;
  EXPECT_TRUE(agent.alive());
  EXPECT_FALSE(agent.endpoint().empty());
}

// RIG_TEST_DEVICE_COUNT=1: the suite meets one device besides the host, as on a one-GPU host.
TEST(AgentProcess, RigTestDeviceCountCapsTheDevicesTheAgentOpens) {
  ::setenv("RIG_TEST_DEVICE_COUNT", "1", 1);
  AgentProcess agent({"--devices", "3", "--isolated", "3"});
  ::unsetenv("RIG_TEST_DEVICE_COUNT");
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  EXPECT_EQ(link.accounts().size(), 2u) << "the host and one device";
  job->close();
}

}  // namespace
}  // namespace rig::test
