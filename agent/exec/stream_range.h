// A large copy between the host and a GPU goes range by range, so that the network and the
// GPU's copies overlap within the copy: into a GPU, each range is copied there as its bytes come
// (Incoming::stream); out of one, each range is sent as its copy out completes (Executor's
// copies out). A range is some of the part's packed bytes: whole rows where the part has
// several, so that a range is one copy of its own.
#pragma once

#include <cstdint>

#include "devices/device.h"

namespace rig::agent {

// A part larger than this goes range by range where it may. Into a device, a range is issued
// once this many bytes came since the last (cut down to whole rows); out of one, each range is
// this many bytes cut down to whole rows (at least one row); the last is what is left.
inline constexpr std::uint64_t kStreamBytes = 4ull << 20;

// Packed bytes [from, end) of a part, as a copy of its own: `shape` its rows, `place` where they
// lie on the device's side.
struct PackedRange {
  std::uint64_t from = 0;
  std::uint64_t end = 0;  // == from: no whole row lies within the bytes asked for
  Shape shape;
  Place place;
  bool empty() const { return end == from; }
};

// The range of packed bytes [from, to) of a part of `shape` whose rows lie at `place`: where the
// part has several rows, the whole rows within them (from lies on a row's start).
PackedRange packed_range(Shape shape, const Place& place, std::uint64_t from, std::uint64_t to);

// The range that follows packed byte `from` when a part goes out range by range: kStreamBytes
// (whole rows: at least one), or what is left.
PackedRange next_out_range(Shape shape, const Place& place, std::uint64_t from);

}  // namespace rig::agent
