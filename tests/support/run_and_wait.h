// Copies into this process's memory and the lifetime of their destination. Until a Driven's
// word shows the last value given to submit, bytes of a pending copy may still land (after a
// Fault too); ~Driven stops the proxy and waits for that. So a test declares each destination
// before the Driven that copies into it (locals die in reverse order, also as a failed
// assertion or a thrown wait leaves the test), and a helper whose own destination dies before
// its caller's Driven runs its work through run_and_wait.
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

#include "rig/harness/runtime.h"

namespace rig::test {

// Runs `work` on `dev` and waits up to `timeout_ms` for its value, which it returns. Where
// either throws, it stops `dev` and waits (30 s at most, as ~Driven does) until the word shows
// the last value before it rethrows: the destinations may be freed as the exception leaves.
inline std::uint64_t run_and_wait(harness::Driven& dev, harness::Work& work, std::uint64_t timeout_ms = 60000) {
  try {
    const std::uint64_t value = dev.run(work);
    dev.wait(value, timeout_ms);
    return value;
  } catch (...) {
    dev.stop();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (dev->signaled() < dev.last_value() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    throw;
  }
}

}  // namespace rig::test
