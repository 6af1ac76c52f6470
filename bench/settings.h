// What rig-bench measures and how long: set from the command line (rig_bench.cc).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace rig::bench {

inline constexpr std::uint64_t kKiB = 1024;
inline constexpr std::uint64_t kMiB = 1024 * kKiB;

struct Settings {
  double min_time = 0.5;                  // seconds timed per figure, at least
  std::uint64_t min_size = 4 * kKiB;      // the bandwidth sweep: min_size * 4^k up to max_size
  std::uint64_t max_size = 256 * kMiB;
  std::uint64_t batch_bytes = 64 * kMiB;  // bytes of copies pipelined per timed batch
  std::uint64_t strided_bytes = 64 * kMiB;  // strided copies: rows of row_bytes at pitch
  std::uint64_t row_bytes = 4 * kKiB;
  std::uint64_t pitch = 8 * kKiB;
  std::uint64_t d2d_bytes = 64 * kMiB;    // device-to-device copy on the agent
  std::uint64_t tiny_bytes = 64;          // a tiny handover: a copy of this many bytes back
  std::uint32_t rtt_count = 10000;        // round trips timed for p50/p99
  std::uint32_t pipeline = 4096;          // tiny handovers submitted per timed batch
  std::uint32_t threads = 4;              // threads (one proxy each) of the combined rate
  // --sizes: the host <-> device copies' sizes, in place of the sweep (empty: the sweep).
  std::vector<std::uint64_t> copy_sizes;
  // --figures: which groups of figures run (all by default).
  bool h2d = true, d2h = true, strided = true, d2d = true, handovers = true;

  std::vector<std::uint64_t> sizes() const {
    if (!copy_sizes.empty()) return copy_sizes;
    std::vector<std::uint64_t> out;
    for (std::uint64_t s = min_size; s <= max_size; s *= 4) out.push_back(s);
    return out;
  }
  std::uint64_t strided_span() const { return (strided_bytes / row_bytes - 1) * pitch + row_bytes; }
  // Bytes of each of the two device regions (and of each host buffer) that every figure fits
  // in, a whole number of MiB.
  std::uint64_t region_bytes() const {
    const std::uint64_t need = std::max({max_size, strided_span(), d2d_bytes, batch_bytes});
    return (need + kMiB - 1) / kMiB * kMiB;
  }
};

}  // namespace rig::bench
