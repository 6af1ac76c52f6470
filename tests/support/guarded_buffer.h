// Memory for bytes that come back, between two inaccessible pages: a write before its first or
// past its last byte faults at once (a fault test's "nothing is written outside destinations").
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <stdexcept>

namespace rig::test {

class GuardedBuffer {
 public:
  // `bytes`, a multiple of the page size, filled with `fill`.
  GuardedBuffer(std::size_t bytes, unsigned char fill) : bytes_(bytes) {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    if (bytes % page != 0) throw std::invalid_argument("GuardedBuffer: not a multiple of the page size");
    map_bytes_ = bytes + 2 * page;
    void* m = ::mmap(nullptr, map_bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::runtime_error("GuardedBuffer: mmap failed");
    map_ = static_cast<std::byte*>(m);
    if (::mprotect(map_ + page, bytes, PROT_READ | PROT_WRITE) != 0) {
      ::munmap(map_, map_bytes_);
      throw std::runtime_error("GuardedBuffer: mprotect failed");
    }
    data_ = map_ + page;
    std::memset(data_, fill, bytes);
  }
  ~GuardedBuffer() { ::munmap(map_, map_bytes_); }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  std::byte* data() { return data_; }
  std::size_t size() const { return bytes_; }

 private:
  std::size_t bytes_, map_bytes_ = 0;
  std::byte* map_ = nullptr;
  std::byte* data_ = nullptr;
};

}  // namespace rig::test
