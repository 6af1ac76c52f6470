#include "memory.h"

#include <mimalloc.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace rig::agent {
namespace {

constexpr std::uint64_t kPage = 4096;

// Zeroed RAM, 64-byte aligned, or page-aligned and rounded up to whole pages from
// RamMemory::kPageAlignedBytes. Under ThreadSanitizer from the C library, whose allocator TSan
// instruments: Debian's mimalloc is not built for TSan, which then reports its reuse of memory
// that another thread freed as a race.
std::byte* zalloc(std::uint64_t bytes) {
  const std::uint64_t align = bytes >= RamMemory::kPageAlignedBytes ? kPage : 64;
  const std::uint64_t rounded = (bytes + align - 1) & ~(align - 1);
#if defined(RIG_TSAN)
  void* p = std::aligned_alloc(align, rounded);
  if (p != nullptr) std::memset(p, 0, rounded);
  return static_cast<std::byte*>(p);
#else
  return static_cast<std::byte*>(mi_zalloc_aligned(rounded, align));
#endif
}

void release(std::byte* p) {
#if defined(RIG_TSAN)
  std::free(p);
#else
  mi_free(p);
#endif
}

}  // namespace

std::shared_ptr<RamMemory> RamMemory::allocate(std::uint32_t device, std::uint64_t bytes,
                                               std::shared_ptr<Budget> budget,
                                               std::shared_ptr<HostPinning> pinning) {
  if (bytes > budget->left) return nullptr;
  std::byte* data = zalloc(bytes);
  if (data == nullptr) return nullptr;
  budget->left -= bytes;  // given back by the destructor
  try {
    auto memory = std::make_shared<RamMemory>(device, bytes, data, budget, pinning);
    if (pinning) pinning->pin(data, bytes);
    return memory;
  } catch (const std::bad_alloc&) {
    release(data);
    budget->left += bytes;
    return nullptr;
  }
}

RamMemory::~RamMemory() {
  if (pinning_) pinning_->unpin(host());
  release(host());
  budget_->left += bytes();
}

}  // namespace rig::agent
