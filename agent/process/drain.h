// The agent's stop (SIGTERM, SIGINT): once the accept loop has stopped, each job stops reading
// its client, runs the handovers it already received until none is left or the drain's deadline
// passes (rig-agent --drain-ms), whichever comes first, and then fails with kStopping.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

namespace rig::agent {

inline constexpr const char* kStopping = "the agent is stopping";

// Shared by the server's thread (begin) and every job's session thread (enter, leave, draining).
class Drain {
 public:
  // A job's connection `fd` (open until leave) while its session serves it; false once the drain
  // has begun: then the job ends at once.
  bool enter(int fd);
  void leave(int fd);
  // Begins the drain: the deadline is `drain_ms` from now, and every entered job's reading stops
  // (shutdown(SHUT_RD): its session's read returns end of stream).
  void begin(int drain_ms);
  // Whether the drain has begun (a session checks it once its read loop ended).
  bool draining() const;
  // The deadline; meaningful once draining() is true.
  std::chrono::steady_clock::time_point deadline() const;

 private:
  std::mutex mu_;
  std::vector<int> fds_;  // under mu_: the entered jobs' connections
  // release in begin(), after deadline_ns_; acquire in draining(): a session that sees the drain
  // sees its deadline.
  std::atomic<bool> draining_{false};
  // relaxed: published by draining_'s release store.
  std::atomic<std::int64_t> deadline_ns_{0};
};

// enter() for a scope: leave() at its end, if it entered.
class Entered {
 public:
  Entered(Drain& drain, int fd) : drain_(drain), fd_(fd), in_(drain.enter(fd)) {}
  ~Entered() {
    if (in_) drain_.leave(fd_);
  }
  Entered(const Entered&) = delete;
  Entered& operator=(const Entered&) = delete;
  explicit operator bool() const { return in_; }

 private:
  Drain& drain_;
  int fd_;
  bool in_;
};

}  // namespace rig::agent
