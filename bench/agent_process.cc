#include "agent_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace rig::bench {
namespace {

// Reads one line from `fd`, waiting at most `timeout_ms` in all. Returns false on timeout or EOF.
bool read_line(int fd, std::string& line, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
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

}  // namespace

AgentProcess::AgentProcess(const std::string& path, const std::vector<std::string>& args) {
  std::vector<std::string> argv_s = {path, "--listen", "127.0.0.1:0", "--log", "warn"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);

  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    const int e = errno;
    ::close(out[0]);
    ::close(out[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(e));
  }
  if (pid_ == 0) {
    // The child: dies with the bench, prints its endpoint into the pipe. Async-signal-safe only.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(out[1], STDOUT_FILENO);  // dup2 clears O_CLOEXEC on the copy
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  std::string line;
  const bool got = read_line(out[0], line, 10000);
  ::close(out[0]);
  const std::string prefix = "rig-agent listening on ";
  if (!got || line.rfind(prefix, 0) != 0) {
    end();
    throw std::runtime_error("rig-agent (" + path + ") did not start: '" + line + "'");
  }
  endpoint_ = line.substr(prefix.size());
}

AgentProcess::~AgentProcess() { end(); }

void AgentProcess::end() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 500; ++i) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

}  // namespace rig::bench
