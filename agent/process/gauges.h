// What the agent holds for its clients right now, shared by the accept loop and every
// connection's thread to enforce AgentConfig's limits. Counts only: each is changed with relaxed
// read-modify-writes, since it orders no other memory (an admission reads a count, nothing else).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <utility>

namespace rig::agent {

struct Gauges {
  std::atomic<std::uint32_t> connections{0};  // connections open: in their handshake or a job's
  std::atomic<std::uint32_t> handshakes{0};   // of them, still in their handshake (no thread)
  std::atomic<std::uint32_t> jobs{0};         // jobs running
  // Bytes of the jobs that ended, both connections and stripes (the status query adds the
  // asking job's so far). relaxed, as the counts above: they order nothing.
  std::atomic<std::uint64_t> bytes_in{0};
  std::atomic<std::uint64_t> bytes_out{0};
  // Since the agent started, for the status's "totals" (relaxed, as the counts above): jobs
  // welcomed and failed; connections refused by --max-connections, jobs by --max-jobs and by
  // the stop; handshakes that failed before a proof (a bad or late first frame, a join refused),
  // proofs that failed, and connections shed for newcomers (handshake_room.h).
  std::atomic<std::uint64_t> jobs_started{0};
  std::atomic<std::uint64_t> jobs_failed{0};
  std::atomic<std::uint64_t> refused_connections{0};
  std::atomic<std::uint64_t> refused_jobs{0};
  std::atomic<std::uint64_t> refused_stopping{0};
  std::atomic<std::uint64_t> handshakes_failed{0};
  std::atomic<std::uint64_t> auth_failures{0};
  std::atomic<std::uint64_t> handshakes_shed{0};
  // When the agent started (set before any thread reads it; never written again).
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

// Takes one of `gauge` if fewer than `limit` are taken; false (nothing taken) otherwise.
inline bool take(std::atomic<std::uint32_t>& gauge, std::uint32_t limit) {
  // relaxed: a count (see above).
  if (gauge.fetch_add(1, std::memory_order_relaxed) < limit) return true;
  gauge.fetch_sub(1, std::memory_order_relaxed);
  return false;
}

// Counts one more of a total (relaxed: see above).
inline void bump(std::atomic<std::uint64_t>& total) { total.fetch_add(1, std::memory_order_relaxed); }

// Gives one back when it goes out of scope (moved: the new owner gives it back).
class Held {
 public:
  Held() = default;
  explicit Held(std::atomic<std::uint32_t>& gauge) : gauge_(&gauge) {}
  ~Held() { release(); }
  Held(Held&& other) noexcept : gauge_(std::exchange(other.gauge_, nullptr)) {}
  Held& operator=(Held&& other) noexcept {
    if (this != &other) {
      release();
      gauge_ = std::exchange(other.gauge_, nullptr);
    }
    return *this;
  }
  void release() {
    if (gauge_ != nullptr) gauge_->fetch_sub(1, std::memory_order_relaxed);  // relaxed: a count
    gauge_ = nullptr;
  }

 private:
  std::atomic<std::uint32_t>* gauge_ = nullptr;
};

}  // namespace rig::agent
