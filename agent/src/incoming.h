// The bytes of a job's copies from the client's memory, which follow their handover on the
// job's connection (kBytes messages, or kStriped announcements whose pieces cross on the data
// connections): each part's bytes land straight in the destination object when the handover
// runs at once and nothing earlier in it touches that memory, and in staging otherwise. Every
// message must continue its part exactly; anything else fails the job.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <string>
#include <vector>

#include "handover.h"
#include "job_stripes.h"
#include "rig/engine/counters.h"
#include "rig/engine/frame_reader.h"
#include "staging.h"

namespace rig::agent {

class Incoming {
 public:
  // silence_ms: the job's silence bound (what a receive that timed out waited).
  Incoming(engine::FrameReader& reader, JobStripes& stripes, StagingPool& staging, engine::Counters& counters,
           int silence_ms)
      : reader_(reader), stripes_(stripes), staging_(staging), counters_(counters), silence_ms_(silence_ms) {}

  // Receives the bytes of every part of `ho` with a client source. `runs_at_once`: the handover
  // runs as soon as it is read (the executor's runs_at_once), so bytes may land in place.
  bool receive(PendingHandover& ho, bool runs_at_once, std::string& why);

 private:
  // The next bytes that a copy part expects: what a kBytes or a kStriped must continue exactly
  // (else `why` names both).
  struct Expected {
    std::uint32_t device;
    std::uint64_t value;
    std::uint32_t part;
    std::uint64_t got;    // packed bytes received so far
    std::uint64_t total;  // packed bytes of the part
    bool continued_by(const char* what, std::uint32_t d, std::uint64_t v, std::uint32_t pt,
                      std::uint64_t offset, std::uint64_t length, std::string& why) const;
  };
  // Where a part's packed bytes land: packed byte k at base + (k / row_bytes) * pitch + k % row_bytes.
  struct Rows {
    std::byte* base;
    std::uint64_t row_bytes;
    std::uint64_t pitch;
  };
  // Whether part `index` of `ho` may land in place: nothing earlier in it touches its memory.
  static bool in_place(const PendingHandover& ho, std::size_t index);
  bool receive_part(const PendingHandover& ho, std::uint32_t index, const Rows& into, std::string& why);
  // Receives a kStriped announcement (its header read) and its pieces into `into`.
  bool receive_striped(const wire::FrameHeader& fh, const Expected& next, const Rows& into,
                       std::uint64_t& length, std::string& why);

  engine::FrameReader& reader_;
  JobStripes& stripes_;
  StagingPool& staging_;
  engine::Counters& counters_;
  // Why a read of the handover's bytes failed with rc.
  std::string lost(int rc) const;

  int silence_ms_;
  std::vector<iovec> recv_iov_;  // scratch for receives into strided rows
};

}  // namespace rig::agent
