// A handover as the agent holds it until its device runs it: the wire's handover with every
// object and image it names resolved (and referenced, so a release does not free what pending
// work still needs), and, for copies from the client, where their bytes were received.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "devices/device.h"
#include "devices/host_bytes.h"
#include "job/objects.h"
#include "rig/wire/codec.h"
#include "rig/wire/outcome.h"

namespace rig::agent {

// One side of a copy: the client's memory, or rows of an object's memory.
struct CopySide {
  bool client = false;
  std::shared_ptr<Memory> memory;
  std::uint64_t offset = 0;
};

struct PendingPart {
  wire::Part part{};
  CopySide src, dst;
  // The bytes of a copy from the client's memory: received into staging (packed, from the
  // session's pool) or, when nothing earlier can touch the destination, straight into it
  // (landed). A copy into the client's memory from a device whose memory the agent cannot read
  // is packed into staging by the device (copy_out) before it is sent.
  HostBytes staged;
  std::uint64_t staged_capacity = 0;
  bool landed = false;
  // A part for memory the agent cannot reach copied to its device range by range as its bytes
  // came (Incoming::stream): from the first range on, copies may be in flight that read its
  // staging (also where a range's copy_in failed after queueing it). `streamed`: the packed
  // bytes whose copies were issued; all of them, and landed, once the part is in.
  bool streams = false;
  std::uint64_t streamed = 0;
  bool copied_out = false;
  // A copy out that goes range by range (Executor::copy_out_ranges): where each range ends in
  // the packed bytes, the device's mark behind its copy out, and how many ranges were sent.
  struct OutRange {
    std::uint64_t end;
    std::uint64_t mark;
  };
  std::vector<OutRange> out_ranges;
  std::size_t ranges_sent = 0;
  std::shared_ptr<ImageObject> image;
  std::shared_ptr<EntryState> entry;
  std::uint32_t first_word = 0;

  bool is_copy() const { return part.kind == static_cast<std::uint16_t>(wire::PartKind::kCopy); }
  Shape shape() const { return {part.copy.rows, part.copy.row_bytes}; }
  // The places of an object side (rows end to end when there is one row).
  Place src_place() const { return {src.memory.get(), src.offset, pitch(part.copy.src_pitch)}; }
  Place dst_place() const { return {dst.memory.get(), dst.offset, pitch(part.copy.dst_pitch)}; }

 private:
  std::uint64_t pitch(std::uint64_t p) const { return part.copy.rows == 1 ? part.copy.row_bytes : p; }
};

struct PendingHandover {
  std::uint32_t device = 0;
  std::uint64_t value = 0;
  std::vector<wire::Wait> waits;
  std::vector<PendingPart> parts;
  std::vector<std::uint32_t> words;
  std::uint32_t next_part = 0;  // the executor's progress through parts
  bool completed = false;       // its device said its work is done; reported once held_by is
  bool waits_placed = false;    // the waits its device orders itself were placed (held_by)
  // Waits on other devices' values that its device ordered its work after (DeviceBackend::wait_on)
  // before they were reported: its own done report follows theirs.
  std::vector<wire::Wait> held_by;
  // What it counts against the client's room: its copies' bytes and 4 bytes per word.
  std::uint64_t cost() const;
};

// Resolves a decoded handover of device h.fixed.device (an account of `devices`) against the
// job's objects: every wait's device exists, every object side exists and holds the copy's rows,
// every words part runs on the machine's host, names an image with an entry for its function
// and passes it its words. The first that does not is the client's violation (-EPROTO): the
// job fails.
wire::Outcome resolve_handover(const wire::HandoverView& h, const std::vector<std::unique_ptr<DeviceBackend>>& devices,
                               const ObjectTable& objects, PendingHandover& out);

}  // namespace rig::agent
