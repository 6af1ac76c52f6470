#include "agent_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

// `name` as execve needs it: itself if it holds a slash, else the first executable file of that
// name in PATH (posix_spawnp's search, done before the fork).
std::string executable_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw std::runtime_error("spawn rig-agent: " + name + " is not in PATH");
}

// RIG_TEST_DEVICE_COUNT=N: the agent opens at most N simulated devices besides its host, as a
// host with N GPUs gives the suite on CUDA (RIG_TEST_DEVICES=cuda); an isolated device past N
// is dropped. Tests that need more devices skip, saying so (fixture.h: RIG_NEED_DEVICES).
void limit_devices(std::vector<std::string>& argv) {
  const char* limit = std::getenv("RIG_TEST_DEVICE_COUNT");
  if (limit == nullptr || *limit == '\0') return;
  const unsigned long n = std::strtoul(limit, nullptr, 10);
  // An agent told no count opens its default (2): it gets the cap as its count.
  if (std::find(argv.begin(), argv.end(), "--devices") == argv.end()) {
    argv.insert(argv.end(), {"--devices", std::to_string(n)});
  }
  for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] != "--devices" && argv[i] != "--isolated") continue;
    const unsigned long v = std::strtoul(argv[i + 1].c_str(), nullptr, 10);
    if (argv[i] == "--devices" && v > n) argv[i + 1] = std::to_string(n);
    if (argv[i] == "--isolated" && v > n) argv[i + 1] = std::to_string(0);
  }
}

// The agent's command line: the build's rig-agent (or RIG_AGENT), loopback unless `args` names
// --listen, the RIG_TEST_* settings, `args`, all behind `wrapper`.
std::vector<std::string> agent_command(const std::vector<std::string>& args, const std::vector<std::string>& wrapper) {
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
  limit_devices(argv_s);
  argv_s.insert(argv_s.begin(), wrapper.begin(), wrapper.end());
  return argv_s;
}

}  // namespace

engine::Secret test_secret() { return engine::read_secret_file(g_secret_file.file.path()); }

AgentProcess::AgentProcess(std::vector<std::string> args, bool open, std::vector<std::string> wrapper) {
  std::vector<std::string> argv_s = agent_command(args, wrapper);
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  const std::string path = executable_path(argv_s.front());
  std::vector<char*> env = open ? environment_without_secret() : std::vector<char*>{};
  char** envp = open ? env.data() : environ;
  // out: the agent's stdout (its first line names its endpoint); failed: the child's errno if
  // execve fails (closed unwritten by a successful exec: O_CLOEXEC).
  int out[2], failed[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(failed, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(out[0]);
    ::close(out[1]);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(e));
  }
  // fork and execve, not posix_spawn: the child asks the kernel to kill it when the thread that
  // forked it ends (PR_SET_PDEATHSIG), so an agent never outlives a test process that crashed or
  // was killed. Between fork and exec the child makes only async-signal-safe calls.
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    const int e = errno;
    for (int fd : {out[0], out[1], failed[0], failed[1]}) ::close(fd);
    throw std::runtime_error(std::string("fork for rig-agent: ") + std::strerror(e));
  }
  if (pid_ == 0) {
    // No signal blocked in the agent, whatever the forking thread (or a sanitizer's fork) had
    // blocked: posix_spawn's POSIX_SPAWN_SETSIGMASK with an empty set.
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the whole test process ended before the prctl
    ::dup2(out[1], STDOUT_FILENO);            // dup2 clears O_CLOEXEC on the copy
    ::execve(path.c_str(), argv.data(), envp);
    const int e = errno;
    (void)!::write(failed[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(failed[1]);
  int exec_errno = 0;
  const bool exec_failed = ::read(failed[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  ::close(failed[0]);
  if (exec_failed) {
    ::close(out[0]);
    signal(SIGKILL);
    throw std::runtime_error("spawn rig-agent: execve " + path + ": " + std::strerror(exec_errno));
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
