#include "devices/memory.h"

#include <new>

#include "devices/host_bytes.h"

namespace rig::agent {

std::shared_ptr<RamMemory> RamMemory::allocate(std::uint32_t device, std::uint64_t bytes,
                                               std::shared_ptr<Budget> budget,
                                               std::shared_ptr<HostPinning> pinning) {
  if (bytes > budget->left) return nullptr;
  // Memory that a GPU pins owns its pages: a page shared with another pinned range could not be
  // registered again.
  const bool own_pages = pinning != nullptr || bytes >= kPageAlignedBytes;
  std::byte* data = allocate_host_bytes(bytes, own_pages ? page_bytes() : 64, /*zeroed=*/true);
  if (data == nullptr) return nullptr;
  budget->left -= bytes;  // given back by the destructor
  std::shared_ptr<RamMemory> memory;
  try {
    memory = std::make_shared<RamMemory>(device, bytes, data, budget, pinning);
  } catch (const std::bad_alloc&) {
    free_host_bytes(data);
    budget->left += bytes;
    return nullptr;
  }
  if (pinning) pinning->pin(data, bytes);  // best effort; never throws
  return memory;
}

RamMemory::~RamMemory() {
  if (pinning_) pinning_->unpin(host());
  free_host_bytes(host());
  budget_->left += bytes();
}

}  // namespace rig::agent
