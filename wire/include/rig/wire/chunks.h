// A copy's bytes as kBytes frames (PROTOCOL.md 5.7): the range [at, end) of the part's packed
// bytes cut into chunks of at most kChunkBytes, in order. The one loop that cuts a copy: both
// ends send their copies' bytes with it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "rig/wire/codec.h"
#include "rig/wire/limits.h"
#include "rig/wire/messages.h"

namespace rig::wire {

// How many chunks (kBytes frames) n bytes take.
constexpr std::uint64_t chunk_count(std::uint64_t n) { return (n + kChunkBytes - 1) / kChunkBytes; }

// Calls f(header, at, n) for each chunk of [at, end) of part `part` of `device`'s handover of
// `value`: the encoded header of the kBytes frame, and the chunk's offset and length. Stops at
// the first f that returns false; returns whether every one returned true.
template <class F>
bool each_chunk(std::uint32_t device, std::uint32_t part, std::uint64_t value, std::uint64_t at,
                std::uint64_t end, F f) {
  for (; at < end; at += kChunkBytes) {
    const auto n = static_cast<std::uint32_t>(std::min(kChunkBytes, end - at));
    if (!f(encode(Bytes{device, part, value, at, n, 0}), at, n)) return false;
  }
  return true;
}

}  // namespace rig::wire
