// Runs a job's handovers: per device, in the order they were handed over, each once the values
// its waits name are done on their devices of this agent, its parts in order through the
// device's DeviceBackend. A ready handover runs inline on the session's thread (no thread hop); a wait
// on another device blocks only this device's queue. Where the device orders its own work after
// a value another device finished (DeviceBackend::waits_on: a GPU's stream waits on another GPU's
// event), the handover runs once that value is finished rather than reported, and its done
// report is held until the value's is sent: reports keep the order the waits give. It reads no
// socket: what it sends the client goes through Reports, so it runs in tests without sockets.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "devices/device.h"
#include "exec/handover.h"
#include "exec/staging.h"
#include "exec/stream_range.h"
#include "job/objects.h"
#include "rig/wire/limits.h"
#include "rig/wire/outcome.h"

namespace rig::agent {

// Packed bytes [at, at + n) of a copy part whose rows (`shape`) lie at host address `base`,
// `pitch` apart.
struct PartBytes {
  const std::byte* base = nullptr;
  Shape shape;
  std::uint64_t pitch = 0;
  std::uint64_t at = 0;
  std::uint64_t n = 0;
};

// What the executor sends the client, in the order it calls them: the bytes of each copy into
// the client's memory before its value's done report.
class Reports {
 public:
  virtual ~Reports() = default;
  // Value `value` of device `device` is done. A report fails with the connection's loss (or
  // -ENOMEM for the stripes' plan of a copy's bytes).
  virtual wire::Outcome done(std::uint32_t device, std::uint64_t value) = 0;
  // Packed bytes of copy part `part` of the value, those that follow the ones sent before (a
  // part goes in one call, or range by range in offset order). They may be read only until the
  // call returns.
  virtual wire::Outcome bytes(std::uint32_t device, std::uint64_t value, std::uint32_t part, const PartBytes& b) = 0;
};

class Executor {
 public:
  Executor(const std::vector<std::unique_ptr<DeviceBackend>>& devices, ObjectTable& objects,
           JobStaging& staging, Reports& reports, std::uint64_t instruction_budget);

  // Whether `value` may be handed over next on `device` (above the previous one); else the
  // client's violation.
  wire::Outcome check_value(std::uint32_t device, std::uint64_t value) const;
  // Whether `device` may take a handover now: a client's room admits one only while at most
  // wire::kRoomBytes of the proxy's earlier work is not reported done (the agent has done at least
  // what the client saw done), so more pending here is a protocol violation.
  wire::Outcome check_room(std::uint32_t device) const;
  // Queues a resolved handover whose client bytes were received (check_value passed).
  void accept(PendingHandover ho);
  // Holds a handover whose bytes did not all come but some of whose copies were issued to its
  // device as they came (Incoming): never run, its staging given back (or kept, with a given-up
  // device's work) only at clear(), once the devices quiesced.
  void abandon(PendingHandover ho) noexcept;
  // Runs every handover that is ready, on every device, until none is. A failure (-EIO a
  // device's fault, -ENOMEM no room to stage, a report that could not be sent) fails the job.
  wire::Outcome run_ready();
  // Collects the completions of asynchronous devices, reports them done, and runs what became
  // ready, until nothing more completes. Never blocks. (The session calls it before every read
  // of the socket; a device that completes work while the session waits in a read is noticed
  // at the next read: an asynchronous device with real latency needs a wake-up too.)
  wire::Outcome poll();

  // Whether a handover with these waits, read now, would run at once: nothing is queued or
  // running on any device and every wait is reached. Then its copies' bytes may land in place.
  bool runs_at_once(const std::vector<wire::Wait>& waits) const;
  // Whether a handover of `device` with these waits, read now, would be issued to its device at
  // once: nothing of the device's is queued (its earlier handovers were all issued; some may
  // still run) and every wait is reached. Then its copies into memory only the device reaches
  // may be issued as their bytes come, behind what the device runs. Only this device's stream
  // orders them: where the destination is a peer GPU's memory mapped here, the peer's own work
  // on it is ordered by the client's waits alone, as every order between devices is.
  bool issues_at_once(std::uint32_t device, const std::vector<wire::Wait>& waits) const;
  // The last value done on `device`.
  std::uint64_t done(std::uint32_t device) const { return lanes_[device].done; }
  // Whether no handover is queued or running on any device.
  bool idle() const;
  // Bytes of copies out of a device sent range by range as each range's copy out completed,
  // since the job began (copy_out_ranges).
  std::uint64_t bytes_streamed_out() const { return bytes_streamed_out_; }
  // Staged bytes whose copies into a device's memory the executor issued when their handover
  // ran, since the job began (those copied as they came are Incoming's).
  std::uint64_t bytes_copied_in() const { return bytes_copied_in_; }
  // Before the session waits for the client: every device with work queued or running is asked
  // to signal `wake` once what it issued has completed (DeviceBackend::arm_wake).
  void arm_wakes(const std::shared_ptr<Wake>& wake);
  // Drops every pending handover (the job ended), once no device's issued work runs.
  void clear();

 private:
  struct Lane {
    std::deque<PendingHandover> queue;      // handed over, not yet run
    std::deque<PendingHandover> running;    // run, completion reported later (kLater)
    std::vector<PendingHandover> abandoned;  // partly issued, never to run (abandon)
    std::uint64_t done = 0;                 // last value done
    std::uint64_t received = 0;             // last value handed over
    std::uint64_t pending_cost = 0;         // of handovers not done: copy bytes, 4 per word
  };
  // The job's end, where `device` gave its issued work up (DeviceBackend::gave_up): the lane's
  // handovers, with the staging and memory they name, go to the device to keep.
  void keep_given_up(DeviceBackend& device, Lane& lane) noexcept;
  // Whether `device`'s front handover may run: each wait's value is done, or finished on another
  // device that `device` waits on by itself (finished_value).
  bool ready(std::uint32_t device, const PendingHandover& ho) const;
  // The value finished on w.device that covers w (its first running value at or above
  // w.value), or 0 if there is none.
  std::uint64_t finished_value(const wire::Wait& w) const;
  // Has the device order ho's work after its waits that are not done yet (held_by).
  void place_waits(std::uint32_t device, PendingHandover& ho);
  bool reached(const std::vector<wire::Wait>& waits) const;
  // Completes the front of `device`'s running lane while its work is done and its held_by
  // values are reported; `progress` when one was.
  wire::Outcome drain(std::uint32_t device, bool& progress);
  // Runs the front handover of `device`'s queue as far as it can; `finished` when it has been
  // finished on the device (its value done or running).
  wire::Outcome run_front(std::uint32_t device, bool& finished);
  // One part; `blocked` when it must wait for the device's earlier work to complete.
  wire::Outcome run_part(DeviceBackend& d, PendingHandover& ho, std::uint32_t index, bool& blocked);
  wire::Outcome run_copy_out(DeviceBackend& d, PendingHandover& ho, std::uint32_t index, bool& blocked);
  // A copy out of memory the agent cannot read, larger than kStreamBytes, on a device that keeps
  // marks: packed into staging range by range (stream_range.h), a mark behind each range.
  static wire::Outcome copy_out_ranges(DeviceBackend& d, PendingPart& p);
  // Sends each range of such a part whose mark passed, in order; `blocked` at the first that
  // has not.
  wire::Outcome send_ranges(DeviceBackend& d, PendingHandover& ho, std::uint32_t index, bool& blocked);
  wire::Outcome run_words(const PendingHandover& ho, const PendingPart& p);
  // Its device reported `value` done: the first running handover not done yet must be it; it
  // (and those behind it that were done at once) are reported once their held_by are.
  wire::Outcome retire(std::uint32_t device, std::uint64_t value);
  // The value's work is done: report it and let go of what it held.
  wire::Outcome complete(std::uint32_t device, PendingHandover& ho);
  // A device's fault: -EIO, the device named (device_fault).
  static wire::Outcome fault(const DeviceBackend& d, const std::string& why);

  const std::vector<std::unique_ptr<DeviceBackend>>& devices_;
  ObjectTable& objects_;
  JobStaging& staging_;
  Reports& reports_;
  std::uint64_t instruction_budget_;
  std::vector<Lane> lanes_;
  std::vector<std::uint64_t> polled_;  // scratch for poll()
  std::uint64_t bytes_streamed_out_ = 0;  // the session's thread only
  std::uint64_t bytes_copied_in_ = 0;     // the session's thread only
};

}  // namespace rig::agent
