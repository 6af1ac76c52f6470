// Memory of one of the agent's devices, as a job holds it: an allocation of the device, or a
// mapping of another device's allocation (map_peer), shared by every object and pending part
// that names it and freed when the last of them lets go.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "devices/host_memory_limit.h"
#include "devices/host_pinning.h"

namespace rig::agent {

// What a job may still allocate on one device; given back as its memory is freed. Touched only
// by the job's session thread, and after the job by the release of work a GPU gave up
// (CudaGpus::keep_until_destroyed, which releases one at a time).
struct Budget {
  std::uint64_t left = 0;
};

class Memory {
 public:
  virtual ~Memory() = default;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  // The device that allocated it.
  std::uint32_t device() const { return device_; }
  std::uint64_t bytes() const { return bytes_; }
  // The address of byte 0 where the agent's threads may read and write the memory directly
  // (host RAM: the machine's host, simulated devices), or nullptr where only the device's own
  // copies reach it (a GPU's memory).
  std::byte* host() const { return host_; }
  // Named by work that GPU `gpu` gave up at a job's end (GivenUpWork::leave_to): host memory
  // pinned in that GPU's context is left to it (HostPinning::leave_to_given_up_gpu). The
  // default, for memory pinned nowhere: nothing.
  virtual void leave_to_given_up_gpu(int gpu) noexcept { (void)gpu; }

 protected:
  Memory(std::uint32_t device, std::uint64_t bytes, std::byte* host)
      : device_(device), bytes_(bytes), host_(host) {}

 private:
  std::uint32_t device_;
  std::uint64_t bytes_;
  std::byte* host_;
};

// Memory in this machine's RAM, zeroed, 64-byte aligned (whole pages where pinned or from
// kPageAlignedBytes), charged to a job's budget of one device and, as allocated (whole pages or
// 64 bytes), to the agent's host memory (HostMemoryLimit): what the machine's host and
// simulated devices allocate.
class RamMemory final : public Memory {
 public:
  // From this size on, and at every size when the memory is pinned, an object owns whole pages
  // (page-aligned, its size rounded up): a GPU pins it (cuMemHostRegister), and a page shared
  // with another pinned range cannot be registered again. mimalloc's size classes from 64 KiB
  // give whole pages anyway; this holds it for any allocator.
  static constexpr std::uint64_t kPageAlignedBytes = 64 << 10;
  // Why an allocate of `bytes` fails: past what the budget has left, past the agent's host
  // memory (`host_memory`, null: no such limit), or, when neither, RAM ran out.
  enum class Refused { kBudget, kHostMemory, kMemory };
  // nullptr (with `refused`) when `bytes` is past what the budget has left, its footprint past
  // what `host_memory` has left (null: no bound), or RAM runs out. `pinning`: pins the memory,
  // whole pages, while it lives (the host's objects while the job has GPUs), else null.
  static std::shared_ptr<RamMemory> allocate(std::uint32_t device, std::uint64_t bytes,
                                             std::shared_ptr<Budget> budget,
                                             std::shared_ptr<HostPinning> pinning,
                                             const std::shared_ptr<HostMemoryLimit>& host_memory, Refused& refused);
  RamMemory(std::uint32_t device, std::uint64_t bytes, std::byte* data, std::shared_ptr<Budget> budget,
            std::shared_ptr<HostPinning> pinning, std::shared_ptr<HostMemoryLimit> host_memory, std::uint64_t held)
      : Memory(device, bytes, data),
        budget_(std::move(budget)),
        pinning_(std::move(pinning)),
        host_memory_(std::move(host_memory)),
        held_(held) {}
  ~RamMemory() override;
  void leave_to_given_up_gpu(int gpu) noexcept override {
    if (pinning_) pinning_->leave_to_given_up_gpu(host(), gpu);
  }

 private:
  std::shared_ptr<Budget> budget_;
  std::shared_ptr<HostPinning> pinning_;
  std::shared_ptr<HostMemoryLimit> host_memory_;  // null: none counts it
  std::uint64_t held_;  // what host_memory_ counts for it (footprint)
};

}  // namespace rig::agent
