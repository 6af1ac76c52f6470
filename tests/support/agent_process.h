// A real rig-agent process for tests: started on a loopback port it picks, ended at scope exit.
// RIG_TEST_AGENT_ARGS adds options to every agent a test starts.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace rig::test {

class AgentProcess {
 public:
  explicit AgentProcess(std::vector<std::string> args = {});
  ~AgentProcess();
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  // "127.0.0.1:PORT"
  const std::string& endpoint() const { return endpoint_; }
  pid_t pid() const { return pid_; }
  // Whether the process still runs.
  bool alive();
  // Sends `sig`; with SIGKILL/SIGTERM, also reaps it.
  void signal(int sig);

 private:
  pid_t pid_ = -1;
  std::string endpoint_;
};

// The path of the built rig-agent.
std::string agent_path();

}  // namespace rig::test
