#include "exec/stream_range.h"

#include <algorithm>
#include <cassert>

namespace rig::agent {

PackedRange packed_range(Shape shape, const Place& place, std::uint64_t from, std::uint64_t to) {
  assert(from <= to && to <= shape.rows * shape.row_bytes);
  PackedRange r{from, to, {1, to - from}, place};
  if (shape.rows == 1) {
    r.place.offset += from;
    return r;
  }
  assert(from % shape.row_bytes == 0);
  const std::uint64_t first = from / shape.row_bytes, last = to / shape.row_bytes;
  r.end = last * shape.row_bytes;
  r.shape = {last - first, shape.row_bytes};
  r.place.offset += first * place.pitch;
  return r;
}

PackedRange next_out_range(Shape shape, const Place& place, std::uint64_t from) {
  const std::uint64_t step = shape.rows > 1 ? std::max(kStreamBytes, shape.row_bytes) : kStreamBytes;
  return packed_range(shape, place, from, std::min(shape.rows * shape.row_bytes, from + step));
}

}  // namespace rig::agent
