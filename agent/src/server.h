// The agent's listener: accepts jobs and runs each on a thread of its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rig/engine/tcp.h"
#include "config.h"
#include "drain.h"
#include "gauges.h"

namespace rig::agent {

class Server {
 public:
  // Listens on the first of `listen` that binds (a resolved --listen, in the resolver's order).
  Server(const std::vector<engine::Address>& listen, const AgentConfig& config);
  ~Server();
  std::uint16_t port() const { return port_; }
  // The address it listens on (numeric, the port bound).
  const engine::Address& address() const { return address_; }
  // Accepts jobs (and the stripes that join them) until stop(), or until `max_jobs` jobs have
  // ended when > 0 (then it returns once every connection's thread has ended).
  void serve(std::uint64_t max_jobs = 0);
  // Ends serve() from a signal handler or another thread.
  void stop();
  // stop(), then drain the jobs (drain.h) before serve() returns (from a SIGTERM handler).
  void terminate() {
    terminating_.store(true, std::memory_order_seq_cst);
    stop();
  }
  bool terminated() const { return terminating_.load(std::memory_order_seq_cst); }
  // Asks serve() to reread the secrets (from a SIGHUP handler, which must interrupt accept:
  // installed without SA_RESTART). Jobs already running keep theirs.
  void reload() { reload_.store(true, std::memory_order_seq_cst); }

 private:
  // Counts the connection against the limits, or refuses it (closing fd) and returns false.
  bool admit(int fd, const std::string& who);

  AgentConfig config_;
  std::shared_ptr<Gauges> gauges_ = std::make_shared<Gauges>();
  std::shared_ptr<Drain> drain_ = std::make_shared<Drain>();
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  engine::Address address_;
  // seq_cst: set by stop() (possibly a signal handler), read by serve() after accept returns.
  std::atomic<bool> stopping_{false};
  // seq_cst: set by reload() (a signal handler), read and cleared by serve() after accept returns.
  std::atomic<bool> reload_{false};
  // seq_cst: set by terminate() (a signal handler) before stopping_, read by serve() once its
  // accept loop ended.
  std::atomic<bool> terminating_{false};
  void reread_secrets();
};

}  // namespace rig::agent
