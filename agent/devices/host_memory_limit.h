// The one account of the host memory that all of an agent's jobs hold together, under the
// agent's limit (rig-agent --max-host-bytes): staging buffers (in use or kept as spares, pinned
// or not) and the RAM of host and simulated objects (entries' scratch too), each counted as it
// is allocated (aligned_bytes) from the claim before its allocation to the give-back after its
// free. Each job's own limits (--max-staged-bytes, --host-budget, --device-budget) hold as
// before; this one bounds their sum. Past it an alloc is None and a handover's staging fails
// its job, each with a reason naming the limit (refusal); the other jobs go on. Lock-free:
// every job's session thread claims and gives back, and work a GPU gave up gives back from the
// thread that releases it (CudaGpus::keep_until_destroyed).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace rig::agent {

class HostMemoryLimit {
 public:
  explicit HostMemoryLimit(std::uint64_t limit) noexcept : limit_(limit) {}
  HostMemoryLimit(const HostMemoryLimit&) = delete;
  HostMemoryLimit& operator=(const HostMemoryLimit&) = delete;

  // Counts `bytes` as held if the sum stays within the limit (== limit gets in); false, with
  // nothing counted, if it would pass it.
  bool claim(std::uint64_t bytes) noexcept;
  // What a claim counted, after its memory was freed.
  void give_back(std::uint64_t bytes) noexcept;
  std::uint64_t limit() const noexcept { return limit_; }
  // What all jobs hold now (a snapshot: others claim and give back meanwhile).
  std::uint64_t held() const noexcept;
  // Claims refused since the agent started.
  std::uint64_t refusals() const noexcept;
  // "<what> would pass the agent's limit of L bytes of host memory for all jobs (rig-agent
  // --max-host-bytes; H are held)", `what` saying what was asked ("an object of 64 bytes").
  std::string refusal(const std::string& what) const;

 private:
  const std::uint64_t limit_;
  std::atomic<std::uint64_t> held_{0};
  std::atomic<std::uint64_t> refusals_{0};
};

// A claim of `bytes` on an account (null: none, and the claim holds), given back when it goes
// out of scope unless kept: for the paths where the allocation it was made for fails.
class HostMemoryClaim {
 public:
  HostMemoryClaim(HostMemoryLimit* account, std::uint64_t bytes) noexcept
      : account_(account), bytes_(bytes), held_(account == nullptr || account->claim(bytes)) {}
  ~HostMemoryClaim() {
    if (held_ && account_ != nullptr) account_->give_back(bytes_);
  }
  HostMemoryClaim(const HostMemoryClaim&) = delete;
  HostMemoryClaim& operator=(const HostMemoryClaim&) = delete;
  // Whether the account had room.
  explicit operator bool() const noexcept { return held_; }
  // The memory was made: whoever frees it gives the bytes back.
  void keep() noexcept { account_ = nullptr; }

 private:
  HostMemoryLimit* account_;
  std::uint64_t bytes_;
  bool held_;
};

// The machine's memory as this process may use it: the RAM (sysconf), or less where the
// process's cgroup sets a lower limit (v2 memory.max, v1 memory.limit_in_bytes: a container, a
// systemd unit's MemoryMax). Read once.
std::uint64_t usable_machine_memory() noexcept;

// --max-host-bytes' default: half of usable_machine_memory(). The other half is for what the
// limit does not count: the agent's frames in flight (up to 64 MiB a job), socket buffers,
// threads and the pages its allocator keeps after a free, the page cache, and the clients and
// other processes of the machine; and pinned memory (staging and host objects of jobs with
// GPUs) is RAM the kernel can neither swap nor reclaim.
std::uint64_t default_max_host_bytes() noexcept;

}  // namespace rig::agent
