// The rows of a strided copy that a range of its packed bytes covers.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace rig::engine {

// Calls piece(offset, len) for each piece of memory that packed bytes [at, at + n) of a copy
// occupy, in order, where row r starts at offset r * pitch and holds row_bytes bytes
// (pitch == row_bytes: rows end to end, one piece).
template <class Piece>
void for_each_row_piece(std::uint64_t row_bytes, std::uint64_t pitch, std::uint64_t at,
                        std::uint64_t n, Piece piece) {
  if (pitch == row_bytes) {
    if (n > 0) piece(at, n);
    return;
  }
  while (n > 0) {
    const std::uint64_t row = at / row_bytes, col = at % row_bytes;
    const std::uint64_t m = std::min(n, row_bytes - col);
    piece(row * pitch + col, m);
    at += m;
    n -= m;
  }
}

// Appends to `out` an iovec per piece of packed bytes [at, at + n) of rows at `base`. May throw
// std::bad_alloc when `out` grows (callers reuse one vector).
inline void append_rows(std::vector<iovec>& out, const void* base, std::uint64_t row_bytes,
                        std::uint64_t pitch, std::uint64_t at, std::uint64_t n) {
  auto* b = static_cast<std::byte*>(const_cast<void*>(base));
  for_each_row_piece(row_bytes, pitch, at, n, [&](std::uint64_t off, std::uint64_t len) {
    out.push_back({b + off, len});
  });
}

// Copies packed bytes [at, at + n) of rows at `base` end to end into `dst` (n bytes).
inline void pack_rows(std::byte* dst, const void* base, std::uint64_t row_bytes, std::uint64_t pitch,
                      std::uint64_t at, std::uint64_t n) {
  const auto* b = static_cast<const std::byte*>(base);
  for_each_row_piece(row_bytes, pitch, at, n, [&](std::uint64_t off, std::uint64_t len) {
    std::memcpy(dst, b + off, len);
    dst += len;
  });
}

}  // namespace rig::engine
