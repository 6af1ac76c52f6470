// Internal: how room and submit read a rig_submission (rig/edge.h), the one reading of both.
#pragma once

#include <sys/uio.h>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "proxy_slot.h"
#include "rig/edge.h"
#include "link_core.h"
#include "rig/engine/copy_bytes.h"
#include "rig/wire/codec.h"
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
inline ProxySlot* link_wait_slot(const LinkCore& link, const rig_wait& w) {
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

  void merge(const LinkCore& link, const rig_submission& s) {
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

// What submit needs to know of a submission, gathered in one pass over its parts
// (plan_submission, proxy_submit.cc) before its steps: wait here, encode, record, send.
struct SubmitPlan {
  TravellingWaits travelling;
  std::uint32_t n_parts = 0;  // parts that go on the wire (part_sent)
  std::uint32_t n_words = 0;  // the words of its words parts
  std::uint32_t n_into = 0;   // copies into this process's memory: one record each
  std::uint64_t cost = 0;     // bytes of its copies and words, towards the proxy's 64 MiB
  bool from_client = false;   // a copy from this process's memory: its bytes follow the handover
  bool striped = false;       // one of those goes over the link's stripes
  std::uint64_t staging_bytes = 0;  // memory to pack strided rows into (the largest chunk)
  std::size_t chunks = 0;     // kBytes messages of the copies from this process's memory
  // Whether the handover and its bytes leave as one posted message (no rows to pack, nothing
  // striped), or holding the connection's turn.
  bool posted() const { return staging_bytes == 0 && !striped; }
};

// A proxy's scratch for submit, reused from one submit to the next (room and submit run one at
// a time per proxy); Proxy::stop gives its memory back.
struct SubmitScratch {
  using BytesHeader = wire::Framed<wire::Bytes>;
  std::vector<std::byte> message;             // the handover's frame
  std::vector<BytesHeader> bytes_headers;     // a posted send's kBytes headers
  std::vector<iovec> iov;                     // a posted send's pieces
  engine::CopyBytes copy_bytes;               // frames its copies' bytes
};

// Calls fn(part, its index on the wire) for each part that goes on the wire, in order, while
// fn returns true. Returns false if fn stopped it.
template <class Fn>
bool each_sent_part(const rig_submission& s, Fn&& fn) {
  std::uint32_t wi = 0;
  for (std::uint32_t i = 0; i < s.n_parts; ++i) {
    if (!part_sent(s.parts[i])) continue;
    if (!fn(s.parts[i], wi++)) return false;
  }
  return true;
}

}  // namespace rig::remote
