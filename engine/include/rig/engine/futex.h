// Futex waits on a std::atomic<uint32_t> with a timeout (std::atomic::wait has none).
#pragma once

#include <atomic>
#include <cstdint>

namespace rig::engine {

// Blocks while `word` holds `expected`, for at most `timeout_ns` (negative: no bound).
// May return early (spurious wake, signal): callers re-check their condition.
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, std::int64_t timeout_ns);
// Wakes every thread blocked in futex_wait on `word`.
void futex_wake_all(std::atomic<std::uint32_t>& word);

}  // namespace rig::engine
