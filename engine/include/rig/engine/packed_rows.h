// The rows of a strided copy that a range of its packed bytes covers, as iovecs.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rig::engine {

// Appends to `out` the pieces of memory that packed bytes [at, at + n) of a copy occupy, where
// row r starts at base + r * pitch and holds row_bytes bytes (pitch == row_bytes: rows end to
// end, one iovec). May throw std::bad_alloc when `out` grows (callers reuse one vector).
inline void append_rows(std::vector<iovec>& out, const void* base, std::uint64_t row_bytes,
                        std::uint64_t pitch, std::uint64_t at, std::uint64_t n) {
  auto* b = static_cast<std::byte*>(const_cast<void*>(base));
  if (pitch == row_bytes) {
    if (n > 0) out.push_back({b + at, n});
    return;
  }
  while (n > 0) {
    const std::uint64_t row = at / row_bytes, col = at % row_bytes;
    const std::uint64_t m = std::min(n, row_bytes - col);
    out.push_back({b + row * pitch + col, m});
    at += m;
    n -= m;
  }
}

}  // namespace rig::engine
