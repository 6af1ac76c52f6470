#include "agent_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

extern char** environ;

namespace rig::test {

// RIG_AGENT: a rig-agent elsewhere than the build's (scripts/gpu-check runs a bundle of binaries).
std::string agent_path() {
  const char* bundled = std::getenv("RIG_AGENT");
  return bundled != nullptr && *bundled != '\0' ? bundled : RIG_AGENT_PATH;
}

namespace {

// Made before main (no thread runs yet, so setenv races with no getenv).
struct TestSecretFile {
  TestSecretFile() { ::setenv("RIG_SECRET_FILE", file.path().c_str(), 1); }
  engine::PrivateSecretFile file;
};
const TestSecretFile g_secret_file;

// The environment without the secret's variables (an open agent's).
std::vector<char*> environment_without_secret() {
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view v(*e);
    if (v.rfind("RIG_SECRET_FILE=", 0) != 0 && v.rfind("RIG_SECRET=", 0) != 0) env.push_back(*e);
  }
  env.push_back(nullptr);
  return env;
}

}  // namespace

engine::Secret test_secret() { return engine::read_secret_file(g_secret_file.file.path()); }

AgentProcess::AgentProcess(std::vector<std::string> args, bool open, std::vector<std::string> wrapper) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  std::vector<std::string> argv_s = {agent_path(), "--log", "warn"};
  // Loopback unless the test names its own address (an agent in a network namespace).
  if (std::find(args.begin(), args.end(), "--listen") == args.end()) {
    argv_s.insert(argv_s.end(), {"--listen", "127.0.0.1:0"});
  }
  // RIG_TEST_AGENT_ARGS: options every test's agent gets (the suite run again against another
  // configuration of the agent's devices, such as --sim-completion later).
  // RIG_TEST_DEVICES=cuda: the agent's devices are the machine's GPUs (the proxy suite on a GPU
  // host, scripts/gpu-check); tests that name simulated devices (--devices, --isolated) then
  // get the GPUs the machine has.
  if (const char* kind = std::getenv("RIG_TEST_DEVICES"); kind != nullptr && *kind != '\0') {
    argv_s.insert(argv_s.end(), {"--device-kind", kind});
  }
  if (const char* extra = std::getenv("RIG_TEST_AGENT_ARGS")) {
    std::istringstream words(extra);
    for (std::string w; words >> w;) argv_s.push_back(w);
  }
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  argv_s.insert(argv_s.begin(), wrapper.begin(), wrapper.end());
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  std::vector<char*> env = open ? environment_without_secret() : std::vector<char*>{};
  const int rc = posix_spawnp(&pid_, argv[0], &fa, nullptr, argv.data(), open ? env.data() : environ);
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

int AgentProcess::wait_exit(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (pid_ > 0) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return status;
    }
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
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
