// A job's staging buffers: where bytes wait that cannot land in place yet (bytes of a copy from
// the client while earlier work may still touch the destination; bytes a device packs for the
// client). Freed buffers are kept for reuse, up to kSpareBytes in all, since first-touch page
// faults and unmapping large buffers cost more than the copy itself. While the job has GPUs,
// every buffer, at every size, is made of whole pages and pinned for their DMA once when made
// (HostPinning) and unpinned before it is freed, so reuse costs nothing; no buffer has
// io_uring's registration (a fixed buffer, charged to RLIMIT_MEMLOCK): the socket receives into
// them as plain memory. What the pool holds (its limit) counts each buffer's whole capacity.
// Every buffer made, in use or spare, also counts in the agent's host memory (HostMemoryLimit,
// all jobs together) from before it is made until after it is freed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <memory>
#include <utility>
#include <vector>

#include "devices/host_bytes.h"
#include "devices/host_memory_limit.h"
#include "devices/host_pinning.h"

namespace rig::agent {

class JobStaging {
 public:
  static constexpr std::uint64_t kSpareBytes = 256ull << 20;
  static constexpr std::uint64_t kAnySmallSpare = 64 << 10;

  // limit: bytes of buffers taken and not given back, at most (rig-agent --max-staged-bytes).
  // pinning: pins each buffer made (null: none pinned). host_memory: the agent's account that
  // every buffer made counts in (null: none).
  explicit JobStaging(std::uint64_t limit = ~0ull, std::shared_ptr<HostPinning> pinning = nullptr,
                      std::shared_ptr<HostMemoryLimit> host_memory = nullptr)
      : limit_(limit), pinning_(std::move(pinning)), host_memory_(std::move(host_memory)) {}
  ~JobStaging();
  JobStaging(const JobStaging&) = delete;
  JobStaging& operator=(const JobStaging&) = delete;
  // Whether a buffer for `bytes` more would stay within the limit.
  bool admits(std::uint64_t bytes) const { return fits(capacity_for(bytes)); }
  std::uint64_t limit() const { return limit_; }
  // Why a buffer for `bytes` more is not admitted, or why take(bytes) gave none, `what` saying
  // what they are ("of a hand-over", "for the client"): the job's limit, the option that sets
  // it, and what is staged now; else the agent's host memory limit (HostMemoryLimit::refusal),
  // else that RAM ran out.
  std::string refusal(std::uint64_t bytes, const char* what) const;
  // What pins its buffers (null: nothing), and the agent's account they count in (null: none).
  const std::shared_ptr<HostPinning>& pinning() const { return pinning_; }
  const std::shared_ptr<HostMemoryLimit>& host_memory() const { return host_memory_; }
  // What the agent's host memory counts for a buffer of `capacity`: its size as allocated.
  static std::uint64_t footprint(std::uint64_t capacity) { return aligned_bytes(capacity, 64); }
  // A buffer of at least `bytes` (its size in `capacity`), or null when memory runs out, the
  // limit would be passed, or the agent's host memory would (then this job's spares are freed
  // first, and it tries once more). A spare is reused when it is the smallest that holds `bytes`, the
  // limit admits it, and it is at most twice capacity_for(bytes) or kAnySmallSpare (a larger one
  // is kept for a larger copy, which would otherwise make and pin a buffer of its own).
  HostBytes take(std::uint64_t bytes, std::uint64_t& capacity);
  // Gives a buffer back (null is ignored); kept for reuse while the spares fit kSpareBytes. Every
  // buffer taken goes back here before it is freed (a pinned one is unpinned first). Never
  // throws (a job's end, also from a destructor, gives back what pending work held).
  void give(HostBytes buffer, std::uint64_t capacity) noexcept;
  std::uint64_t spare_bytes() const { return spare_bytes_; }
  std::uint64_t in_use() const { return in_use_; }
  // The capacity of a buffer made for `bytes`: whole pages when pinned (a pinned buffer owns
  // its pages), else `bytes`.
  std::uint64_t capacity_for(std::uint64_t bytes) const { return pinning_ ? whole_pages(bytes) : bytes; }

 private:
  bool fits(std::uint64_t capacity) const { return capacity <= limit_ && in_use_ <= limit_ - capacity; }
  // Claims a new buffer's footprint in the agent's host memory, freeing the spares if need be.
  bool claim(std::uint64_t capacity);
  // Unpins and frees a buffer, then gives its footprint back.
  void drop(HostBytes buffer, std::uint64_t capacity) noexcept;
  void drop_spares() noexcept;

  std::uint64_t limit_;
  std::shared_ptr<HostPinning> pinning_;
  std::shared_ptr<HostMemoryLimit> host_memory_;
  bool host_memory_refused_ = false;  // the last take failed on the agent's host memory
  std::uint64_t in_use_ = 0;
  std::vector<std::pair<HostBytes, std::uint64_t>> spare_;
  std::uint64_t spare_bytes_ = 0;
};

}  // namespace rig::agent
