// The bytes of a job's copies from the client's memory, which follow their handover on the
// job's connection (kBytes messages, or kStriped announcements whose pieces cross on the data
// connections): each part's bytes land straight in the destination object when the handover
// runs at once and nothing earlier in it touches that memory, and in staging otherwise. Staged
// for memory the agent cannot reach (a GPU's), in the same case, a large part is copied to its
// device range by range as its bytes come, so that while one range crosses to the GPU the next
// is received. Every message must continue its part exactly; anything else fails the job.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "exec/handover.h"
#include "exec/staging.h"
#include "job/job_stripes.h"
#include "rig/engine/counters.h"
#include "rig/engine/frame_reader.h"
#include "rig/wire/outcome.h"

namespace rig::agent {

class Incoming {
 public:
  // silence_ms: the job's silence bound (what a receive that timed out waited).
  // devices: the job's, which copies of staged parts issue to as their bytes come.
  Incoming(engine::FrameReader& reader, JobStripes& stripes, JobStaging& staging, engine::Counters& counters,
           const std::vector<std::unique_ptr<DeviceBackend>>& devices, int silence_ms)
      : reader_(reader), stripes_(stripes), staging_(staging), counters_(counters), devices_(devices),
        silence_ms_(silence_ms) {}

  // How soon a handover runs once it is read (the executor's answers).
  struct Start {
    // Nothing runs on any device (Executor::runs_at_once): its bytes may land in place.
    bool runs_at_once = false;
    // It is issued to its device at once, behind the device's work in flight only
    // (Executor::issues_at_once): its bytes for a GPU may be copied there as they come, since
    // the device's stream orders those copies after that work.
    bool issues_at_once = false;
  };
  // Receives the bytes of every part of `ho` with a client source, in place or copied to the
  // device as they come where `start` and the handover's parts allow it. A failure (-EPROTO the
  // client's violation, -ENOMEM no room to stage, -EIO a device's fault, or the connection's
  // -errno) fails the job: then a part that `streams` may have copies in flight that read its
  // staging (Executor::abandon).
  wire::Outcome receive(PendingHandover& ho, Start start);
  // Staged bytes whose copies to their device were issued as they came, since the job began.
  std::uint64_t bytes_streamed() const { return bytes_streamed_; }

 private:
  // The next bytes that a copy part expects: what a kBytes or a kStriped must continue exactly
  // (else a violation naming both).
  struct Expected {
    std::uint32_t device;
    std::uint64_t value;
    std::uint32_t part;
    std::uint64_t got;    // packed bytes received so far
    std::uint64_t total;  // packed bytes of the part
    wire::Outcome continued_by(const char* what, std::uint32_t d, std::uint64_t v, std::uint32_t pt,
                               std::uint64_t offset, std::uint64_t length) const;
  };
  // Where a part's packed bytes land: packed byte k at base + (k / row_bytes) * pitch + k % row_bytes.
  struct Rows {
    std::byte* base;
    std::uint64_t row_bytes;
    std::uint64_t pitch;
  };
  // Whether nothing earlier in `ho` than part `index` touches that part's destination memory.
  static bool leaves_alone(const PendingHandover& ho, std::size_t index);
  // Whether part `index` of `ho` may land in place: memory the agent reaches, left alone.
  static bool in_place(const PendingHandover& ho, std::size_t index);
  // `streams`: the part's staged bytes are copied to the device as they come (stream).
  wire::Outcome receive_part(PendingHandover& ho, std::uint32_t index, const Rows& into, bool streams);
  // Issues the copy to ho's device of part `index`'s staged bytes that came since its last
  // one, up to `got` (whole rows where the part has several), once kStreamBytes of them came or
  // the part is all in.
  wire::Outcome stream(PendingHandover& ho, std::uint32_t index, std::uint64_t got);
  // Receives a kStriped announcement (its header read) and its pieces into `into`.
  wire::Outcome receive_striped(const wire::FrameHeader& fh, const Expected& next, const Rows& into,
                                std::uint64_t& length);

  engine::FrameReader& reader_;
  JobStripes& stripes_;
  JobStaging& staging_;
  engine::Counters& counters_;
  const std::vector<std::unique_ptr<DeviceBackend>>& devices_;
  std::uint64_t bytes_streamed_ = 0;  // the session's thread only
  // A read of the handover's bytes that failed with rc: rc and why (the silence bound for -ETIMEDOUT).
  wire::Outcome lost(int rc) const;

  int silence_ms_;
  std::vector<iovec> recv_iov_;  // scratch for receives into strided rows
};

}  // namespace rig::agent
