// Internal: the state of one proxy that its submitting thread and the link's receiving thread
// share. Lives in its link until the link is destroyed, so a stopped proxy's record (device,
// last value, the flags below) stays; the receiving thread reads slots without a lock, so a
// slot itself is never freed before the link. What a stopped proxy no longer needs is freed:
// the values ring at stop, once the receiving thread is out of its done handling of the slot
// (the handshake's kReceiverBusy; after stop it skips the ring), and the copies ring by
// whichever side claims the final write (kClaimed), when no copy into this process's memory is
// pending or the receiving thread has ended, so neither side reads a record again (the
// receiver touches records only while the ring is not empty, and after stop nothing is added).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "rig/engine/event_word.h"
#include "rig/engine/spsc_ring.h"
#include "rig/remote/proxy.h"
#include "stop_handshake.h"
#include "test_hook.h"

namespace rig::remote {

// The timeline word is the caller's plain 8 bytes, advanced through std::atomic_ref: that must
// be lock-free (signaled may run while rig holds its own locks, and must never block).
static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free,
              "the timeline word needs lock-free 64-bit atomics");

// A copy into this process's memory whose bytes have not all landed.
struct ClientCopy {
  std::uint64_t value = 0;
  std::uint32_t part = 0;
  std::byte* base = nullptr;   // first byte of row 0
  std::uint64_t rows = 0;
  std::uint64_t row_bytes = 0;
  std::uint64_t pitch = 0;
  std::uint64_t total = 0;     // rows * row_bytes
  std::uint64_t landed = 0;    // receiver-owned once published
};

// A submitted value and the proxy's cumulative submitted cost once it was added.
struct SubmittedValue {
  std::uint64_t value = 0;
  std::uint64_t cost_end = 0;
};

struct ProxySlot {
  static constexpr std::size_t kCopyRecords = Proxy::kMaxCopiesIntoHere;
  static constexpr std::size_t kValueRecords = 1u << 16;

  ProxySlot(std::uint32_t device_id, std::uint64_t* word_address)
      : device(device_id), word(word_address) {}

  // Immutable after the slot is published (LinkCore::register_proxy's release store).
  const std::uint32_t device;
  std::uint64_t* const word;

  std::atomic_ref<std::uint64_t> word_ref() const { return std::atomic_ref<std::uint64_t>(*word); }
  std::uint64_t signaled() const {
    // acquire: pairs with publish()'s release, so the bytes of every value up to the one read
    // have landed and are visible.
    return word_ref().load(std::memory_order_acquire);
  }

  // Raises the word to `v` unless it holds `v` or more already (it never decreases).
  // Returns whether it wrote.
  bool publish(std::uint64_t v) {
    auto w = word_ref();
    std::uint64_t cur = w.load(std::memory_order_relaxed);
    while (cur < v) {
      // release: pairs with signaled()'s acquire: the landed bytes of every value <= v are
      // visible before v is.
      if (w.compare_exchange_weak(cur, v, std::memory_order_release, std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  // ---- written by the submitting thread (room/submit, one at a time) ----
  // release: pairs with the receiving thread's acquire when it checks a done report against
  // it, and with stop's acquire.
  alignas(64) std::atomic<std::uint64_t> last_submitted{0};
  // relaxed: read only by the submitting side (room/submit) and by stop, which the runtime
  // calls with no counted call in flight (its own synchronisation orders them).
  std::atomic<std::uint64_t> last_client_dst_value{0};
  std::atomic<std::uint64_t> submitted_cost{0};
  // A handover message of this proxy began to leave (so the agent may hold work of it): a
  // later make of the account on this link is refused. Not set by a submit that failed before
  // sending; "a value was given to submit" is last_submitted != 0 (values start above the
  // word, so the first is at least 1). release (submit) / acquire (register_proxy), cold.
  std::atomic<bool> handed_over{false};
  engine::SpscRing<ClientCopy> copies{kCopyRecords};      // producer: submit; consumer: receiver
  engine::SpscRing<SubmittedValue> values{kValueRecords}; // producer: submit; consumer: receiver

  // Waiters for this proxy's word (sleep, submit's waits, room in the rings): notified by each
  // publish, and by failure, close and the receiving thread's end.
  engine::EventWord events;

  // ---- written by the receiving thread ----
  // release: pairs with room's acquire: the cost of values reported done.
  alignas(64) std::atomic<std::uint64_t> done_cost{0};

  // ---- stop ----
  // final_value is written before stop's mark (release, in the handshake) and read after it.
  alignas(64) std::atomic<std::uint64_t> final_value{0};
  // stopped, the final write claimed, the receiving thread inside a report, closed: one word
  // (stop_handshake.h argues its orders).
  StopHandshake handshake;

  // Receiving thread: writes the last submitted value once no byte may land any more, unless
  // stop did or does. Touches the word only if it claims the write, and is inside the handshake
  // (enter .. leave) meanwhile: a stop that lost the claim to it waits for the write before it
  // returns (else stop could return, and the runtime free the word, while this thread still
  // reads it).
  void write_final_from_receiver() {
    if ((handshake.enter() & StopHandshake::kStopped) != 0 && handshake.claim()) {
      test_hook::at(test_hook::Point::kReceiverClaimedFinal, device);
      publish(final_value.load(std::memory_order_acquire));
      copies.release_storage();  // drained, or this thread ends: no record is read again
    }
    handshake.leave();  // the write is done before stop, waiting for it, goes on
  }
};

}  // namespace rig::remote
