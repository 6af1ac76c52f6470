// The tests' agents: none outlives the test process that started it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>
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

// An agent leads a process group of its own: job control aimed at the test's group passes it
// by, above all the kernel's SIGHUP and SIGCONT to a group orphaned while a member is stopped,
// which resumed an agent a test held stopped (HostileAgent.AHungAgentIsFoundWithinTheSilenceBound)
// when the shell that started ctest in the background exited.
TEST(AgentProcess, AnAgentLeadsAProcessGroupOfItsOwn) {
  AgentProcess agent;
  EXPECT_EQ(::getpgid(agent.pid()), agent.pid());
  EXPECT_NE(::getpgid(agent.pid()), ::getpgrp());
}

// RIG_TEST_DEVICE_COUNT=1: the suite meets one device besides the host, as on a one-GPU host.
// Sets an environment variable for a scope, then puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::size_t devices_of_agent(std::vector<std::string> args) {
  AgentProcess agent(std::move(args));
  auto job = remote::Job::create();
  const std::size_t n = job->connect(agent.endpoint()).accounts().size() - 1;
  job->close();
  return n;
}

TEST(AgentProcess, RigTestDeviceCountCapsTheDevicesTheAgentOpens) {
  const ScopedEnv one("RIG_TEST_DEVICE_COUNT", "1");
  EXPECT_EQ(devices_of_agent({"--devices", "3", "--isolated", "3"}), 1u) << "a count past the cap";
  EXPECT_EQ(devices_of_agent({}), 1u) << "no count: the agent's default (2) past the cap";
}

}  // namespace
}  // namespace rig::test
