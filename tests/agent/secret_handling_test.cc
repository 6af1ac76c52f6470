// Secrets handled as secrets (issue 40): rig-agent refuses a FIFO at once (at start, and on
// SIGHUP without stalling its accepting thread), and takes RIG_SECRET out of its environment,
// its bytes too, keeping them for a reread.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>

#include "agent_process.h"
#include "command.h"
#include "connect_error.h"
#include "process/config.h"
#include "rig/engine/secret.h"
#include "rig/remote/job.h"

namespace rig::test {
namespace {

using Clock = std::chrono::steady_clock;

std::string text_of(const engine::Secret& s) { return std::string(s.bytes.begin(), s.bytes.end()); }

TEST(SecretHandling, AnAgentGivenAFifoAsItsSecretFileRefusesAtOnceSayingWhy) {
  const engine::PrivateSecretFile beside = *engine::PrivateSecretFile::make();
  const std::string fifo = beside.path() + ".fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // timeout: an agent that waited in open for a writer would otherwise hold the test forever
  // (SIGKILL: the agent blocks SIGTERM from its first line).
  const std::string command = "timeout -s KILL 5 " + agent_path() + " --secret-file " + fifo + " 2>&1";
  const auto start = Clock::now();
  const CommandRun run = run_command(command);
  std::remove(fifo.c_str());
  EXPECT_TRUE(run.exited(1)) << run.status << ": " << run.out;
  EXPECT_NE(run.out.find("secret file " + fifo + ": not a regular file"), std::string::npos) << run.out;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(4));
}

TEST(SecretHandling, SighupWithTheSecretFileReplacedByAFifoKeepsTheOldSecretAndServesAtOnce) {
  const engine::PrivateSecretFile file = *engine::PrivateSecretFile::make();
  const std::string copy = file.path() + ".copy";
  std::ofstream(copy) << text_of(*engine::read_secret_file(file.path()));
  ::chmod(copy.c_str(), 0600);
  AgentProcess agent({"--secret-file", file.path()});
  ASSERT_EQ(connect_error(agent.endpoint(), copy), "");
  std::remove(file.path().c_str());
  ASSERT_EQ(::mkfifo(file.path().c_str(), 0600), 0);
  agent.signal(SIGHUP);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the reread's turn
  // An accepting thread stuck in open(2) would leave this connection unanswered for 10 s.
  const auto start = Clock::now();
  EXPECT_EQ(connect_error(agent.endpoint(), copy), "");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  EXPECT_TRUE(agent.alive());
  std::remove(copy.c_str());
}

TEST(SecretHandling, TheAgentTakesRigSecretOutOfItsEnvironmentAndStillProvesItAfterSighup) {
  const std::string secret = text_of(test_secret());
  // open: no RIG_SECRET_FILE; the secret comes from RIG_SECRET alone.
  AgentProcess agent({}, /*open=*/true, {}, AgentEnv{{"RIG_SECRET=" + secret}});
  std::ifstream environ_file("/proc/" + std::to_string(agent.pid()) + "/environ", std::ios::binary);
  const std::string environ_text((std::istreambuf_iterator<char>(environ_file)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(environ_text.empty());
  EXPECT_EQ(environ_text.find(secret), std::string::npos) << "the secret's bytes are still in /proc/PID/environ";
  EXPECT_EQ(connect_error(agent.endpoint()), "");
  agent.signal(SIGHUP);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // The reread keeps the secret it took: the agent does not fall back to running open.
  EXPECT_EQ(connect_error(agent.endpoint()), "");
  const engine::PrivateSecretFile other = *engine::PrivateSecretFile::make();
  EXPECT_NE(connect_error(agent.endpoint(), other.path()), "");
}

TEST(SecretHandling, TakingRigSecretUnsetsItAndKeepsItsBytes) {
  ASSERT_EQ(std::getenv("RIG_SECRET"), nullptr) << "this test sets RIG_SECRET itself";
  const std::string secret(40, 's');
  ::setenv("RIG_SECRET", secret.c_str(), 1);
  const auto taken = agent::take_secret_variable();
  EXPECT_EQ(std::getenv("RIG_SECRET"), nullptr);
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(std::string(taken->begin(), taken->end()), secret);
}

}  // namespace
}  // namespace rig::test
