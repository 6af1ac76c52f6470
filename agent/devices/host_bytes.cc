#include "devices/host_bytes.h"

#include <mimalloc.h>
#include <unistd.h>

#include <cassert>
#include <cstdlib>
#include <cstring>

namespace rig::agent {

std::uint64_t page_bytes() noexcept {
  static const std::uint64_t page = [] {
    const long n = sysconf(_SC_PAGESIZE);
    return n > 0 ? static_cast<std::uint64_t>(n) : 4096u;
  }();
  return page;
}

std::byte* allocate_host_bytes(std::uint64_t bytes, std::uint64_t align, bool zeroed) noexcept {
  assert(align != 0 && (align & (align - 1)) == 0);
  const std::uint64_t rounded = aligned_bytes(bytes, align);
  if (rounded < bytes) return nullptr;  // wrapped
#if defined(RIG_TSAN) || defined(RIG_ASAN)
  void* p = std::aligned_alloc(align, rounded == 0 ? align : rounded);
  if (p != nullptr && zeroed) std::memset(p, 0, rounded);
#else
  void* p = zeroed ? mi_zalloc_aligned(rounded, align) : mi_malloc_aligned(rounded, align);
#endif
  return static_cast<std::byte*>(p);
}

void free_host_bytes(std::byte* p) noexcept {
#if defined(RIG_TSAN) || defined(RIG_ASAN)
  std::free(p);
#else
  mi_free(p);
#endif
}

}  // namespace rig::agent
