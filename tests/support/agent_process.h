// A real rig-agent process for tests: started on a loopback port it picks, ended at scope exit,
// and killed by the kernel when the thread that started it ends (PR_SET_PDEATHSIG), so that no
// agent outlives a test process that crashed or was killed: start it on a thread that outlives
// its use.
// RIG_TEST_AGENT_ARGS adds options to every agent a test starts.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "rig/engine/secret.h"

namespace rig::test {

// The test process's secret: a private file made once, named by RIG_SECRET_FILE in the
// process's environment (set before main), so every agent a test starts and every job it makes
// prove it.
engine::Secret test_secret();

// Variables ("NAME=VALUE") set in an agent's environment only, over this process's: the
// emulated driver's (emulated_cuda.h), read at the agent's cuInit. Never setenv in the test
// process: that would also change what ctest set for the tests that follow.
struct AgentEnv {
  std::vector<std::string> vars;
};

class AgentProcess {
 public:
  // `args` may name `--listen ADDRESS:0`; loopback otherwise.
  // `open`: the agent runs without a secret (its environment has none).
  // `wrapper`: a command that runs the agent (e.g. {"prlimit", "--nofile=32"}).
  // `env`: set in the agent's environment only.
  explicit AgentProcess(std::vector<std::string> args = {}, bool open = false,
                        std::vector<std::string> wrapper = {}, AgentEnv env = {});
  explicit AgentProcess(AgentEnv env, std::vector<std::string> args = {})
      : AgentProcess(std::move(args), false, {}, std::move(env)) {}
  ~AgentProcess();
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  // "ADDRESS:PORT"
  const std::string& endpoint() const { return endpoint_; }
  pid_t pid() const { return pid_; }
  // Whether the process still runs.
  bool alive();
  // Sends `sig`; with SIGKILL/SIGTERM, also reaps it.
  void signal(int sig);
  // Waits up to `timeout_ms` for the process to end (after a signal sent to pid()) and reaps it:
  // its wait status, or -1 if it still runs then.
  int wait_exit(int timeout_ms);

 private:
  pid_t pid_ = -1;
  std::string endpoint_;
};

// The path of the built rig-agent.
std::string agent_path();

// Whether the agents the tests start open the machine's GPUs (RIG_TEST_DEVICES=cuda: the proxy
// suite on CUDA, on a GPU host or on the emulated driver).
bool agent_devices_are_gpus();

}  // namespace rig::test
