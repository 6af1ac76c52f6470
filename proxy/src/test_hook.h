// A test's hold on the stop/receiver handshake (proxy/src/stop_handshake.h), on a sleeper between
// its checks and its wait, and on a broken send (proxy/src/link.cc): the receiving thread,
// Proxy::stop, Proxy::sleep and the sending thread call the installed function at the points
// named below, and a test may block in it or note it, so that each order of the sides is forced
// instead of hoped for under stress (tests/proxy/stop_test.cc, StopOrder.*;
// tests/proxy/sleep_order_test.cc). Nothing installs one outside the tests: each point then
// costs one load and a branch.
#pragma once

#include <atomic>
#include <cstdint>

namespace rig::remote::test_hook {

enum class Point {
  // The receiving thread has popped the record of a pending copy into this process's memory
  // whose bytes have all landed, and has not yet read whether the proxy is stopped.
  kReceiverPoppedCopy,
  // The receiving thread, in a done report of a proxy it found not stopped, is about to
  // publish the value (it is inside the proxy's handshake, kReceiverBusy).
  kReceiverPublishing,
  // stop has marked the handshake stopped and has not yet looked for pending copies.
  kStopStored,
  // stop waits for the receiving thread to finish a report of this proxy: called on each turn
  // of that wait, and only while it waits.
  kStopWaitsForReceiver,
  // The receiving thread has claimed the write of a stopped proxy's last value (its last copy
  // landed, or the thread ends) and is about to write it (it is inside the proxy's handshake, kReceiverBusy).
  kReceiverClaimedFinal,
  // A send of the link failed: fail_send begins, on the sending thread (device: 0). When the
  // agent's side closed or reset the connection it then waits for the agent's reason
  // (tests/proxy/hostile_agent_test.cc, the broken-send tests).
  kSendFailed,
  // sleep has read the proxy's event count, found the word still at `seen`, the job neither
  // failed nor closing, and the deadline not reached, and is about to wait
  // (tests/proxy/sleep_order_test.cc).
  kSleepChecked,
  // submit is about to wait here for a word (a wait of its submission that stays here, or its
  // proxy's last copy into this process's memory), having sent nothing of its handover yet:
  // called on each turn of that wait (tests/proxy/submit_test.cc).
  kSubmitWaitsHere,
};

using Fn = void (*)(Point point, std::uint32_t device);

namespace detail {
// release (set) / acquire (at): what the test wrote before installing the function is visible
// to the thread that calls it.
inline std::atomic<Fn> hook{nullptr};
}  // namespace detail

// Installs `fn` (nullptr: none). A thread already inside the previous function may still run it.
inline void set(Fn fn) { detail::hook.store(fn, std::memory_order_release); }

inline void at(Point point, std::uint32_t device) {
  if (const Fn fn = detail::hook.load(std::memory_order_acquire)) fn(point, device);
}

// Installs `fn` for a scope.
struct Scoped {
  explicit Scoped(Fn fn) { set(fn); }
  ~Scoped() { set(nullptr); }
  Scoped(const Scoped&) = delete;
  Scoped& operator=(const Scoped&) = delete;
};

}  // namespace rig::remote::test_hook
