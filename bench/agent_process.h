// A rig-agent process that rig-bench starts for itself on a loopback port the agent picks, and
// ends when the bench ends (also if the bench dies: the child gets SIGKILL with the thread that
// started it; rig/harness/agent_child.h).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace rig::bench {

class AgentProcess {
 public:
  // Starts `path --listen 127.0.0.1:0 --log warn ARGS...` and reads the endpoint from the first
  // line the agent prints. Throws std::runtime_error if it does not start within 10 s.
  AgentProcess(const std::string& path, const std::vector<std::string>& args);
  // Sends SIGTERM, waits up to 5 s, then SIGKILL.
  ~AgentProcess();
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  // "127.0.0.1:PORT"
  const std::string& endpoint() const { return endpoint_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  std::string endpoint_;
};

}  // namespace rig::bench
