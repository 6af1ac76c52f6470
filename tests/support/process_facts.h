// What a process holds right now, read from /proc (a fault test's "the agent freed all it held"),
// and waiting on such an observable state within a bound.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace rig::test {

struct ProcessHolds {
  std::uint64_t threads = 0;
  std::uint64_t fds = 0;
  std::uint64_t resident_bytes = 0;
  // Each thread's name (/proc/PID/task/TID/comm), sorted: which threads a count holds, for a
  // failure's message (io_uring's io-wq workers show as iou-wrk-TID, the thread they serve).
  std::string thread_names;
};
// Throws std::runtime_error when the process is gone.
ProcessHolds held_by(pid_t pid);

// Polls `done` every few milliseconds until it holds or `bound` passes; the time it took, or
// nullopt-like: a negative duration when the bound passed.
std::chrono::milliseconds within(std::chrono::milliseconds bound, const std::function<bool()>& done);

// Connects a job, retrying for up to 10 s (the agent frees what a client held once it sees the
// client go); "" once connected, else the last error.
std::string connects_within(const std::string& endpoint);

}  // namespace rig::test
