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
};

}  // namespace rig::agent
