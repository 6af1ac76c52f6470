// A bounded look before sleeping: the engine's waiters that expect another thread (or the
// kernel's SQ thread) to finish within microseconds poll for it first, so that the common case
// costs no system call. Internal to the engine.
#pragma once

#include <chrono>

namespace rig::engine {

// The CPU's hint that this thread spins (frees the core's resources to its sibling, saves power).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Calls `done` until it returns true or `us` microseconds have passed (at least once):
// whether it returned true.
template <class Done>
bool spin_for(int us, Done done) {
  using clock = std::chrono::steady_clock;
  const clock::time_point until = clock::now() + std::chrono::microseconds(us);
  do {
    if (done()) return true;
    cpu_relax();
  } while (clock::now() < until);
  return false;
}

}  // namespace rig::engine
