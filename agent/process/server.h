// The agent's listener: accepts jobs and runs each on a thread of its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "process/config.h"
#include "process/drain.h"
#include "process/gauges.h"
#include "process/handshake_room.h"
#include "rig/engine/tcp.h"

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
  // Ends serve(), from any thread (async-signal-safe: a flag and a write to an eventfd).
  void stop();
  // stop(), then drain the jobs (drain.h) before serve() returns (rig-agent's SIGTERM).
  void terminate() {
    terminating_.store(true, std::memory_order_seq_cst);
    stop();
  }
  bool terminated() const { return terminating_.load(std::memory_order_seq_cst); }
  // Wakes serve() to reread the secrets at once (rig-agent's SIGHUP), telling the service manager
  // RELOADING=1, then READY=1. Jobs already running keep theirs. Any thread; async-signal-safe.
  void reload() {
    reload_.store(true, std::memory_order_seq_cst);
    wake();
  }

 private:
  // Counts the connection against the limit of connections, or refuses it (closing fd) and
  // returns false. Its place among those in their handshake is taken apart (room_).
  bool admit(int fd, const std::string& who);
  // Wakes serve()'s poll through wake_fd_.
  void wake();

  AgentConfig config_;
  std::shared_ptr<Gauges> gauges_ = std::make_shared<Gauges>();
  std::shared_ptr<Drain> drain_ = std::make_shared<Drain>();
  // The connections in their handshake (shed, never refused); shared with their threads.
  std::shared_ptr<HandshakeRoom> room_;
  int listen_fd_ = -1;  // non-blocking: serve() polls it beside wake_fd_
  int wake_fd_ = -1;    // an eventfd that stop() and reload() write
  std::uint16_t port_ = 0;
  engine::Address address_;
  // seq_cst: set by stop() (any thread) before its wake, read by serve() after each wake.
  std::atomic<bool> stopping_{false};
  // seq_cst: set by reload() before its wake, read and cleared by serve() after each wake.
  std::atomic<bool> reload_{false};
  // seq_cst: set by terminate() before stopping_, read by serve() once its
  // accept loop ended.
  std::atomic<bool> terminating_{false};
  void reread_secrets();
};

}  // namespace rig::agent
