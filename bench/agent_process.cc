#include "agent_process.h"

#include "rig/harness/agent_child.h"

namespace rig::bench {

AgentProcess::AgentProcess(const std::string& path, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {path, "--listen", "127.0.0.1:0", "--log", "warn"};
  argv.insert(argv.end(), args.begin(), args.end());
  harness::AgentChild child = harness::spawn_agent(argv, nullptr, 10000);
  pid_ = child.pid;
  endpoint_ = std::move(child.endpoint);
}

AgentProcess::~AgentProcess() { harness::end_agent(pid_, 5000); }

}  // namespace rig::bench
