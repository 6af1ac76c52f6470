// The send turn of one connection: a ticket lock with a futex wait. One thread at a time holds
// it and sends a whole message, so messages never interleave and go out in ticket order.
#pragma once

#include <atomic>
#include <cstdint>

namespace rig::engine {

class SendTurn {
 public:
  // Blocks until the caller's ticket is served.
  void take() {
    // relaxed: the ticket only orders this thread among the takers; what the previous holder
    // did is published by its pass() (release), read by the acquire load below.
    const std::uint32_t ticket = next_.fetch_add(1, std::memory_order_relaxed);
    for (;;) {
      // acquire: pairs with pass()'s release, so the previous holder's sends happen-before ours.
      const std::uint32_t now = serving_.load(std::memory_order_acquire);
      if (now == ticket) return;
      serving_.wait(now, std::memory_order_acquire);
    }
  }

  // Takes the turn only if nobody holds it or waits for it. Never blocks.
  bool try_take() {
    // acquire: as take(); pairs with pass()'s release. seq_cst, not only acquire: a combining
    // poster's seq_cst push then this load, against a releaser's seq_cst pass() then its seq_cst
    // look at what was posted, is a store-buffering pair (Connection::send_combined/release);
    // with all four seq_cst, one side sees the other. On x86 a seq_cst load costs what an
    // acquire load does.
    std::uint32_t now = serving_.load(std::memory_order_seq_cst);
    std::uint32_t expected = now;
    // acquire on success: the ticket is ours and the previous holder's sends happened-before.
    return next_.compare_exchange_strong(expected, now + 1, std::memory_order_acquire,
                                         std::memory_order_relaxed);
  }

  // Hands the turn to the next ticket.
  void pass() {
    // release: publishes everything this holder did to the next holder's acquire in take().
    // seq_cst: the store-buffering pair of try_take() (a read-modify-write, as locked as the
    // release one).
    serving_.fetch_add(1, std::memory_order_seq_cst);
    serving_.notify_all();
  }

 private:
  alignas(64) std::atomic<std::uint32_t> next_{0};
  alignas(64) std::atomic<std::uint32_t> serving_{0};
};

// Holds the turn for a scope.
class TurnGuard {
 public:
  explicit TurnGuard(SendTurn& t) : turn_(t) { turn_.take(); }
  ~TurnGuard() { turn_.pass(); }
  TurnGuard(const TurnGuard&) = delete;
  TurnGuard& operator=(const TurnGuard&) = delete;

 private:
  SendTurn& turn_;
};

}  // namespace rig::engine
