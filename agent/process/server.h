// The agent's listener: accepts connections, drives their handshakes (handshake_room.h) on its
// own thread, and runs each job that proved itself on a thread of its own.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "process/config.h"
#include "process/drain.h"
#include "process/gauges.h"
#include "process/handshake_room.h"
#include "process/heartbeat.h"
#include "process/log_limit.h"
#include "rig/engine/tcp.h"

namespace rig::agent {

class Server {
 public:
  // Serves on `listen_fd`, a listening socket bound to `address` (engine::tcp_listen_first on a
  // resolved --listen), which it owns from here on.
  Server(int listen_fd, const engine::Address& address, const AgentConfig& config);
  ~Server();
  // The address it listens on (numeric, the port bound).
  const engine::Address& address() const { return address_; }
  // Accepts jobs (and the stripes that join them) until stop(), or until `max_jobs` jobs have
  // ended when > 0 (then it returns once every job's thread has ended).
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
  // returns false.
  bool admit(int fd, const std::string& who);
  // Accepts a connection into `room`; false when the agent must stop (an accept error that
  // does not pass).
  bool accept_one(HandshakeRoom& room);
  // A handshake that ended in `room` (kFailed, kJob or kJoined).
  void ended(Handshake& handshake, Handshake::Step step);
  // Gives the authenticated job a thread of its own, or refuses it when there is none.
  void start_session(Handshake& handshake);
  // After the accept loop: the drain (terminate()), or the wait for every session (max_jobs).
  void finish();
  // The poll's timeout: until the room's nearest deadline or the end of an accept's backoff.
  int poll_timeout_ms(const HandshakeRoom& room) const;
  // Wakes serve()'s poll through wake_fd_.
  void wake();

  AgentConfig config_;
  std::shared_ptr<Gauges> gauges_ = std::make_shared<Gauges>();
  std::shared_ptr<Drain> drain_ = std::make_shared<Drain>();
  // Pings the clients of busy sessions (heartbeat.h); its thread runs from the constructor to ~Server.
  std::shared_ptr<Heartbeat> heartbeat_ = std::make_shared<Heartbeat>();
  // The sessions serve() started: shared with their threads, which may outlive serve() when
  // max_jobs is 0.
  struct Tally {
    std::atomic<std::uint64_t> jobs_ended{0};  // sessions ended, and hellos whose handshake failed
    std::atomic<std::uint64_t> finished{0};    // session threads ended
    // One more job ended: whether it is the max_jobs-th (then serve() ends).
    bool job_ended(std::uint64_t max_jobs) {
      // seq_cst: one total order of the session threads' and the accept thread's ends, so that
      // exactly one of them sees the max_jobs-th and stops (stop()'s seq_cst store pairs with
      // serve()'s load after the wake).
      return jobs_ended.fetch_add(1, std::memory_order_seq_cst) + 1 == max_jobs;
    }
  };
  std::shared_ptr<Tally> tally_;
  std::uint64_t started_ = 0;  // session threads started (serve()'s thread only)
  std::uint64_t max_jobs_ = 0;  // serve()'s (its threads get a copy)
  // The accept thread's: an accept that failed for want of descriptors or memory waits out a
  // backoff (doubling from 10 ms to a second) before the next, handshakes served meanwhile.
  int backoff_ms_ = 0;
  std::chrono::steady_clock::time_point accept_after_{};
  LogLimit refused_log_;    // connections refused by --max-connections
  LogLimit handshake_log_;  // handshakes that failed before a proof
  LogLimit auth_log_;       // proofs that failed
  int listen_fd_ = -1;  // non-blocking: serve() polls it beside wake_fd_
  int wake_fd_ = -1;    // an eventfd that stop() and reload() write
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
