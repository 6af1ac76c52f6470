// The protocol's limits, one home for each: what a receiver enforces before it reads a byte past
// a frame's header, what one handover may hold, and the sizes both ends agree on (the room, the
// chunk a copy's bytes are cut into). wire/PROTOCOL.md states each; docs/SEMANTICS.md argues
// the room. All bounds are inclusive.
#pragma once

#include <cstdint>

namespace rig::wire {

// ---- frames ------------------------------------------------------------------------------
inline constexpr std::uint32_t kMaxControlLength = (1u << 20) + 4096;  // everything but kBytes
inline constexpr std::uint32_t kMaxChunk = 16u << 20;                   // payload of one kBytes

// ---- what one message holds --------------------------------------------------------------
inline constexpr std::uint32_t kMaxDevices = 64;      // accounts one agent may open
inline constexpr std::uint32_t kMaxWaits = 256;       // waits of one handover (>= kMaxDevices)
// Parts and words of one handover: as many as one frame carries (kMaxControlLength: the
// Handover's 24 bytes, 88 per part, 4 per word; static_asserts in messages.h). A handover with
// both near their bounds is refused by its length (check_header), not by these.
inline constexpr std::uint32_t kMaxParts = (kMaxControlLength - 24) / 88;       // 11 961
inline constexpr std::uint32_t kMaxWords = (kMaxControlLength - 24 - 88) / 4;   // 263 140
inline constexpr std::uint32_t kMaxText = 4096;       // reason texts
inline constexpr std::uint32_t kMaxName = 64;         // function names
inline constexpr std::uint32_t kMaxImage = 1u << 20;  // an image's binary
inline constexpr std::uint64_t kMaxRows = 1ull << 32;
inline constexpr std::uint64_t kMaxCopyBytes = 1ull << 40;  // bytes of one copy part
inline constexpr std::uint32_t kMaxStripes = 16;  // data connections of one job, besides its own

// ---- what both ends agree on -------------------------------------------------------------
// The room: a client hands a proxy's work over only while at most this many bytes of its copies
// and words are not reported done; the agent fails a job whose device has more pending.
inline constexpr std::uint64_t kRoomBytes = 64ull << 20;
// The payload of each kBytes message a sender cuts a copy's bytes into (the last may be
// shorter), and so the size of a staging chunk.
inline constexpr std::uint64_t kChunkBytes = 4ull << 20;
static_assert(kChunkBytes <= kMaxChunk);

}  // namespace rig::wire
