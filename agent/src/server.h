// The agent's listener: accepts jobs and runs each on a thread of its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "rig/engine/tcp.h"
#include "config.h"

namespace rig::agent {

class Server {
 public:
  Server(const engine::Endpoint& listen, const AgentConfig& config);
  ~Server();
  std::uint16_t port() const { return port_; }
  // Accepts jobs (and the stripes that join them) until stop(), or until `max_jobs` jobs have
  // ended when > 0 (then it returns once every connection's thread has ended).
  void serve(std::uint64_t max_jobs = 0);
  // Ends serve() from a signal handler or another thread.
  void stop();

 private:
  AgentConfig config_;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  // seq_cst: set by stop() (possibly a signal handler), read by serve() after accept returns.
  std::atomic<bool> stopping_{false};
};

}  // namespace rig::agent
