// Host RAM the agent allocates for objects and staging, from mimalloc; under the sanitizers
// from the C library's allocator, which they instrument (Debian's mimalloc is not built for
// them: TSan reports its reuse of memory another thread freed as a race, and ASan would not see
// a read or write past a buffer's end). One free for every alignment, so a buffer's owner need
// not remember how it was made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace rig::agent {

// The machine's page size (sysconf), read once.
std::uint64_t page_bytes() noexcept;
// `bytes` rounded up to whole pages.
inline std::uint64_t whole_pages(std::uint64_t bytes) noexcept {
  const std::uint64_t page = page_bytes();
  return (bytes + page - 1) / page * page;
}

// `bytes` rounded up to a multiple of `align` (a power of two): what allocate_host_bytes takes
// for them, as the agent's host memory account counts it (host_memory_limit.h); 0 if it wraps.
inline std::uint64_t aligned_bytes(std::uint64_t bytes, std::uint64_t align) noexcept {
  const std::uint64_t rounded = (bytes + align - 1) & ~(align - 1);
  return rounded < bytes ? 0 : rounded;
}

// aligned_bytes(bytes, align) bytes aligned to `align`, zeroed if asked; nullptr when RAM runs
// out.
std::byte* allocate_host_bytes(std::uint64_t bytes, std::uint64_t align, bool zeroed) noexcept;
void free_host_bytes(std::byte* p) noexcept;

struct HostBytesFree {
  void operator()(std::byte* p) const noexcept { free_host_bytes(p); }
};
using HostBytes = std::unique_ptr<std::byte[], HostBytesFree>;

}  // namespace rig::agent
