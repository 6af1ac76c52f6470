// An event counter that threads wait on with a futex: waiters sleep until it changes, and a
// notify costs no system call when nobody waits.
#pragma once

#include <atomic>
#include <cstdint>

#include "rig/engine/futex.h"

namespace rig::engine {

class EventWord {
 public:
  // Read before checking the condition waited for; pass it to wait().
  std::uint32_t current() const { return events_.load(std::memory_order_seq_cst); }

  // Blocks until notify() after `seen` was read, or `timeout_ns` (may return early).
  // seq_cst with notify(): a waiter bumps waiters_ then reads events_, a notifier bumps events_
  // then reads waiters_, so one of them sees the other (no lost wake-up).
  void wait(std::uint32_t seen, std::int64_t timeout_ns) {
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    if (events_.load(std::memory_order_seq_cst) == seen) futex_wait(events_, seen, timeout_ns);
    waiters_.fetch_sub(1, std::memory_order_seq_cst);
  }

  void notify() {
    events_.fetch_add(1, std::memory_order_seq_cst);
    if (waiters_.load(std::memory_order_seq_cst) != 0) futex_wake_all(events_);
  }

 private:
  alignas(64) std::atomic<std::uint32_t> events_{0};
  alignas(64) std::atomic<std::uint32_t> waiters_{0};
};

}  // namespace rig::engine
