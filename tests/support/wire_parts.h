// Pieces of a raw client's messages, built from the protocol's structs (a test's raw client and
// the agent's session fuzzer alike). Header-only: the fuzzer links no test framework.
#pragma once

#include <cstdint>

#include "rig/wire/messages.h"

namespace rig::test {

inline wire::Side client_side() {
  wire::Side s{};
  s.kind = static_cast<std::uint8_t>(wire::SideKind::kClient);
  return s;
}

inline wire::Side object(std::uint64_t id, std::uint64_t offset = 0) {
  wire::Side s{};
  s.kind = static_cast<std::uint8_t>(wire::SideKind::kObject);
  s.handle = id;
  s.offset = offset;
  return s;
}

// A copy of `rows` rows of `row_bytes`, `pitch` apart on both sides (0: end to end).
inline wire::Part copy_part(wire::Side src, wire::Side dst, std::uint64_t row_bytes, std::uint64_t rows = 1,
                            std::uint64_t pitch = 0) {
  wire::Part p{};
  p.kind = static_cast<std::uint16_t>(wire::PartKind::kCopy);
  p.copy.src = src;
  p.copy.dst = dst;
  p.copy.rows = rows;
  p.copy.row_bytes = row_bytes;
  p.copy.src_pitch = p.copy.dst_pitch = pitch == 0 ? row_bytes : pitch;
  return p;
}

}  // namespace rig::test
