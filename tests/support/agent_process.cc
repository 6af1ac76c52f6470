#include "agent_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace rig::test {

std::string agent_path() { return RIG_AGENT_PATH; }

AgentProcess::AgentProcess(std::vector<std::string> args) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  std::vector<std::string> argv_s = {agent_path(), "--listen", "127.0.0.1:0", "--log", "warn"};
  // RIG_TEST_AGENT_ARGS: options every test's agent gets (the suite run again against another
  // configuration of the agent's devices, such as --sim-completion later).
  if (const char* extra = std::getenv("RIG_TEST_AGENT_ARGS")) {
    std::istringstream words(extra);
    for (std::string w; words >> w;) argv_s.push_back(w);
  }
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  const int rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    throw std::runtime_error(std::string("spawn rig-agent: ") + std::strerror(rc));
  }
  // The agent's first line names its endpoint.
  std::string line;
  char c = 0;
  while (::read(out[0], &c, 1) == 1 && c != '\n') line.push_back(c);
  ::close(out[0]);
  const std::string prefix = "rig-agent listening on ";
  if (line.rfind(prefix, 0) != 0) {
    signal(SIGKILL);
    throw std::runtime_error("rig-agent did not start: '" + line + "'");
  }
  endpoint_ = line.substr(prefix.size());
}

AgentProcess::~AgentProcess() {
  if (pid_ > 0) signal(SIGKILL);
}

bool AgentProcess::alive() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

void AgentProcess::signal(int sig) {
  if (pid_ <= 0) return;
  ::kill(pid_, sig);
  if (sig == SIGKILL || sig == SIGTERM) {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
}

}  // namespace rig::test
