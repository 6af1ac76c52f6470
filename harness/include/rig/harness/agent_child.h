// A rig-agent child process, as the tests and rig-bench start one: fork and execve (not
// posix_spawn) so that the child asks the kernel to kill it when the thread that forked it ends
// (PR_SET_PDEATHSIG): no agent outlives a test or bench process that crashed or was killed.
// The child runs with no signal blocked, whatever the forking thread had blocked. The agent's
// first line on stdout names its endpoint ("rig-agent listening on ADDRESS:PORT").
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace rig::harness {

struct AgentChild {
  pid_t pid = -1;
  std::string endpoint;  // "ADDRESS:PORT"
};

// Starts argv (argv[0]: a path, or a name looked up in PATH before the fork) with `envp`
// (nullptr: this process's environment) and waits up to `timeout_ms` for its endpoint. Throws
// std::runtime_error naming the cause (execve's errno, the line it printed instead, the time
// out); the child is then killed and reaped.
AgentChild spawn_agent(const std::vector<std::string>& argv, char* const* envp, int timeout_ms);

// Sends SIGTERM, waits up to `grace_ms` for the child to end, then SIGKILL; reaps it.
void end_agent(pid_t pid, int grace_ms);

}  // namespace rig::harness
