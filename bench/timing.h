// Timing for rig-bench: a monotonic clock, and repetition of a timed batch until enough time has
// been measured.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

namespace rig::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// What a measurement timed: `items` copies or handovers in `seconds` of timed batches.
struct Timed {
  double seconds = 0;
  std::uint64_t items = 0;
  std::uint64_t batches = 0;
  double per_second() const { return seconds > 0 ? static_cast<double>(items) / seconds : 0; }
};

// Repeats `before(); [timed] batch(); after();` until at least `min_time` seconds of batches
// have been timed (at least `min_batches` batches). `batch` returns the items it moved.
// `before` and `after` (setup, poisoning, checking bytes) are not timed.
template <class Before, class Batch, class After>
Timed repeat_timed(double min_time, std::uint64_t min_batches, Before&& before, Batch&& batch,
                   After&& after) {
  Timed t;
  while (t.seconds < min_time || t.batches < min_batches) {
    before();
    const auto t0 = Clock::now();
    const std::uint64_t items = batch();
    const auto t1 = Clock::now();
    after();
    t.seconds += seconds_between(t0, t1);
    t.items += items;
    ++t.batches;
  }
  return t;
}

// The p-th percentile (0..100) of `samples` by nearest rank; sorts them.
inline double percentile(std::vector<double>& samples, double p) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(samples.size()));
  const std::size_t i = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
  return samples[std::min(i, samples.size() - 1)];
}

}  // namespace rig::bench
