// Internal: the stop/receiver handshake of one proxy, in one atomic word.
//
// Two threads may write a stopped proxy's last value: Proxy::stop, and the link's receiving
// thread (as the last pending copy into this process's memory lands, or as it ends). Whichever
// comes second writes it, exactly once; after that the receiving thread never touches the word,
// which the runtime may free as soon as it reads the last value. The word holds the bits below;
// every change is a read-modify-write, so all of them fall in one order (the word's
// modification order), and each side learns from its own change what the other had done.
//
// The orders, argued once:
// - stop marks kStopped (acq_rel), then looks whether the copies ring is drained and whether
//   the receiving thread ended. The receiving thread pops a copy (release store of the ring's
//   head) or marks the link ended (release), then changes this word (acq_rel: look_after_pop,
//   enter), then reads kStopped from what its change returned. If its change comes after
//   stop's, it returns kStopped. If before, stop's change reads it (acquire of a release
//   sequence), so the pop or the end happened before stop's look, which sees it. One of the two
//   sees the other: no seq_cst is needed, because both sides write the one word.
// - kClaimed: set by fetch_or, so exactly one side gets it unset (claim).
// - kReceiverBusy: the receiving thread holds it while it reads the values ring or the word for
//   a done report (enter .. leave). stop, after its claim, waits until it reads the bit clear
//   (acquire, pairing with leave's release): a report that entered before stop's change is
//   finished before stop frees the values ring or writes the word; one that enters after it
//   returns kStopped (and kClaimed, if stop claimed first) and keeps away from both.
// - kClosed: stop or the proxy's destruction (release); the link lets a new proxy take the
//   device only once it reads it (acquire, LinkCore::register_proxy).
//
// The tests force each order of the two sides with test_hook.h (StopOrder.*). Weakening leave's
// release or the wait's acquire is a race ThreadSanitizer reports (mutants handshake-leave-
// relaxed, stop-waits-without-acquire). The acq_rel of the other changes orders atomics only
// against each other (a store-buffering pair): ThreadSanitizer cannot see it weakened, and on
// x86 every read-modify-write is a full barrier whatever its order, so the argument above is its
// guard.
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>

namespace rig::remote {

class StopHandshake {
 public:
  static constexpr std::uint32_t kStopped = 1u << 0;
  static constexpr std::uint32_t kClaimed = 1u << 1;
  static constexpr std::uint32_t kReceiverBusy = 1u << 2;
  static constexpr std::uint32_t kClosed = 1u << 3;

  // ---- stop's side ----
  // acq_rel: release publishes what stop wrote before (the proxy's final value); acquire pairs
  // with the receiving thread's look_after_pop/enter, whichever came first in the word's order.
  void mark_stopped() { state_.fetch_or(kStopped, std::memory_order_acq_rel); }
  // Whether the receiving thread is inside a done report of this proxy. acquire: pairs with
  // leave()'s release: what it read or wrote there happens before the caller goes on.
  bool receiver_busy() const {
    return (state_.load(std::memory_order_acquire) & kReceiverBusy) != 0;
  }
  // release: pairs with closed()'s acquire (register_proxy): a new proxy may take the device.
  void close() { state_.fetch_or(kClosed, std::memory_order_release); }

  // ---- either side ----
  // Claims the write of the last value: true for exactly one caller. acq_rel: the loser's
  // later look at kReceiverBusy (stop) or at the word is ordered after the winner's claim.
  bool claim() { return (state_.fetch_or(kClaimed, std::memory_order_acq_rel) & kClaimed) == 0; }

  // ---- the receiving thread ----
  // The receiving thread's changes are additions: only it sets and clears kReceiverBusy, never
  // twice, so adding the bit is setting it, and an addition whose result is used is one locked
  // instruction on x86 (a fetch_or whose result is used is a compare-and-swap loop).
  // After popping a copy: the state, read by a change of the word (acq_rel; see the orders).
  std::uint32_t look_after_pop() { return state_.fetch_add(0, std::memory_order_acq_rel); }
  // Enters a done report or the final write; returns the state before. acq_rel: the Dekker
  // half against mark_stopped (see the orders).
  std::uint32_t enter() {
    const std::uint32_t before = state_.fetch_add(kReceiverBusy, std::memory_order_acq_rel);
    assert((before & kReceiverBusy) == 0 && "the receiving thread entered twice");
    return before;
  }
  // release: pairs with receiver_busy()'s acquire in stop's wait.
  void leave() { state_.fetch_sub(kReceiverBusy, std::memory_order_release); }

  // ---- anyone ----
  // acquire: pairs with the changes above (stop's mark, a claim, leave, close).
  std::uint32_t state() const { return state_.load(std::memory_order_acquire); }
  bool stopped() const { return (state() & kStopped) != 0; }
  bool closed() const { return (state() & kClosed) != 0; }

 private:
  std::atomic<std::uint32_t> state_{0};
};

}  // namespace rig::remote
