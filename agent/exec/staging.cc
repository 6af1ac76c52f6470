#include "exec/staging.h"

#include <algorithm>
#include <new>

namespace rig::agent {

HostBytes JobStaging::take(std::uint64_t bytes, std::uint64_t& capacity) {
  host_memory_refused_ = false;
  const std::uint64_t made = capacity_for(bytes);
  if (made < bytes || !fits(made)) return nullptr;
  const std::uint64_t largest_reused = std::max<std::uint64_t>(kAnySmallSpare, made > ~0ull / 2 ? ~0ull : 2 * made);
  std::size_t best = spare_.size();
  for (std::size_t i = 0; i < spare_.size(); ++i) {
    const std::uint64_t c = spare_[i].second;
    if (c >= bytes && c <= largest_reused && fits(c) && (best == spare_.size() || c < spare_[best].second)) best = i;
  }
  if (best < spare_.size()) {  // counted in the agent's host memory since it was made
    HostBytes buffer = std::move(spare_[best].first);
    capacity = spare_[best].second;
    spare_bytes_ -= capacity;
    spare_.erase(spare_.begin() + static_cast<std::ptrdiff_t>(best));
    in_use_ += capacity;
    return buffer;
  }
  if (!claim(made)) {
    host_memory_refused_ = true;
    return nullptr;
  }
  HostBytes buffer(allocate_host_bytes(made, pinning_ ? page_bytes() : 64, /*zeroed=*/false));
  if (!buffer) {
    if (host_memory_) host_memory_->give_back(footprint(made));
    return buffer;
  }
  capacity = made;
  in_use_ += made;
  if (pinning_) pinning_->pin(buffer.get(), made);
  return buffer;
}

bool JobStaging::claim(std::uint64_t capacity) {
  if (!host_memory_ || host_memory_->claim(footprint(capacity))) return true;
  if (spare_.empty()) return false;
  drop_spares();  // this job's own spares count too: they go before it is refused
  return host_memory_->claim(footprint(capacity));
}

std::string JobStaging::refusal(std::uint64_t bytes, const char* what) const {
  const std::string staging = "staging " + std::to_string(bytes) + " bytes " + what;
  if (!admits(bytes)) {
    return staging + " would pass the job's limit of " + std::to_string(limit_) +
           " staged bytes (rig-agent --max-staged-bytes; " + std::to_string(in_use_) + " are staged)";
  }
  if (host_memory_refused_) return host_memory_->refusal(staging);
  return "out of memory " + staging;
}

JobStaging::~JobStaging() { drop_spares(); }

void JobStaging::drop(HostBytes buffer, std::uint64_t capacity) noexcept {
  if (pinning_) pinning_->unpin(buffer.get());
  buffer.reset();
  if (host_memory_) host_memory_->give_back(footprint(capacity));  // after the free
}

void JobStaging::drop_spares() noexcept {
  for (auto& spare : spare_) drop(std::move(spare.first), spare.second);
  spare_.clear();
  spare_bytes_ = 0;
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
  drop(std::move(buffer), capacity);
}

}  // namespace rig::agent
