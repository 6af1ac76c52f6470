// The rows a range of a strided copy's packed bytes covers (packed_rows.h), against the
// definition byte by byte: packed byte k lies at (k / row_bytes) * pitch + k % row_bytes. Every
// range of every small shape: 1 to 3 rows, a pitch equal to the row and larger, ranges that
// start and end inside a row, on its edges, and at the copy's last byte.
#include "rig/engine/packed_rows.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rig::engine {
namespace {

struct Shape {
  std::uint64_t rows, row_bytes, pitch;
  std::string name() const {
    return std::to_string(rows) + " rows of " + std::to_string(row_bytes) + " at pitch " + std::to_string(pitch);
  }
};

std::vector<Shape> small_shapes() {
  std::vector<Shape> all;
  for (std::uint64_t rows = 1; rows <= 3; ++rows) {
    for (std::uint64_t row = 1; row <= 4; ++row) {
      for (std::uint64_t pitch = row; pitch <= row + 2; ++pitch) all.push_back({rows, row, pitch});
    }
  }
  return all;
}

// Memory of the copy's rows, each byte its own offset's value (so a wrong piece shows).
std::vector<std::byte> numbered(const Shape& s) {
  std::vector<std::byte> m((s.rows - 1) * s.pitch + s.row_bytes);
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<std::byte>(i + 1);
  return m;
}

// Calls check(shape, its numbered memory, at, n) for every range [at, at + n) of every small
// shape's packed bytes.
template <class Check>
void each_range(Check check) {
  for (const Shape& s : small_shapes()) {
    const std::vector<std::byte> mem = numbered(s);
    const std::uint64_t total = s.rows * s.row_bytes;
    for (std::uint64_t at = 0; at < total; ++at) {
      for (std::uint64_t n = 1; at + n <= total; ++n) check(s, mem, at, n);
    }
  }
}

std::string range_name(const Shape& s, std::uint64_t at, std::uint64_t n) {
  return s.name() + ", bytes [" + std::to_string(at) + ", " + std::to_string(at + n) + ")";
}

TEST(PackedRows, PackingAnyRangeTakesExactlyItsBytesInOrder) {
  each_range([](const Shape& s, const std::vector<std::byte>& mem, std::uint64_t at, std::uint64_t n) {
    std::vector<std::byte> got(n + 1, std::byte{0xee});
    pack_rows(got.data(), mem.data(), s.row_bytes, s.pitch, at, n);
    for (std::uint64_t k = 0; k < n; ++k) {
      const std::uint64_t p = at + k;
      ASSERT_EQ(got[k], mem[(p / s.row_bytes) * s.pitch + p % s.row_bytes]) << range_name(s, at, n) << ", byte " << p;
    }
    ASSERT_EQ(got[n], std::byte{0xee}) << range_name(s, at, n) << ": wrote past the range";
  });
}

TEST(PackedRows, TheIovecsOfAnyRangeCoverExactlyItsBytesOneRowPieceEach) {
  each_range([](const Shape& s, const std::vector<std::byte>& mem, std::uint64_t at, std::uint64_t n) {
    std::vector<iovec> iov;
    append_rows(iov, mem.data(), s.row_bytes, s.pitch, at, n);
    std::uint64_t p = at;
    for (const iovec& v : iov) {
      const auto* b = static_cast<const std::byte*>(v.iov_base);
      for (std::size_t k = 0; k < v.iov_len; ++k, ++p) {
        ASSERT_LT(p, at + n) << range_name(s, at, n) << ": a piece runs past them";
        ASSERT_EQ(b + k, mem.data() + (p / s.row_bytes) * s.pitch + p % s.row_bytes) << range_name(s, at, n) << ", byte " << p;
      }
    }
    ASSERT_EQ(p, at + n) << range_name(s, at, n);
    // Rows end to end are one piece; else one piece per row the range touches.
    const std::uint64_t touched = (at + n - 1) / s.row_bytes - at / s.row_bytes + 1;
    EXPECT_EQ(iov.size(), s.pitch == s.row_bytes ? 1u : touched) << range_name(s, at, n);
  });
}

}  // namespace
}  // namespace rig::engine
