// A copy's bytes on a link: the one place that chooses how a part's bytes go and frames them,
// for both ends (the proxy's copies into an agent, the agent's copies out to its client).
//   striped: a part of at least the link's stripe threshold goes over its data connections
//            (StripeSet::send_copy: kStriped announcements, a piece on each stripe);
//   packed:  strided rows of a sender that has a staging chunk are packed into it, chunk by
//            chunk (one copy, then one iovec, which may go zero-copy);
//   in place: otherwise each kBytes chunk's payload is the rows where they lie, gathered by
//            iovec (one iovec when they lie end to end).
// Chunks are wire::each_chunk's (PROTOCOL.md 5.7). How the frames are sent (batched with other
// frames, posted with the handover, or at once holding the turn) is the sender's.
#pragma once

#include <sys/uio.h>

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "rig/engine/counters.h"
#include "rig/engine/iov_cursor.h"
#include "rig/engine/packed_rows.h"
#include "rig/engine/stripe_set.h"
#include "rig/wire/chunks.h"

namespace rig::engine {

// Where a copy's packed bytes lie: packed byte k at base + (k / row_bytes) * pitch + k % row_bytes.
struct CopyRows {
  const void* base = nullptr;
  std::uint64_t row_bytes = 0;
  std::uint64_t pitch = 0;  // == row_bytes: rows end to end
  bool end_to_end() const { return pitch == row_bytes; }
};

// The part the bytes are of, and its whole size: the choice is the whole part's, so a part sent
// range by range stripes every range or none.
struct CopyPart {
  std::uint32_t device = 0;
  std::uint32_t part = 0;
  std::uint64_t value = 0;
  std::uint64_t whole = 0;
};

enum class CopyWay { kStriped, kPacked, kInPlace };

class CopyBytes {
 public:
  // The choice for `part`'s rows: striped when `stripes` (null: the link has none) takes a part
  // of its size; packed when its rows are strided and the sender can pack (has a staging chunk
  // of wire::kChunkBytes); else in place.
  static CopyWay way(const StripeSet* stripes, const CopyPart& part, const CopyRows& rows, bool can_pack) {
    if (stripes != nullptr && stripes->takes(part.whole)) return CopyWay::kStriped;
    return can_pack && !rows.end_to_end() ? CopyWay::kPacked : CopyWay::kInPlace;
  }

  // Frames packed bytes [at, end) of the part as kBytes chunks (`way` packed or in place): for
  // each, f(header, frame, n): the chunk's encoded header, the frame's iovecs (the header, then
  // the payload) and the payload's length, valid only during the call. A packed payload lies in
  // `chunk`, which the next chunk overwrites: f is done with it when it returns. Stops at the
  // first f that returns nonzero and returns that, else 0. May throw std::bad_alloc (the
  // gathered rows' iovecs; reserve() first where that must not happen).
  template <class F>
  int frames(CopyWay way, const CopyPart& part, const CopyRows& rows, std::uint64_t at, std::uint64_t end,
             std::byte* chunk, Counters* counters, F f) {
    assert(way != CopyWay::kStriped && (way != CopyWay::kPacked || chunk != nullptr));
    int rc = 0;
    wire::each_chunk(part.device, part.part, part.value, at, end,
                     [&](const auto& hdr, std::uint64_t from, std::uint32_t n) {
                       frame_.clear();
                       frame_.push_back(to_iov(&hdr, sizeof hdr));
                       if (way == CopyWay::kPacked) {
                         pack_rows(chunk, rows.base, rows.row_bytes, rows.pitch, from, n);
                         if (counters != nullptr) bump(counters->bytes_staged, n);
                         frame_.push_back(to_iov(chunk, n));
                       } else {
                         append_rows(frame_, rows.base, rows.row_bytes, rows.pitch, from, n);
                       }
                       rc = f(hdr, std::span<const iovec>(frame_), n);
                       return rc == 0;
                     });
    return rc;
  }
  // Room for a frame of `iovecs` iovecs (2: a header and rows end to end), so that frames()
  // then allocates nothing. May throw std::bad_alloc.
  void reserve(std::size_t iovecs) { frame_.reserve(iovecs); }

  // Sends packed bytes [at, end) of the part striped (`way` kStriped): announced on `conn`,
  // whose turn the caller holds, the pieces on the stripes. Borrows the memory until it
  // returns; 0 or -errno.
  static int striped(StripeSet& stripes, Connection& conn, const CopyPart& part, const CopyRows& rows,
                     std::uint64_t at, std::uint64_t end) {
    return stripes.send_copy(conn, part.device, part.part, part.value, rows.base, rows.row_bytes, rows.pitch, at,
                             end - at);
  }

 private:
  std::vector<iovec> frame_;  // scratch: one chunk's frame
};

}  // namespace rig::engine
