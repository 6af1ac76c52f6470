#include "exec/staging.h"

#include <algorithm>
#include <new>

namespace rig::agent {

HostBytes JobStaging::take(std::uint64_t bytes, std::uint64_t& capacity) {
  const std::uint64_t made = capacity_for(bytes);
  if (made < bytes || !fits(made)) return nullptr;
  const std::uint64_t largest_reused = std::max<std::uint64_t>(kAnySmallSpare, made > ~0ull / 2 ? ~0ull : 2 * made);
  std::size_t best = spare_.size();
  for (std::size_t i = 0; i < spare_.size(); ++i) {
    const std::uint64_t c = spare_[i].second;
    if (c >= bytes && c <= largest_reused && fits(c) && (best == spare_.size() || c < spare_[best].second)) best = i;
  }
  if (best < spare_.size()) {
    HostBytes buffer = std::move(spare_[best].first);
    capacity = spare_[best].second;
    spare_bytes_ -= capacity;
    spare_.erase(spare_.begin() + static_cast<std::ptrdiff_t>(best));
    in_use_ += capacity;
    return buffer;
  }
  HostBytes buffer(allocate_host_bytes(made, pinning_ ? page_bytes() : 64, /*zeroed=*/false));
  if (!buffer) return buffer;
  capacity = made;
  in_use_ += made;
  if (pinning_) pinning_->pin(buffer.get(), made);
  return buffer;
}

std::string JobStaging::refusal(std::uint64_t bytes, const char* what) const {
  return "staging " + std::to_string(bytes) + " bytes " + what + " would pass the job's limit of " +
         std::to_string(limit_) + " staged bytes (rig-agent --max-staged-bytes; " + std::to_string(in_use_) +
         " are staged)";
}

JobStaging::~JobStaging() {
  if (!pinning_) return;
  for (auto& spare : spare_) pinning_->unpin(spare.first.get());
}

void JobStaging::give(HostBytes buffer, std::uint64_t capacity) noexcept {
  if (!buffer) return;
  in_use_ -= std::min(in_use_, capacity);  // what take counted
  if (spare_bytes_ + capacity <= kSpareBytes) {
    try {
      spare_.emplace_back(std::move(buffer), capacity);
      spare_bytes_ += capacity;
      return;  // kept
    } catch (const std::bad_alloc&) {  // no room to keep it (give never throws: ~JobParts calls it)
    }
  }
  if (pinning_) pinning_->unpin(buffer.get());
}  // freed

}  // namespace rig::agent
