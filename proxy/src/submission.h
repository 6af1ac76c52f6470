// Internal: how room and submit read a rig_submission (rig/edge.h), the one reading of both.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

#include "proxy_slot.h"
#include "rig/edge.h"
#include "rig/remote/link.h"
#include "rig/wire/messages.h"

namespace rig::remote {

// The bytes a copy moves (rows * row_bytes); false if that overflows.
inline bool copy_bytes(const rig_copy& c, std::uint64_t& bytes) {
  return !__builtin_mul_overflow(c.rows, c.row_bytes, &bytes);
}

// Whether a part goes on the wire: every part but a copy of zero bytes, which sends nothing.
inline bool part_sent(const rig_part& p) {
  return p.kind != RIG_PART_COPY || (p.u.copy.rows != 0 && p.u.copy.row_bytes != 0);
}

// The proxy of this link whose word a wait names, if any: the wait's device is the word's
// location address (the agent's device id), so this is one indexed load, not a search.
inline ProxySlot* link_wait_slot(const Link& link, const rig_wait& w) {
  if (w.device >= wire::kMaxDevices) return nullptr;
  ProxySlot* s = link.slot(static_cast<std::uint32_t>(w.device));
  return s != nullptr && s->word == w.word ? s : nullptr;
}

// The waits that travel in the handover: one per device of this link, with the largest value
// asked of it (a word never decreases, so reaching the largest reaches them all). Waits on any
// other word stay here and never count.
struct TravellingWaits {
  static_assert(wire::kMaxDevices <= 64, "one bit per device");
  std::uint64_t devices = 0;  // bit d: a wait on device d travels
  std::array<std::uint64_t, wire::kMaxDevices> value;  // valid where `devices` has the bit

  void merge(const Link& link, const rig_submission& s) {
    for (std::uint32_t i = 0; i < s.n_waits; ++i) {
      const ProxySlot* ws = link_wait_slot(link, s.waits[i]);
      if (ws == nullptr) continue;
      const std::uint64_t bit = std::uint64_t{1} << ws->device;
      value[ws->device] = (devices & bit) != 0 && value[ws->device] > s.waits[i].value
                              ? value[ws->device] : s.waits[i].value;
      devices |= bit;
    }
  }
  std::uint32_t count() const { return static_cast<std::uint32_t>(std::popcount(devices)); }
};

// The body length of the handover message (what check_header bounds by kMaxControlLength).
inline std::uint64_t handover_length(std::uint32_t waits, std::uint64_t parts, std::uint64_t words) {
  return sizeof(wire::Handover) + std::uint64_t{waits} * sizeof(wire::Wait) +
         parts * sizeof(wire::Part) + words * 4;
}

}  // namespace rig::remote
