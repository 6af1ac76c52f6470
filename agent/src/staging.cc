#include "staging.h"

#include <new>

namespace rig::agent {

std::unique_ptr<std::byte[]> StagingPool::take(std::uint64_t bytes, std::uint64_t& capacity) {
  std::size_t best = spare_.size();
  for (std::size_t i = 0; i < spare_.size(); ++i) {
    if (spare_[i].second >= bytes && (best == spare_.size() || spare_[i].second < spare_[best].second)) best = i;
  }
  if (best < spare_.size()) {
    auto buffer = std::move(spare_[best].first);
    capacity = spare_[best].second;
    spare_bytes_ -= capacity;
    spare_.erase(spare_.begin() + static_cast<std::ptrdiff_t>(best));
    return buffer;
  }
  capacity = bytes;
  return std::unique_ptr<std::byte[]>(new (std::nothrow) std::byte[bytes]);
}

void StagingPool::give(std::unique_ptr<std::byte[]> buffer, std::uint64_t capacity) {
  if (!buffer || spare_bytes_ + capacity > kSpareBytes) return;  // freed
  spare_bytes_ += capacity;
  spare_.emplace_back(std::move(buffer), capacity);
}

}  // namespace rig::agent
