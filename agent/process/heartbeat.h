// The agent's sign of life while a job's session is busy with one message for long: a launch,
// zeroing a large allocation, a slow device or driver call. The session reads no message then,
// so it echoes none of its client's pings, and the client, which fails a job whose agent sent
// nothing for its silence bound (LinkOptions::silence_ms), would fail a job that is working.
// One thread of the agent looks at every job's session each kPeriodMs; a session still busy
// with the message it was busy with a look ago gets a ping sent to its client on its behalf
// (Connection::send_control: never waiting for the turn, never leaving half a frame). So a
// busy agent's client hears from it at least every 2 × kPeriodMs (plus the thread's
// scheduling). A session that reads or waits for its client is not busy: it echoes itself.
// A call that never returns keeps its job alive: the bounds on the calls themselves end them
// (the instruction budget, the GPU waits' bounds).
#pragma once

#include <atomic>
#include <cassert>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "rig/engine/connection.h"

namespace rig::agent {

class Heartbeat {
 public:
  static constexpr int kPeriodMs = 250;

  Heartbeat() = default;
  ~Heartbeat() { stop(); }
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // One job's session, watched while it lives: it says when it starts on a message and when it
  // is done with it. Register and unregister take the heartbeat's lock (once per job).
  class Watch {
   public:
    Watch(Heartbeat& heartbeat, engine::Connection& connection);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;
    // The session's thread only: busy with a message from now / done with it.
    void busy() { mark(true); }
    void done() { mark(false); }

   private:
    friend class Heartbeat;
    void mark([[maybe_unused]] bool busy) {
      assert((marks_ % 2 == 1) != busy);  // busy and done alternate
      ++marks_;
      // relaxed: a hint the heartbeat's look reads; it orders no memory (the ping itself is
      // ordered with the session's sends by the connection's turn).
      seen_.store(marks_, std::memory_order_relaxed);
    }
    Heartbeat& heartbeat_;
    engine::Connection& connection_;
    std::uint64_t marks_ = 0;  // the session thread's: odd while busy
    alignas(64) std::atomic<std::uint64_t> seen_{0};
    std::uint64_t last_look_ = 0;  // the looker's (under the heartbeat's lock)
  };

  // Looks at every watched session once: pings the client of each busy with the message it was
  // busy with at the last look. The heartbeat's thread calls it each kPeriodMs; a test may call
  // it itself (without start()). Returns how many pings went.
  int look();

  // Starts the thread that looks each kPeriodMs / stops and joins it (idempotent).
  void start();
  void stop();

 private:
  std::mutex mu_;  // the watches and the looks: once per job and per period, never per message
  std::condition_variable stopping_;
  bool stop_ = false;  // under mu_
  std::vector<Watch*> watches_;
  std::thread thread_;
  std::uint64_t pings_ = 0;  // each ping's nonce: the heartbeat's count (under mu_)
};

}  // namespace rig::agent
