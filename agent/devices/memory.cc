#include "devices/memory.h"

#include <new>

#include "devices/host_bytes.h"

namespace rig::agent {

std::shared_ptr<RamMemory> RamMemory::allocate(std::uint32_t device, std::uint64_t bytes,
                                               std::shared_ptr<Budget> budget,
                                               std::shared_ptr<HostPinning> pinning,
                                               const std::shared_ptr<HostMemoryLimit>& host_memory, Refused& refused) {
  refused = Refused::kBudget;
  if (bytes > budget->left) return nullptr;
  // Memory that a GPU pins owns its pages: a page shared with another pinned range could not be
  // registered again.
  const bool own_pages = pinning != nullptr || bytes >= kPageAlignedBytes;
  const std::uint64_t align = own_pages ? page_bytes() : 64;
  // Counted as allocated, claimed before the allocation and given back after the free.
  const std::uint64_t held = aligned_bytes(bytes, align);
  HostMemoryClaim claim(host_memory.get(), held);
  refused = held < bytes ? Refused::kMemory : Refused::kHostMemory;  // a size that wraps: no memory
  if (held < bytes || !claim) return nullptr;
  refused = Refused::kMemory;
  std::byte* data = allocate_host_bytes(bytes, align, /*zeroed=*/true);
  if (data == nullptr) return nullptr;
  budget->left -= bytes;  // given back by the destructor
  std::shared_ptr<RamMemory> memory;
  try {
    memory = std::make_shared<RamMemory>(device, bytes, data, budget, pinning, host_memory, held);
  } catch (const std::bad_alloc&) {
    free_host_bytes(data);
    budget->left += bytes;
    return nullptr;
  }
  claim.keep();  // the destructor gives it back
  if (pinning) pinning->pin(data, bytes);  // best effort; never throws
  return memory;
}

RamMemory::~RamMemory() {
  if (pinning_) pinning_->unpin(host());
  free_host_bytes(host());
  budget_->left += bytes();
  if (host_memory_) host_memory_->give_back(held_);  // after the free
}

}  // namespace rig::agent
