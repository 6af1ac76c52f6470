// A job's staging buffers: where bytes wait that cannot land in place yet (bytes of a copy from
// the client while earlier work may still touch the destination; bytes a device packs for the
// client). Freed buffers are kept for reuse, up to kSpareBytes in all, since first-touch page
// faults and unmapping large buffers cost more than the copy itself. While the job has GPUs,
// every buffer is pinned for their DMA once when made (HostPinning) and unpinned before it is
// freed, so reuse costs nothing; no buffer has io_uring's registration (a fixed buffer, charged
// to RLIMIT_MEMLOCK): the socket receives into them as plain memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "host_pinning.h"

namespace rig::agent {

class StagingPool {
 public:
  static constexpr std::uint64_t kSpareBytes = 256ull << 20;

  // limit: bytes of buffers taken and not given back, at most (rig-agent --max-staged-bytes).
  // pinning: pins each buffer made (null: none pinned).
  explicit StagingPool(std::uint64_t limit = ~0ull, std::shared_ptr<HostPinning> pinning = nullptr)
      : limit_(limit), pinning_(std::move(pinning)) {}
  ~StagingPool();
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;
  // Whether `bytes` more would stay within the limit.
  bool admits(std::uint64_t bytes) const { return bytes <= limit_ && in_use_ <= limit_ - bytes; }
  std::uint64_t limit() const { return limit_; }
  // A buffer of at least `bytes` (its size in `capacity`), or null when memory runs out or the
  // limit would be passed.
  std::unique_ptr<std::byte[]> take(std::uint64_t bytes, std::uint64_t& capacity);
  // Gives a buffer back (null is ignored); kept for reuse while the spares fit kSpareBytes. Every
  // buffer taken goes back here before it is freed (a pinned one is unpinned first). Never
  // throws (a job's end, also from a destructor, gives back what pending work held).
  void give(std::unique_ptr<std::byte[]> buffer, std::uint64_t capacity) noexcept;
  std::uint64_t spare_bytes() const { return spare_bytes_; }
  std::uint64_t in_use() const { return in_use_; }

 private:
  std::uint64_t limit_;
  std::shared_ptr<HostPinning> pinning_;
  std::uint64_t in_use_ = 0;
  std::vector<std::pair<std::unique_ptr<std::byte[]>, std::uint64_t>> spare_;
  std::uint64_t spare_bytes_ = 0;
};

}  // namespace rig::agent
