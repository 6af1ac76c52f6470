// The pending handovers of a device that gave its queued work up at a job's end rather than wait
// for it (DeviceBackend::gave_up: a GPU's stream waiting on a lost GPU's work), with what that work
// names: the staging its copies read or write and the memory of the job's other devices. The
// work may still run until the device's context is destroyed, so all of it outlives the job
// until then (DeviceBackend::keep); then the staging is unpinned and freed and the memory let go of.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "devices/host_memory_limit.h"
#include "devices/host_pinning.h"
#include "exec/handover.h"

namespace rig::agent {

class GivenUpWork {
 public:
  // `pinning`: what pinned the staging, or null; `host_memory`: the agent's account the staging
  // counts in (JobStaging::footprint), given back once it is freed, or null.
  GivenUpWork(std::shared_ptr<HostPinning> pinning, std::shared_ptr<HostMemoryLimit> host_memory) noexcept
      : pinning_(std::move(pinning)), host_memory_(std::move(host_memory)) {}
  ~GivenUpWork();
  GivenUpWork(const GivenUpWork&) = delete;
  GivenUpWork& operator=(const GivenUpWork&) = delete;

  // What goes with the context of GPU `gpu`, device `device`, where the work was given up: its
  // own memory (let go of now; a lost GPU's memory is not freed but destroyed with the context)
  // and the staging and host memory pinned in that context (HostPinning::leave_to_given_up_gpu,
  // Memory::leave_to_given_up_gpu), so that what this keeps does not hold that GPU.
  void leave_to(std::uint32_t device, int gpu) noexcept;
  // Moves every handover of `queue` and `running` here; throws std::bad_alloc with none moved.
  void take(std::deque<PendingHandover>& queue, std::deque<PendingHandover>& running);

 private:
  std::shared_ptr<HostPinning> pinning_;  // outlives the staging it unpins
  std::shared_ptr<HostMemoryLimit> host_memory_;
  std::vector<PendingHandover> handovers_;
};

}  // namespace rig::agent
