// Pinning of host memory for a device's DMA (a GPU: cuMemHostRegister), while a job has GPUs:
// its staging buffers and the host's objects. Best effort: memory that could not be pinned
// still works, by the driver's slower pageable copies.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rig::agent {

class HostPinning {
 public:
  virtual ~HostPinning() = default;
  // `p` is page-aligned and owns every page through p + bytes (rounded up to whole pages: a
  // page shared with another pinned range could not be registered again). Never throws: what
  // could not be pinned stays unpinned.
  virtual void pin(std::byte* p, std::uint64_t bytes) noexcept = 0;
  // Before `p` is freed; nothing if pin(p) failed.
  virtual void unpin(std::byte* p) noexcept = 0;
  // p is named by work that GPU `gpu` gave up at a job's end (DeviceBackend::gave_up): lost, and its
  // context drops that work when it is destroyed. If p is pinned in that context, the pinning
  // lets go of it now (the context's end unpins it) and no longer holds the GPU for it, so the
  // GPU can reopen; unpin(p) then does nothing. Pinned elsewhere, p stays pinned until unpin.
  // The default, for a pinning in no GPU's context: nothing.
  virtual void leave_to_given_up_gpu(std::byte* p, int gpu) noexcept {
    (void)p;
    (void)gpu;
  }
};

}  // namespace rig::agent
