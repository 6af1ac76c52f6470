#include "rig/harness/agent_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace rig::harness {
namespace {

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

// One line from `fd` within `timeout_ms` in all; false on time out or end of file.
bool read_line(int fd, std::string& line, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    char c = 0;
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    if (c == '\n') return true;
    line.push_back(c);
  }
}

void kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

// The child of spawn_agent's fork: execve's the agent with its stdout on `out`, or writes
// execve's errno to `failed` and exits 127. Async-signal-safe calls only (the parent may have
// threads).
[[noreturn]] void exec_child(pid_t parent, int out, int failed, const std::string& path, char** argv,
                             char* const* env) {
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent ended before the prctl
  // Its own process group, so that job control aimed at the starter's group does not reach
  // it: above all the kernel's SIGHUP+SIGCONT to a process group that is orphaned while a
  // member is stopped (kernel/exit.c kill_orphaned_pgrp), which resumed an agent a test held
  // with SIGSTOP when the shell job that ran ctest exited. PR_SET_PDEATHSIG still ends it.
  ::setpgid(0, 0);
  ::dup2(out, STDOUT_FILENO);  // dup2 clears O_CLOEXEC on the copy
  ::execve(path.c_str(), argv, env);
  const int e = errno;
  (void)!::write(failed, &e, sizeof e);
  ::_exit(127);
}

}  // namespace

AgentChild spawn_agent(const std::vector<std::string>& args, char* const* envp, int timeout_ms) {
  if (args.empty()) throw std::invalid_argument("spawn rig-agent: no command");
  std::vector<std::string> argv_s = args;
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  const std::string path = executable_path(argv_s.front());
  char* const* env = envp != nullptr ? envp : environ;
  // out: the agent's stdout; failed: the child's errno if execve fails (closed unwritten by a
  // successful exec: O_CLOEXEC).
  int out[2], failed[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(failed, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(out[0]);
    ::close(out[1]);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(e));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {out[0], out[1], failed[0], failed[1]}) ::close(fd);
    throw std::runtime_error(std::string("fork for rig-agent: ") + std::strerror(e));
  }
  if (pid == 0) exec_child(parent, out[1], failed[1], path, argv.data(), env);
  ::close(out[1]);
  ::close(failed[1]);
  int exec_errno = 0;
  const bool exec_failed = ::read(failed[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  ::close(failed[0]);
  if (exec_failed) {
    ::close(out[0]);
    kill_and_reap(pid);
    throw std::runtime_error("spawn rig-agent: execve " + path + ": " + std::strerror(exec_errno));
  }
  std::string line;
  const bool got = read_line(out[0], line, timeout_ms);
  ::close(out[0]);
  const std::string prefix = "rig-agent listening on ";
  if (!got || line.rfind(prefix, 0) != 0) {
    kill_and_reap(pid);
    throw std::runtime_error("rig-agent (" + path + ") did not start: " +
                             (got ? "it printed '" + line + "'"
                                  : "no endpoint within " + std::to_string(timeout_ms) + " ms, or it ended ('" + line + "')"));
  }
  return {pid, line.substr(prefix.size())};
}

void end_agent(pid_t pid, int grace_ms) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return;  // ended, or not ours to reap (ECHILD)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill_and_reap(pid);
}

}  // namespace rig::harness
