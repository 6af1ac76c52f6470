#include "staging.h"

#include <algorithm>
#include <new>

namespace rig::agent {

std::unique_ptr<std::byte[]> StagingPool::take(std::uint64_t bytes, std::uint64_t& capacity) {
  if (!admits(bytes)) return nullptr;
  std::size_t best = spare_.size();
  for (std::size_t i = 0; i < spare_.size(); ++i) {
    if (spare_[i].second >= bytes && (best == spare_.size() || spare_[i].second < spare_[best].second)) best = i;
  }
  if (best < spare_.size()) {
    auto buffer = std::move(spare_[best].first);
    capacity = spare_[best].second;
    spare_bytes_ -= capacity;
    spare_.erase(spare_.begin() + static_cast<std::ptrdiff_t>(best));
    in_use_ += capacity;
    return buffer;
  }
  capacity = bytes;
  auto buffer = std::unique_ptr<std::byte[]>(new (std::nothrow) std::byte[bytes]);
  if (!buffer) return buffer;
  in_use_ += bytes;
  if (pinning_) pinning_->pin(buffer.get(), bytes);
  return buffer;
}

StagingPool::~StagingPool() {
  if (!pinning_) return;
  for (auto& spare : spare_) pinning_->unpin(spare.first.get());
}

void StagingPool::give(std::unique_ptr<std::byte[]> buffer, std::uint64_t capacity) noexcept {
  if (!buffer) return;
  in_use_ -= std::min(in_use_, capacity);  // what take counted
  if (spare_bytes_ + capacity <= kSpareBytes) {
    try {
      spare_.emplace_back(std::move(buffer), capacity);
      spare_bytes_ += capacity;
      return;  // kept
    } catch (const std::bad_alloc&) {  // no room to keep it (give never throws: ~Job calls it)
    }
  }
  if (pinning_) pinning_->unpin(buffer.get());
}  // freed

}  // namespace rig::agent
