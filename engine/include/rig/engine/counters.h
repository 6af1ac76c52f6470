// Counters a benchmark or test reads: what crossed, and what was copied in user space.
// Each is written with relaxed increments (they order nothing) by the threads named beside it,
// and each writer's counters sit on their own cache line.
#pragma once

#include <atomic>
#include <cstdint>

namespace rig::engine {

/// What one link (or one agent job) counted over its connection and its stripes, from its start:
/// Link::counters(). Figures for benchmarks and tests: they order nothing, so relaxed loads read them.
struct Counters {
  /// Written by the sending threads (whoever holds a connection's turn). Bytes of the sends that
  /// succeeded, frame headers included, on the connection and on the stripes.
  alignas(64) std::atomic<std::uint64_t> bytes_sent{0};
  std::atomic<std::uint64_t> messages_sent{0};  ///< messages sent (a striped transfer: one per stripe it used)
  std::atomic<std::uint64_t> send_calls{0};      ///< send_all calls (each one or more syscalls/SQEs)
  std::atomic<std::uint64_t> bytes_staged{0};    ///< bytes packed into staging before a send
  std::atomic<std::uint64_t> bytes_striped_out{0};  ///< payload bytes sent on the stripes
  std::atomic<std::uint64_t> zc_sends{0};        ///< sends that went out zero-copy (SEND_ZC)
  std::atomic<std::uint64_t> zc_copied{0};       ///< of those, the ones the kernel copied anyway
  std::atomic<std::uint64_t> zc_fallbacks{0};    ///< zero-copy refused (memlock, unsupported): sent by copy
  std::atomic<std::uint64_t> staging_chunks_allocated{0};  ///< staging pool chunks ever allocated
  std::atomic<std::uint64_t> staging_registered_bytes{0};  ///< of them, registered as fixed buffers
  /// Written by the receiving thread. Bytes received, frame headers included, on the connection
  /// and on the stripes.
  alignas(64) std::atomic<std::uint64_t> bytes_received{0};
  std::atomic<std::uint64_t> messages_received{0};  ///< frames received (a striped transfer: one per stripe it used)
  /// Reads of the socket into the frame buffer (frames per read: messages_received / reads;
  /// payloads received in place are not counted).
  std::atomic<std::uint64_t> reads{0};
  std::atomic<std::uint64_t> payload_bytes_copied{0};  ///< payload bytes memcpy'd from the header buffer
  std::atomic<std::uint64_t> payload_bytes_direct{0};  ///< payload bytes received straight into place
  std::atomic<std::uint64_t> bytes_striped_in{0};      ///< payload bytes received on the stripes
  std::atomic<std::uint64_t> spin_reads{0};  ///< polling mode: tries that found no byte (each a syscall)
  /// Raises of a timeline word by the link's receiving thread: one per run of done reports of
  /// one device that came one right after another (a release store and one wake of the word's
  /// waiters each), so done reports / word_publishes is the reports' batch size.
  std::atomic<std::uint64_t> word_publishes{0};
  /// Gathering reads (FrameReader::set_gather: the agent's reading of a busy stream of small
  /// frames): how many times the reader started gathering.
  std::atomic<std::uint64_t> gathers{0};
};

/// Adds n to the counter c, with a relaxed increment.
inline void bump(std::atomic<std::uint64_t>& c, std::uint64_t n) {
  c.fetch_add(n, std::memory_order_relaxed);  ///< statistics only: pairs with nothing
}

}  // namespace rig::engine
